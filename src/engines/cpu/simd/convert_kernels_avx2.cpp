// The conversion runs compiled for AVX2 + F16C; convert_kernels() picks them on a CPU that has it.
#include "engines/cpu/simd/convert_kernels.hpp"

#include <cstring>

#include "core/dtype.hpp"
#include "engines/cpu/simd/vec_avx2.hpp"

DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX2)
#include "engines/cpu/simd/convert_kernels_body.inl"
DNNGRAPH_TARGET_END

namespace dnngraph::cpu {
const ConvertKernels* avx2_convert_kernels() { return DNNGRAPH_X86_TABLE(kSimdConvertKernels<simd::VecAvx2>); }
}  // namespace dnngraph::cpu
