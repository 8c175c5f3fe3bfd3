// The CPU engines' knobs: the kernel ISA level ("isa", Isa's value), and for the GEMM-based
// engines the cache blocking (mc, kc, nc). One schema each; the ISA's support by this CPU is
// checked when a plan is built, since a knob setting is valid on any machine. Each knob struct
// names the Setting it resolves to on this CPU, which is what a plan is built with.
#pragma once
#include <functional>
#include <string_view>
#include <vector>

#include "engines/cpu/cpu_features.hpp"
#include "engines/cpu/gemm/driver.hpp"
#include "planning/knobs.hpp"

namespace dnngraph::cpu {

// An engine without knobs.
struct NoKnobs {
  struct Setting {};
};

struct IsaKnobs {
  using Setting = Isa;
  int64_t isa = -1;  // Isa's value; -1 (absent): the best this CPU has
};

struct GemmSetting {
  Isa isa = Isa::PORTABLE;
  gemm::Blocking blocking;
};
struct GemmKnobs {
  using Setting = GemmSetting;
  int64_t isa = -1;
  int64_t mc = 0, kc = 0, nc = 0;  // 0 (absent): the ISA's default blocking
};

// The schema of an engine's knob struct (IsaKnobs, GemmKnobs; NoKnobs has no fields).
template <class T>
KnobSchema<T> knob_schema(std::string_view engine);
template <>
KnobSchema<NoKnobs> knob_schema<NoKnobs>(std::string_view engine);
template <>
KnobSchema<IsaKnobs> knob_schema<IsaKnobs>(std::string_view engine);
template <>
KnobSchema<GemmKnobs> knob_schema<GemmKnobs>(std::string_view engine);

// The ISA a setting's "isa" knob names, for estimates: the best this CPU has when absent.
Isa isa_of(const Knobs& k);

// Parses a knob setting and resolves it on this CPU (missing knobs: the best ISA and its default
// blocking); an error when the schema rejects it or this CPU lacks its ISA.
Status read_knobs(const KnobSchema<IsaKnobs>& schema, std::string_view engine, const Knobs& k, Isa& out);
Status read_knobs(const KnobSchema<GemmKnobs>& schema, std::string_view engine, const Knobs& k, GemmSetting& out);

// One setting per ISA this CPU has, best first (GEMM knobs with the blocking `blocking_of` gives
// for the ISA).
std::vector<Knobs> knob_space(const KnobSchema<IsaKnobs>& schema);
std::vector<Knobs> knob_space(const KnobSchema<GemmKnobs>& schema, const std::function<gemm::Blocking(Isa)>& blocking_of);

}  // namespace dnngraph::cpu
