#include "engines/cpu/gemm/engine_common.hpp"

#include "engines/cpu/gemm/pack.hpp"

namespace dnngraph::cpu {

const ir::Node* check_anchor(const Partition& p, const Target& t, std::string_view op, Epilogue& epi,
                             std::string& why) {
  if (!t.device().is_cpu()) {
    why = "runs on the CPU only; the handle is " + t.device().to_string();
    return nullptr;
  }
  if (p.anchor < 0 || op_name(p.graph->nodes[static_cast<size_t>(p.anchor)].attr) != op) {
    why = "the partition is not anchored on " + std::string(op);
    return nullptr;
  }
  const ir::Node& n = p.graph->nodes[static_cast<size_t>(p.anchor)];
  for (size_t i = 0; i < 2 && i < n.inputs.size(); ++i) {
    const ir::Tensor& in = p.tensor(n.inputs[i]);
    if (!gemm::packable(in.dtype)) {
      why = "node '" + n.name + "', tensor '" + in.name + "': data type " + std::string(to_string(in.dtype)) +
            " is not supported (FLOAT, BFLOAT16 and HALF inputs are)";
      return nullptr;
    }
  }
  const DataType ct = n.compute_type;
  if (ct != DataType::FLOAT && ct != DataType::HALF && ct != DataType::BFLOAT16 && ct != DataType::NOT_SET) {
    why = "node '" + n.name + "': compute type " + std::string(to_string(ct)) + " is not supported (fp32 accumulation)";
    return nullptr;
  }
  expr::Program prog;
  std::string lower_why;
  if (!expr::lower(p, p.anchor, prog, lower_why)) {
    why = "the epilogue does not lower: " + lower_why;
    return nullptr;
  }
  if (!epi.init(prog, *p.graph, lower_why)) {
    why = "the epilogue cannot run on the CPU: " + lower_why;
    return nullptr;
  }
  return &n;
}

Status read_gemm_knobs(const KnobSchema<GemmKnobs>& schema, std::string_view engine, const Knobs& k, Isa& isa,
                       gemm::Blocking& blk) {
  GemmKnobs g;
  if (auto s = schema.parse(k, g); !s.ok()) return s;
  if (auto s = resolve_isa(engine, g.isa, isa); !s.ok()) return s;
  blk = gemm::default_blocking(gemm::kernel_set(isa));
  if (g.mc) blk.mc = g.mc;
  if (g.kc) blk.kc = g.kc;
  if (g.nc) blk.nc = g.nc;
  return {};
}

double isa_efficiency(Isa isa) {
  switch (isa) {
    case Isa::AVX512: return 1.0;  // the device peak is a 256-bit figure; wider FMAs make up the rest
    case Isa::AVX2: return 0.85;
    case Isa::PORTABLE: return 0.12;
  }
  return 0.1;
}

}  // namespace dnngraph::cpu
