// The conversion runs compiled for AVX-512 F; convert_kernels() picks them on a CPU that has it.
#include "engines/cpu/simd/convert_kernels.hpp"

#include <cstring>

#include "core/dtype.hpp"
#include "engines/cpu/simd/vec_avx512.hpp"

DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX512)
#include "engines/cpu/simd/convert_kernels_body.inl"
DNNGRAPH_TARGET_END

namespace dnngraph::cpu {
const ConvertKernels* avx512_convert_kernels() { return DNNGRAPH_X86_TABLE(kSimdConvertKernels<simd::VecAvx512>); }
}  // namespace dnngraph::cpu
