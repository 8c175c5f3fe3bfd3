// The SIMD bodies of the conversion runs over a vector type V of simd/ (convert_kernels_<isa>.cpp
// includes this inside its ISA's target region): V's kWidth-lane bf16 and fp16 loads and stores,
// then the scalar conversions for the tail. No include guard: it is meant to be included once
// per ISA file, after <cstring>.

namespace dnngraph::cpu {
namespace {

template <class V>
void to_fp32_simd(const void* src, DataType t, int64_t n, float* dst) {
  const uint16_t* s = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  if (t == DataType::FLOAT) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  if (t == DataType::BFLOAT16) {
    for (; i + V::kWidth <= n; i += V::kWidth) V::store(dst + i, V::load_bf16(s + i));
    for (; i < n; ++i) dst[i] = dtype::bf16_to_float(s[i]);
    return;
  }
  for (; i + V::kWidth <= n; i += V::kWidth) V::store(dst + i, V::load_fp16(s + i));
  for (; i < n; ++i) dst[i] = dtype::half_to_float(s[i]);
}

template <class V>
void from_fp32_simd(const float* src, int64_t n, DataType t, void* dst) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  if (t == DataType::FLOAT) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  if (t == DataType::BFLOAT16) {
    for (; i + V::kWidth <= n; i += V::kWidth) V::store_bf16(d + i, V::load(src + i));
    for (; i < n; ++i) d[i] = dtype::float_to_bf16(src[i]);
    return;
  }
  for (; i + V::kWidth <= n; i += V::kWidth) V::store_fp16(d + i, V::load(src + i));
  for (; i < n; ++i) d[i] = dtype::float_to_half(src[i]);
}

template <class V>
constexpr ConvertKernels kSimdConvertKernels{V::kIsa, to_fp32_simd<V>, from_fp32_simd<V>};

}  // namespace
}  // namespace dnngraph::cpu
