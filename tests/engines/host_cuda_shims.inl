// The CUDA names the kernel headers (src/engines/cuda/kernels/*.cuh) use, for compiling them on
// the host in a test: include inside the test's own namespace (after <cmath> and core/dtype.hpp),
// before the .cuh, and #undef __device__ and __forceinline__ after it.
#define __device__
#define __forceinline__ inline
inline unsigned __float_as_uint(float f) { return dnngraph::dtype::float_bits(f); }
inline float __uint_as_float(unsigned u) { return dnngraph::dtype::bits_float(u); }
struct uint2 {
  unsigned x, y;
};
struct uint4 {
  unsigned x, y, z, w;
};
inline float fabsf(float x) { return std::fabs(x); }
inline float rintf(float x) { return std::nearbyint(x); }
