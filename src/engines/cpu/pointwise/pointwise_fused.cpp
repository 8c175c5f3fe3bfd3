// cpu_pointwise_fused: the partition's pointwise DAG and terminal reductions are lowered to one
// expression list (fusion/expr.hpp), put in memory order, and run by the CPU epilogue executor
// over contiguous ranges, one per thread: each element is loaded once, every intermediate stays in
// a 256-element register strip in cache, outputs are stored once and reductions are accumulated
// per thread and combined at the end. A lone reduction of an input is lowered to LOAD + REDUCE.
#include "engines/cpu/pointwise/pointwise_fused.hpp"

#include "engines/cpu/cpu_engine.hpp"
#include "engines/cpu/pointwise/fused_program.hpp"

namespace dnngraph::cpu {
namespace {

expr::Instr reduce_into(int tensor, int src, ReductionMode mode) {
  expr::Instr in{};
  in.kind = expr::InstrKind::REDUCE;
  in.src[0] = src;
  in.tensor = tensor;
  in.reduce = mode;
  return in;
}

// A partition of one reduction (or genstats: a sum and a sum of squares) whose input comes from
// outside: load it and reduce.
void lower_lone_reduction(const Partition& p, expr::Program& prog) {
  const ir::Node& n = p.node(0);
  prog = expr::Program{};
  prog.domain = p.tensor(n.inputs[0]).dims;
  expr::Instr load{};
  load.kind = expr::InstrKind::LOAD;
  load.dst = 0;
  load.tensor = n.inputs[0];
  prog.loads = {n.inputs[0]};
  if (const auto* r = std::get_if<ReductionAttr>(&n.attr)) {
    prog.code = {load, reduce_into(n.outputs[0], 0, r->get_mode())};
    prog.num_regs = 1;
    prog.reductions = {n.outputs[0]};
    return;
  }
  expr::Instr square{};
  square.kind = expr::InstrKind::APPLY;
  square.op = PointwiseAttr().set_mode(PointwiseMode::MUL);
  square.src[0] = square.src[1] = 0;
  square.dst = 1;
  prog.code = {load, square, reduce_into(n.outputs[0], 0, ReductionMode::ADD),
               reduce_into(n.outputs[1], 1, ReductionMode::ADD)};
  prog.num_regs = 2;
  prog.reductions = {n.outputs[0], n.outputs[1]};
}

bool is_reduction(const ir::Node& n) { return ir::is<ReductionAttr>(n) || ir::is<GenstatsAttr>(n); }

bool prepare_fused(const Partition& p, const Target& t, FusedProgram& out, std::string& why) {
  if (!on_cpu(t, why)) return false;
  if (p.anchor >= 0) {
    const ir::Node& a = p.graph->nodes[static_cast<size_t>(p.anchor)];
    why = "the partition is anchored on node '" + a.name + "' (" + std::string(op_name(a.attr)) +
          "); only pure pointwise/reduction partitions run here";
    return false;
  }
  for (size_t k = 0; k < p.nodes.size(); ++k)
    if (!ir::is<PointwiseAttr>(p.node(k)) && !is_reduction(p.node(k))) {
      why = "node '" + p.node(k).name + "' (" + std::string(op_name(p.node(k).attr)) +
            ") is not a pointwise op, a reduction or genstats";
      return false;
    }
  expr::Program prog;
  const bool lone_reduction = p.nodes.size() == 1 && is_reduction(p.node(0));
  if (lone_reduction) {
    lower_lone_reduction(p, prog);
  } else if (std::string w; !expr::lower(p, -1, prog, w)) {
    why = "the partition does not lower to one fused loop: " + w;
    return false;
  }
  if (!check_program_types(prog, p, why)) return false;
  const int primary = primary_tensor(prog, *p.graph);
  return compile_program(std::move(prog), ProgramTensors(*p.graph), primary, 0, out, why);
}

class PointwisePlan final : public Plan {
 public:
  explicit PointwisePlan(FusedProgram fp) : fp_(std::move(fp)) {}
  Status execute(const ExecArgs& args) const override {
    return run_domain(fp_.epi, args.ptrs, args.handle.thread_pool());
  }

 private:
  FusedProgram fp_;
};

class PointwiseFusedEngine final : public CpuEngine<FusedProgram> {
 public:
  PointwiseFusedEngine() : CpuEngine("cpu_pointwise_fused") {}

  double estimate_seconds(const Partition& p, const Target& t, const Knobs&) const override {
    // One pass: the partition's bytes at about half the measured bandwidth, or its element ops at
    // a few per cycle per core when math functions dominate.
    return roofline_seconds(partition_flops(p) * 4.0, partition_bytes(p), t.info(), 0.5, 3e-6);
  }

 private:
  bool prepare(const Partition& p, const Target& t, FusedProgram& out, std::string& why) const override {
    return prepare_fused(p, t, out, why);
  }
  std::unique_ptr<Plan> make_plan(const Partition&, const Target&, FusedProgram fp, const Setting&) const override {
    return std::make_unique<PointwisePlan>(std::move(fp));
  }
};

}  // namespace

const Engine& pointwise_fused_engine() { return engine_instance<PointwiseFusedEngine>(); }

}  // namespace dnngraph::cpu
