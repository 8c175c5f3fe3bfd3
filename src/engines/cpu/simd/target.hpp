// How a file compiles code for an ISA above the build's baseline: the functions defined between
// DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_<ISA>) and DNNGRAPH_TARGET_END are compiled for that ISA
// and run only after cpu_features() says the CPU has it, so the library itself runs on any
// x86-64. A family's kernels for one ISA: its body (templates over the vector type of simd/)
// included inside such a region, and its table of function pointers taken outside it with
// DNNGRAPH_X86_TABLE. Off x86 the region is empty of pragmas and the table null, so the body's
// templates are never instantiated and the ISA files need no guard of their own.
#pragma once

#include "engines/cpu/cpu_features.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DNNGRAPH_SIMD_X86 1
#else
#define DNNGRAPH_SIMD_X86 0
#endif

// The target strings of the ISA levels (Isa::AVX2 is AVX2 + FMA + F16C).
#define DNNGRAPH_TARGET_AVX2 "avx2,fma,f16c"
#define DNNGRAPH_TARGET_AVX512 "avx512f,avx2,fma,f16c"

#define DNNGRAPH_PRAGMA(text) _Pragma(#text)
#if !DNNGRAPH_SIMD_X86
#define DNNGRAPH_TARGET_BEGIN(isa)
#define DNNGRAPH_TARGET_END
#elif defined(__clang__)
#define DNNGRAPH_TARGET_BEGIN(isa) DNNGRAPH_PRAGMA(clang attribute push(__attribute__((target(isa))), apply_to = function))
#define DNNGRAPH_TARGET_END DNNGRAPH_PRAGMA(clang attribute pop)
#else
#define DNNGRAPH_TARGET_BEGIN(isa) DNNGRAPH_PRAGMA(GCC push_options) DNNGRAPH_PRAGMA(GCC target(isa))
#define DNNGRAPH_TARGET_END DNNGRAPH_PRAGMA(GCC pop_options)
#endif

// A kernel table compiled for x86 (its address), or null in builds without the x86 kernels.
#if DNNGRAPH_SIMD_X86
#define DNNGRAPH_X86_TABLE(...) (&(__VA_ARGS__))
#else
#define DNNGRAPH_X86_TABLE(...) nullptr
#endif

namespace dnngraph::cpu::simd {

// Whether this build has the x86 kernels and this CPU runs their AVX2 level (asked once): the
// test of the families that pick an AVX2 loop per call rather than through a table.
inline bool x86_avx2_usable() {
  static const bool kAvx2 = DNNGRAPH_SIMD_X86 && cpu_features().supports(Isa::AVX2);
  return kAvx2;
}

// The kernel table for ISA level `isa`: the highest level at or below it that this build has
// (the x86 tables are null where not compiled in). The caller checks cpu_features() first.
template <class Table>
const Table& table_for(Isa isa, const Table& portable, const Table* avx2, const Table* avx512) {
  if (isa == Isa::AVX512 && avx512) return *avx512;
  if (isa >= Isa::AVX2 && avx2) return *avx2;
  return portable;
}

}  // namespace dnngraph::cpu::simd
