#include "engines/cpu/cpu_knobs.hpp"

namespace dnngraph::cpu {
namespace {
constexpr int64_t kTopIsa = static_cast<int64_t>(Isa::AVX512);
}  // namespace

KnobSchema<IsaKnobs> isa_knob_schema(std::string_view engine) {
  return {engine, {{"isa", &IsaKnobs::isa, 0, kTopIsa}}};
}

KnobSchema<GemmKnobs> gemm_knob_schema(std::string_view engine) {
  return {engine,
          {{"isa", &GemmKnobs::isa, 0, kTopIsa},
           {"mc", &GemmKnobs::mc, 1, 1 << 16},
           {"kc", &GemmKnobs::kc, 1, 1 << 16},
           {"nc", &GemmKnobs::nc, 1, 1 << 20}}};
}

Isa isa_of(const Knobs& k) {
  const auto it = k.find("isa");
  return it == k.end() || it->second < 0 || it->second > kTopIsa ? cpu_features().best() : static_cast<Isa>(it->second);
}

Status resolve_isa(std::string_view engine, int64_t isa_knob, Isa& out) {
  out = isa_knob < 0 ? cpu_features().best() : static_cast<Isa>(isa_knob);
  if (!cpu_features().supports(out))
    return {ErrorCode::INVALID_VALUE, std::string(engine) + ": knob isa=" + std::to_string(isa_knob) +
                                          " is not supported by this CPU (" + cpu_features().to_string() + ")"};
  return {};
}

Status read_isa_knobs(const KnobSchema<IsaKnobs>& schema, std::string_view engine, const Knobs& k, Isa& out) {
  IsaKnobs knobs;
  if (auto s = schema.parse(k, knobs); !s.ok()) return s;
  return resolve_isa(engine, knobs.isa, out);
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

std::vector<Knobs> isa_knob_space(const KnobSchema<IsaKnobs>& schema) {
  std::vector<Knobs> out;
  for (int level = static_cast<int>(cpu_features().best()); level >= 0; --level)
    if (cpu_features().supports(static_cast<Isa>(level))) out.push_back(schema.print({level}));
  return out;
}

std::vector<Knobs> gemm_knob_space(const KnobSchema<GemmKnobs>& schema) {
  std::vector<Knobs> out;
  for (int level = static_cast<int>(cpu_features().best()); level >= 0; --level) {
    const Isa isa = static_cast<Isa>(level);
    if (!cpu_features().supports(isa)) continue;
    const gemm::Blocking b = gemm::default_blocking(gemm::kernel_set(isa));
    out.push_back(schema.print({level, b.mc, b.kc, b.nc}));
  }
  return out;
}

}  // namespace dnngraph::cpu
