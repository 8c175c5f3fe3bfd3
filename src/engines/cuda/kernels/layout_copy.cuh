// cuda_layout_copy's kernels: unit l of a strided copy (graph/layout_copies.hpp, in units of
// U bytes) is read at src + sum(unravel(l, src dims) * src strides) and written at dst + the same
// over the destination's dims and strides. Dims and strides are kernel arguments: one compiled
// module serves every shape. I is the index type: 32-bit division where every count fits.
#pragma once

namespace dg {

constexpr int kLayoutMaxRank = 8;

struct LayoutCopyParams {
  const char* src;
  char* dst;
  long long count;  // units
  int src_rank, dst_rank;
  long long src_dims[kLayoutMaxRank], src_strides[kLayoutMaxRank];
  long long dst_dims[kLayoutMaxRank], dst_strides[kLayoutMaxRank];
};

template <int U> struct LayoutUnit;
template <> struct LayoutUnit<1> { typedef unsigned char type; };
template <> struct LayoutUnit<2> { typedef unsigned short type; };
template <> struct LayoutUnit<4> { typedef unsigned int type; };
template <> struct LayoutUnit<8> { typedef uint2 type; };
template <> struct LayoutUnit<16> { typedef uint4 type; };

template <class I>
__device__ __forceinline__ long long layout_offset(I l, int rank, const long long* dims, const long long* strides) {
  long long off = 0;
  for (int i = rank - 1; i > 0; --i) {
    const I d = (I)dims[i];
    off += (long long)(l % d) * strides[i];
    l /= d;
  }
  return off + (long long)l * strides[0];
}

template <int U, class I>
__device__ __forceinline__ void layout_copy(const LayoutCopyParams& P) {
  typedef typename LayoutUnit<U>::type T;
  const T* src = reinterpret_cast<const T*>(P.src);
  T* dst = reinterpret_cast<T*>(P.dst);
  const I count = (I)P.count, step = (I)gridDim.x * (I)blockDim.x;
  for (I l = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; l < count; l += step)
    dst[layout_offset<I>(l, P.dst_rank, P.dst_dims, P.dst_strides)] =
        src[layout_offset<I>(l, P.src_rank, P.src_dims, P.src_strides)];
}

}  // namespace dg

#define DG_LAYOUT_COPY_KERNEL(U, I, NAME) \
  extern "C" __global__ void __launch_bounds__(256) NAME(const dg::LayoutCopyParams P) { dg::layout_copy<U, I>(P); }
