// The CPU engines' knobs: the kernel ISA level ("isa", Isa's value), and for the GEMM-based
// engines the cache blocking (mc, kc, nc). One schema each; the ISA's support by this CPU is
// checked when a plan is built, since a knob setting is valid on any machine.
#pragma once
#include <string_view>
#include <vector>

#include "engines/cpu/cpu_features.hpp"
#include "engines/cpu/gemm/driver.hpp"
#include "planning/knobs.hpp"

namespace dnngraph::cpu {

struct IsaKnobs {
  int64_t isa = -1;  // Isa's value; -1 (absent): the best this CPU has
};

struct GemmKnobs {
  int64_t isa = -1;
  int64_t mc = 0, kc = 0, nc = 0;  // 0 (absent): the ISA's default blocking
};

KnobSchema<IsaKnobs> isa_knob_schema(std::string_view engine);
KnobSchema<GemmKnobs> gemm_knob_schema(std::string_view engine);

// The ISA a setting's "isa" knob names, for estimates: the best this CPU has when absent.
Isa isa_of(const Knobs& k);
// The ISA a knob setting names; an error when this CPU lacks it.
Status resolve_isa(std::string_view engine, int64_t isa_knob, Isa& out);
// Parses an ISA knob setting and resolves it on this CPU.
Status read_isa_knobs(const KnobSchema<IsaKnobs>& schema, std::string_view engine, const Knobs& k, Isa& out);
// Reads a GEMM knob setting (defaults for missing knobs: the best ISA, its blocking); an error
// when the schema rejects it or this CPU lacks its ISA.
Status read_gemm_knobs(const KnobSchema<GemmKnobs>& schema, std::string_view engine, const Knobs& k, Isa& isa,
                       gemm::Blocking& blk);
// One setting per ISA this CPU has, best first.
std::vector<Knobs> isa_knob_space(const KnobSchema<IsaKnobs>& schema);
// Per ISA this CPU has, best first: the ISA with its default blocking.
std::vector<Knobs> gemm_knob_space(const KnobSchema<GemmKnobs>& schema);

}  // namespace dnngraph::cpu
