// The portable tensor-core GEMM core (sm_80 and later): a multi-stage cp.async pipeline into
// swizzled shared memory, ldmatrix fragment loads, mma.sync m16n8k16 (bf16/fp16 in, fp32
// accumulation), and the generated epilogue applied to the accumulators in registers.
//
// Operand tiles are either K-major (rows = m or n, BK contiguous k) or MN-major (rows = k, BM or BN
// contiguous m or n); ldmatrix.trans turns the MN-major ones into the same fragments. Loaders fill
// one pipeline stage per call, so a convolution reuses the core with gathering loaders
// (conv_implicit_gemm.cuh).
#pragma once
#include "gemm_common.cuh"

namespace dg {

// Fills ROWS x COLS tiles of a strided matrix: tile element (i, j) is the global element
// (r0 + i, c0 + j) at base + row * rs + col * cs, zero outside [0, rows) x [0, cols). K_MAJOR:
// the column index advances with the k tile; else the row index does. VEC: cs == 1 and every row
// start is 16-byte aligned, so each 8-element chunk is one cp.async (partial at the edge).
template <int ROWS, int COLS, int THREADS, bool K_MAJOR, bool VEC>
struct StridedLoader {
  const u16* base;
  i64 rs, cs;
  i64 rows, cols;
  i64 fixed;  // the origin along the non-k axis (m0 or n0)
  int bk;

  __device__ __forceinline__ void load(u32 tile, int kt) const {
    const i64 r0 = K_MAJOR ? fixed : (i64)kt * bk;
    const i64 c0 = K_MAJOR ? (i64)kt * bk : fixed;
    constexpr int CHUNKS = COLS / 8;
    static_assert((ROWS * CHUNKS) % THREADS == 0, "tile chunks must split evenly over the threads");
#pragma unroll
    for (int u = 0; u < ROWS * CHUNKS / THREADS; ++u) {
      const int id = (int)threadIdx.x + u * THREADS;
      const int i = id / CHUNKS, jc = id % CHUNKS;
      const i64 r = r0 + i, c = c0 + jc * 8;
      const u32 dst = tile + tile_offset<COLS>(i, jc);
      if (VEC) {
        i64 bytes = (r < rows && c < cols) ? (cols - c) * 2 : 0;
        bytes = bytes > 16 ? 16 : bytes;
        cp_async16(dst, bytes > 0 ? (const void*)(base + r * rs + c) : (const void*)base, (int)bytes);
      } else {
        u16 v[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) v[e] = (r < rows && c + e < cols) ? base[r * rs + (c + e) * cs] : (u16)0;
        uint4 w;
        w.x = v[0] | ((u32)v[1] << 16);
        w.y = v[2] | ((u32)v[3] << 16);
        w.z = v[4] | ((u32)v[5] << 16);
        w.w = v[6] | ((u32)v[7] << 16);
        asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(w.x), "r"(w.y), "r"(w.z), "r"(w.w)
                     : "memory");
      }
    }
  }
};

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N>
struct MmaShape {
  static constexpr int THREADS = WARPS_M * WARPS_N * 32;
  static constexpr int WTM = BM / WARPS_M, WTN = BN / WARPS_N;  // warp tile
  static constexpr int MI = WTM / 16, NI = WTN / 8;              // mma tiles per warp
  static_assert(WTM % 16 == 0 && WTN % 16 == 0 && BK % 16 == 0, "warp tiles are whole m16 x n16 blocks");
};

// The main loop: acc (per warp MI x NI m16n8 tiles) = sum over k tiles of A tile x B tile.
template <int DT, int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES, bool A_KM, bool B_KM, class LA,
          class LB>
__device__ __forceinline__ void mma_mainloop(const LA& la, const LB& lb, int ktiles, char* smem,
                                             float (&acc)[BM / WARPS_M / 16][BN / WARPS_N / 8][4]) {
  typedef MmaShape<BM, BN, BK, WARPS_M, WARPS_N> S;
  constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2;
  constexpr int A_COLS = A_KM ? BK : BM, B_COLS = B_KM ? BK : BN;
  const u32 base = smem_u32(smem);
  const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
  const int wm = warp % WARPS_M, wn = warp / WARPS_M;
#pragma unroll
  for (int i = 0; i < S::MI; ++i)
#pragma unroll
    for (int j = 0; j < S::NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ktiles) {
      la.load(base + s * (A_BYTES + B_BYTES), s);
      lb.load(base + s * (A_BYTES + B_BYTES) + A_BYTES, s);
    }
    cp_async_commit();
  }
  for (int kt = 0; kt < ktiles; ++kt) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // stage kt landed for every thread; stage kt-1 is no longer read
    const int pf = kt + STAGES - 1;
    if (pf < ktiles) {
      const u32 st = base + (pf % STAGES) * (A_BYTES + B_BYTES);
      la.load(st, pf);
      lb.load(st + A_BYTES, pf);
    }
    cp_async_commit();
    const u32 a_tile = base + (kt % STAGES) * (A_BYTES + B_BYTES);
    const u32 b_tile = a_tile + A_BYTES;
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      u32 af[S::MI][4];
      u32 bf[S::NI][2];
#pragma unroll
      for (int mi = 0; mi < S::MI; ++mi) {
        if (A_KM) {
          const int row = wm * S::WTM + mi * 16 + (lane & 15);
          ldmatrix_x4(a_tile + tile_offset<A_COLS>(row, kk * 2 + (lane >> 4)), af[mi]);
        } else {
          const int q = lane >> 3;
          const int k = kk * 16 + (lane & 7) + ((q >> 1) << 3);
          ldmatrix_x4_trans(a_tile + tile_offset<A_COLS>(k, (wm * S::WTM + mi * 16) / 8 + (q & 1)), af[mi]);
        }
      }
#pragma unroll
      for (int nj = 0; nj < S::NI / 2; ++nj) {
        const int q = lane >> 3;
        u32 r[4];
        if (B_KM) {
          const int n = wn * S::WTN + nj * 16 + (lane & 7) + ((q >> 1) << 3);
          ldmatrix_x4(b_tile + tile_offset<B_COLS>(n, kk * 2 + (q & 1)), r);
        } else {
          const int k = kk * 16 + (lane & 7) + ((q & 1) << 3);
          ldmatrix_x4_trans(b_tile + tile_offset<B_COLS>(k, (wn * S::WTN + nj * 16) / 8 + (q >> 1)), r);
        }
        bf[2 * nj][0] = r[0];
        bf[2 * nj][1] = r[1];
        bf[2 * nj + 1][0] = r[2];
        bf[2 * nj + 1][1] = r[3];
      }
#pragma unroll
      for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < S::NI; ++ni) mma_16816<DT>(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
    }
  }
  cp_async_wait<0>();
}

// The accumulators of one output tile through the epilogue, staged in shared memory (the pipeline
// buffers are free by then: every cp.async has landed and every warp has left the main loop).
template <int BM, int BN, int WARPS_M, int WARPS_N, class Ep>
__device__ __forceinline__ void mma_epilogue(const PointwiseParams& p, typename Ep::Index (&c)[Ep::kRank], i64 m0,
                                             i64 n0, i64 M, i64 N, int vec,
                                             const float (&acc)[BM / WARPS_M / 16][BN / WARPS_N / 8][4], float* red,
                                             float* stage) {
  typedef MmaShape<BM, BN, 16, WARPS_M, WARPS_N> S;
  constexpr int LD = BN + 4;  // a row pad that spreads the fragment stores over the banks
  const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
  const int wm = warp % WARPS_M, wn = warp / WARPS_M;
  __syncthreads();
#pragma unroll
  for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < S::NI; ++ni) {
      const int r = wm * S::WTM + mi * 16 + (lane >> 2);
      const int col = wn * S::WTN + ni * 8 + (lane & 3) * 2;
      *reinterpret_cast<float2*>(stage + r * LD + col) = make_float2(acc[mi][ni][0], acc[mi][ni][1]);
      *reinterpret_cast<float2*>(stage + (r + 8) * LD + col) = make_float2(acc[mi][ni][2], acc[mi][ni][3]);
    }
  __syncthreads();
  epilogue_staged<Ep>(p, c, stage, LD, BM, BN, m0, n0, M, N, vec, red, (int)threadIdx.x, S::THREADS);
}

// One CTA per output tile (linear over batch x tiles). The generated kernel calls this.
template <int DT, int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES, bool A_KM, bool B_KM, bool VEC_A,
          bool VEC_B, class Ep>
__device__ __forceinline__ void gemm_mma_sync(const GemmParams& g, const PointwiseParams& p) {
  extern __shared__ __align__(128) char smem[];
  constexpr int THREADS = WARPS_M * WARPS_N * 32;
  float red[Ep::kFull > 0 ? Ep::kFull : 1];
  Ep::init_full(red);
  i64 b;
  int tm, tn;
  tile_coords(blockIdx.x, g.tiles_m, g.tiles_n, b, tm, tn);
  typename Ep::Index c[Ep::kRank];
#pragma unroll
  for (int d = 0; d < Ep::kRank; ++d) c[d] = 0;
  i64 a_off, b_off;
  batch_coords<Ep>(g, b, a_off, b_off, c);
  const i64 m0 = (i64)tm * BM, n0 = (i64)tn * BN;
  StridedLoader<A_KM ? BM : BK, A_KM ? BK : BM, THREADS, A_KM, VEC_A> la;
  la.base = static_cast<const u16*>(g.a) + a_off;
  la.rs = A_KM ? g.a_stride_m : g.a_stride_k;
  la.cs = A_KM ? g.a_stride_k : g.a_stride_m;
  la.rows = A_KM ? g.M : g.K;
  la.cols = A_KM ? g.K : g.M;
  la.fixed = m0;
  la.bk = BK;
  StridedLoader<B_KM ? BN : BK, B_KM ? BK : BN, THREADS, B_KM, VEC_B> lb;
  lb.base = static_cast<const u16*>(g.b) + b_off;
  lb.rs = B_KM ? g.b_stride_n : g.b_stride_k;
  lb.cs = B_KM ? g.b_stride_k : g.b_stride_n;
  lb.rows = B_KM ? g.N : g.K;
  lb.cols = B_KM ? g.K : g.N;
  lb.fixed = n0;
  lb.bk = BK;
  float acc[BM / WARPS_M / 16][BN / WARPS_N / 8][4];
  const int ktiles = (int)((g.K + BK - 1) / BK);
  mma_mainloop<DT, BM, BN, BK, WARPS_M, WARPS_N, STAGES, A_KM, B_KM>(la, lb, ktiles, smem, acc);
  mma_epilogue<BM, BN, WARPS_M, WARPS_N, Ep>(p, c, m0, n0, g.M, g.N, g.epi_vec, acc, red,
                                            reinterpret_cast<float*>(smem));
  Ep::finish_full(p, red);
}

}  // namespace dg
