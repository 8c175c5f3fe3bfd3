// 3xTF32: FLOAT products at about fp32's accuracy on the TF32 tensor cores (sm_90a), for graphs
// that do not allow TF32. Each operand element x is big + small: big is x with its low 13 mantissa
// bits dropped (what the tensor cores read of x itself), small = x - big exactly (which they
// truncate in turn), and a product a b is big(a) big(b) + big(a) small(b) + small(a) big(b). The
// dropped small(a) small(b) and the two truncated smalls (each term below 2^-20 of |a b|) leave a
// product within 3 x 2^-20 of its value at worst (TF32 alone: 2^-10); sums accumulate in fp32.
// One caveat: an infinite input meets a zero small part, so it gives NaN where fp32 gives infinity.
//
// The small parts are written by the producer warpgroup's warps 1-3 (warp 0's first thread issues
// the loads): per stage, once its loads have landed (the full barrier), they read the A and B
// tiles 16 bytes at a time and write x - big beside them (WgmmaSmem<..., X3>::SMALL, the same
// swizzled layout, as the operation is elementwise), then arrive on the stage's split barrier,
// which the consumers wait on instead. The writes are generic-proxy stores that wgmma reads
// through the async proxy: each writer fences before its warp arrives.
#pragma once
#include "hopper_sync.cuh"
#include "splitk_fixup.cuh"

namespace dg {

// Config::kTf32x3 1: FLOAT inputs without TF32, as three TF32 products (below).
template <class C, class = int>
struct Tf32x3Of {
  enum : bool { value = false };
};
template <class C>
struct Tf32x3Of<C, decltype((int)C::kTf32x3)> {
  enum : bool { value = (bool)C::kTf32x3 };
};

// Warps of the producer warpgroup that write the small parts (its warps 1-3): the split barrier's count.
constexpr int kTf32x3SplitWarps = 3;

__device__ __forceinline__ float tf32x3_small(float x) {
  return x - __uint_as_float(__float_as_uint(x) & 0xffffe000u);
}

// The split barriers of every stage (thread 0, before init_stage_barriers' fence).
template <class S, int STAGES>
__device__ __forceinline__ void tf32x3_init_barriers(u32 base) {
  for (int s = 0; s < STAGES; ++s) mbar_init(base + S::SPLIT_BARRIERS + 8 * s, kTf32x3SplitWarps);
}

// A splitting thread (t = 0 .. 32 * kTf32x3SplitWarps - 1): every stage of every unit this CTA
// owns (a tile, or with split-K one k range of it), in the producer's order.
template <class S, int STAGES>
__device__ __forceinline__ void tf32x3_split(u32 base, const UnitWalk& walk, int t) {
  constexpr int CHUNKS = S::SMALL / 16, THREADS = 32 * kTf32x3SplitWarps;
  static_assert(S::SMALL % 1024 == 0, "the small parts keep the operands' 1024-byte swizzle phase");
  char* smem = smem_pointer(base);
  int s = 0;
  u32 phase = 0;
  const i64 ctas = gridDim.x, units = walk.count(ctas);
  for (i64 u = blockIdx.x; u < units; u += ctas) {
    const WorkUnit w = walk.at(u, ctas);
    for (int kt = w.kb; kt < w.ke; ++kt) {
      mbar_wait(base + S::BARRIERS + 8 * s, phase);
      const float4* src = reinterpret_cast<const float4*>(smem + s * S::STAGE_BYTES);
      float4* dst = reinterpret_cast<float4*>(smem + s * S::STAGE_BYTES + S::SMALL);
#pragma unroll 4
      for (int i = t; i < CHUNKS; i += THREADS) {
        const float4 v = src[i];
        dst[i] = make_float4(tf32x3_small(v.x), tf32x3_small(v.y), tf32x3_small(v.z), tf32x3_small(v.w));
      }
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      __syncwarp();
      if (t % 32 == 0) mbar_arrive(base + S::SPLIT_BARRIERS + 8 * s);
      if (++s == STAGES) {
        s = 0;
        phase ^= 1;
      }
    }
  }
}

}  // namespace dg
