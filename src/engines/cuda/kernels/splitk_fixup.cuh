// Deterministic split-K for the wgmma cores (matmul and conv): the persistent CTAs walk (tile, k
// range) units; each unit's partial 128 x BN sums go to the workspace slice [tile][split] in
// fragment order (float4 i of consumer thread ct at i * 256 + ct); the last split of a tile to
// finish (a per-tile counter, zeroed before the launch) adds every slice in split order (the same
// sum whoever finishes last: 0 + s0 + s1 + ...) and runs the epilogue, so the epilogue sees the
// full sum exactly once.
#pragma once
#include "gemm_common.cuh"
#include "work_units.cuh"

namespace dg {

// Work unit u of split-K: tile u / splits, k tiles [kb, ke) of split u % splits (splits = 1: whole
// tiles); UnitWalk's split-K form, for the kernels that walk no stream-K tail.
__device__ __forceinline__ void split_unit(i64 unit, int splits, int ktiles, i64& tile, int& split, int& kb, int& ke) {
  const WorkUnit w = UnitWalk{0, ktiles, splits, 0}.at(unit, 1);
  tile = w.tile;
  split = w.part;
  kb = w.kb;
  ke = w.ke;
}

// bar.red.or over a named barrier: true on every participating thread if v is true on any.
__device__ __forceinline__ bool named_barrier_or(int id, int threads, bool v) {
  u32 out;
  asm volatile(
      "{\n.reg .pred p, q;\nsetp.ne.u32 q, %1, 0;\nbar.red.or.pred p, %2, %3, q;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(out)
      : "r"((u32)v), "r"(id), "r"(threads)
      : "memory");
  return out != 0;
}

// acc += one split's partial sums, as loaded: float4 i holds accumulators 4i .. 4i + 3.
template <int REGS>
__device__ __forceinline__ void add_slice(float (&acc)[REGS], const float4 (&v)[REGS / 4]) {
#pragma unroll
  for (int i = 0; i < REGS / 4; ++i) {
    acc[4 * i] += v[i].x;
    acc[4 * i + 1] += v[i].y;
    acc[4 * i + 2] += v[i].z;
    acc[4 * i + 3] += v[i].w;
  }
}

// One unit's fix-up, run by the 256 consumer threads (ct = 0..255; named barrier 5). ws: the
// slices, slots x slot_parts x 128 x BN floats (slice slot * slot_parts + part), then one int
// counter per slot (zeroed before the launch). Returns true (on every consumer thread) where this
// unit was its tile's last of `parts`: acc then holds the tile's full sums.
template <int REGS>
__device__ __forceinline__ bool splitk_fixup(float (&acc)[REGS], float* ws, i64 slots, i64 slot, int part, int parts,
                                             int slot_parts, int ct) {
  constexpr int BN = REGS * 2;
  // Loads in flight per round: all of a 128-wide tile's slice (16 float4), a 256-wide one's in two
  // rounds, so its 128 accumulators and the loaded values fit the consumers' registers.
  constexpr int CHUNK = REGS / 4 < 16 ? REGS / 4 : 16;
  int* counters = reinterpret_cast<int*>(ws + slots * slot_parts * (128 * BN));
  float4* slices = reinterpret_cast<float4*>(ws + slot * slot_parts * (128 * BN));
#pragma unroll
  for (int i = 0; i < REGS / 4; ++i)
    __stcg(slices + (i64)part * (32 * BN) + i * 256 + ct,
           make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
  __threadfence();
  bool last = false;
  if (ct == 0) last = atomicAdd(counters + slot, 1) == parts - 1;
  if (!named_barrier_or(5, 256, last)) return false;
  __threadfence();
  // Every slice, this one's too (read back), in part order: the same sum whoever finishes last.
#pragma unroll
  for (int i = 0; i < REGS; ++i) acc[i] = 0.0f;
#pragma unroll 1
  for (int sp = 0; sp < parts; ++sp) {
#pragma unroll
    for (int c0 = 0; c0 < REGS / 4; c0 += CHUNK) {
      float4 v[CHUNK];
#pragma unroll
      for (int i = 0; i < CHUNK; ++i) v[i] = __ldcg(slices + (i64)sp * (32 * BN) + (c0 + i) * 256 + ct);
#pragma unroll
      for (int i = 0; i < CHUNK; ++i) {
        acc[4 * (c0 + i)] += v[i].x;
        acc[4 * (c0 + i) + 1] += v[i].y;
        acc[4 * (c0 + i) + 2] += v[i].z;
        acc[4 * (c0 + i) + 3] += v[i].w;
      }
    }
  }
  return true;
}

// Split-K's form: every tile in `splits` parts (slot = tile).
template <int REGS>
__device__ __forceinline__ bool splitk_fixup(float (&acc)[REGS], float* ws, i64 tiles, i64 tile, int split, int splits,
                                             int ct) {
  return splitk_fixup<REGS>(acc, ws, tiles, tile, split, splits, splits, ct);
}

// Split-K inside a cluster (the conv engine's knob split_cluster): the `splits` CTAs of a cluster
// take the k ranges of one tile (cluster rank = split), so the partial sums meet in distributed
// shared memory instead of a global workspace: no counters, no memset launch, no L2 round trips.
// Each rank above 0 leaves its sums in its own stage ring (`ring`, idle once both consumer
// warpgroups are past their last k step: named barrier 5), float4 i of consumer thread ct at
// (i * 256 + ct) * 16; rank 0 adds them in rank order (the same bits on every run) and runs the
// epilogue. A cluster barrier waits for every thread of the cluster that has not exited: the
// producer warpgroups call none and exit once their loads are issued, so only the consumers meet
// there. The second one keeps each rank's shared memory alive until rank 0 has read it.
// Returns true on rank 0, whose acc then holds the tile's full sums.
template <int REGS>
__device__ __forceinline__ bool splitk_fixup_cluster(float (&acc)[REGS], u32 ring, int split, int splits, int ct) {
  asm volatile("bar.sync 5, 256;\n" ::: "memory");
  if (split > 0) {
#pragma unroll
    for (int i = 0; i < REGS / 4; ++i)
      asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(ring + (u32)(i * 256 + ct) * 16),
                   "f"(acc[4 * i]), "f"(acc[4 * i + 1]), "f"(acc[4 * i + 2]), "f"(acc[4 * i + 3])
                   : "memory");
  }
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
  if (split == 0) {
#pragma unroll 1
    for (int r = 1; r < splits; ++r) {
      float4 v[REGS / 4];
#pragma unroll
      for (int i = 0; i < REGS / 4; ++i)
        asm volatile(
            "{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %4, %5;\nld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [ra];\n}\n"
            : "=f"(v[i].x), "=f"(v[i].y), "=f"(v[i].z), "=f"(v[i].w)
            : "r"(ring + (u32)(i * 256 + ct) * 16), "r"(r)
            : "memory");
      add_slice<REGS>(acc, v);
    }
  }
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
  return split == 0;
}

}  // namespace dg
