// Hopper's synchronization and data-movement primitives the wgmma kernels share (sm_90a): TMA
// descriptors and loads completing on mbarriers, cluster ranks, barriers and multicast, named
// barriers, programmatic dependent launch, wgmma's fence / commit / wait, and the 128-byte-swizzled
// shared-memory window with its matrix descriptors.
#pragma once
#include "gemm_common.cuh"

namespace dg {

// A CUtensorMap, passed by value as a __grid_constant__ kernel parameter.
struct __align__(64) TmaDesc {
  u64 w[16];
};

__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(u32 bar, u32 parity) {
  u32 ok;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
  while (!mbar_try_wait(bar, parity)) {
  }
}

__device__ __forceinline__ void tma_load_3d(u32 dst, const TmaDesc* map, u32 bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(
          dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
__device__ __forceinline__ void tma_load_4d(u32 dst, const TmaDesc* map, u32 bar, int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], "
      "[%2];\n" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
__device__ __forceinline__ void tma_load_5d(u32 dst, const TmaDesc* map, u32 bar, int c0, int c1, int c2, int c3,
                                            int c4) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, %7}], "
      "[%2];\n" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
      : "memory");
}

// Thread-block clusters (CLUSTER = 2 along M): the CTA's rank, a barrier over every thread of the
// cluster, an arrive on the mbarrier at the same shared offset in CTA `rank` (mapa), and a TMA load
// written to the same offset in every CTA of `mask`, completing on each one's mbarrier at `bar`'s
// offset. The arrive has the default (CTA-scope release) semantics, as CUTLASS's ClusterBarrier
// arrives: it orders the consumer's wgmma reads (complete at wgmma.wait_group) before the peer's
// TMA refill, which waits on the barrier. An explicit .release.cluster costs a MEMBAR.ALL.GPU per
// arrive in SASS (it waited on the epilogue's global stores: cluster=2 ran 1.5-2.3x slower).
__device__ __forceinline__ u32 cluster_ctarank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive_cluster(u32 bar, u32 rank) {
  asm volatile(
      "{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
      "r"(rank)
      : "memory");
}
__device__ __forceinline__ void tma_load_3d_multicast(u32 dst, const TmaDesc* map, u32 bar, int c0, int c1, int c2,
                                                      unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%3, "
      "%4, %5}], [%2], %6;\n" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "h"(mask)
      : "memory");
}

__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// Programmatic dependent launch (LaunchOrder::PROGRAMMATIC on the host, sm_90): the next kernel
// in the stream may be scheduled now (its CTAs take the SMs ours leave and wait in their own
// pdl_start), then this grid waits until the kernel before it has finished and its writes are
// visible. Every thread, before any global memory access; it returns at once after a plain launch.
__device__ __forceinline__ void pdl_start() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// The dynamic shared memory from its first 1024-byte boundary, where the tiles start: the
// 128-byte swizzle pattern repeats every 1024 bytes.
__device__ __forceinline__ u32 swizzle_aligned_smem() {
  extern __shared__ __align__(1024) char smem_raw[];
  return (smem_u32(smem_raw) + 1023u) & ~1023u;
}
// The generic pointer to shared-memory address `addr` (of swizzle_aligned_smem's window).
__device__ __forceinline__ char* smem_pointer(u32 addr) {
  extern __shared__ __align__(1024) char smem_raw[];
  return smem_raw + (addr - smem_u32(smem_raw));
}

// Shared-memory matrix descriptor with 128-byte swizzle.
__device__ __forceinline__ u64 smem_desc(u32 addr, u32 lbo, u32 sbo) {
  return (u64)((addr & 0x3FFFFu) >> 4) | ((u64)(lbo >> 4) << 16) | ((u64)(sbo >> 4) << 32) | (1ull << 62);
}

}  // namespace dg
