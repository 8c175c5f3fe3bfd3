// cpu_conv_depthwise_direct: conv_fprop with groups == C == K (channel multiplier 1), 1D/2D/3D,
// any stride, dilation and padding. Channels-last inputs are walked pixel by pixel: each output
// pixel sums its taps over blocks of channels held in registers (AVX2 when present, and AVX-512
// for the 3-tap rows); other layouts
// go plane by plane with the inner loop over an output row. Each finished output row goes through
// the fused epilogue while in cache.
#include "engines/cpu/conv/conv_depthwise_direct.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "core/checked.hpp"
#include "engines/cpu/conv/conv_geometry.hpp"
#include "engines/cpu/conv/direct_conv.hpp"
#include "engines/cpu/cpu_engine.hpp"
#include "engines/cpu/gemm/constant_b.hpp"
#include "engines/cpu/gemm/driver.hpp"
#include "engines/cpu/gemm/pack.hpp"
#include "engines/cpu/simd/target.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "engines/cpu/simd/vec_avx512.hpp"
#define DNNGRAPH_DEPTHWISE_AVX2 1
DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX512)
#include "engines/cpu/epilogue/chain_registers.inl"
DNNGRAPH_TARGET_END
#endif

namespace dnngraph::cpu {
namespace {

// out[c] = sum over taps t of x[t][c] * w[t][c], c < C: one output pixel of a depthwise conv.
void sum_taps_portable(const float* const* x, const float* const* w, int taps, int64_t C, float* out) {
  for (int64_t c = 0; c < C; ++c) {
    float a = 0.0f;
    for (int t = 0; t < taps; ++t) a += x[t][c] * w[t][c];
    out[c] = a;
  }
}

#ifdef DNNGRAPH_DEPTHWISE_AVX2
// Four accumulators of 8 channels: with ~9 taps, four FMA chains keep both FMA pipes busy while
// the two loads per FMA stay within the load ports.
__attribute__((target("avx2,fma"))) void sum_taps_avx2(const float* const* x, const float* const* w, int taps,
                                                        int64_t C, float* out) {
  int64_t c = 0;
  for (; c + 32 <= C; c += 32) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int t = 0; t < taps; ++t) {
      const float* xt = x[t] + c;
      const float* wt = w[t] + c;
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(xt), _mm256_loadu_ps(wt), a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(xt + 8), _mm256_loadu_ps(wt + 8), a1);
      a2 = _mm256_fmadd_ps(_mm256_loadu_ps(xt + 16), _mm256_loadu_ps(wt + 16), a2);
      a3 = _mm256_fmadd_ps(_mm256_loadu_ps(xt + 24), _mm256_loadu_ps(wt + 24), a3);
    }
    _mm256_storeu_ps(out + c, a0);
    _mm256_storeu_ps(out + c + 8, a1);
    _mm256_storeu_ps(out + c + 16, a2);
    _mm256_storeu_ps(out + c + 24, a3);
  }
  for (; c + 8 <= C; c += 8) {
    __m256 a = _mm256_setzero_ps();
    for (int t = 0; t < taps; ++t) a = _mm256_fmadd_ps(_mm256_loadu_ps(x[t] + c), _mm256_loadu_ps(w[t] + c), a);
    _mm256_storeu_ps(out + c, a);
  }
  for (; c < C; ++c) {
    float a = 0.0f;
    for (int t = 0; t < taps; ++t) a = std::fma(x[t][c], w[t][c], a);
    out[c] = a;
  }
}

// The same with 16-channel vectors, where the CPU has AVX-512 (as the 3-tap block kernels use):
// the pixels near a row's edges, 2 of every 7 in a 7x7 layer, take this path.
__attribute__((target(DNNGRAPH_TARGET_AVX512))) void sum_taps_avx512(const float* const* x, const float* const* w,
                                                                 int taps, int64_t C, float* out) {
  int64_t c = 0;
  for (; c + 64 <= C; c += 64) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int t = 0; t < taps; ++t) {
      const float* xt = x[t] + c;
      const float* wt = w[t] + c;
      a0 = _mm512_fmadd_ps(_mm512_loadu_ps(xt), _mm512_loadu_ps(wt), a0);
      a1 = _mm512_fmadd_ps(_mm512_loadu_ps(xt + 16), _mm512_loadu_ps(wt + 16), a1);
      a2 = _mm512_fmadd_ps(_mm512_loadu_ps(xt + 32), _mm512_loadu_ps(wt + 32), a2);
      a3 = _mm512_fmadd_ps(_mm512_loadu_ps(xt + 48), _mm512_loadu_ps(wt + 48), a3);
    }
    _mm512_storeu_ps(out + c, a0);
    _mm512_storeu_ps(out + c + 16, a1);
    _mm512_storeu_ps(out + c + 32, a2);
    _mm512_storeu_ps(out + c + 48, a3);
  }
  for (; c + 16 <= C; c += 16) {
    __m512 a = _mm512_setzero_ps();
    for (int t = 0; t < taps; ++t) a = _mm512_fmadd_ps(_mm512_loadu_ps(x[t] + c), _mm512_loadu_ps(w[t] + c), a);
    _mm512_storeu_ps(out + c, a);
  }
  if (c < C) {  // the last C % 16 channels, masked
    const __mmask16 m = static_cast<__mmask16>((1u << (C - c)) - 1);
    __m512 a = _mm512_setzero_ps();
    for (int t = 0; t < taps; ++t)
      a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x[t] + c), _mm512_maskz_loadu_ps(m, w[t] + c), a);
    _mm512_mask_storeu_ps(out + c, m, a);
  }
}
#endif

bool avx512_usable() {
  static const bool kAvx512 = cpu_features().supports(Isa::AVX512);
  return kAvx512;
}

void sum_taps(const float* const* x, const float* const* w, int taps, int64_t C, float* out) {
#ifdef DNNGRAPH_DEPTHWISE_AVX2
  if (avx512_usable()) {
    sum_taps_avx512(x, w, taps, C, out);
    return;
  }
  if (simd::x86_avx2_usable()) {
    sum_taps_avx2(x, w, taps, C, out);
    return;
  }
#endif
  sum_taps_portable(x, w, taps, C, out);
}

// Where the kernel columns of a block of output pixels fall in the input row.
struct RowWalk {
  int64_t kw, stride, dil;  // along the row
};

// Output pixels per block: the general kernel holds 4 pixels x 16 channels in registers; the
// 3-tap kernel (kw 3, dilation 1, stride 1 or 2: MobileNet's layers) holds 8 pixels x 8 channels.
constexpr int kBlockPixels = 4, kThreeTapPixels = 8;

bool three_tap_row(const RowWalk& rw) { return rw.kw == 3 && rw.dil == 1 && (rw.stride == 1 || rw.stride == 2); }

// `pixels` output pixels whose every tap lies inside the row (iw0 = the first pixel's leftmost
// input column), channels [c0, C): out[j * ldo + c].
void block_portable(const TapRow* rows, int nrows, const RowWalk& rw, int64_t iw0, int pixels, const float* wt,
                    int64_t C, int64_t c0, float* out, int64_t ldo) {
  for (int j = 0; j < pixels; ++j) std::fill(out + j * ldo + c0, out + j * ldo + C, 0.0f);
  for (int r = 0; r < nrows; ++r)
    for (int64_t s = 0; s < rw.kw; ++s) {
      const float* w = wt + (rows[r].w_index + s) * C;
      const float* x = rows[r].x + (iw0 + s * rw.dil) * rows[r].px;
      for (int j = 0; j < pixels; ++j)
        for (int64_t c = c0; c < C; ++c) out[j * ldo + c] += x[j * rw.stride * rows[r].px + c] * w[c];
    }
}

#ifdef DNNGRAPH_DEPTHWISE_AVX2
// The general kernel: kV vectors of channels from c for kBlockPixels pixels, in registers. Each
// weight vector is loaded once per block and each input vector once per (tap, pixel): one load
// per FMA and eight independent accumulator chains, where summing one pixel at a time loaded x, w
// and two tap pointers per FMA. Pixels walk the ow blocks, channels inside: each block's input
// stays in L1 across its channel blocks (the other order, whole rows per channel block, was slower).
template <int kV>
__attribute__((target("avx2,fma"), always_inline)) inline void block_channels_avx2(
    const TapRow* rows, int nrows, const RowWalk& rw, int64_t iw0, const float* wt, int64_t C, int64_t c, float* out,
    int64_t ldo) {
  __m256 acc[kBlockPixels][kV];
  for (auto& p : acc)
    for (auto& a : p) a = _mm256_setzero_ps();
  for (int r = 0; r < nrows; ++r) {
    const int64_t step = rw.stride * rows[r].px;
    for (int64_t s = 0; s < rw.kw; ++s) {
      __m256 w[kV];
      for (int v = 0; v < kV; ++v) w[v] = _mm256_loadu_ps(wt + (rows[r].w_index + s) * C + c + 8 * v);
      const float* x = rows[r].x + (iw0 + s * rw.dil) * rows[r].px + c;
      for (int j = 0; j < kBlockPixels; ++j)
        for (int v = 0; v < kV; ++v) acc[j][v] = _mm256_fmadd_ps(_mm256_loadu_ps(x + j * step + 8 * v), w[v], acc[j][v]);
    }
  }
  for (int j = 0; j < kBlockPixels; ++j)
    for (int v = 0; v < kV; ++v) _mm256_storeu_ps(out + j * ldo + c + 8 * v, acc[j][v]);
}

// The 3-tap kernels: 8 (AVX2) or 16 (AVX-512) channels of kThreeTapPixels pixels. Pixel j's
// three taps are input columns kStride * j + s against the row's three weight vectors held in
// registers; the input vectors come from L1 as the FMAs' memory operands. Every accumulator index
// is a constant of a fold expression: written as loops over a local array, GCC left the array on
// the stack (zeroed by `rep stos`, spilled per row), 9% of a MobileNetV2 depthwise layer's samples.
template <int kStride, size_t... J>
__attribute__((target("avx2,fma"), always_inline)) inline void three_taps_row_avx2(__m256 (&acc)[sizeof...(J)],
                                                                                 const float* x, int64_t px,
                                                                                 const __m256 (&w)[3],
                                                                                 std::index_sequence<J...>) {
  ((acc[J] = _mm256_fmadd_ps(_mm256_loadu_ps(x + (kStride * J) * px), w[0], acc[J]),
    acc[J] = _mm256_fmadd_ps(_mm256_loadu_ps(x + (kStride * J + 1) * px), w[1], acc[J]),
    acc[J] = _mm256_fmadd_ps(_mm256_loadu_ps(x + (kStride * J + 2) * px), w[2], acc[J])),
   ...);
}

template <int kStride, size_t... J>
__attribute__((target("avx2,fma"), always_inline)) inline void block_three_taps_avx2(
    const TapRow* rows, int nrows, int64_t iw0, const float* wt, int64_t C, int64_t c, float* out, int64_t ldo,
    std::index_sequence<J...> pixels) {
  __m256 acc[sizeof...(J)];
  ((acc[J] = _mm256_setzero_ps()), ...);
  for (int r = 0; r < nrows; ++r) {
    const float* wr = wt + rows[r].w_index * C + c;
    const __m256 w[3] = {_mm256_loadu_ps(wr), _mm256_loadu_ps(wr + C), _mm256_loadu_ps(wr + 2 * C)};
    three_taps_row_avx2<kStride>(acc, rows[r].x + iw0 * rows[r].px + c, rows[r].px, w, pixels);
  }
  (_mm256_storeu_ps(out + J * ldo + c, acc[J]), ...);
}

template <int kStride, size_t... J>
__attribute__((target(DNNGRAPH_TARGET_AVX512), always_inline)) inline void three_taps_row_avx512(
    __m512 (&acc)[sizeof...(J)], const float* x, int64_t px, const __m512 (&w)[3], std::index_sequence<J...>) {
  ((acc[J] = _mm512_fmadd_ps(_mm512_loadu_ps(x + (kStride * J) * px), w[0], acc[J]),
    acc[J] = _mm512_fmadd_ps(_mm512_loadu_ps(x + (kStride * J + 1) * px), w[1], acc[J]),
    acc[J] = _mm512_fmadd_ps(_mm512_loadu_ps(x + (kStride * J + 2) * px), w[2], acc[J])),
   ...);
}

// The epilogue chain on a 3-tap block's accumulators before their store (pixels ow + J, channels
// from c): the GEMM microkernel's steps (epilogue/chain_registers.inl) over P pixel rows of one
// vector each. With the chain as a pass over each finished output row instead, it took a quarter
// of a fused MobileNetV2 depthwise layer's samples (C144 56², bias + ReLU: 0.199 ms against 0.129
// plain).
template <size_t P>
__attribute__((target(DNNGRAPH_TARGET_AVX512), always_inline)) inline void chain_pixels(const TileChain& tc, int64_t ow,
                                                                                       int64_t c, __m512 (&acc)[P]) {
  auto& rows = reinterpret_cast<__m512 (&)[P][1]>(acc);  // one vector of channels per pixel row
  for (const ChainStep& st : tc.chain->steps) apply_step<simd::VecAvx512, static_cast<int>(P), 1>(st, tc, ow, c, rows);
}

template <int kStride, size_t... J>
__attribute__((target(DNNGRAPH_TARGET_AVX512))) void block_three_taps_avx512(const TapRow* rows, int nrows, int64_t iw0,
                                                                         const float* wt, int64_t C, int64_t c,
                                                                         float* out, int64_t ldo, const TileChain* chain,
                                                                         int64_t ow, std::index_sequence<J...> pixels) {
  __m512 acc[sizeof...(J)];
  ((acc[J] = _mm512_setzero_ps()), ...);
  constexpr int kSpan = kStride * (static_cast<int>(sizeof...(J)) - 1) + 3;  // input columns a row reads
  for (int r = 0; r < nrows; ++r) {
    const float* wr = wt + rows[r].w_index * C + c;
    const __m512 w[3] = {_mm512_loadu_ps(wr), _mm512_loadu_ps(wr + C), _mm512_loadu_ps(wr + 2 * C)};
    const float* x = rows[r].x + iw0 * rows[r].px + c;
    // Each call reads a new 64-byte line of every input pixel it spans, which no hardware
    // prefetcher foresees: fetch those of the channel block two calls ahead (MobileNetV2's C144
    // 56² layer 8-12% faster in alternated runs; one block ahead gained less, four mixed), which
    // past the pixels' last channels is the next block of pixels' first (C96 112² stride 2 11%,
    // C32 112² 4% faster in alternated runs than fetching past the pixels' channels).
    const int64_t ahead = c + 32;
    const float* xa = ahead < C ? x + 32
                                : rows[r].x + (iw0 + kStride * static_cast<int64_t>(sizeof...(J))) * rows[r].px + (ahead - C);
    for (int q = 0; q < kSpan; ++q) _mm_prefetch(reinterpret_cast<const char*>(xa + q * rows[r].px), _MM_HINT_T0);
    three_taps_row_avx512<kStride>(acc, x, rows[r].px, w, pixels);
  }
  if (chain) chain_pixels(*chain, ow, c, acc);
  (_mm512_storeu_ps(out + J * ldo + c, acc[J]), ...);
}

// A block of P pixels (1 .. kThreeTapPixels) of the 3-tap kernels, one channel block from c: an
// entry of the tables below, so that a row's last pixels inside it run one block of whatever
// count is left instead of the general kernel and per-pixel sums. One call walks the channel
// blocks [c, c_end) (8 or 16 channels each): with a call per block, 56% of the kernel's samples
// were on instructions besides its FMAs, loads and prefetches (the call, its setup, addresses).
using ThreeTapBlock = void (*)(const TapRow*, int, int64_t, const float*, int64_t, int64_t, int64_t, float*, int64_t);
// The AVX-512 ones also take the epilogue chain to apply before the store (null: none) and the
// block's first pixel in its row.
using ThreeTapBlock512 = void (*)(const TapRow*, int, int64_t, const float*, int64_t, int64_t, int64_t, float*, int64_t,
                                  const TileChain*, int64_t);

template <int kStride, size_t P>
__attribute__((target("avx2,fma"))) void three_taps_avx2_of(const TapRow* rows, int nrows, int64_t iw0,
                                                             const float* wt, int64_t C, int64_t c, int64_t c_end,
                                                             float* out, int64_t ldo) {
  for (; c < c_end; c += 8)
    block_three_taps_avx2<kStride>(rows, nrows, iw0, wt, C, c, out, ldo, std::make_index_sequence<P>());
}

template <int kStride, size_t P>
__attribute__((target(DNNGRAPH_TARGET_AVX512))) void three_taps_avx512_of(const TapRow* rows, int nrows, int64_t iw0,
                                                                      const float* wt, int64_t C, int64_t c,
                                                                      int64_t c_end, float* out, int64_t ldo,
                                                                      const TileChain* chain, int64_t ow) {
  for (; c < c_end; c += 16)
    block_three_taps_avx512<kStride>(rows, nrows, iw0, wt, C, c, out, ldo, chain, ow, std::make_index_sequence<P>());
}

// [stride - 1][pixels - 1]
template <size_t... P>
constexpr std::array<std::array<ThreeTapBlock, sizeof...(P)>, 2> three_tap_table_avx2(std::index_sequence<P...>) {
  return {{{&three_taps_avx2_of<1, P + 1>...}, {&three_taps_avx2_of<2, P + 1>...}}};
}
template <size_t... P>
constexpr std::array<std::array<ThreeTapBlock512, sizeof...(P)>, 2> three_tap_table_avx512(std::index_sequence<P...>) {
  return {{{&three_taps_avx512_of<1, P + 1>...}, {&three_taps_avx512_of<2, P + 1>...}}};
}
constexpr auto kThreeTapAvx2 = three_tap_table_avx2(std::make_index_sequence<kThreeTapPixels>());
constexpr auto kThreeTapAvx512 = three_tap_table_avx512(std::make_index_sequence<kThreeTapPixels>());

// `chain` (applied before the store; see chain_in_registers) only on 3-tap rows with AVX-512 and
// whole 16-channel vectors.
__attribute__((target("avx2,fma"))) void block_avx2(const TapRow* rows, int nrows, const RowWalk& rw, int64_t iw0,
                                                     int pixels, const float* wt, int64_t C, float* out, int64_t ldo,
                                                     const TileChain* chain, int64_t ow) {
  int64_t c = 0;
  if (three_tap_row(rw)) {  // any 1 .. kThreeTapPixels pixels
    const size_t si = static_cast<size_t>(rw.stride - 1), pi = static_cast<size_t>(pixels - 1);
    if (const int64_t end = C / 16 * 16; avx512_usable() && end > 0) {
      kThreeTapAvx512[si][pi](rows, nrows, iw0, wt, C, 0, end, out, ldo, chain, ow);
      c = end;
    }
    if (const int64_t end = c + (C - c) / 8 * 8; end > c) {
      kThreeTapAvx2[si][pi](rows, nrows, iw0, wt, C, c, end, out, ldo);
      c = end;
    }
    if (c < C) block_portable(rows, nrows, rw, iw0, pixels, wt, C, c, out, ldo);  // the last C % 8
    return;
  }
  for (; c + 16 <= C; c += 16) block_channels_avx2<2>(rows, nrows, rw, iw0, wt, C, c, out, ldo);
  for (; c + 8 <= C; c += 8) block_channels_avx2<1>(rows, nrows, rw, iw0, wt, C, c, out, ldo);
  if (c < C) block_portable(rows, nrows, rw, iw0, kBlockPixels, wt, C, c, out, ldo);  // the last C % 8 channels
}
#endif

// The pixels of the block at output column ow (first input column iw0): the largest run whose taps
// all lie inside a row of W columns, up to kThreeTapPixels of any count on 3-tap rows (vector
// code), else kBlockPixels or none; 0 sends the pixel to sum_taps.
int block_at(const RowWalk& rw, int64_t ow, int64_t OW, int64_t iw0, int64_t W) {
  const int64_t last_first = W - 1 - (rw.kw - 1) * rw.dil;  // the last first-tap column inside the row
  if (iw0 < 0 || iw0 > last_first) return 0;
  const int64_t fit = std::min((last_first - iw0) / rw.stride + 1, OW - ow);
  if (simd::x86_avx2_usable() && three_tap_row(rw)) return static_cast<int>(std::min<int64_t>(fit, kThreeTapPixels));
  return fit >= kBlockPixels ? kBlockPixels : 0;
}

// Whether the 3-tap AVX-512 kernels can apply the epilogue chain to their accumulators: every
// channel in whole 16-float vectors (they cover the row's blocks; its edge pixels take one
// TileChain::apply each).
bool chain_in_registers(const RowWalk& rw, int64_t C) {
#ifdef DNNGRAPH_DEPTHWISE_AVX2
  return avx512_usable() && three_tap_row(rw) && C % 16 == 0;
#else
  (void)rw, (void)C;
  return false;
#endif
}

// One block of `pixels` (block_at's) from output pixel ow; `chain` only where chain_in_registers.
void sum_block(const TapRow* rows, int nrows, const RowWalk& rw, int64_t iw0, int pixels, const float* wt, int64_t C,
               float* out, int64_t ldo, const TileChain* chain, int64_t ow) {
#ifdef DNNGRAPH_DEPTHWISE_AVX2
  if (simd::x86_avx2_usable()) {
    block_avx2(rows, nrows, rw, iw0, pixels, wt, C, out, ldo, chain, ow);
    return;
  }
#endif
  (void)chain, (void)ow;
  block_portable(rows, nrows, rw, iw0, pixels, wt, C, 0, out, ldo);
}

class DepthwisePlan final : public ConvPlanBase {
 public:
  DepthwisePlan(const Partition& p, const Epilogue& epi)
      : ConvPlanBase(p, epi), w_kept_(p.tensor(g_.wei).is_constant) {
    // The weights as [tap][channel] fp32: kept by the plan when constant, else in the workspace.
    int64_t floats = 0;
    if (!w_kept_ && !(checked::mul(g_.taps(), g_.src_c, floats) && checked::mul_add(floats, 4, 64, ws_)))
      ws_ = INT64_MAX;  // build() refuses it
  }
  int64_t workspace_size() const override { return ws_; }

 private:
  Status run_conv(const ExecArgs& args, ThreadPool& pool, EpilogueRun& run) const override {
    const char* src = static_cast<const char*>(args.ptrs[static_cast<size_t>(g_.src)]);
    gemm::ConstantB::Packed kept;
    std::vector<float> own;
    const float* wt = tap_major_weights(args.ptrs[static_cast<size_t>(g_.wei)], args.workspace, kept, own);
    const int64_t C = g_.src_c;
    const bool channels_last = g_.src_st[1] == 1;
    const DirectOutput out = channels_last ? direct_output(g_, epi_, run, args.ptrs) : DirectOutput{};
    const int64_t rows = g_.n * g_.dst_sp[0] * g_.dst_sp[1];  // output rows (n, o0, o1)
    gemm::ThreadSlots slots(pool.size());
    pool.parallel_for(channels_last ? rows : rows * C, [&](int64_t b, int64_t e) {
      gemm::SlotGuard guard(slots);
      RowScratch scratch;
      for (int64_t i = b; i < e; ++i) {
        if (channels_last) pixel_row(i, src, wt, out, run, guard.slot(), scratch);
        else plane_row(i / C, i % C, src, wt, run, guard.slot(), scratch.acc, scratch.in);
      }
    });
    return {};
  }

  // The weights as [tap][channel] fp32: constant ones converted once per pointer (held by `kept`),
  // others into the workspace (or `own`, where none came). Converted on every call, with their
  // buffer allocated and zeroed, they took ~15% of a 7x7 C960 layer's time.
  const float* tap_major_weights(const void* wei, void* workspace, gemm::ConstantB::Packed& kept,
                                 std::vector<float>& own) const {
    const int64_t taps = g_.taps(), C = g_.src_c;
    const char* w = static_cast<const char*>(wei);
    auto convert = [&](float* dst) {
      for (int64_t t = 0; t < taps; ++t)
        gemm::convert_run(w + g_.wei_offset(0, 0, 0, t) * size_of(g_.wei_t), g_.wei_t, g_.wei_st[0], C, dst + t * C);
    };
    if (w_kept_) {
      kept = w_cache_.get(wei, taps * C, convert);
      return kept.data;
    }
    float* dst = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(workspace) + 63) & ~uintptr_t{63});
    if (!workspace) {
      own.resize(static_cast<size_t>(taps * C));
      dst = own.data();
    }
    convert(dst);
    return dst;
  }

  // A thread's scratch for its rows: accumulators, converted input, and a row's taps.
  struct RowScratch {
    std::vector<float> acc, in;
    std::vector<TapRow> rows;
    std::vector<const float*> tap_x, tap_w;
  };

  // Channels-last: one output row. The input rows it reads (one per (r0, r1) tap row inside the
  // image) are located once, converted to fp32 once when they are not FLOAT; blocks of pixels
  // whose taps all lie inside the row run sum_block, the pixels near the edges sum_taps.
  void pixel_row(int64_t row, const char* src, const float* wt, const DirectOutput& out, EpilogueRun& run, int slot,
                 RowScratch& s) const {
    const int64_t C = g_.src_c, OW = g_.dst_sp[2], W = g_.src_sp[2];
    const OutputRow out_row(g_, row, out, s.acc);
    output_row_inputs(g_, src, out_row.n, out_row.o, s.rows, s.in);
    float* const acc = out_row.acc;
    const int64_t ldo = out_row.ldo;
    const RowWalk rw{g_.ker[2], g_.stride[2], g_.dil[2]};
    const int nrows = static_cast<int>(s.rows.size());
    s.tap_x.resize(s.rows.size() * static_cast<size_t>(g_.ker[2]));
    s.tap_w.resize(s.tap_x.size());
    // The in-place chain in the kernels' registers where they can take it (chain_in_registers).
    TileChain tc;
    const bool in_regs = out.chain && chain_in_registers(rw, C);
    if (in_regs) run.tile_chain(out_row.out_off, 0, ldo, tc);
    for (int64_t ow = 0; ow < OW;) {
      const int64_t iw0 = ow * rw.stride - g_.pad[2];
      const int bp = block_at(rw, ow, OW, iw0, W);
      if (bp > 0) {
        sum_block(s.rows.data(), nrows, rw, iw0, bp, wt, C, acc + ow * ldo, ldo, in_regs ? &tc : nullptr, ow);
        ow += bp;
        continue;
      }
      int taps = 0;
      for (const TapRow& r : s.rows)
        for (int64_t r2 = 0; r2 < rw.kw; ++r2) {
          const int64_t iw = iw0 + r2 * rw.dil;
          if (iw < 0 || iw >= W) continue;
          s.tap_x[static_cast<size_t>(taps)] = r.x + iw * r.px;
          s.tap_w[static_cast<size_t>(taps)] = wt + (r.w_index + r2) * C;
          ++taps;
        }
      sum_taps(s.tap_x.data(), s.tap_w.data(), taps, C, acc + ow * ldo);
      if (in_regs) tc.apply(1, C, acc + ow * ldo, ow, 0);
      ++ow;
    }
    out_row.finish(g_, out, run, slot, in_regs);
  }

  // Any layout: one channel's output row, acc[ow] over taps, then one strip along the row.
  void plane_row(int64_t row, int64_t c, const char* src, const float* wt, EpilogueRun& run, int slot,
                 std::vector<float>& acc, std::vector<float>& in) const {
    const int64_t C = g_.src_c, OW = g_.dst_sp[2], W = g_.src_sp[2], es = size_of(g_.src_t);
    const int64_t n = row / (g_.dst_sp[0] * g_.dst_sp[1]);
    int64_t o[3] = {(row / g_.dst_sp[1]) % g_.dst_sp[0], row % g_.dst_sp[1], 0};
    acc.assign(static_cast<size_t>(OW), 0.0f);
    in.resize(static_cast<size_t>(W));
    int64_t r[3];
    for (r[0] = 0; r[0] < g_.ker[0]; ++r[0])
      for (r[1] = 0; r[1] < g_.ker[1]; ++r[1]) {
        // The whole input row for (r0, r1), converted once; the w taps index into it.
        int64_t off = n * g_.src_st[0] + c * g_.src_st[1];
        bool inside = true;
        for (size_t d = 0; d < 2; ++d) {
          const int64_t p = o[d] * g_.stride[d] - g_.pad[d] + r[d] * g_.dil[d];
          inside &= p >= 0 && p < g_.src_sp[d];
          off += p * g_.src_st[2 + d];
        }
        if (!inside) continue;
        gemm::convert_run(src + off * es, g_.src_t, g_.src_st[4], W, in.data());
        for (r[2] = 0; r[2] < g_.ker[2]; ++r[2]) {
          const float w = wt[((r[0] * g_.ker[1] + r[1]) * g_.ker[2] + r[2]) * C + c];
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t iw = ow * g_.stride[2] - g_.pad[2] + r[2] * g_.dil[2];
            if (iw >= 0 && iw < W) acc[static_cast<size_t>(ow)] += in[static_cast<size_t>(iw)] * w;
          }
        }
      }
    int64_t coord[5];
    o[2] = 0;
    g_.dst_coord(n, c, o, coord);
    run.strip(slot, coord, 1 + g_.nsp, OW, 1, acc.data());
  }

  bool w_kept_;  // the weights are constant: converted once per pointer into w_cache_
  int64_t ws_ = 0;
  gemm::ConstantB w_cache_;
};

class DepthwiseEngine final : public DirectConvEngine<DepthwisePlan> {
 public:
  // The FMAs run at a quarter of peak: one multiply per loaded input.
  DepthwiseEngine() : DirectConvEngine("cpu_conv_depthwise_direct", 0.25) {}

 private:
  std::string rule(const Partition&, const ConvGeometry& g) const override {
    if (g.groups == g.src_c && g.src_c == g.dst_c) return {};
    return "not depthwise (needs groups == C == K; groups=" + std::to_string(g.groups) +
           ", C=" + std::to_string(g.src_c) + ", K=" + std::to_string(g.dst_c) + ")";
  }
};

}  // namespace

const Engine& conv_depthwise_direct_engine() { return engine_instance<DepthwiseEngine>(); }

}  // namespace dnngraph::cpu
