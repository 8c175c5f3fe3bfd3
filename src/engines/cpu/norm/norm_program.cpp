#include "engines/cpu/norm/norm_program.hpp"

#include <algorithm>

namespace dnngraph::cpu::norm {
namespace {

bool tile_type(DataType t) { return t == DataType::FLOAT || t == DataType::HALF || t == DataType::BFLOAT16; }

}  // namespace

bool read_norm(const Partition& p, NormSpec& s, std::string& why) {
  if (p.anchor < 0) {
    why = "the partition has no anchor (a layernorm, rmsnorm or batchnorm_inference is needed)";
    return false;
  }
  const ir::Node& n = p.graph->nodes[static_cast<size_t>(p.anchor)];
  s = NormSpec{};
  s.node = p.anchor;
  s.y = n.outputs[0];
  if (ir::is<BatchnormInferenceAttr>(n)) {
    s.kind = NormKind::BATCHNORM;
    s.x = n.inputs[slot::BN_X];
    s.mean = n.inputs[slot::BN_MEAN];
    s.inv = n.inputs[slot::BN_INV_VAR];
    s.scale = n.inputs[slot::BN_SCALE];
    s.bias = n.inputs[slot::BN_BIAS];
  } else if (ir::is<LayernormAttr>(n) || ir::is<RmsnormAttr>(n)) {
    s.kind = ir::is<LayernormAttr>(n) ? NormKind::LAYERNORM : NormKind::RMSNORM;
    s.x = n.inputs[slot::LN_X];
    s.scale = n.inputs[slot::LN_SCALE];
    s.bias = n.inputs[slot::LN_BIAS];
    s.eps = n.inputs[slot::LN_EPS];
    if (s.kind == NormKind::LAYERNORM) s.mean = n.outputs[1];
    s.inv = n.outputs[s.kind == NormKind::LAYERNORM ? 2 : 1];
  } else {
    why = "the partition is anchored on " + ir::describe(n) + ", not on a layernorm, rmsnorm or batchnorm_inference";
    return false;
  }
  for (int t : {s.x, s.scale, s.bias, s.y, s.kind == NormKind::BATCHNORM ? s.mean : -1,
                s.kind == NormKind::BATCHNORM ? s.inv : -1}) {
    if (t < 0 || tile_type(p.tensor(t).dtype)) continue;
    why = "node '" + n.name + "', tensor '" + p.tensor(t).name + "': data type " +
          std::string(to_string(p.tensor(t).dtype)) + " is not supported (FLOAT, HALF and BFLOAT16 are)";
    return false;
  }
  if (n.compute_type != DataType::FLOAT && n.compute_type != DataType::NOT_SET && !tile_type(n.compute_type)) {
    why = "node '" + n.name + "': compute type " + std::string(to_string(n.compute_type)) +
          " is not supported (fp32 arithmetic)";
    return false;
  }
  return true;
}

bool build_norm_program(const Partition& p, const NormSpec& s, FusedProgram& out, std::string& why) {
  // The engine writes the statistics itself; the program only reads them (as operands).
  Partition q = p;
  std::erase_if(q.outputs, [&](int t) { return s.per_row() && (t == s.mean || t == s.inv); });
  expr::Program prog;
  if (std::string w; !expr::lower(q, s.node, prog, w)) {
    why = "the epilogue does not lower: " + w;
    return false;
  }
  if (!check_program_types(prog, p, why)) return false;
  ProgramTensors tensors(*p.graph);
  if (s.per_row()) {
    for (int stat : {s.mean, s.inv}) {
      if (stat < 0) continue;
      const ir::Tensor& t = p.tensor(stat);
      const bool read = std::find(prog.loads.begin(), prog.loads.end(), stat) != prog.loads.end();
      if (read && t.dtype != DataType::FLOAT) {
        why = "tensor '" + t.name + "': the epilogue reads this statistic, which is only supported as FLOAT, not " +
              std::string(to_string(t.dtype));
        return false;
      }
      ir::Tensor& w = tensors.rewrite(stat);
      w.dtype = DataType::FLOAT;
      w.strides.assign(w.dims.size(), 1);
    }
  }
  const std::vector<int> own{s.x, s.scale, s.bias, s.y, s.per_row() ? -1 : s.mean, s.per_row() ? -1 : s.inv};
  return compile_program(std::move(prog), std::move(tensors), s.x, s.per_row() ? 1 : 0, out, why, own);
}

}  // namespace dnngraph::cpu::norm
