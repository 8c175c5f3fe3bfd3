// cpu_conv_grouped_direct: conv_fprop with small equal groups (2, 4 or 8 input and output
// channels per group: ResNeXt's and RegNet's 3x3 layers) on a channels-last source. As a GEMM
// per group such a layer has N = 4 and K = 36, far too narrow for a register tile; here a vector
// holds 8 output channels of consecutive groups and, because each group reads as many input
// channels as it writes, the input vector at the same channels holds every input those lanes
// need: input channel i of each lane's group is an in-lane broadcast (a permute) of it.
// Blocks of 8 output pixels whose taps are all inside the row keep 8 accumulators; edge pixels
// go one at a time. Rows are written straight to an fp32 channels-last output (finished there by
// an in-place chain) or handed to the epilogue strips.
#include "engines/cpu/conv/conv_grouped_direct.hpp"

#include <algorithm>
#include <utility>

#include "core/dtype.hpp"
#include "engines/cpu/conv/conv_geometry.hpp"
#include "engines/cpu/conv/direct_conv.hpp"
#include "engines/cpu/cpu_engine.hpp"
#include "engines/cpu/simd/target.hpp"
#include "engines/cpu/gemm/driver.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define DNNGRAPH_GROUPED_AVX2 1
#endif

namespace dnngraph::cpu {
namespace {

constexpr int kPixels = 8;  // output pixels per interior block

// The weights as w[(t * G + i) * K + k]: tap t, input channel i of output channel k's group.
struct GroupedWeights {
  std::vector<float> w;
  int64_t G = 0, K = 0;
  const float* at(int64_t t, int64_t i) const { return w.data() + (t * G + i) * K; }
};

// One output pixel's taps: the input pixel (fp32, channels contiguous) and its weight tap.
struct PixelTap {
  const float* x;
  int64_t t;
};

// out[k] for k in [k0, K) of one pixel: the portable form of every kernel below.
void pixel_portable(const PixelTap* taps, int ntaps, const GroupedWeights& w, int64_t k0, float* out) {
  for (int64_t k = k0; k < w.K; ++k) {
    const int64_t first = k / w.G * w.G;  // the group's first input channel
    float a = 0.0f;
    for (int q = 0; q < ntaps; ++q)
      for (int64_t i = 0; i < w.G; ++i) a += taps[q].x[first + i] * w.at(taps[q].t, i)[k];
    out[k] = a;
  }
}

#ifdef DNNGRAPH_GROUPED_AVX2
// Input channel kI of each lane's group, from the vector of the lanes' own channels.
template <int kG, int kI>
__attribute__((target("avx2,fma"), always_inline)) inline __m256 group_input(__m256 x, const float* p) {
  if constexpr (kG == 8) {
    (void)x;
    return _mm256_broadcast_ss(p + kI);
  } else if constexpr (kG == 4) {
    return _mm256_permute_ps(x, kI * 0x55);
  } else {
    return _mm256_permute_ps(x, kI | (kI << 2) | ((2 + kI) << 4) | ((2 + kI) << 6));
  }
}

// acc += every input channel of the groups at p times its weights (w[i] for input channel i).
template <int kG, int... kI>
__attribute__((target("avx2,fma"), always_inline)) inline __m256 fma_group(const float* p, const __m256* w, __m256 acc,
                                                                           std::integer_sequence<int, kI...>) {
  const __m256 x = kG == 8 ? _mm256_setzero_ps() : _mm256_loadu_ps(p);
  ((acc = _mm256_fmadd_ps(group_input<kG, kI>(x, p), w[kI], acc)), ...);
  return acc;
}

// kPixels pixels of one output row, every tap inside the row, channels [0, K / 8 * 8).
template <int kG>
__attribute__((target("avx2,fma"))) void block_avx2(const TapRow* rows, int nrows, int64_t kw, int64_t stride,
                                                     int64_t dil, int64_t iw0, const GroupedWeights& w, float* out,
                                                     int64_t ldo) {
  constexpr auto kInputs = std::make_integer_sequence<int, kG>{};
  for (int64_t k0 = 0; k0 + 8 <= w.K; k0 += 8) {
    __m256 acc[kPixels];
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (int r = 0; r < nrows; ++r)
      for (int64_t s = 0; s < kw; ++s) {
        __m256 wv[kG];
        for (int i = 0; i < kG; ++i) wv[i] = _mm256_loadu_ps(w.at(rows[r].w_index + s, i) + k0);
        const float* x = rows[r].x + (iw0 + s * dil) * rows[r].px + k0;
        for (int j = 0; j < kPixels; ++j) acc[j] = fma_group<kG>(x + j * stride * rows[r].px, wv, acc[j], kInputs);
      }
    for (int j = 0; j < kPixels; ++j) _mm256_storeu_ps(out + j * ldo + k0, acc[j]);
  }
}

// One pixel from its tap list, channels [0, K / 8 * 8).
template <int kG>
__attribute__((target("avx2,fma"))) void pixel_avx2(const PixelTap* taps, int ntaps, const GroupedWeights& w,
                                                     float* out) {
  constexpr auto kInputs = std::make_integer_sequence<int, kG>{};
  for (int64_t k0 = 0; k0 + 8 <= w.K; k0 += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (int q = 0; q < ntaps; ++q) {
      __m256 wv[kG];
      for (int i = 0; i < kG; ++i) wv[i] = _mm256_loadu_ps(w.at(taps[q].t, i) + k0);
      acc = fma_group<kG>(taps[q].x + k0, wv, acc, kInputs);
    }
    _mm256_storeu_ps(out + k0, acc);
  }
}
#endif

// One pixel (any tap list), all K channels.
void sum_pixel(const PixelTap* taps, int ntaps, const GroupedWeights& w, float* out) {
  int64_t done = 0;
#ifdef DNNGRAPH_GROUPED_AVX2
  if (simd::x86_avx2_usable()) {
    if (w.G == 2) pixel_avx2<2>(taps, ntaps, w, out);
    else if (w.G == 4) pixel_avx2<4>(taps, ntaps, w, out);
    else pixel_avx2<8>(taps, ntaps, w, out);
    done = w.K / 8 * 8;
  }
#endif
  pixel_portable(taps, ntaps, w, done, out);
}

class GroupedPlan final : public ConvPlanBase {
 public:
  GroupedPlan(const Partition& p, const Epilogue& epi) : ConvPlanBase(p, epi) {}

 private:
  Status run_conv(const ExecArgs& args, ThreadPool& pool, EpilogueRun& run) const override {
    const GroupedWeights w = weights(static_cast<const char*>(args.ptrs[static_cast<size_t>(g_.wei)]));
    const char* src = static_cast<const char*>(args.ptrs[static_cast<size_t>(g_.src)]);
    const DirectOutput out = direct_output(g_, epi_, run, args.ptrs);
    gemm::ThreadSlots slots(pool.size());
    pool.parallel_for(g_.n * g_.dst_sp[0] * g_.dst_sp[1], [&](int64_t b, int64_t e) {
      gemm::SlotGuard guard(slots);
      RowScratch scratch;
      for (int64_t row = b; row < e; ++row) output_row(row, src, w, out, run, guard.slot(), scratch);
    });
    return {};
  }

  struct RowScratch {
    std::vector<float> acc, converted;
    std::vector<TapRow> rows;
    std::vector<PixelTap> taps;
  };

  GroupedWeights weights(const char* wei) const {
    switch (g_.wei_t) {
      case DataType::FLOAT: return weights_as([w = reinterpret_cast<const float*>(wei)](int64_t o) { return w[o]; });
      case DataType::BFLOAT16:
        return weights_as([w = reinterpret_cast<const uint16_t*>(wei)](int64_t o) { return dtype::bf16_to_float(w[o]); });
      default: return weights_as([w = reinterpret_cast<const uint16_t*>(wei)](int64_t o) { return dtype::half_to_float(w[o]); });
    }
  }

  // `load(offset)` reads one weight as fp32; W[k, i, taps...] is the filter of output channel k
  // over its group's input channel i. Offsets by stride: this runs on every execute.
  template <class Load>
  GroupedWeights weights_as(Load load) const {
    GroupedWeights w;
    w.G = g_.src_cg;
    w.K = g_.dst_c;
    const int64_t taps = g_.taps();
    std::vector<int64_t> tap(static_cast<size_t>(taps));
    for (int64_t t = 0; t < taps; ++t) tap[static_cast<size_t>(t)] = g_.wei_offset(0, 0, 0, t);
    w.w.resize(static_cast<size_t>(taps * w.G * w.K));
    for (int64_t k = 0; k < w.K; ++k)
      for (int64_t i = 0; i < w.G; ++i) {
        const int64_t base = k * g_.wei_st[0] + i * g_.wei_st[1];
        for (int64_t t = 0; t < taps; ++t)
          w.w[static_cast<size_t>((t * w.G + i) * w.K + k)] = load(base + tap[static_cast<size_t>(t)]);
      }
    return w;
  }

  void output_row(int64_t row, const char* src, const GroupedWeights& w, const DirectOutput& out, EpilogueRun& run,
                  int slot, RowScratch& s) const {
    const int64_t OW = g_.dst_sp[2], W = g_.src_sp[2];
    const OutputRow out_row(g_, row, out, s.acc);
    output_row_inputs(g_, src, out_row.n, out_row.o, s.rows, s.converted);
    float* const acc = out_row.acc;
    const int64_t ldo = out_row.ldo;
    const int64_t kw = g_.ker[2], stride = g_.stride[2], dil = g_.dil[2];
    const int nrows = static_cast<int>(s.rows.size());
    for (int64_t ow = 0; ow < OW;) {
      const int64_t iw0 = ow * stride - g_.pad[2];
      if (simd::x86_avx2_usable() && ow + kPixels <= OW && iw0 >= 0 && iw0 + (kPixels - 1) * stride + (kw - 1) * dil < W) {
        block(s.rows.data(), nrows, iw0, w, acc + ow * ldo, ldo, s.taps);
        ow += kPixels;
        continue;
      }
      s.taps.clear();
      for (const TapRow& r : s.rows)
        for (int64_t r2 = 0; r2 < kw; ++r2) {
          const int64_t iw = iw0 + r2 * dil;
          if (iw >= 0 && iw < W) s.taps.push_back({r.x + iw * r.px, r.w_index + r2});
        }
      sum_pixel(s.taps.data(), static_cast<int>(s.taps.size()), w, acc + ow * ldo);
      ++ow;
    }
    out_row.finish(g_, out, run, slot);
  }

  // An interior block of kPixels pixels: the vector kernel for whole vectors of channels, the
  // portable one pixel at a time for the last K % 8.
  void block(const TapRow* rows, int nrows, int64_t iw0, const GroupedWeights& w, float* out, int64_t ldo,
             std::vector<PixelTap>& taps) const {
#ifdef DNNGRAPH_GROUPED_AVX2
    const int64_t kw = g_.ker[2], stride = g_.stride[2], dil = g_.dil[2];
    if (w.G == 2) block_avx2<2>(rows, nrows, kw, stride, dil, iw0, w, out, ldo);
    else if (w.G == 4) block_avx2<4>(rows, nrows, kw, stride, dil, iw0, w, out, ldo);
    else block_avx2<8>(rows, nrows, kw, stride, dil, iw0, w, out, ldo);
    if (w.K % 8 == 0) return;
    for (int j = 0; j < kPixels; ++j) {
      taps.clear();
      for (int r = 0; r < nrows; ++r)
        for (int64_t s = 0; s < kw; ++s)
          taps.push_back({rows[r].x + (iw0 + j * stride + s * dil) * rows[r].px, rows[r].w_index + s});
      pixel_portable(taps.data(), static_cast<int>(taps.size()), w, w.K / 8 * 8, out + j * ldo);
    }
#else
    (void)rows, (void)nrows, (void)iw0, (void)w, (void)out, (void)ldo, (void)taps;
#endif
  }
};

class GroupedDirectEngine final : public DirectConvEngine<GroupedPlan> {
 public:
  // About a fifth of the FMA peak (measured: 39-41 GFLOP/s of ~200 on 2 Zen 3 cores): a permute
  // or broadcast per FMA, and an input load per group's inputs; no padded lanes.
  GroupedDirectEngine() : DirectConvEngine("cpu_conv_grouped_direct", 0.2) {}

 private:
  std::string rule(const Partition& p, const ConvGeometry& g) const override {
    if (g.groups < 2 || g.src_cg != g.dst_cg || (g.src_cg != 2 && g.src_cg != 4 && g.src_cg != 8))
      return "needs groups of 2, 4 or 8 input and as many output channels (groups=" + std::to_string(g.groups) +
             ", C/groups=" + std::to_string(g.src_cg) + ", K/groups=" + std::to_string(g.dst_cg) + ")";
    if (g.src_st[1] != 1)
      return "needs a channels-last source '" + p.graph->tensor(g.src).name + "' (channel stride " +
             std::to_string(g.src_st[1]) + ")";
    return {};
  }
};

}  // namespace

const Engine& conv_grouped_direct_engine() { return engine_instance<GroupedDirectEngine>(); }

}  // namespace dnngraph::cpu
