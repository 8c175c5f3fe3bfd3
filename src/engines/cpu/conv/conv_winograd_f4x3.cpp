// cpu_conv_winograd_f4x3: 2D conv_fprop with a 3x3 kernel, stride 1, dilation 1, groups 1, any
// padding and layout, by Winograd F(4x4, 3x3) (Lavin's matrices, points 0, +-1, +-2, inf): each
// 4x4 output tile costs 36 multiplies per (c, k) instead of 144. Per block of tiles: the input
// transform V = B^T d B, then 36 GEMMs M[xi] = V[xi] x U[xi] on the GEMM microkernel (U = G g G^T,
// the transformed weights, packed once per execute, or once per plan and pointer when the weights
// are constant), then Y = A^T M A and the fused epilogue per output pixel. Accuracy: the transforms' constants (up to 8 and 1/24) cost about one decimal
// digit against direct fp32 summation: expect ~1e-4 relative error on typical data.
#include "engines/cpu/conv/conv_winograd_f4x3.hpp"

#include <algorithm>
#include <cmath>

#include "core/checked.hpp"
#include "core/dtype.hpp"
#include "engines/cpu/conv/conv_geometry.hpp"
#include "engines/cpu/conv/direct_conv.hpp"
#include "engines/cpu/cpu_engine.hpp"
#include "engines/cpu/gemm/constant_b.hpp"
#include "engines/cpu/gemm/driver.hpp"
#include "engines/cpu/gemm/pack.hpp"
#include "engines/cpu/simd/transpose_words.hpp"

namespace dnngraph::cpu {
namespace {

constexpr int kT = 6;     // input tile
constexpr int kOut = 4;   // output tile
constexpr int kXi = 36;   // transformed points

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Compiled for AVX-512, AVX2 and the baseline ISA, picked at load time (the loops vectorize). The
// AVX-512 copy took four 3x3 C64 56x56 layers 3.03 -> 2.57 ms on the Intel VM (the transforms were
// 53% of their samples against the GEMMs' 24%; docs/perf.md, 2026-12-06).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DNNGRAPH_WINO_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DNNGRAPH_WINO_CLONES
#endif
// "These rows never overlap": vectorize the loop without alias checks (GCC's pragma; clang
// versions the loop itself, and its request form fails the build where the optimizer is off).
#if defined(__GNUC__) && !defined(__clang__)
#define DNNGRAPH_WINO_IVDEP _Pragma("GCC ivdep")
#else
#define DNNGRAPH_WINO_IVDEP
#endif

// The 4x4 output tiles of g's images: the rows of each of the 36 GEMMs.
int64_t output_tiles(const ConvGeometry& g) {
  return g.n * ((g.dst_sp[1] + kOut - 1) / kOut) * ((g.dst_sp[2] + kOut - 1) / kOut);
}

// The widest GEMM NR the weight transform takes (the tile shapes' widest is 48).
constexpr int64_t kMaxTransformNr = 64;

// The filters of one weight panel (nr output channels from `w`, oc_step floats apart, the input
// channel contiguous, tap t at tap[t]) for input channels [c0, c0 + kTransposeC) into g[c][t][j]
// (9 x nr floats a channel, as weight_transform reads them), by 8 x 8 word transposes: each source
// row is 16 consecutive channels of one (filter, tap), a cache line read at once. The word-by-word
// gather read a word per channel from 9 x nr rows that, 18 KB apart at C = 512, share a few L1
// sets: nearly every weight came from L2.
constexpr int64_t kTransposeC = 16;
void gather_transposed(const float* w, int64_t oc_step, const int64_t (&tap)[9], int64_t c0, int64_t nr, float* g) {
  for (int t = 0; t < 9; ++t)
    for (int64_t j0 = 0; j0 < nr; j0 += 8)
      for (int64_t h = 0; h < kTransposeC; h += 8)
        simd::transpose_8x8_words(reinterpret_cast<const uint32_t*>(w + j0 * oc_step + tap[t] + c0 + h), oc_step,
                                  reinterpret_cast<uint32_t*>(g + h * 9 * nr + t * nr + j0), 9 * nr);
}

// U = G g G^T for n <= kMaxTransformNr kernels at once (n is a GEMM NR): g[9][n] (row-major taps)
// into the 36 rows u + xi * u_ld, n floats each.
DNNGRAPH_WINO_CLONES void weight_transform(const float* g, float* u, int64_t u_ld, int64_t n) {
  static const float G[6][3] = {{1.0f / 4, 0, 0},          {-1.0f / 6, -1.0f / 6, -1.0f / 6},
                                {-1.0f / 6, 1.0f / 6, -1.0f / 6}, {1.0f / 24, 1.0f / 12, 1.0f / 6},
                                {1.0f / 24, -1.0f / 12, 1.0f / 6}, {0, 0, 1}};
  float t[6][3][kMaxTransformNr];
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 3; ++j)
      for (int64_t l = 0; l < n; ++l)
        t[i][j][l] = G[i][0] * g[(0 * 3 + j) * n + l] + G[i][1] * g[(1 * 3 + j) * n + l] + G[i][2] * g[(2 * 3 + j) * n + l];
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j)
      for (int64_t l = 0; l < n; ++l) u[(i * 6 + j) * u_ld + l] = t[i][0][l] * G[j][0] + t[i][1][l] * G[j][1] + t[i][2][l] * G[j][2];
}

// B^T x for six vectors of n lanes: out[i] = sum_j BT[i][j] * in[j] (in/out rows of stride `ld`).
// No row of in or out overlaps another (callers pass distinct buffers, rows at least n apart), as
// DNNGRAPH_WINO_IVDEP tells the compiler: with six rows in and six out GCC needed more alias
// checks than it versions for, and compiled the loop scalar.
DNNGRAPH_WINO_CLONES void bt6(const float* in, int64_t in_ld, float* out, int64_t out_ld, int64_t n) {
  DNNGRAPH_WINO_IVDEP
  for (int64_t c = 0; c < n; ++c) {
    const float d0 = in[c], d1 = in[in_ld + c], d2 = in[2 * in_ld + c], d3 = in[3 * in_ld + c], d4 = in[4 * in_ld + c],
                d5 = in[5 * in_ld + c];
    out[c] = 4 * d0 - 5 * d2 + d4;
    out[out_ld + c] = -4 * d1 - 4 * d2 + d3 + d4;
    out[2 * out_ld + c] = 4 * d1 - 4 * d2 - d3 + d4;
    out[3 * out_ld + c] = -2 * d1 - d2 + 2 * d3 + d4;
    out[4 * out_ld + c] = 2 * d1 - d2 - 2 * d3 + d4;
    out[5 * out_ld + c] = 4 * d1 - 5 * d3 + d5;
  }
}

// A^T x: four outputs from six rows.
DNNGRAPH_WINO_CLONES void at6(const float* in, int64_t in_ld, float* out, int64_t out_ld, int64_t n) {
  DNNGRAPH_WINO_IVDEP
  for (int64_t c = 0; c < n; ++c) {
    const float m0 = in[c], m1 = in[in_ld + c], m2 = in[2 * in_ld + c], m3 = in[3 * in_ld + c], m4 = in[4 * in_ld + c],
                m5 = in[5 * in_ld + c];
    out[c] = m0 + m1 + m2 + m3 + m4;
    out[out_ld + c] = m1 - m2 + 2 * m3 - 2 * m4;
    out[2 * out_ld + c] = m1 + m2 + 4 * m3 + 4 * m4;
    out[3 * out_ld + c] = m1 - m2 + 8 * m3 - 8 * m4 + m5;
  }
}

class WinogradPlan final : public ConvPlanBase {
 public:
  // The register tile of the 36 GEMMs (tiles x K): the one that pads them the least. A 7x7 image
  // has 4 tiles, which the 12 x 32 tile computed as 12 rows (C512 7x7 on Zen 4: 1.13-1.23 ms
  // against AVX2's 6 x 16 tile's 0.68-0.73).
  static const gemm::KernelSet& gemm_kernels(const ConvGeometry& g, Isa isa) {
    const gemm::KernelSet& ks = gemm::kernel_for_shape(isa, output_tiles(g), g.dst_c);
    return ks.nr <= kMaxTransformNr ? ks : gemm::kernel_set(isa);
  }

  WinogradPlan(const Partition& p, const Epilogue& epi, Isa isa, int threads)
      : ConvPlanBase(p, epi), ks_(gemm_kernels(g_, isa)), threads_(threads) {
    C_ = g_.src_c;
    K_ = g_.dst_c;
    th_ = (g_.dst_sp[1] + kOut - 1) / kOut;
    tw_ = (g_.dst_sp[2] + kOut - 1) / kOut;
    tiles_ = g_.n * th_ * tw_;
    // Tile blocks: big enough that each U[xi] read serves many tiles, small enough for every thread.
    tb_ = std::clamp(round_up((tiles_ + 4 * threads - 1) / (4 * threads), ks_.mr), static_cast<int64_t>(ks_.mr),
                     static_cast<int64_t>(8 * ks_.mr));
    // Few tiles (a 14x14 image: 16): one block of them all, its output channels split between the
    // threads, so that U (36 C K floats, 9.4 MB at C = K = 256) is read once a call, not once per
    // block (two blocks of 12 and 4 tiles, each reading all of it, read 18.8 MB).
    panels_ = round_up(K_, ks_.nr) / ks_.nr;
    if (threads > 1 && tiles_ <= 4 * ks_.mr && panels_ > 1) {
      tb_ = round_up(tiles_, ks_.mr);
      kparts_ = std::min<int64_t>(threads, panels_);
    }
    ldm_ = round_up(K_, ks_.nr) + 16;
    u_kept_ = p.tensor(g_.wei).is_constant;
    // Each term fits int64 for tensors within checked's limits; the count of threads may not.
    int64_t floats = 0;
    const bool ok = checked::mul_add(threads_, per_thread_floats(), u_kept_ ? 0 : u_floats(), floats) &&
                    checked::mul_add(floats, 4, 128, ws_);
    if (!ok) ws_ = INT64_MAX;
  }
  int64_t workspace_size() const override { return ws_; }

  // False, with `why` naming the weights, when the workspace exceeds checked::kMaxSpanBytes.
  bool workspace_fits(std::string& why) const {
    if (ws_ <= checked::kMaxSpanBytes) return true;
    const ir::Node& n = part_.graph->nodes[static_cast<size_t>(part_.anchor)];
    why = "node '" + n.name + "', tensor '" + part_.graph->tensor(g_.wei).name +
          "': transformed (36 x C x K), with the per-thread tiles, it needs more than 2^48 bytes of workspace";
    return false;
  }

 private:
  Status run_conv(const ExecArgs& args, ThreadPool& pool, EpilogueRun& run) const override {
    std::vector<float> own;
    float* ws = static_cast<float*>(gemm::usable_workspace(args.workspace, threads_, pool.size()));
    if (!ws) {  // the pool has grown since the plan was sized
      int64_t floats = 0;
      if (!checked::mul_add(pool.size(), per_thread_floats(), (u_kept_ ? 0 : u_floats()) + 32, floats) ||
          floats > checked::kMaxSpanBytes / 4)
        return unsupported("cpu_conv_winograd_f4x3", "the workspace for " + std::to_string(pool.size()) +
                                                         " threads needs more than 2^48 bytes");
      own.resize(static_cast<size_t>(floats));
      ws = own.data();
    }
    ws = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(ws) + 63) & ~uintptr_t{63});
    const char* wei = static_cast<const char*>(args.ptrs[static_cast<size_t>(g_.wei)]);
    // Constant weights: transformed once per pointer into plan memory, not into the workspace.
    gemm::ConstantB::Packed kept;
    if (u_kept_) kept = u_cache_.get(wei, u_floats(), [&](float* dst) { transform_weights(wei, dst, pool); });
    else transform_weights(wei, ws, pool);
    const float* u = u_kept_ ? kept.data : ws;
    float* per_thread = u_kept_ ? ws : ws + u_floats();
    const char* src = static_cast<const char*>(args.ptrs[static_cast<size_t>(g_.src)]);
    const DirectOutput out = direct_output(g_, epi_, run, args.ptrs);
    gemm::ThreadSlots slots(pool.size());
    const TileShares shares = tile_shares(pool.size());
    pool.parallel_for(shares.blocks() * kparts_, [&](int64_t b, int64_t e) {
      gemm::SlotGuard guard(slots);
      float* scratch = per_thread + guard.slot() * per_thread_floats();
      for (int64_t unit = b; unit < e; ++unit) {
        const int64_t part = unit % kparts_;
        const int64_t k0 = part * panels_ / kparts_ * ks_.nr, k1 = std::min(K_, (part + 1) * panels_ / kparts_ * ks_.nr);
        int64_t t0 = 0, nt = 0;
        shares.block(unit / kparts_, ks_.mr, tiles_, t0, nt);
        if (nt > 0) run_block(t0, nt, k0, k1, src, u, scratch, out, run, guard.slot());
      }
    });
    return {};
  }

  // The tiles' MR-tile groups split evenly among the threads, each thread's share cut into blocks of
  // at most tb_ tiles: the pool hands each thread its own share first, so they finish together.
  // (Blocks of tb_ in a row left 3x3 C64 56x56's threads 108 and 88 of its 196 tiles, and the
  // steal of a 36-tile block 72 and 124: one thread idle for 13% of the layer.)
  struct TileShares {
    int threads = 1;
    int64_t groups = 0, per_share = 1;  // MR-tile groups; blocks per thread
    int64_t blocks() const { return threads * per_share; }
    void block(int64_t i, int64_t mr, int64_t tiles, int64_t& t0, int64_t& nt) const {
      const int64_t h = i / per_share, j = i % per_share;
      const int64_t s0 = h * groups / threads, len = (h + 1) * groups / threads - s0;
      const int64_t g0 = s0 + j * len / per_share, g1 = s0 + (j + 1) * len / per_share;
      t0 = g0 * mr;
      nt = std::min(tiles, g1 * mr) - t0;
    }
  };
  TileShares tile_shares(int threads) const {
    TileShares s;
    s.groups = (tiles_ + ks_.mr - 1) / ks_.mr;
    if (kparts_ > 1) {  // one block of every tile (tb_ holds them all), its channels split
      s.per_share = 1;
      s.threads = 1;
      return s;
    }
    s.threads = std::max(threads, 1);
    const int64_t largest = (s.groups + s.threads - 1) / s.threads, per_block = std::max<int64_t>(1, tb_ / ks_.mr);
    s.per_share = std::max<int64_t>(1, (largest + per_block - 1) / per_block);
    return s;
  }

  int64_t u_floats() const { return kXi * C_ * round_up(K_, ks_.nr) + 16; }
  // V [36][tb][C], M [36][tb][ldm], a 36 x C gather tile, the 16 x K output tile, row pointers.
  int64_t per_thread_floats() const {
    return round_up(kXi * tb_ * C_, 16) + round_up(kXi * tb_ * ldm_, 16) + round_up(2 * kXi * C_, 16) +
           round_up(kXi * std::max(K_, C_) * 2, 16) + 2 * tb_ + 64;
  }

  // U[xi] packed as NR-wide GEMM B panels over (C x K): u + xi * C * Kp + panel * C * NR. One
  // panel row (NR output channels) is transformed at a time so that every write is contiguous.
  void transform_weights(const char* wei, float* u, ThreadPool& pool) const {
    switch (g_.wei_t) {
      case DataType::FLOAT:
        transform_weights_as([w = reinterpret_cast<const float*>(wei)](int64_t o) { return w[o]; }, u, pool,
                             reinterpret_cast<const float*>(wei));
        return;
      case DataType::BFLOAT16:
        transform_weights_as([w = reinterpret_cast<const uint16_t*>(wei)](int64_t o) { return dtype::bf16_to_float(w[o]); },
                             u, pool);
        return;
      default:
        transform_weights_as([w = reinterpret_cast<const uint16_t*>(wei)](int64_t o) { return dtype::half_to_float(w[o]); },
                             u, pool);
        return;
    }
  }

  // `load(offset)` reads one weight as fp32. Offsets are linear in (oc, c, tap): resolved once
  // here, as resolving each element's tap (two divisions) and type took ~20% of a 3x3 C128 layer.
  // `fp32`: the same weights as fp32 words, where the 8 x 8 word transposes may read them.
  template <class Load>
  void transform_weights_as(Load load, float* u, ThreadPool& pool, const float* fp32 = nullptr) const {
    const int64_t kp = round_up(K_, ks_.nr), nr = ks_.nr;
    const int64_t origin = g_.wei_offset(0, 0, 0, 0);
    const int64_t oc_step = g_.wei_offset(0, 0, 1, 0) - origin, c_step = g_.wei_offset(0, 1, 0, 0) - origin;
    int64_t tap[9];
    for (int t = 0; t < 9; ++t) tap[t] = g_.wei_offset(0, 0, 0, t);
    // Whole panels of fp32 filters with the input channel contiguous (KRSC) go 16 channels at a time.
    const float* plain = fp32 && c_step == 1 && nr % 8 == 0 && simd::words_transpose_available() ? fp32 : nullptr;
    pool.parallel_for(kp / nr, [&](int64_t b, int64_t e) {
      std::vector<float> gk(static_cast<size_t>(kTransposeC * 9 * nr));
      // The 16 channels' U rows, [xi][c][nr], then copied out as 36 runs of 16 x nr floats: U's
      // rows of one channel are C x Kp floats apart (1 MB at C = K = 512), and writing 36 of
      // them a channel at a time kept 36 lines of one cache set in flight.
      std::vector<float> uk(plain ? static_cast<size_t>(kXi * kTransposeC * nr) : 0);
      for (int64_t p = b; p < e; ++p) {
        int64_t c = 0;
        if (plain && (p + 1) * nr <= K_)
          for (; c + kTransposeC <= C_; c += kTransposeC) {
            gather_transposed(plain + p * nr * oc_step, oc_step, tap, c, nr, gk.data());
            for (int64_t i = 0; i < kTransposeC; ++i)
              weight_transform(gk.data() + i * 9 * nr, uk.data() + i * nr, kTransposeC * nr, nr);
            for (int64_t xi = 0; xi < kXi; ++xi)
              std::copy_n(uk.data() + xi * kTransposeC * nr, kTransposeC * nr, u + xi * C_ * kp + p * C_ * nr + c * nr);
          }
        for (; c < C_; ++c) {
          for (int64_t j = 0; j < nr; ++j) {
            const int64_t oc = p * nr + j, base = oc * oc_step + c * c_step;
            for (int t = 0; t < 9; ++t) gk[static_cast<size_t>(t * nr + j)] = oc < K_ ? load(base + tap[t]) : 0.0f;
          }
          weight_transform(gk.data(), u + p * C_ * nr + c * nr, C_ * kp, nr);
        }
      }
    });
  }

  void tile_origin(int64_t t, int64_t& n, int64_t& oh, int64_t& ow) const {
    n = t / (th_ * tw_);
    oh = (t / tw_) % th_ * kOut;
    ow = t % tw_ * kOut;
  }

  // Tiles [t0, t0 + nt), output channels [k0, k1) (k0 a multiple of NR).
  void run_block(int64_t t0, int64_t nt, int64_t k0, int64_t k1, const char* src, const float* u, float* scratch,
                 const DirectOutput& out, EpilogueRun& run, int slot) const {
    const int64_t kn = k1 - k0;
    float* v = scratch;
    float* m = v + round_up(kXi * tb_ * C_, 16);
    float* d = m + round_up(kXi * tb_ * ldm_, 16);       // 36 x C gathered input, then B^T d
    float* tmp = d + round_up(2 * kXi * C_, 16);          // scratch rows for the transforms
    const float** rows = reinterpret_cast<const float**>(tmp + round_up(kXi * std::max(K_, C_) * 2, 16));
    const int64_t es = size_of(g_.src_t);
    const bool fp32_nhwc = g_.src_t == DataType::FLOAT && g_.src_st[1] == 1;
    // Input transform, tile by tile, vectorized over channels.
    for (int64_t i = 0; i < nt; ++i) {
      int64_t n, oh, ow;
      tile_origin(t0 + i, n, oh, ow);
      const int64_t ih0 = oh - g_.pad[1], iw0 = ow - g_.pad[2];
      if (fp32_nhwc && ih0 >= 0 && ih0 + kT <= g_.src_sp[1] && iw0 >= 0 && iw0 + kT <= g_.src_sp[2]) {
        // The whole 6x6 patch is inside: the column transform reads the input where it is.
        const float* patch = reinterpret_cast<const float*>(src) + n * g_.src_st[0] + ih0 * g_.src_st[3] + iw0 * g_.src_st[4];
        for (int x = 0; x < kT; ++x) bt6(patch + x * g_.src_st[4], g_.src_st[3], tmp + x * C_, kT * C_, C_);
        for (int y = 0; y < kT; ++y) bt6(tmp + y * kT * C_, C_, v + (y * kT) * tb_ * C_ + i * C_, tb_ * C_, C_);
        continue;
      }
      for (int y = 0; y < kT; ++y)
        for (int x = 0; x < kT; ++x) {
          const int64_t ih = oh - g_.pad[1] + y, iw = ow - g_.pad[2] + x;
          float* dst = d + (y * kT + x) * C_;
          if (ih < 0 || ih >= g_.src_sp[1] || iw < 0 || iw >= g_.src_sp[2]) {
            std::fill_n(dst, C_, 0.0f);
            continue;
          }
          const int64_t off = n * g_.src_st[0] + ih * g_.src_st[3] + iw * g_.src_st[4];
          gemm::convert_run(src + off * es, g_.src_t, g_.src_st[1], C_, dst);
        }
      // Columns: for each x, tmp[y'][x] = sum_y BT[y'][y] d[y][x]; then rows.
      for (int x = 0; x < kT; ++x) bt6(d + x * C_, kT * C_, tmp + x * C_, kT * C_, C_);
      for (int y = 0; y < kT; ++y) bt6(tmp + y * kT * C_, C_, v + (y * kT) * tb_ * C_ + i * C_, tb_ * C_, C_);
    }
    // 36 GEMMs: M[xi] (nt x kn) = V[xi] (nt x C) x U[xi] (C x kn), C split in blocks of <= 512.
    const int mr = ks_.mr, nr = ks_.nr;
    const int64_t kp = round_up(K_, nr), tiles_pad = round_up(nt, mr);
    for (int xi = 0; xi < kXi; ++xi) {
      const float* vx = v + xi * tb_ * C_;
      float* mx = m + xi * tb_ * ldm_;
      for (int64_t c0 = 0; c0 < C_; c0 += 512) {
        const int64_t cl = std::min<int64_t>(512, C_ - c0);
        for (int64_t r = 0; r < tiles_pad; ++r) rows[r] = vx + std::min(r, nt - 1) * C_ + c0;
        for (int64_t jr = k0; jr < std::min(kp, round_up(k1, nr)); jr += nr) {
          const float* panel = u + xi * C_ * kp + (jr / nr) * C_ * nr + c0 * nr;
          for (int64_t ir = 0; ir < tiles_pad; ir += mr) ks_.kernel(1, cl, rows + ir, panel, mx + ir * ldm_ + jr, ldm_, c0 > 0);
        }
      }
    }
    // Output transform and the epilogue, pixel by pixel along K.
    for (int64_t i = 0; i < nt; ++i) {
      int64_t n, oh, ow;
      tile_origin(t0 + i, n, oh, ow);
      for (int x = 0; x < kT; ++x)
        at6(m + x * tb_ * ldm_ + i * ldm_ + k0, kT * tb_ * ldm_, tmp + x * K_ + k0, kT * K_, kn);
      if (out.base && oh + kOut <= g_.dst_sp[1] && ow + kOut <= g_.dst_sp[2]) {
        // A whole tile inside the output: the row transform writes its pixels in place.
        for (int r = 0; r < kOut; ++r) {
          const int64_t o[3] = {0, oh + r, ow};
          const int64_t off = out.offset(n, o) + k0;  // channels are unit stride (direct_output)
          at6(tmp + r * kT * K_ + k0, K_, out.base + off, out.st[4], kn);
          if (out.chain) run.chain_rows(out.base + off, out.st[4], kOut, kn, off, k0);
        }
        continue;
      }
      float* y = tmp + 24 * K_;  // 16 x K, after A^T M's 24 rows
      for (int r = 0; r < kOut; ++r) at6(tmp + r * kT * K_ + k0, K_, y + r * kOut * K_ + k0, K_, kn);
      for (int r = 0; r < kOut && oh + r < g_.dst_sp[1]; ++r)
        for (int q = 0; q < kOut && ow + q < g_.dst_sp[2]; ++q) {
          const int64_t o[3] = {0, oh + r, ow + q};
          int64_t coord[4];
          g_.dst_coord(n, k0, o, coord);
          run.strip(slot, coord, 1, kn, 1, y + (r * kOut + q) * K_ + k0);
        }
    }
  }

  const gemm::KernelSet& ks_;
  int threads_;
  int64_t C_ = 0, K_ = 0, th_ = 0, tw_ = 0, tiles_ = 0, tb_ = 0, ldm_ = 0, ws_ = 0;
  int64_t panels_ = 0;  // NR-wide panels of the output channels
  int64_t kparts_ = 1;  // output-channel ranges per tile block, of whole panels (few tiles: one per thread)
  bool u_kept_ = false;  // the weights are constant: U lives in u_cache_
  gemm::ConstantB u_cache_;
};

class WinogradEngine final : public CpuEngine<Epilogue, IsaKnobs> {
 public:
  WinogradEngine() : CpuEngine("cpu_conv_winograd_f4x3") {}

  // cuDNN names Winograd by its transformed tile: F(4x4, 3x3) transforms 6x6 tiles.
  std::vector<NumericalNote> numerical_notes(const Partition&, const Target&, const Knobs&) const override {
    return {NumericalNote::WINOGRAD, NumericalNote::WINOGRAD_TILE_6x6};
  }

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    ConvGeometry g;
    g.init(p);
    // 36/144 of the multiplies, plus transforms that cost about as much as a GEMM with 16
    // channels: with few channels the transforms dominate. The 36 small GEMMs have a row per tile
    // of a block (at most 48), on the tile shape that pads them least: few rows run at a fraction
    // of the implicit GEMM's rate, ~rows / (rows + 8) (Zen 4, 2026-12-07: 16 at 14x14 0.68 of it,
    // C256 0.41 ms hot; 4 at 7x7 ~0.3), full blocks near its rate.
    const double gemm_share = 0.25 + 16.0 / static_cast<double>(std::max<int64_t>(std::min(g.src_c, g.dst_c), 1));
    const double tiles = static_cast<double>(output_tiles(g));
    const double rows = std::min(tiles, 48.0);
    const double eff = gemm::kernel_efficiency(isa_of(k)) * rows / (rows + 8.0);
    const double gemms = roofline_seconds(partition_flops(p) * gemm_share, 3.0 * partition_bytes(p), t.info(), eff, 5e-6);
    // Weights that are not constant are transformed every call: ~324 FLOPs a filter (G g G^T) at
    // half the peak, and U written (with_transformed_weights counts its traffic).
    return with_transformed_weights(gemms, g, p.tensor(g.wei).is_constant, t.info().peak_bytes_per_s) +
           (p.tensor(g.wei).is_constant ? 0.0
                                        : 324.0 * static_cast<double>(g.src_c * g.dst_c) /
                                              (0.5 * std::max(t.info().peak_flops, 1.0)));
  }

  // The GEMMs' `seconds` with reading the transformed weights U (36 x C x K floats, 4x the filter)
  // once per block of 48 tiles. Constant weights: the first read streams from memory (a network's
  // weights are not in cache when their layer comes round) under the GEMMs: ResNet-50's C256 14²
  // layers (U 9.4 MB) ran 0.70 ms each in the network against 0.64 hot and the implicit GEMM's
  // 1.05 (Zen 4, 2026-12-07), where adding the read at half the streaming rate had kept them on
  // the implicit GEMM. A U computed per call is written once; past the last-level cache it goes
  // out and comes back (Zen 4, 2026-12-07, weights not constant: U of 9.4 MB 0.4-0.5 ms a call
  // over the constant plan, 37.7 MB ~3.9 ms). Later reads: from L2 when U fits there, else from
  // the last-level cache (4x memory's rate).
  static double with_transformed_weights(double seconds, const ConvGeometry& g, bool constant_weights,
                                         double bytes_per_s) {
    const double u_bytes = 36.0 * static_cast<double>(g.src_c * g.dst_c) * 4.0;
    const double tiles = static_cast<double>(output_tiles(g));
    const double blocks = std::max(1.0, std::ceil(tiles / 48.0));
    const double bw = std::max(bytes_per_s, 1.0);
    const bool fits_l2 = u_bytes <= static_cast<double>(cpu_features().l2_bytes);
    const double later = fits_l2 ? 0.0 : (blocks - 1.0) * u_bytes / (4.0 * bw);
    if (constant_weights) return std::max(seconds, u_bytes / bw) + later;
    const bool fits_llc = u_bytes <= static_cast<double>(cpu_features().l3_bytes);
    return seconds + (fits_l2 ? 0.0 : (fits_llc ? 1.0 : 2.0) * u_bytes / bw) + later;
  }

 private:
  bool prepare(const Partition& p, const Target& t, Epilogue& epi, std::string& why) const override {
    return check_conv_fprop(p, t, epi, why, [](const ConvGeometry& g) -> std::string {
      if (g.nsp != 2) return "F(4x4,3x3) needs a 2D convolution";
      if (g.ker[1] != 3 || g.ker[2] != 3) return "F(4x4,3x3) needs a 3x3 kernel";
      if (g.stride[1] != 1 || g.stride[2] != 1) return "F(4x4,3x3) needs stride 1";
      if (g.dil[1] != 1 || g.dil[2] != 1) return "F(4x4,3x3) needs dilation 1";
      if (g.groups != 1) return "F(4x4,3x3) needs groups == 1";
      return {};
    }) && WinogradPlan(p, epi, cpu_features().best(), t.handle->thread_pool().size()).workspace_fits(why);
  }
  std::unique_ptr<Plan> make_plan(const Partition& p, const Target& t, Epilogue epi, const Isa& isa) const override {
    return std::make_unique<WinogradPlan>(p, epi, isa, t.handle->thread_pool().size());
  }
};

}  // namespace

const Engine& conv_winograd_f4x3_engine() { return engine_instance<WinogradEngine>(); }

}  // namespace dnngraph::cpu
