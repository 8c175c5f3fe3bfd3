// The portable tensor-core GEMM core (sm_80 and later): a multi-stage cp.async pipeline into
// swizzled shared memory, ldmatrix fragment loads, mma.sync m16n8k16 (bf16/fp16 in) or m16n8k8
// (fp32 in, rounded to tf32), fp32 accumulation, and the generated epilogue.
//
// Operand tiles are either K-major (rows = m or n, BK contiguous k) or MN-major (rows = k, BM or BN
// contiguous m or n); ldmatrix.trans turns the MN-major 16-bit ones into the same fragments, and
// 32-bit ones (which ldmatrix cannot transpose) are read element by element. Loaders fill one
// pipeline stage per call, so a convolution reuses the core with gathering loaders
// (conv_implicit_gemm.cuh).
#pragma once
#include "gemm_common.cuh"

namespace dg {

// Fills ROWS x COLS tiles of a strided matrix: tile element (i, j) is the global element
// (r0 + i, c0 + j) at base + row * rs + col * cs, zero outside [0, rows) x [0, cols). K_MAJOR:
// the column index advances with the k tile; else the row index does. VEC: cs == 1 and every row
// start is 16-byte aligned, so each 16-byte chunk (16 / ES elements) is one cp.async (partial at
// the edge).
template <int ROWS, int COLS, int THREADS, bool K_MAJOR, bool VEC, int ES = 2>
struct StridedLoader {
  typedef typename RawElem<ES>::type E;
  const E* base;
  i64 rs, cs;
  i64 rows, cols;
  i64 fixed;  // the origin along the non-k axis (m0 or n0)
  int bk;

  __device__ __forceinline__ void init(const void* base_, i64 rs_, i64 cs_, i64 rows_, i64 cols_, i64 fixed_, int bk_) {
    base = static_cast<const E*>(base_);
    rs = rs_;
    cs = cs_;
    rows = rows_;
    cols = cols_;
    fixed = fixed_;
    bk = bk_;
  }

  __device__ __forceinline__ void load(u32 tile, int kt) const {
    const i64 r0 = K_MAJOR ? fixed : (i64)kt * bk;
    const i64 c0 = K_MAJOR ? (i64)kt * bk : fixed;
    constexpr int EPC = 16 / ES, CHUNKS = COLS / EPC;  // elements per chunk, chunks per row
    static_assert((ROWS * CHUNKS) % THREADS == 0, "tile chunks must split evenly over the threads");
#pragma unroll
    for (int u = 0; u < ROWS * CHUNKS / THREADS; ++u) {
      const int id = (int)threadIdx.x + u * THREADS;
      const int i = id / CHUNKS, jc = id % CHUNKS;
      const i64 r = r0 + i, c = c0 + jc * EPC;
      const u32 dst = tile + tile_offset<COLS, ES>(i, jc);
      if (VEC) {
        i64 bytes = (r < rows && c < cols) ? (cols - c) * ES : 0;
        bytes = bytes > 16 ? 16 : bytes;
        cp_async16(dst, bytes > 0 ? (const void*)(base + r * rs + c) : (const void*)base, (int)bytes);
      } else {
        u32 w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
        for (int e = 0; e < EPC; ++e) {
          const u32 v = (r < rows && c + e < cols) ? (u32)base[r * rs + (c + e) * cs] : 0u;
          w[e * ES / 4] |= v << (e * ES % 4 * 8);
        }
        asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3])
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
  static_assert(WTM % 16 == 0 && WTN % 16 == 0 && BK % 8 == 0, "warp tiles are whole m16 x n16 blocks");
};

// One 32-bit element (row, col) of a swizzled tile of COLS 32-bit columns.
template <int COLS>
__device__ __forceinline__ u32 lds_elem32(u32 tile, int row, int col) {
  u32 v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(tile + tile_offset<COLS, 4>(row, col >> 2) + (col & 3) * 4));
  return v;
}

// The A fragment of the m16 block at tile row/column m for k step kk (of MmaOperand<DT>::K_STEP).
template <int DT, int COLS, bool KM>
__device__ __forceinline__ void load_a_frag(u32 tile, int m, int kk, int lane, u32 (&a)[4]) {
  typedef MmaOperand<DT> Op;
  if (KM) {
    ldmatrix_x4(tile + tile_offset<COLS, Op::ES>(m + (lane & 15), kk * 2 + (lane >> 4)), a);
  } else if (Op::ES == 2) {
    const int q = lane >> 3;
    const int k = kk * 16 + (lane & 7) + ((q >> 1) << 3);
    ldmatrix_x4_trans(tile + tile_offset<COLS>(k, m / 8 + (q & 1)), a);
  } else {  // a0..a3 = (m g, k t), (m g+8, k t), (m g, k t+4), (m g+8, k t+4); g = lane / 4, t = lane % 4
    const int g = lane >> 2, k = kk * 8 + (lane & 3);
    a[0] = lds_elem32<COLS>(tile, k, m + g);
    a[1] = lds_elem32<COLS>(tile, k, m + g + 8);
    a[2] = lds_elem32<COLS>(tile, k + 4, m + g);
    a[3] = lds_elem32<COLS>(tile, k + 4, m + g + 8);
  }
#pragma unroll
  for (int e = 0; e < 4; ++e) a[e] = Op::round(a[e]);
}

// The B fragments of the two n8 blocks at tile row/column n and n + 8 for k step kk.
template <int DT, int COLS, bool KM>
__device__ __forceinline__ void load_b_frags(u32 tile, int n, int kk, int lane, u32 (&b0)[2], u32 (&b1)[2]) {
  typedef MmaOperand<DT> Op;
  const int q = lane >> 3;
  u32 r[4];
  if (KM) {
    ldmatrix_x4(tile + tile_offset<COLS, Op::ES>(n + (lane & 7) + ((q >> 1) << 3), kk * 2 + (q & 1)), r);
  } else if (Op::ES == 2) {
    const int k = kk * 16 + (lane & 7) + ((q & 1) << 3);
    ldmatrix_x4_trans(tile + tile_offset<COLS>(k, n / 8 + (q >> 1)), r);
  } else {  // b0, b1 = (k t, n g), (k t+4, n g)
    const int g = lane >> 2, k = kk * 8 + (lane & 3);
    r[0] = lds_elem32<COLS>(tile, k, n + g);
    r[1] = lds_elem32<COLS>(tile, k + 4, n + g);
    r[2] = lds_elem32<COLS>(tile, k, n + 8 + g);
    r[3] = lds_elem32<COLS>(tile, k + 4, n + 8 + g);
  }
  b0[0] = Op::round(r[0]);
  b0[1] = Op::round(r[1]);
  b1[0] = Op::round(r[2]);
  b1[1] = Op::round(r[3]);
}

// The main loop: acc (per warp MI x NI m16n8 tiles) = sum over k tiles of A tile x B tile.
template <int DT, int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES, bool A_KM, bool B_KM, class LA,
          class LB>
__device__ __forceinline__ void mma_mainloop(const LA& la, const LB& lb, int ktiles, char* smem,
                                             float (&acc)[BM / WARPS_M / 16][BN / WARPS_N / 8][4]) {
  typedef MmaShape<BM, BN, BK, WARPS_M, WARPS_N> S;
  typedef MmaOperand<DT> Op;
  constexpr int A_BYTES = BM * BK * Op::ES, B_BYTES = BN * BK * Op::ES;
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
    for (int kk = 0; kk < BK / Op::K_STEP; ++kk) {
      u32 af[S::MI][4];
      u32 bf[S::NI][2];
#pragma unroll
      for (int mi = 0; mi < S::MI; ++mi) load_a_frag<DT, A_COLS, A_KM>(a_tile, wm * S::WTM + mi * 16, kk, lane, af[mi]);
#pragma unroll
      for (int nj = 0; nj < S::NI / 2; ++nj)
        load_b_frags<DT, B_COLS, B_KM>(b_tile, wn * S::WTN + nj * 16, kk, lane, bf[2 * nj], bf[2 * nj + 1]);
#pragma unroll
      for (int mi = 0; mi < S::MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < S::NI; ++ni) Op::mma(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
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

// The start of an mma.sync CTA: its output tile (linear over batch x tiles), the epilogue's full
// reductions set up and its coordinates zeroed.
template <class Ep>
__device__ __forceinline__ void mma_tile_start(int tiles_m, int tiles_n, float* red, i64& b, int& tm, int& tn,
                                               typename Ep::Index (&c)[Ep::kRank]) {
  Ep::init_full(red);
  tile_coords(blockIdx.x, tiles_m, tiles_n, b, tm, tn);
#pragma unroll
  for (int d = 0; d < Ep::kRank; ++d) c[d] = 0;
}

// The configuration of an mma.sync kernel (matmul or implicit-GEMM convolution) as the generated
// kernel passes it: kDataType, the tile kTileM x kTileN x kTileK over kWarpsM x kWarpsN warps,
// kStages and the Epilogue. Enumerators, not static constexpr members: NVRTC would emit a device
// global for each.
template <class Cfg>
struct MmaSyncCta {
  typedef Cfg Config;
  enum : int { DT = Config::kDataType, BM = Config::kTileM, BN = Config::kTileN, BK = Config::kTileK };
  enum : int { WARPS_M = Config::kWarpsM, WARPS_N = Config::kWarpsN, STAGES = Config::kStages };
  enum : int { THREADS = WARPS_M * WARPS_N * 32, ES = MmaOperand<DT>::ES };
  typedef typename Config::Epilogue Ep;
  typedef typename RawElem<ES>::type E;
};

// One CTA of an mma.sync kernel: its output tile (linear over batch x tiles), the operands'
// loaders, the main loop and the epilogue. Operands<MmaSyncCta<Config>> says how A and B load: their
// loader types A and B and majors (A_KM, B_KM), batch() (batch index -> the operands' element
// offsets and the epilogue's batch coordinates), init_a(la, q, m0, a_off) and init_b(lb, q, n0,
// b_off); q has the GEMM's M, N, K, epi_vec and tile counts (GemmParams, ConvParams).
template <template <class> class Operands, class Config, class Q>
__device__ __forceinline__ void mma_sync_cta(const Q& q, const PointwiseParams& p) {
  typedef MmaSyncCta<Config> Cta;
  typedef Operands<Cta> O;
  typedef typename Cta::Ep Ep;
  constexpr int BM = Cta::BM, BN = Cta::BN, BK = Cta::BK, WARPS_M = Cta::WARPS_M, WARPS_N = Cta::WARPS_N;
  extern __shared__ __align__(128) char smem[];
  float red[Ep::kFull > 0 ? Ep::kFull : 1];
  i64 b;
  int tm, tn;
  typename Ep::Index c[Ep::kRank];
  mma_tile_start<Ep>(q.tiles_m, q.tiles_n, red, b, tm, tn, c);
  i64 a_off, b_off;
  O::batch(q, b, a_off, b_off, c);
  const i64 m0 = (i64)tm * BM, n0 = (i64)tn * BN;
  typename O::A la;
  O::init_a(la, q, m0, a_off);
  typename O::B lb;
  O::init_b(lb, q, n0, b_off);
  float acc[BM / WARPS_M / 16][BN / WARPS_N / 8][4];
  const int ktiles = (int)((q.K + BK - 1) / BK);
  mma_mainloop<Cta::DT, BM, BN, BK, WARPS_M, WARPS_N, Cta::STAGES, O::A_KM, O::B_KM>(la, lb, ktiles, smem, acc);
  mma_epilogue<BM, BN, WARPS_M, WARPS_N, Ep>(p, c, m0, n0, q.M, q.N, q.epi_vec, acc, red,
                                            reinterpret_cast<float*>(smem));
  Ep::finish_full(p, red);
}

// A matmul's operands: strided matrices of either major (Config's kAKMajor, kBKMajor), loaded in
// 16-byte chunks where kAVec / kBVec allow, at the batch's offsets.
template <class Cta>
struct GemmOperands {
  typedef typename Cta::Config Config;
  enum : bool { A_KM = Config::kAKMajor, B_KM = Config::kBKMajor };
  enum : int { BM = Cta::BM, BN = Cta::BN, BK = Cta::BK, ES = Cta::ES };
  typedef typename Cta::E E;
  typedef typename Cta::Ep Ep;

  __device__ __forceinline__ static void batch(const GemmParams& g, i64 b, i64& a_off, i64& b_off,
                                               typename Ep::Index (&c)[Ep::kRank]) {
    batch_coords<Ep>(g, b, a_off, b_off, c);
  }
  typedef StridedLoader<A_KM ? BM : BK, A_KM ? BK : BM, Cta::THREADS, A_KM, Config::kAVec, ES> A;
  typedef StridedLoader<B_KM ? BN : BK, B_KM ? BK : BN, Cta::THREADS, B_KM, Config::kBVec, ES> B;
  __device__ __forceinline__ static void init_a(A& la, const GemmParams& g, i64 m0, i64 a_off) {
    la.init(static_cast<const E*>(g.a) + a_off, A_KM ? g.a_stride_m : g.a_stride_k, A_KM ? g.a_stride_k : g.a_stride_m,
            A_KM ? g.M : g.K, A_KM ? g.K : g.M, m0, BK);
  }
  __device__ __forceinline__ static void init_b(B& lb, const GemmParams& g, i64 n0, i64 b_off) {
    lb.init(static_cast<const E*>(g.b) + b_off, B_KM ? g.b_stride_n : g.b_stride_k, B_KM ? g.b_stride_k : g.b_stride_n,
            B_KM ? g.N : g.K, B_KM ? g.K : g.N, n0, BK);
  }
};

// One CTA per output tile (linear over batch x tiles). The generated kernel calls this with
// MmaSyncCta's configuration plus each operand's major (kAKMajor, kBKMajor) and 16-byte loads
// (kAVec, kBVec).
template <class Config>
__device__ __forceinline__ void gemm_mma_sync(const GemmParams& g, const PointwiseParams& p) {
  mma_sync_cta<GemmOperands, Config>(g, p);
}

}  // namespace dg
