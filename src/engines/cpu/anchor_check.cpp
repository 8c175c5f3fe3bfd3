#include "engines/cpu/anchor_check.hpp"

#include "engines/cpu/cpu_engine.hpp"
#include "engines/cpu/gemm/pack.hpp"

namespace dnngraph::cpu {

const ir::Node* check_anchor(const Partition& p, const Target& t, std::string_view op, Epilogue& epi,
                             std::string& why) {
  if (!on_cpu(t, why)) return nullptr;
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

}  // namespace dnngraph::cpu
