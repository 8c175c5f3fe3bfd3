// cpu_norm_rowwise. Everything runs over the canonical domain (X's memory order, dims merged where
// every tensor allows), in runs along its last dim of at most kBuf elements: X is loaded (converted to
// fp32 when needed), an affine SIMD kernel of the chosen ISA produces the normalized values, and
// the CPU epilogue executor applies the partition's epilogue to them as its anchor values (or,
// when the epilogue only stores Y at unit stride, the kernels write Y or convert into it).
// Layernorm and rmsnorm: per row (dim 0), the row's shifted moments in double, then its runs while
// the row is still in cache; rows are shared among threads, or, with fewer rows than threads, each
// row is cut into segments (moments combined, then the runs of each segment).
// Batchnorm_inference: per-channel (x - mean) * (inv_variance * scale) + bias over contiguous
// ranges of the domain, one per thread.
#include "engines/cpu/norm/norm_rowwise.hpp"

#include <algorithm>
#include <cmath>

#include "core/dtype.hpp"
#include "engines/cpu/cpu_engine.hpp"
#include "engines/cpu/norm/norm_kernels.hpp"
#include "engines/cpu/norm/norm_program.hpp"
#include "engines/cpu/simd/convert_kernels.hpp"
#include "engines/cpu/pointwise/runs.hpp"

namespace dnngraph::cpu {
namespace {

using norm::NormKind;
using norm::NormSpec;

constexpr int64_t kBuf = 1024;                        // elements per run
constexpr int64_t kMinSegment = int64_t{1} << 14;     // row elements worth a task of their own
constexpr int64_t kMinPerTask = int64_t{1} << 14;     // batchnorm elements worth a task

struct Strided {  // a tensor in the canonical layout
  std::vector<int64_t> strides;
  DataType dtype = DataType::FLOAT;
  int64_t offset(const int64_t* c, int rank) const {
    int64_t o = 0;
    for (int d = 0; d < rank; ++d) o += c[d] * strides[static_cast<size_t>(d)];
    return o;
  }
};

// Values one execute() computes before the runs: per-row statistics, or per-channel parameters;
// the row-ordered scale and bias of the per-row norms.
struct Params {
  std::vector<float> mean, inv, bias;  // per row (mean, inv) or per channel (mean, mul = inv, bias)
  std::vector<float> mean_lo;          // per row: the mean's part below `mean`'s fp32 rounding
  const float* row_scale = nullptr;    // in the row's canonical order: the user's, or copies
  const float* row_bias = nullptr;
  std::vector<float> scale_copy, bias_copy;
};

class NormPlan final : public Plan {
 public:
  NormPlan(const Partition& p, const NormSpec& spec, FusedProgram fp, Isa isa)
      : spec_(spec), fp_(std::move(fp)), k_(norm::norm_kernels(isa)), cv_(convert_kernels(isa)), dims_(fp_.epi.domain()) {
    rank_ = fp_.epi.rank();
    x_ = strided(spec.x);
    y_ = strided(spec.y);
    // An epilogue that only stores Y, at unit stride: the kernels write (or convert into) Y.
    const auto& code = fp_.epi.program().code;
    const bool plain = code.size() == 2 && code[0].kind == expr::InstrKind::LOAD_ANCHOR &&
                       code[1].kind == expr::InstrKind::STORE && code[1].tensor == spec.y && code[1].src[0] == code[0].dst;
    if (plain && y_.strides.back() == 1) store_ = y_.dtype == DataType::FLOAT ? Store::IN_PLACE : Store::CONVERT;
    inner_.assign(dims_.begin() + (rank_ > 1 ? 1 : 0), dims_.end());
    if (rank_ == 1) inner_ = {1};
    row_volume_ = 1;
    for (int64_t d : inner_) row_volume_ *= d;
    eps_dtype_ = spec.eps >= 0 ? p.tensor(spec.eps).dtype : DataType::FLOAT;
    for (int stat : {spec.mean, spec.inv})
      if (spec.per_row() && stat >= 0 && std::count(p.outputs.begin(), p.outputs.end(), stat))
        user_stats_.push_back(p.tensor(stat));
    if (!spec.per_row()) {
      for (int t : {spec.mean, spec.inv, spec.scale, spec.bias}) channel_params_.push_back(p.tensor(t));
      const auto& md = fp_.tensors.tensor(spec.mean).dims;  // the channel dim is its only dim above 1
      for (int d = 0; d < rank_; ++d)
        if (md[static_cast<size_t>(d)] > 1) channel_dim_ = d;
    }
  }

  Status execute(const ExecArgs& args) const override {
    ThreadPool& pool = args.handle.thread_pool();
    Params prm;
    std::vector<void*> ptrs = args.ptrs;
    if (!spec_.per_row()) {
      channel_params(args.ptrs, prm);
      run_batchnorm(prm, ptrs, pool);
      return {};
    }
    const double eps = dtype::load(args.ptrs[static_cast<size_t>(spec_.eps)], eps_dtype_, 0);
    prm.mean.assign(static_cast<size_t>(dims_[0]), 0.0f);
    prm.mean_lo.assign(static_cast<size_t>(dims_[0]), 0.0f);
    prm.inv.assign(static_cast<size_t>(dims_[0]), 0.0f);
    row_params(args.ptrs, prm);
    if (spec_.mean >= 0) ptrs[static_cast<size_t>(spec_.mean)] = prm.mean.data();  // the epilogue may read them
    ptrs[static_cast<size_t>(spec_.inv)] = prm.inv.data();
    if (dims_[0] >= pool.size() || row_volume_ < 2 * kMinSegment) {
      run_by_rows(eps, prm, ptrs, pool);
    } else {
      const int64_t segs = std::min<int64_t>((pool.size() + dims_[0] - 1) / dims_[0], row_volume_ / kMinSegment);
      run_by_segments(eps, segs, prm, ptrs, pool);
    }
    store_user_stats(prm, args.ptrs);
    return {};
  }

 private:
  Strided strided(int id) const {
    const ir::Tensor& t = fp_.tensors.tensor(id);
    return {t.strides, t.dtype};
  }

  // X at full coordinate c, len values along the last dim, as fp32 (in place or converted into buf).
  const float* load_x(const std::vector<void*>& ptrs, const int64_t* c, int64_t len, float* buf) const {
    const void* x = ptrs[static_cast<size_t>(spec_.x)];
    const int64_t off = x_.offset(c, rank_), inc = x_.strides.back();
    if (x_.dtype == DataType::FLOAT && inc == 1) return static_cast<const float*>(x) + off;
    const char* src = static_cast<const char*>(x) + off * size_of(x_.dtype);
    if (inc == 1) cv_.to_fp32(src, x_.dtype, len, buf);
    else load_run(src, x_.dtype, inc, len, buf);
    return buf;
  }

  // Where the normalized values of a run go: Y itself when it is a plain fp32 output.
  float* out_ptr(const std::vector<void*>& ptrs, const int64_t* c, float* buf) const {
    if (store_ != Store::IN_PLACE) return buf;
    return static_cast<float*>(ptrs[static_cast<size_t>(spec_.y)]) + y_.offset(c, rank_);
  }

  // Stores the run's values: nothing left to do, a conversion into Y, or the epilogue.
  void hand_on(const std::vector<void*>& ptrs, EpilogueRun& run, int slot, const int64_t* c, int64_t len,
               const float* values) const {
    if (store_ == Store::IN_PLACE) return;
    if (store_ == Store::CONVERT) {
      char* y = static_cast<char*>(ptrs[static_cast<size_t>(spec_.y)]) + y_.offset(c, rank_) * size_of(y_.dtype);
      cv_.from_fp32(values, len, y_.dtype, y);
      return;
    }
    run.strip(slot, c, rank_ - 1, len, 1, values);
  }

  // ---- layernorm, rmsnorm

  // Calls fn(full coord, len, position in row) for the runs of elements [lo, hi) of row n.
  template <class Fn>
  void row_runs(int64_t n, int64_t lo, int64_t hi, Fn&& fn) const {
    for_each_run(inner_.data(), static_cast<int>(inner_.size()), lo, hi, kBuf, [&](const int64_t* ic, int64_t len) {
      int64_t c[16];
      c[0] = n;
      std::copy(ic, ic + (rank_ - 1), c + 1);
      int64_t pos = 0;  // linear position in the row
      for (size_t d = 0; d < inner_.size(); ++d) pos = pos * inner_[d] + ic[d];
      fn(static_cast<const int64_t*>(c), len, pos);
    });
  }

  // Whether a row parameter is fp32 and dense in the row's canonical order (then read in place).
  bool row_dense(int id) const {
    const Strided t = strided(id);
    if (t.dtype != DataType::FLOAT) return false;
    int64_t want = 1;
    for (int d = rank_; d-- > 1;) {
      if (t.strides[static_cast<size_t>(d)] != want) return false;
      want *= dims_[static_cast<size_t>(d)];
    }
    return true;
  }

  // Scale and bias in the row's canonical order, fp32: in place, or copied once per execute.
  void row_params(const std::vector<void*>& ptrs, Params& prm) const {
    for (int id : {spec_.scale, spec_.bias}) {
      if (id < 0) continue;
      const float*& ptr = id == spec_.scale ? prm.row_scale : prm.row_bias;
      if (row_dense(id)) {
        ptr = static_cast<const float*>(ptrs[static_cast<size_t>(id)]);
        continue;
      }
      std::vector<float>& dst = id == spec_.scale ? prm.scale_copy : prm.bias_copy;
      dst.resize(static_cast<size_t>(row_volume_));
      ptr = dst.data();
      const Strided t = strided(id);
      const char* src = static_cast<const char*>(ptrs[static_cast<size_t>(id)]);
      row_runs(0, 0, row_volume_, [&](const int64_t* c, int64_t len, int64_t pos) {
        int64_t off = 0;
        for (int d = 1; d < rank_; ++d) off += c[d] * t.strides[static_cast<size_t>(d)];
        load_run(src + off * size_of(t.dtype), t.dtype, rank_ > 1 ? t.strides.back() : 1, len, dst.data() + pos);
      });
    }
  }

  double shift_of(const std::vector<void*>& ptrs, int64_t n) const {
    if (spec_.kind != NormKind::LAYERNORM) return 0.0;
    return dtype::load(ptrs[static_cast<size_t>(spec_.x)], x_.dtype, n * x_.strides[0]);
  }

  void moments(const std::vector<void*>& ptrs, int64_t n, int64_t lo, int64_t hi, double shift, double& s1,
               double& s2) const {
    float buf[kBuf];
    row_runs(n, lo, hi, [&](const int64_t* c, int64_t len, int64_t) {
      k_.moments(load_x(ptrs, c, len, buf), len, shift, s1, s2);
    });
  }

  void finish_row(int64_t n, double shift, double s1, double s2, double eps, Params& prm) const {
    const double count = static_cast<double>(row_volume_), m1 = s1 / count;
    if (spec_.kind == NormKind::LAYERNORM) {
      const double var = std::max(s2 / count - m1 * m1, 0.0);  // biased, as ref and PyTorch
      const double mean = shift + m1;
      prm.mean[static_cast<size_t>(n)] = static_cast<float>(mean);
      prm.mean_lo[static_cast<size_t>(n)] = static_cast<float>(mean - prm.mean[static_cast<size_t>(n)]);
      prm.inv[static_cast<size_t>(n)] = static_cast<float>(1.0 / std::sqrt(var + eps));
    } else {
      prm.inv[static_cast<size_t>(n)] = static_cast<float>(1.0 / std::sqrt(s2 / count + eps));
    }
  }

  void normalize(const std::vector<void*>& ptrs, EpilogueRun& run, int slot, int64_t n, int64_t lo, int64_t hi,
                 const Params& prm) const {
    float xbuf[kBuf], abuf[kBuf];
    const float m = prm.mean[static_cast<size_t>(n)], m_lo = prm.mean_lo[static_cast<size_t>(n)];
    const float a = prm.inv[static_cast<size_t>(n)];
    const float* b = prm.row_bias;
    row_runs(n, lo, hi, [&](const int64_t* c, int64_t len, int64_t pos) {
      float* out = out_ptr(ptrs, c, abuf);
      k_.affine(load_x(ptrs, c, len, xbuf), len, m, m_lo, a, prm.row_scale + pos, b ? b + pos : nullptr, 0.0f, out);
      hand_on(ptrs, run, slot, c, len, out);
    });
  }

  // One task per share of rows: moments, then the row's runs while it is in cache.
  void run_by_rows(double eps, Params& prm, const std::vector<void*>& ptrs, ThreadPool& pool) const {
    const int64_t rows = dims_[0], tasks = std::min<int64_t>(pool.size(), rows);
    EpilogueRun run(fp_.epi, ptrs, static_cast<int>(tasks));
    pool.parallel_for(tasks, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        for (int64_t n = rows * i / tasks; n < rows * (i + 1) / tasks; ++n) {
          const double shift = shift_of(ptrs, n);
          double s1 = 0, s2 = 0;
          moments(ptrs, n, 0, row_volume_, shift, s1, s2);
          finish_row(n, shift, s1, s2, eps, prm);
          normalize(ptrs, run, static_cast<int>(i), n, 0, row_volume_, prm);
        }
    });
  }

  // Few long rows: each cut into `segs` segments; moments per segment, combined, then the runs.
  void run_by_segments(double eps, int64_t segs, Params& prm, const std::vector<void*>& ptrs, ThreadPool& pool) const {
    const int64_t tasks = dims_[0] * segs, R = row_volume_;
    std::vector<double> s1(static_cast<size_t>(tasks), 0.0), s2(static_cast<size_t>(tasks), 0.0);
    pool.parallel_for(tasks, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t n = i / segs, k = i % segs;
        moments(ptrs, n, R * k / segs, R * (k + 1) / segs, shift_of(ptrs, n), s1[static_cast<size_t>(i)],
                s2[static_cast<size_t>(i)]);
      }
    });
    for (int64_t n = 0; n < dims_[0]; ++n) {
      double a = 0, q = 0;
      for (int64_t k = 0; k < segs; ++k) {
        a += s1[static_cast<size_t>(n * segs + k)];
        q += s2[static_cast<size_t>(n * segs + k)];
      }
      finish_row(n, shift_of(ptrs, n), a, q, eps, prm);
    }
    EpilogueRun run(fp_.epi, ptrs, static_cast<int>(tasks));
    pool.parallel_for(tasks, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t n = i / segs, k = i % segs;
        normalize(ptrs, run, static_cast<int>(i), n, R * k / segs, R * (k + 1) / segs, prm);
      }
    });
  }

  // TRAINING: the statistics the user asked for, in their own types and strides.
  void store_user_stats(const Params& prm, const std::vector<void*>& ptrs) const {
    for (const ir::Tensor& t : user_stats_) {
      const std::vector<float>& v = t.id == spec_.mean ? prm.mean : prm.inv;
      for (int64_t n = 0; n < dims_[0]; ++n)
        dtype::store(ptrs[static_cast<size_t>(t.id)], t.dtype, n * t.strides[0], v[static_cast<size_t>(n)]);
    }
  }

  // ---- batchnorm_inference

  // mean, inv_variance * scale and bias per channel, fp32 (the product in double).
  void channel_params(const std::vector<void*>& ptrs, Params& prm) const {
    const int64_t C = channel_params_[0].dims[1];
    prm.mean.resize(static_cast<size_t>(C));
    prm.inv.resize(static_cast<size_t>(C));
    prm.bias.resize(static_cast<size_t>(C));
    auto at = [&](int k, int64_t c) {
      const ir::Tensor& t = channel_params_[static_cast<size_t>(k)];
      return dtype::load(ptrs[static_cast<size_t>(t.id)], t.dtype, c * t.strides[1]);
    };
    for (int64_t c = 0; c < C; ++c) {
      prm.mean[static_cast<size_t>(c)] = static_cast<float>(at(0, c));
      prm.inv[static_cast<size_t>(c)] = static_cast<float>(at(1, c) * at(2, c));
      prm.bias[static_cast<size_t>(c)] = static_cast<float>(at(3, c));
    }
  }

  void run_batchnorm(const Params& prm, const std::vector<void*>& ptrs, ThreadPool& pool) const {
    int64_t volume = 1;
    for (int64_t d : dims_) volume *= d;
    const int64_t tasks = std::clamp<int64_t>(volume / kMinPerTask, 1, pool.size());
    EpilogueRun run(fp_.epi, ptrs, static_cast<int>(tasks));
    const bool along_channels = channel_dim_ == rank_ - 1;
    pool.parallel_for(tasks, [&](int64_t b, int64_t e) {
      float xbuf[kBuf], abuf[kBuf];
      for (int64_t i = b; i < e; ++i)
        for_each_run(dims_.data(), rank_, volume * i / tasks, volume * (i + 1) / tasks, kBuf,
                     [&](const int64_t* c, int64_t len) {
                       const float* x = load_x(ptrs, c, len, xbuf);
                       float* out = out_ptr(ptrs, c, abuf);
                       const size_t ch = channel_dim_ < 0 ? 0 : static_cast<size_t>(c[channel_dim_]);
                       if (along_channels)
                         k_.channel_affine(x, len, &prm.mean[ch], &prm.inv[ch], &prm.bias[ch], out);
                       else
                         k_.affine(x, len, prm.mean[ch], 0.0f, prm.inv[ch], nullptr, nullptr, prm.bias[ch], out);
                       hand_on(ptrs, run, static_cast<int>(i), c, len, out);
                     });
    });
  }

  NormSpec spec_;
  FusedProgram fp_;
  enum class Store { EPILOGUE, IN_PLACE, CONVERT };

  const norm::NormKernels& k_;
  const ConvertKernels& cv_;
  std::vector<int64_t> dims_;   // the canonical domain
  int rank_ = 1;
  Strided x_, y_;
  Store store_ = Store::EPILOGUE;
  std::vector<int64_t> inner_;  // per-row norms: the domain's dims after dim 0 (or {1})
  int64_t row_volume_ = 1;
  DataType eps_dtype_ = DataType::FLOAT;
  std::vector<ir::Tensor> user_stats_;      // per-row statistics the user reads (original layout)
  std::vector<ir::Tensor> channel_params_;  // batchnorm: mean, inv_variance, scale, bias (original)
  int channel_dim_ = -1;                    // batchnorm: the canonical dim of C (-1 when C is 1)
};

// The norm node read and its epilogue compiled: what check() and build() share.
struct PreparedNorm {
  NormSpec spec;
  FusedProgram fp;
};

class NormRowwiseEngine final : public CpuEngine<PreparedNorm, IsaKnobs> {
 public:
  NormRowwiseEngine() : CpuEngine("cpu_norm_rowwise") {}

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    // Inputs read once and outputs written once (a row stays in cache between its two passes);
    // without SIMD the moments and affine loops fall behind memory.
    const double eff = isa_of(k) == Isa::PORTABLE ? 0.3 : 0.6;
    return roofline_seconds(partition_flops(p) * 4.0, partition_bytes(p), t.info(), eff, 3e-6);
  }

 private:
  bool prepare(const Partition& p, const Target& t, PreparedNorm& out, std::string& why) const override {
    return on_cpu(t, why) && norm::read_norm(p, out.spec, why) && norm::build_norm_program(p, out.spec, out.fp, why);
  }
  std::unique_ptr<Plan> make_plan(const Partition& p, const Target&, PreparedNorm prep, const Isa& isa) const override {
    return std::make_unique<NormPlan>(p, prep.spec, std::move(prep.fp), isa);
  }
};

}  // namespace

const Engine& norm_rowwise_engine() { return engine_instance<NormRowwiseEngine>(); }

}  // namespace dnngraph::cpu
