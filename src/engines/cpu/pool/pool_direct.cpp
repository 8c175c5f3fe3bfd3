// cpu_pool_direct. Each output vector is computed in an fp32 accumulator of at most kBlock
// elements, then converted and stored once. Vectors run along C when C is X's innermost dim (NHWC): every window
// element or interpolation corner is a contiguous channel vector, folded up to 32 at a time by a
// SIMD kernel. Otherwise they run along the last spatial dim (NCHW): for each window column kw the
// output positions whose input is inside X form one run of one stride phase. Work items (an
// output row along the last spatial dim, with all channels or with one) are shared among threads.
#include "engines/cpu/pool/pool_direct.hpp"

#include <algorithm>
#include <limits>

#include "core/dtype.hpp"
#include "engines/cpu/cpu_engine.hpp"
#include "engines/cpu/epilogue/epilogue.hpp"
#include "engines/cpu/pool/pool_geometry.hpp"
#include "engines/cpu/simd/convert_kernels.hpp"
#include "engines/cpu/pool/pool_kernels.hpp"
#include "runtime/cpu/thread_pool.hpp"

namespace dnngraph::cpu {
namespace {

using pool::Geometry;
using pool::kMaxSpatial;

constexpr int64_t kBlock = 512;            // accumulator elements
constexpr int64_t kMinPerChunk = 1 << 13;  // output elements per parallel_for chunk
constexpr int kGroup = 32;                 // window rows folded per kernel call, read in place
constexpr int kConvGroup = 8;              // ... and converted to fp32 first

struct Buffers {
  float acc[kBlock], a[kBlock], b[kBlock];
  float conv[kConvGroup][kBlock];
  std::vector<float> phases;  // rows along the last spatial dim, split by stride phase
  std::vector<int64_t> outer_off;  // channels inner: X offsets of the dims before the last spatial one
  std::vector<double> outer_w;     // ... and their weights (linear resizing)
};

constexpr int64_t kMaxPhases = 8;  // strides up to this are deinterleaved once per input row

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Window rows (pointers and weights) gathered for one kernel call.
struct RowGroup {
  const float* rows[kGroup];
  float w[kGroup];
  int count = 0;
};

class PoolPlan final : public Plan {
 public:
  PoolPlan(Geometry g, Isa isa) : g_(std::move(g)), k_(pool::pool_kernels(isa)), cv_(convert_kernels(isa)) {}

  Status execute(const ExecArgs& args) const override {
    const void* x = args.ptrs[static_cast<size_t>(g_.x)];
    void* y = args.ptrs[static_cast<size_t>(g_.y)];
    ThreadPool& tp = args.handle.thread_pool();
    const int S = g_.spatial;
    // Work items: output rows along the last spatial dim, with all channels (channels inner) or
    // one channel each.
    const int outer_dims = S - 1;
    int64_t items = g_.n * (g_.channels_inner ? 1 : g_.c);
    for (int i = 0; i < outer_dims; ++i) items *= g_.out[static_cast<size_t>(i)];
    const int64_t per_item = g_.out.back() * (g_.channels_inner ? g_.c : 1);
    tp.parallel_for(items, [&](int64_t b, int64_t e) {
      Buffers buf;
      int64_t o[kMaxSpatial] = {};
      for (int64_t it = b; it < e; ++it) {
        int64_t rest = it;
        for (int i = outer_dims; i-- > 0;) {
          o[i] = rest % g_.out[static_cast<size_t>(i)];
          rest /= g_.out[static_cast<size_t>(i)];
        }
        const int64_t c = g_.channels_inner ? 0 : rest % g_.c;
        const int64_t n = g_.channels_inner ? rest : rest / g_.c;
        if (g_.channels_inner) along_channels(x, y, n, o, buf);
        else along_rows(x, y, n, c, o, buf);
      }
    }, std::max<int64_t>(1, kMinPerChunk / std::max<int64_t>(per_item, 1)));
    return {};
  }

 private:
  // n values of X from element offset `off` at stride `inc`, as fp32: in place or converted.
  const float* x_run(const void* x, int64_t off, int64_t inc, int64_t n, float* buf) const {
    if (g_.xt == DataType::FLOAT && inc == 1) return static_cast<const float*>(x) + off;
    const char* src = static_cast<const char*>(x) + off * size_of(g_.xt);
    if (inc == 1) cv_.to_fp32(src, g_.xt, n, buf);
    else load_run(src, g_.xt, inc, n, buf);
    return buf;
  }

  // Stores n accumulated values to Y from element offset `off` at stride `inc`.
  void y_run(void* y, int64_t off, int64_t inc, int64_t n, const float* acc) const {
    char* dst = static_cast<char*>(y) + off * size_of(g_.yt);
    if (inc == 1) cv_.from_fp32(acc, n, g_.yt, dst);
    else store_run(dst, g_.yt, inc, n, acc);
  }

  void fill(float* acc, int64_t n) const {
    const float v = g_.mode == ResampleMode::MAXPOOL ? -std::numeric_limits<float>::infinity() : 0.0f;
    std::fill_n(acc, n, v);
  }

  void fold(float* acc, const float* const* rows, const float* w, int count, int64_t n) const {
    if (g_.mode == ResampleMode::MAXPOOL) k_.max_rows(acc, rows, count, n);
    else k_.sum_rows(acc, rows, w, count, n);
  }

  // Adds the channel run of X at `off` (weight w) to the group; folds the group when it is full.
  void add_channel_row(const void* x, int64_t off, float w, int64_t len, RowGroup& grp, Buffers& buf,
                       bool weighted) const {
    const bool in_place = g_.xt == DataType::FLOAT && g_.xs[1] == 1;
    const int cap = in_place ? kGroup : kConvGroup;
    grp.rows[grp.count] = x_run(x, off, g_.xs[1], len, buf.conv[grp.count % kConvGroup]);
    grp.w[grp.count] = w;
    if (++grp.count == cap) flush(grp, buf, len, weighted);
  }
  void flush(RowGroup& grp, Buffers& buf, int64_t len, bool weighted) const {
    if (grp.count) fold(buf.acc, grp.rows, weighted ? grp.w : nullptr, grp.count, len);
    grp.count = 0;
  }

  double window_volume() const {
    double v = 1;
    for (int64_t w : g_.window) v *= static_cast<double>(w);
    return v;
  }

  // ---- vectors along C: one output row (n, o..., all of the last spatial dim) per item

  // The X offsets (and weights) that dims before the last spatial one contribute to every output of
  // the row: the window positions inside X (pooling), the 2^(S-1) corners (linear), the nearest.
  void outer_part(const int64_t* o, Buffers& buf) const {
    const int L = g_.spatial - 1;
    buf.outer_off.assign(1, 0);
    buf.outer_w.assign(1, 1.0);
    for (int i = 0; i < L; ++i) {
      const size_t d = static_cast<size_t>(i), oi = static_cast<size_t>(o[i]);
      const int64_t xs = g_.xs[d + 2];
      std::vector<int64_t> off;
      std::vector<double> w;
      for (size_t j = 0; j < buf.outer_off.size(); ++j) {
        if (g_.pooling()) {
          int64_t start, k_lo, k_hi;
          g_.window_range(i, o[i], start, k_lo, k_hi);
          for (int64_t k = k_lo; k < k_hi; ++k) off.push_back(buf.outer_off[j] + (start + k) * xs), w.push_back(1.0);
        } else if (g_.mode == ResampleMode::NEAREST) {
          off.push_back(buf.outer_off[j] + g_.nearest[d][oi] * xs), w.push_back(1.0);
        } else {
          off.push_back(buf.outer_off[j] + g_.lo[d][oi] * xs), w.push_back(buf.outer_w[j] * (1.0 - g_.frac[d][oi]));
          off.push_back(buf.outer_off[j] + g_.hi[d][oi] * xs), w.push_back(buf.outer_w[j] * g_.frac[d][oi]);
        }
      }
      buf.outer_off = std::move(off);
      buf.outer_w = std::move(w);
    }
  }

  void along_channels(const void* x, void* y, int64_t n, const int64_t* o, Buffers& buf) const {
    const size_t l = static_cast<size_t>(g_.spatial - 1);
    const int64_t xs = g_.xs[l + 2];
    outer_part(o, buf);
    int64_t yrow = n * g_.ys[0];
    for (size_t i = 0; i < l; ++i) yrow += o[i] * g_.ys[i + 2];
    for (int64_t ol = 0; ol < g_.out[l]; ++ol)
      for (int64_t c0 = 0; c0 < g_.c; c0 += kBlock) {
        const int64_t len = std::min(kBlock, g_.c - c0);
        const int64_t base = n * g_.xs[0] + c0 * g_.xs[1];
        RowGroup grp;
        if (g_.pooling()) {
          int64_t start, k_lo, k_hi;
          g_.window_range(static_cast<int>(l), ol, start, k_lo, k_hi);
          fill(buf.acc, len);
          for (int64_t off : buf.outer_off)
            for (int64_t k = k_lo; k < k_hi; ++k) add_channel_row(x, base + off + (start + k) * xs, 1.0f, len, grp, buf, false);
          flush(grp, buf, len, false);
          if (g_.mode != ResampleMode::MAXPOOL) {
            const double count = static_cast<double>(buf.outer_off.size()) * static_cast<double>(k_hi - k_lo);
            const float f = static_cast<float>(1.0 / (g_.mode == ResampleMode::AVGPOOL_INCLUDE_PADDING ? window_volume() : count));
            for (int64_t i = 0; i < len; ++i) buf.acc[i] *= f;
          }
        } else if (g_.mode == ResampleMode::NEAREST) {
          const int64_t off = base + buf.outer_off[0] + g_.nearest[l][static_cast<size_t>(ol)] * xs;
          std::copy_n(x_run(x, off, g_.xs[1], len, buf.a), len, buf.acc);
        } else {
          const size_t oi = static_cast<size_t>(ol);
          const double f = g_.frac[l][oi];
          std::fill_n(buf.acc, len, 0.0f);
          for (size_t j = 0; j < buf.outer_off.size(); ++j) {
            const int64_t off = base + buf.outer_off[j];
            add_channel_row(x, off + g_.lo[l][oi] * xs, static_cast<float>(buf.outer_w[j] * (1.0 - f)), len, grp, buf, true);
            add_channel_row(x, off + g_.hi[l][oi] * xs, static_cast<float>(buf.outer_w[j] * f), len, grp, buf, true);
          }
          flush(grp, buf, len, true);
        }
        y_run(y, yrow + ol * g_.ys[l + 2] + c0 * g_.ys[1], g_.ys[1], len, buf.acc);
      }
  }

  // ---- vectors along the last spatial dim: one output row (n, c, o...) per item

  void along_rows(const void* x, void* y, int64_t n, int64_t c, const int64_t* o, Buffers& buf) const {
    const int L = g_.spatial - 1;
    const int64_t out_l = g_.out.back();
    for (int64_t w0 = 0; w0 < out_l; w0 += kBlock) {
      const int64_t len = std::min(kBlock, out_l - w0);
      const int64_t base = n * g_.xs[0] + c * g_.xs[1];
      if (g_.pooling()) pool_row(x, base, o, w0, len, buf);
      else resize_row(x, base, o, w0, len, buf);
      int64_t yoff = n * g_.ys[0] + c * g_.ys[1] + w0 * g_.ys.back();
      for (int i = 0; i < L; ++i) yoff += o[i] * g_.ys[static_cast<size_t>(i) + 2];
      y_run(y, yoff, g_.ys.back(), len, buf.acc);
    }
  }

  void pool_row(const void* x, int64_t base, const int64_t* o, int64_t w0, int64_t len, Buffers& buf) const {
    const int L = g_.spatial - 1;
    int64_t start[kMaxSpatial], lo[kMaxSpatial], hi[kMaxSpatial], k[kMaxSpatial];
    int64_t outer = 1;
    for (int i = 0; i < L; ++i) {
      g_.window_range(i, o[i], start[i], lo[i], hi[i]);
      outer *= hi[i] - lo[i];
      k[i] = lo[i];
    }
    const size_t l = static_cast<size_t>(L);
    const int64_t s = g_.stride[l], pre = g_.pre[l], in = g_.in[l], xs = g_.xs[l + 2], window = g_.window[l];
    // Strided or converted input: each input row is split once into s contiguous fp32 phase rows,
    // P_r[j] = X[j*s + r], so that every window column kw becomes a contiguous run of one phase.
    const bool in_place = g_.xt == DataType::FLOAT && xs == 1 && s == 1;
    const bool phased = !in_place && s <= kMaxPhases;
    const int64_t j0 = w0 + floor_div(-pre, s), j1 = w0 + len + floor_div(window - 1 - pre, s) + 1;
    if (phased) buf.phases.resize(static_cast<size_t>(s * (j1 - j0)));
    fill(buf.acc, len);
    for (int64_t w = 0; w < outer; ++w) {  // odometer over the outer window positions inside X
      int64_t row = base;
      for (int i = 0; i < L; ++i) row += (start[i] + k[i]) * g_.xs[static_cast<size_t>(i) + 2];
      if (phased) split_phases(x, row, j0, j1, buf);
      for (int64_t kw = 0; kw < window; ++kw) {
        // Outputs whose input column ow * s - pre + kw lies in [0, in).
        const int64_t need = pre - kw, last = in - 1 + pre - kw;
        if (last < 0) continue;
        const int64_t first_ow = std::max(w0, need <= 0 ? int64_t{0} : (need + s - 1) / s);
        const int64_t end_ow = std::min(w0 + len, last / s + 1);
        if (end_ow <= first_ow) continue;
        const int64_t m = end_ow - first_ow;
        const float* src;
        if (phased) {
          const int64_t q = floor_div(kw - pre, s), r = kw - pre - q * s;
          src = buf.phases.data() + r * (j1 - j0) + (first_ow + q - j0);
        } else {
          src = x_run(x, row + (first_ow * s - pre + kw) * xs, s * xs, m, buf.a);
        }
        fold(buf.acc + (first_ow - w0), &src, nullptr, 1, m);
      }
      for (int i = L; i-- > 0;) {
        if (++k[i] < hi[i]) break;
        k[i] = lo[i];
      }
    }
    if (g_.mode == ResampleMode::AVGPOOL_INCLUDE_PADDING) {
      const float f = static_cast<float>(1.0 / window_volume());
      for (int64_t i = 0; i < len; ++i) buf.acc[i] *= f;
    } else if (g_.mode == ResampleMode::AVGPOOL_EXCLUDE_PADDING) {
      for (int64_t i = 0; i < len; ++i)
        buf.b[i] = static_cast<float>(1.0 / static_cast<double>(outer * g_.last_count[static_cast<size_t>(w0 + i)]));
      k_.mul_row(buf.acc, buf.b, len);
    }
  }

  // The phase rows P_r[j] = X[row + (j*s + r) * xs] for j in [j0, j1) where inside X (unit-stride
  // rows by the SIMD conversion, stride-2 fp32 rows by the SIMD deinterleave, the rest by strided
  // loads).
  void split_phases(const void* x, int64_t row, int64_t j0, int64_t j1, Buffers& buf) const {
    const size_t l = g_.out.size() - 1;
    const int64_t s = g_.stride[l], in = g_.in[l], xs = g_.xs[l + 2], span = j1 - j0;
    const int64_t lo_j = std::max<int64_t>(j0, 0);
    int64_t done = lo_j;  // phases filled up to here by the SIMD path
    if (s == 1 && xs == 1) {  // HALF or BFLOAT16 (fp32 unit-stride rows are read in place)
      done = std::max(lo_j, std::min(j1, in));
      if (done > lo_j)
        cv_.to_fp32(static_cast<const char*>(x) + (row + lo_j) * size_of(g_.xt), g_.xt, done - lo_j,
                    buf.phases.data() + (lo_j - j0));
    } else if (s == 2 && xs == 1 && g_.xt == DataType::FLOAT) {
      done = std::max(lo_j, std::min(j1, in / 2));  // both phases inside X
      if (done > lo_j)
        k_.deinterleave2(static_cast<const float*>(x) + row + 2 * lo_j, done - lo_j, buf.phases.data() + (lo_j - j0),
                         buf.phases.data() + span + (lo_j - j0));
    }
    for (int64_t r = 0; r < s; ++r) {
      const int64_t hi_j = std::min(j1, in - 1 - r < 0 ? 0 : (in - 1 - r) / s + 1);
      if (hi_j > done)
        load_run(static_cast<const char*>(x) + (row + (done * s + r) * xs) * size_of(g_.xt), g_.xt, s * xs,
                 hi_j - done, buf.phases.data() + r * span + (done - j0));
    }
  }

  // Gathers X[row + idx[i] * (last spatial stride)] for n output positions, as fp32.
  void gather(const void* x, int64_t row, const int64_t* idx, int64_t n, float* out) const {
    const int64_t xs = g_.xs.back();
    if (g_.xt == DataType::FLOAT) {
      const float* p = static_cast<const float*>(x) + row;
      for (int64_t i = 0; i < n; ++i) out[i] = p[idx[i] * xs];
      return;
    }
    const uint16_t* p = static_cast<const uint16_t*>(x) + row;  // HALF or BFLOAT16
    if (g_.xt == DataType::BFLOAT16) {
      for (int64_t i = 0; i < n; ++i) out[i] = dtype::bf16_to_float(p[idx[i] * xs]);
    } else {
      for (int64_t i = 0; i < n; ++i) out[i] = dtype::half_to_float(p[idx[i] * xs]);
    }
  }

  void resize_row(const void* x, int64_t base, const int64_t* o, int64_t w0, int64_t len, Buffers& buf) const {
    const int L = g_.spatial - 1;
    const size_t l = static_cast<size_t>(L);
    if (g_.mode == ResampleMode::NEAREST) {
      int64_t row = base;
      for (int i = 0; i < L; ++i) row += g_.nearest[static_cast<size_t>(i)][static_cast<size_t>(o[i])] * g_.xs[static_cast<size_t>(i) + 2];
      gather(x, row, g_.nearest[l].data() + w0, len, buf.acc);
      return;
    }
    std::fill_n(buf.acc, len, 0.0f);
    for (int corner = 0; corner < (1 << L); ++corner) {
      double w = 1.0;
      int64_t row = base;
      for (int i = 0; i < L; ++i) {
        const size_t d = static_cast<size_t>(i), oi = static_cast<size_t>(o[i]);
        const bool up = (corner >> (L - 1 - i)) & 1;
        w *= up ? g_.frac[d][oi] : 1.0 - g_.frac[d][oi];
        row += (up ? g_.hi[d][oi] : g_.lo[d][oi]) * g_.xs[d + 2];
      }
      gather(x, row, g_.lo[l].data() + w0, len, buf.a);
      gather(x, row, g_.hi[l].data() + w0, len, buf.b);
      const float wf = static_cast<float>(w);
      const float* up = g_.frac_last.data() + w0;
      for (int64_t i = 0; i < len; ++i) buf.acc[i] += wf * (buf.a[i] + up[i] * (buf.b[i] - buf.a[i]));
    }
  }

  Geometry g_;
  const pool::PoolKernels& k_;
  const ConvertKernels& cv_;
};

class PoolDirectEngine final : public CpuEngine<Geometry, IsaKnobs> {
 public:
  PoolDirectEngine() : CpuEngine("cpu_pool_direct") {}

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    // X read about once (overlapping windows hit the cache), Y written once; the window folds at
    // SIMD width, or a few times slower without it.
    Geometry g;
    std::string why;
    double window = 1.0;
    if (pool::read_geometry(p, g, why))
      for (int64_t w : g.window) window *= static_cast<double>(w);
    const double flops = window * static_cast<double>(p.tensor(p.node(0).outputs[0]).volume());
    const double eff = isa_of(k) == Isa::PORTABLE ? 0.25 : 0.5;
    return roofline_seconds(flops * 8.0, partition_bytes(p), t.info(), eff, 3e-6);
  }

 private:
  bool prepare(const Partition& p, const Target& t, Geometry& g, std::string& why) const override {
    return on_cpu(t, why) && pool::read_geometry(p, g, why);
  }
  std::unique_ptr<Plan> make_plan(const Partition&, const Target&, Geometry g, const Isa& isa) const override {
    return std::make_unique<PoolPlan>(std::move(g), isa);
  }
};

}  // namespace

const Engine& pool_direct_engine() { return engine_instance<PoolDirectEngine>(); }

}  // namespace dnngraph::cpu
