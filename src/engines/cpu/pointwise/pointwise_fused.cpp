// cpu_pointwise_fused: the partition's pointwise DAG and terminal reductions are lowered to one
// expression list (fusion/expr.hpp), put in memory order, and run by the CPU epilogue executor
// over contiguous ranges, one per thread: each element is loaded once, every intermediate stays in
// a 256-element register strip in cache, outputs are stored once and reductions are accumulated
// per thread and combined at the end. A lone reduction of an input is lowered to LOAD + REDUCE.
#include "engines/cpu/pointwise/pointwise_fused.hpp"

#include "engines/cpu/pointwise/fused_program.hpp"

namespace dnngraph::cpu {
namespace {


// A partition of one reduction whose input comes from outside: load it and reduce.
void lower_lone_reduction(const Partition& p, expr::Program& prog) {
  const ir::Node& n = p.node(0);
  prog = expr::Program{};
  prog.domain = p.tensor(n.inputs[0]).dims;
  expr::Instr load{};
  load.kind = expr::InstrKind::LOAD;
  load.dst = 0;
  load.tensor = n.inputs[0];
  expr::Instr reduce{};
  reduce.kind = expr::InstrKind::REDUCE;
  reduce.src[0] = 0;
  reduce.tensor = n.outputs[0];
  reduce.reduce = std::get<ReductionAttr>(n.attr).get_mode();
  prog.code = {load, reduce};
  prog.num_regs = 1;
  prog.loads = {n.inputs[0]};
  prog.reductions = {n.outputs[0]};
}

bool prepare(const Partition& p, const Target& t, FusedProgram& out, std::string& why) {
  if (!t.device().is_cpu()) {
    why = "runs on the CPU only; the handle is " + t.device().to_string();
    return false;
  }
  if (p.anchor >= 0) {
    const ir::Node& a = p.graph->nodes[static_cast<size_t>(p.anchor)];
    why = "the partition is anchored on node '" + a.name + "' (" + std::string(op_name(a.attr)) +
          "); only pure pointwise/reduction partitions run here";
    return false;
  }
  for (size_t k = 0; k < p.nodes.size(); ++k)
    if (!ir::is<PointwiseAttr>(p.node(k)) && !ir::is<ReductionAttr>(p.node(k))) {
      why = "node '" + p.node(k).name + "' (" + std::string(op_name(p.node(k).attr)) +
            ") is not a pointwise op or a reduction";
      return false;
    }
  expr::Program prog;
  const bool lone_reduction = p.nodes.size() == 1 && ir::is<ReductionAttr>(p.node(0));
  if (lone_reduction) {
    lower_lone_reduction(p, prog);
  } else if (std::string w; !expr::lower(p, -1, prog, w)) {
    why = "the partition does not lower to one fused loop: " + w;
    return false;
  }
  if (!check_program_types(prog, p, why)) return false;
  const int primary = primary_tensor(prog, *p.graph);
  return compile_program(std::move(prog), *p.graph, primary, 0, out, why);
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

class PointwiseFusedEngine final : public Engine {
 public:
  std::string_view name() const override { return "cpu_pointwise_fused"; }

  Support check(const Partition& p, const Target& t) const override {
    FusedProgram fp;
    std::string why;
    return prepare(p, t, fp, why) ? Support::yes() : Support::no(why);
  }

  double estimate_seconds(const Partition& p, const Target& t, const Knobs&) const override {
    // One pass: the partition's bytes at about half the measured bandwidth, or its element ops at
    // a few per cycle per core when math functions dominate.
    return roofline_seconds(partition_flops(p) * 4.0, partition_bytes(p), t.info(), 0.5, 3e-6);
  }

  Status build(const Partition& p, const Target& t, const Knobs&, std::unique_ptr<Plan>& plan) const override {
    FusedProgram fp;
    std::string why;
    if (!prepare(p, t, fp, why)) return {ErrorCode::GRAPH_NOT_SUPPORTED, "cpu_pointwise_fused: " + why};
    plan = std::make_unique<PointwisePlan>(std::move(fp));
    return {};
  }
};

}  // namespace

const Engine& pointwise_fused_engine() {
  static const PointwiseFusedEngine kEngine;
  return kEngine;
}

}  // namespace dnngraph::cpu
