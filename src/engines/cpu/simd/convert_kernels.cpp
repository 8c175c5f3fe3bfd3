// The portable conversion runs (the scalar conversions of core/dtype.hpp) and the
// dispatch by ISA.
#include "engines/cpu/simd/convert_kernels.hpp"

#include <cstring>

#include "core/dtype.hpp"
#include "engines/cpu/simd/target.hpp"

namespace dnngraph::cpu {
namespace {

void to_fp32_portable(const void* src, DataType t, int64_t n, float* dst) {
  const uint16_t* s = static_cast<const uint16_t*>(src);
  if (t == DataType::FLOAT) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
  else if (t == DataType::BFLOAT16) for (int64_t i = 0; i < n; ++i) dst[i] = dtype::bf16_to_float(s[i]);
  else for (int64_t i = 0; i < n; ++i) dst[i] = dtype::half_to_float(s[i]);
}

void from_fp32_portable(const float* src, int64_t n, DataType t, void* dst) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  if (t == DataType::FLOAT) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
  else if (t == DataType::BFLOAT16) for (int64_t i = 0; i < n; ++i) d[i] = dtype::float_to_bf16(src[i]);
  else for (int64_t i = 0; i < n; ++i) d[i] = dtype::float_to_half(src[i]);
}

const ConvertKernels kPortable{Isa::PORTABLE, to_fp32_portable, from_fp32_portable};

}  // namespace

const ConvertKernels& convert_kernels(Isa isa) {
  return simd::table_for(isa, kPortable, avx2_convert_kernels(), avx512_convert_kernels());
}

}  // namespace dnngraph::cpu
