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

std::vector<Knobs> gemm_knob_space() {
  std::vector<Knobs> out;
  for (int level = static_cast<int>(cpu_features().best()); level >= 0; --level) {
    const Isa isa = static_cast<Isa>(level);
    if (!cpu_features().supports(isa)) continue;
    const gemm::Blocking b = gemm::default_blocking(gemm::kernel_set(isa));
    out.push_back(Knobs{{"isa", level}, {"mc", b.mc}, {"kc", b.kc}, {"nc", b.nc}});
  }
  return out;
}

Isa knob_isa(const Knobs& k) {
  auto it = k.find("isa");
  return it == k.end() ? cpu_features().best() : static_cast<Isa>(it->second);
}

bool read_gemm_knobs(const Knobs& k, Isa& isa, gemm::Blocking& blk, std::string& why) {
  isa = knob_isa(k);
  if (static_cast<int>(isa) < 0 || static_cast<int>(isa) > static_cast<int>(Isa::AVX512) ||
      !cpu_features().supports(isa)) {
    why = "knob isa=" + std::to_string(static_cast<int>(isa)) + " is not supported by this CPU (" +
          cpu_features().to_string() + ")";
    return false;
  }
  blk = gemm::default_blocking(gemm::kernel_set(isa));
  auto get = [&](const char* name, int64_t& v) {
    if (auto it = k.find(name); it != k.end()) v = it->second;
  };
  get("mc", blk.mc);
  get("kc", blk.kc);
  get("nc", blk.nc);
  if (blk.mc < 1 || blk.kc < 1 || blk.nc < 1 || blk.mc > (1 << 16) || blk.kc > (1 << 16) || blk.nc > (1 << 20)) {
    why = "knobs mc/kc/nc must be positive and moderate, got " + knobs_to_string(k);
    return false;
  }
  return true;
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
