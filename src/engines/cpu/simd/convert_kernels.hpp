// Contiguous fp32 <-> FLOAT/HALF/BFLOAT16 conversion runs, per ISA (F16C for HALF, integer shifts
// and round-to-nearest-even for BFLOAT16), for the engines' loads and stores of unit-stride data.
// Results equal core/dtype.hpp's scalar conversions (NaN payloads aside).
#pragma once
#include <cstdint>

#include "dnngraph/types.hpp"
#include "engines/cpu/cpu_features.hpp"

namespace dnngraph::cpu {

struct ConvertKernels {
  Isa isa;
  // dst[i] = src[i] as fp32; t is FLOAT, HALF or BFLOAT16.
  void (*to_fp32)(const void* src, DataType t, int64_t n, float* dst);
  // dst[i] = src[i] rounded to t (nearest even; NaN stays NaN); t is FLOAT, HALF or BFLOAT16.
  void (*from_fp32)(const float* src, int64_t n, DataType t, void* dst);
};

// The kernels of one ISA level; the caller checks cpu_features().supports(isa) first.
const ConvertKernels& convert_kernels(Isa isa);

// Per-ISA definitions (convert_kernels_<isa>.cpp); null where not compiled in.
const ConvertKernels* avx2_convert_kernels();
const ConvertKernels* avx512_convert_kernels();

}  // namespace dnngraph::cpu
