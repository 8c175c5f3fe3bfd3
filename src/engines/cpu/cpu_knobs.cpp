#include "engines/cpu/cpu_knobs.hpp"

namespace dnngraph::cpu {
namespace {

constexpr int64_t kTopIsa = static_cast<int64_t>(Isa::AVX512);

// The ISA a knob setting names; an error when this CPU lacks it.
Status resolve_isa(std::string_view engine, int64_t isa_knob, Isa& out) {
  out = isa_knob < 0 ? cpu_features().best() : static_cast<Isa>(isa_knob);
  if (!cpu_features().supports(out))
    return {ErrorCode::INVALID_VALUE, std::string(engine) + ": knob isa=" + std::to_string(isa_knob) +
                                          " is not supported by this CPU (" + cpu_features().to_string() + ")"};
  return {};
}

// The ISA levels this CPU has, best first.
std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (int level = static_cast<int>(cpu_features().best()); level >= 0; --level)
    if (cpu_features().supports(static_cast<Isa>(level))) out.push_back(static_cast<Isa>(level));
  return out;
}

}  // namespace

template <>
KnobSchema<NoKnobs> knob_schema<NoKnobs>(std::string_view engine) {
  return {engine, {}};
}

template <>
KnobSchema<IsaKnobs> knob_schema<IsaKnobs>(std::string_view engine) {
  return {engine, {{"isa", &IsaKnobs::isa, 0, kTopIsa}}};
}

template <>
KnobSchema<GemmKnobs> knob_schema<GemmKnobs>(std::string_view engine) {
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

Status read_knobs(const KnobSchema<IsaKnobs>& schema, std::string_view engine, const Knobs& k, Isa& out) {
  IsaKnobs knobs;
  if (auto s = schema.parse(k, knobs); !s.ok()) return s;
  return resolve_isa(engine, knobs.isa, out);
}

Status read_knobs(const KnobSchema<GemmKnobs>& schema, std::string_view engine, const Knobs& k, GemmSetting& out) {
  GemmKnobs g;
  if (auto s = schema.parse(k, g); !s.ok()) return s;
  if (auto s = resolve_isa(engine, g.isa, out.isa); !s.ok()) return s;
  out.blocking = gemm::default_blocking(gemm::kernel_set(out.isa));
  if (g.mc) out.blocking.mc = g.mc;
  if (g.kc) out.blocking.kc = g.kc;
  if (g.nc) out.blocking.nc = g.nc;
  return {};
}

std::vector<Knobs> knob_space(const KnobSchema<IsaKnobs>& schema) {
  std::vector<Knobs> out;
  for (Isa isa : supported_isas()) out.push_back(schema.print({static_cast<int64_t>(isa)}));
  return out;
}

std::vector<Knobs> knob_space(const KnobSchema<GemmKnobs>& schema, const std::function<gemm::Blocking(Isa)>& blocking_of) {
  std::vector<Knobs> out;
  for (Isa isa : supported_isas()) {
    const gemm::Blocking b = blocking_of(isa);
    out.push_back(schema.print({static_cast<int64_t>(isa), b.mc, b.kc, b.nc}));
  }
  return out;
}

}  // namespace dnngraph::cpu
