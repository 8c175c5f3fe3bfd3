// cpu_norm_grouped: batchnorm (training), instancenorm, and the backward of layernorm, rmsnorm,
// batchnorm and instancenorm, each as a partition of its own. Every one is a grouped norm
// (graph/norm_training.cpp): X's dims are put in memory order (size-1 dims dropped), the domain is
// cut into one contiguous range per thread, and each range is walked in runs along the innermost
// dim. In a run the groups (the statistics' index) and the parameters either stay fixed (NCHW-like
// runs, and rows of layernorm) or step one per element (NHWC-like runs along the channels); the
// kernels of norm_grouped_kernels take both. Sums are per thread in double, combined in a fixed order.
//   forward:  sums, then centered sums (the two-pass variance), then Y = (x - mean) * a + b per group
//   backward: per-group sums of g = dy * scale and g * xhat, per-parameter dscale and dbias, then DX
#include "engines/cpu/norm/norm_grouped.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/dtype.hpp"
#include "engines/cpu/cpu_engine.hpp"
#include "engines/cpu/epilogue/epilogue.hpp"
#include "engines/cpu/norm/norm_grouped_kernels.hpp"
#include "engines/cpu/norm/norm_kernels.hpp"
#include "engines/cpu/simd/convert_kernels.hpp"
#include "engines/cpu/pointwise/runs.hpp"

namespace dnngraph::cpu {
namespace {

constexpr int64_t kBuf = 1024;                     // elements per run
constexpr int64_t kMinPerTask = int64_t{1} << 15;  // elements worth a thread
constexpr int kMaxRank = 12;

enum class Op { BN_FWD, IN_FWD, LN_BWD, RMS_BWD, BN_BWD, IN_BWD };

// What prepare() reads from the node: the op and its tensors by IR id (-1 when absent).
struct GroupedSpec {
  Op op = Op::LN_BWD;
  int x = -1, dy = -1, out = -1;       // out: Y or DX
  int scale = -1, bias = -1, eps = -1;  // bias: forward only
  int mean = -1, inv = -1;              // forward: outputs; backward: inputs (rmsnorm: no mean)
  int dscale = -1, dbias = -1;          // backward outputs
  int prev_mean = -1, prev_var = -1, momentum = -1, next_mean = -1, next_var = -1;  // batchnorm
  bool forward() const { return op == Op::BN_FWD || op == Op::IN_FWD; }
};

bool io_type(DataType t) { return t == DataType::FLOAT || t == DataType::HALF || t == DataType::BFLOAT16; }
bool param_type(DataType t) { return io_type(t) || t == DataType::DOUBLE; }

int at(const ir::Node& n, size_t slot, bool output) {
  const auto& v = output ? n.outputs : n.inputs;
  return slot < v.size() ? v[slot] : -1;
}

bool read_spec(const Partition& p, GroupedSpec& s, std::string& why) {
  if (p.nodes.size() != 1) {
    why = "runs single training-norm nodes; the partition has " + std::to_string(p.nodes.size()) + " nodes";
    return false;
  }
  const ir::Node& n = p.node(0);
  auto in = [&](size_t k) { return at(n, k, false); };
  auto out = [&](size_t k) { return at(n, k, true); };
  if (ir::is<BatchnormAttr>(n) || ir::is<InstancenormAttr>(n)) {
    s.op = ir::is<BatchnormAttr>(n) ? Op::BN_FWD : Op::IN_FWD;
    s.x = in(slot::BT_X), s.scale = in(slot::BT_SCALE), s.bias = in(slot::BT_BIAS), s.eps = in(slot::BT_EPS);
    s.out = out(0), s.mean = out(1), s.inv = out(2);
    if (s.op == Op::BN_FWD) {
      s.prev_mean = in(slot::BT_PREV_MEAN), s.prev_var = in(slot::BT_PREV_VAR), s.momentum = in(slot::BT_MOMENTUM);
      s.next_mean = out(3), s.next_var = out(4);
    }
  } else if (ir::is<LayernormBackwardAttr>(n) || ir::is<BatchnormBackwardAttr>(n) ||
             ir::is<InstancenormBackwardAttr>(n) || ir::is<RmsnormBackwardAttr>(n)) {
    s.op = ir::is<LayernormBackwardAttr>(n)  ? Op::LN_BWD
           : ir::is<BatchnormBackwardAttr>(n) ? Op::BN_BWD
           : ir::is<RmsnormBackwardAttr>(n)   ? Op::RMS_BWD
                                              : Op::IN_BWD;
    s.dy = in(slot::NB_DY), s.x = in(slot::NB_X), s.scale = in(slot::NB_SCALE);
    if (s.op == Op::RMS_BWD) s.inv = in(slot::RB_INV_RMS);
    else s.mean = in(slot::NB_MEAN), s.inv = in(slot::NB_INV_VAR);
    s.out = out(0), s.dscale = out(1), s.dbias = out(2);
  } else {
    why = ir::describe(n) + " is not a training norm (batchnorm, instancenorm or a norm backward)";
    return false;
  }
  if (n.compute_type != DataType::FLOAT) {
    why = ir::describe(n) + ": compute type " + std::string(to_string(n.compute_type)) + " (runs FLOAT)";
    return false;
  }
  for (int id : {s.x, s.dy, s.out})
    if (id >= 0 && !io_type(p.tensor(id).dtype)) {
      why = ir::describe(n) + ": tensor '" + p.tensor(id).name + "' is " + std::string(to_string(p.tensor(id).dtype)) +
            " (X, DY, Y and DX run as FLOAT, HALF or BFLOAT16)";
      return false;
    }
  for (int id : {s.scale, s.bias, s.mean, s.inv, s.dscale, s.dbias, s.prev_mean, s.prev_var, s.next_mean, s.next_var})
    if (id >= 0 && !param_type(p.tensor(id).dtype)) {
      why = ir::describe(n) + ": tensor '" + p.tensor(id).name + "' is " + std::string(to_string(p.tensor(id).dtype)) +
            " (statistics and parameters run as FLOAT, HALF, BFLOAT16 or DOUBLE)";
      return false;
    }
  if (p.tensor(s.x).rank() > kMaxRank) {
    why = ir::describe(n) + ": rank above " + std::to_string(kMaxRank);
    return false;
  }
  return true;
}

// One index space in canonical (memory) order, as a tensor's per-dim strides or as the linear
// positions of a group or parameter (0 along the dims it does not have).
struct Canon {
  std::vector<int> dims_of;  // canonical dim k is IR dim dims_of[k]
  std::vector<int64_t> dims;
};

Canon canonical(const ir::Tensor& x) {
  Canon c;
  for (int d = 0; d < x.rank(); ++d)
    if (x.dims[static_cast<size_t>(d)] > 1) c.dims_of.push_back(d);
  std::stable_sort(c.dims_of.begin(), c.dims_of.end(),
                   [&](int a, int b) { return x.strides[static_cast<size_t>(a)] > x.strides[static_cast<size_t>(b)]; });
  if (c.dims_of.empty()) c.dims_of.push_back(0);
  for (int d : c.dims_of) c.dims.push_back(x.dims[static_cast<size_t>(d)]);
  return c;
}

std::vector<int64_t> canon_strides(const Canon& c, const ir::Tensor& t) {
  std::vector<int64_t> s;
  for (int d : c.dims_of) s.push_back(t.strides[static_cast<size_t>(d)]);
  return s;
}

// Linear positions of a tensor whose dims are X's with some set to 1: packed in canonical order.
std::vector<int64_t> linear_mul(const Canon& c, const ir::Tensor& t, int64_t& count) {
  std::vector<int64_t> mul(c.dims.size(), 0);
  count = 1;
  for (size_t k = c.dims.size(); k-- > 0;)
    if (t.dims[static_cast<size_t>(c.dims_of[k])] > 1) {
      mul[k] = count;
      count *= c.dims[k];
    }
  return mul;
}

int64_t dot(const int64_t* c, const std::vector<int64_t>& m) {
  int64_t o = 0;
  for (size_t k = 0; k < m.size(); ++k) o += c[k] * m[k];
  return o;
}

class GroupedPlan final : public Plan {
 public:
  GroupedPlan(const Partition& p, const GroupedSpec& s, Isa isa)
      : s_(s), k_(norm::grouped_kernels(isa)), nk_(norm::norm_kernels(isa)), cv_(convert_kernels(isa)) {
    for (int id : {s.x, s.dy, s.out, s.scale, s.bias, s.eps, s.mean, s.inv, s.dscale, s.dbias, s.prev_mean, s.prev_var,
                   s.momentum, s.next_mean, s.next_var})
      if (id >= 0) t_[id] = p.tensor(id);
    c_ = canonical(t_.at(s.x));
    volume_ = 1;
    for (int64_t d : c_.dims) volume_ *= d;
    gmul_ = linear_mul(c_, t_.at(s.inv), groups_);
    pmul_ = linear_mul(c_, t_.at(s.scale), params_);
    for (int id : {s.x, s.dy, s.out})
      if (id >= 0) strides_[id] = canon_strides(c_, t_.at(id));
    enumerate_groups();
  }

  Status execute(const ExecArgs& args) const override {
    ThreadPool& pool = args.handle.thread_pool();
    const int64_t tasks = std::clamp<int64_t>(volume_ / kMinPerTask, 1, pool.size());
    if (s_.forward()) forward(args.ptrs, pool, tasks);
    else backward(args.ptrs, pool, tasks);
    return {};
  }

 private:
  // Per group, its parameter's linear position (the forward ops' parameter dims are among the
  // groups' dims). Offsets are per tensor (group_off_of, param_off_of): each may have its own strides.
  void enumerate_groups() {
    group_param_.assign(static_cast<size_t>(groups_), 0);
    std::vector<int64_t> dims = c_.dims;
    for (size_t k = 0; k < dims.size(); ++k)
      if (!gmul_[k]) dims[k] = 1;
    for_each_run(dims.data(), static_cast<int>(dims.size()), 0, product(dims), 1, [&](const int64_t* c, int64_t) {
      group_param_[static_cast<size_t>(dot(c, gmul_))] = dot(c, pmul_);
    });
  }
  static int64_t product(const std::vector<int64_t>& d) {
    int64_t v = 1;
    for (int64_t x : d) v *= x;
    return v;
  }
  static int64_t dot_masked(const int64_t* c, const std::vector<int64_t>& s, const std::vector<int64_t>& mask) {
    int64_t o = 0;
    for (size_t k = 0; k < s.size(); ++k)
      if (mask[k]) o += c[k] * s[k];
    return o;
  }

  // Values of a per-group (or per-parameter) tensor, as fp32.
  std::vector<float> read(const std::vector<void*>& ptrs, int id, const std::vector<int64_t>& offs) const {
    std::vector<float> v(offs.size());
    const ir::Tensor& t = t_.at(id);
    for (size_t i = 0; i < offs.size(); ++i)
      v[i] = static_cast<float>(dtype::load(ptrs[static_cast<size_t>(id)], t.dtype, offs[i]));
    return v;
  }
  // Stores values when the tensor has a pointer (an unproduced output has none).
  template <class T>
  void write(const std::vector<void*>& ptrs, int id, const std::vector<int64_t>& offs, const std::vector<T>& v) const {
    if (id < 0 || !ptrs[static_cast<size_t>(id)]) return;
    const ir::Tensor& t = t_.at(id);
    for (size_t i = 0; i < offs.size(); ++i)
      dtype::store(ptrs[static_cast<size_t>(id)], t.dtype, offs[i], static_cast<double>(v[i]));
  }

  // A run of tensor `id` at canonical coordinate c, as fp32 (in place or into buf).
  const float* load(const std::vector<void*>& ptrs, int id, const int64_t* c, int64_t len, float* buf) const {
    const ir::Tensor& t = t_.at(id);
    const auto& st = strides_.at(id);
    const int64_t off = dot(c, st), inc = st.back();
    const char* src = static_cast<const char*>(ptrs[static_cast<size_t>(id)]) + off * size_of(t.dtype);
    if (t.dtype == DataType::FLOAT && inc == 1) return reinterpret_cast<const float*>(src);
    if (inc == 1) cv_.to_fp32(src, t.dtype, len, buf);
    else load_run(src, t.dtype, inc, len, buf);
    return buf;
  }
  void store(const std::vector<void*>& ptrs, const int64_t* c, int64_t len, const float* v) const {
    const ir::Tensor& t = t_.at(s_.out);
    const auto& st = strides_.at(s_.out);
    char* dst = static_cast<char*>(ptrs[static_cast<size_t>(s_.out)]) + dot(c, st) * size_of(t.dtype);
    if (st.back() == 1) cv_.from_fp32(v, len, t.dtype, dst);
    else store_run(dst, t.dtype, st.back(), len, v);
  }

  // fn(task, coord, len, group, group step, parameter, parameter step) over the runs of each task's range.
  template <class Fn>
  void runs(ThreadPool& pool, int64_t tasks, Fn&& fn) const {
    const int rank = static_cast<int>(c_.dims.size());
    const int gi = gmul_.back() ? 1 : 0, pi = pmul_.back() ? 1 : 0;
    pool.parallel_for(tasks, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        for_each_run(c_.dims.data(), rank, volume_ * i / tasks, volume_ * (i + 1) / tasks, kBuf,
                     [&](const int64_t* c, int64_t len) { fn(i, c, len, dot(c, gmul_), gi, dot(c, pmul_), pi); });
    });
  }

  // Sums per task of `width` values each, added up in task order.
  static std::vector<double> combine(const std::vector<double>& per_task, int64_t tasks, int64_t width) {
    std::vector<double> out(static_cast<size_t>(width), 0.0);
    for (int64_t t = 0; t < tasks; ++t)
      for (int64_t g = 0; g < width; ++g) out[static_cast<size_t>(g)] += per_task[static_cast<size_t>(t * width + g)];
    return out;
  }

  // Moments of X about `shift` per group, over all tasks: (sum(x - shift), sum((x - shift)^2)).
  void moments(const std::vector<void*>& ptrs, ThreadPool& pool, int64_t tasks, const std::vector<double>& shift,
               std::vector<double>& s1, std::vector<double>& s2) const {
    std::vector<double> a(static_cast<size_t>(tasks * groups_), 0.0), q(a.size(), 0.0);
    runs(pool, tasks, [&](int64_t t, const int64_t* c, int64_t len, int64_t g, int gi, int64_t, int) {
      float buf[kBuf];
      const size_t o = static_cast<size_t>(t * groups_ + g);
      k_.moments(load(ptrs, s_.x, c, len, buf), len, shift.data() + g, gi, a.data() + o, q.data() + o);
    });
    s1 = combine(a, tasks, groups_);
    s2 = combine(q, tasks, groups_);
  }

  void forward(const std::vector<void*>& ptrs, ThreadPool& pool, int64_t tasks) const {
    const double eps = dtype::load(ptrs[static_cast<size_t>(s_.eps)], t_.at(s_.eps).dtype, 0);
    const double n = static_cast<double>(volume_ / groups_);
    std::vector<double> mean(static_cast<size_t>(groups_), 0.0), s1, s2;
    moments(ptrs, pool, tasks, mean, s1, s2);
    for (int64_t g = 0; g < groups_; ++g) mean[static_cast<size_t>(g)] = s1[static_cast<size_t>(g)] / n;
    moments(ptrs, pool, tasks, mean, s1, s2);  // about the mean: the two-pass variance
    std::vector<double> var(mean.size()), inv(mean.size());
    const std::vector<float> scale = read(ptrs, s_.scale, param_off_of(s_.scale)), bias = read(ptrs, s_.bias, param_off_of(s_.bias));
    std::vector<float> m(mean.size()), a(mean.size()), b(mean.size());
    for (size_t g = 0; g < mean.size(); ++g) {
      const double d = s1[g] / n;
      mean[g] += d;
      var[g] = std::max(s2[g] / n - d * d, 0.0);  // biased, as PyTorch normalizes
      inv[g] = 1.0 / std::sqrt(var[g] + eps);
      const size_t q = static_cast<size_t>(group_param_[g]);
      m[g] = static_cast<float>(mean[g]);
      a[g] = static_cast<float>(inv[g] * scale[q]);
      b[g] = bias[q];
    }
    runs(pool, tasks, [&](int64_t, const int64_t* c, int64_t len, int64_t g, int gi, int64_t, int) {
      float buf[kBuf], out[kBuf];
      const float* x = load(ptrs, s_.x, c, len, buf);
      const size_t k = static_cast<size_t>(g);
      if (gi) nk_.channel_affine(x, len, &m[k], &a[k], &b[k], out);
      else nk_.affine(x, len, m[k], 0.0f, a[k], nullptr, nullptr, b[k], out);
      store(ptrs, c, len, out);
    });
    write(ptrs, s_.mean, group_off_of(s_.mean), mean);
    write(ptrs, s_.inv, group_off_of(s_.inv), inv);
    if (s_.op == Op::BN_FWD && s_.prev_mean >= 0) running_stats(ptrs, mean, var, n);
  }

  // next = (1 - momentum) * previous + momentum * batch, the variance unbiased (n / (n - 1); with
  // one element per channel, biased). Batchnorm's groups are its parameters (one per channel), so
  // the previous statistics are read at the parameters' offsets; each is read before it is written
  // (the next statistics may be the previous ones' buffers).
  void running_stats(const std::vector<void*>& ptrs, const std::vector<double>& mean, const std::vector<double>& var,
                     double n) const {
    const double mom = dtype::load(ptrs[static_cast<size_t>(s_.momentum)], t_.at(s_.momentum).dtype, 0);
    const double unbias = n > 1 ? n / (n - 1) : 1.0;
    const std::vector<float> pm = read(ptrs, s_.prev_mean, group_off_of(s_.prev_mean));
    const std::vector<float> pv = read(ptrs, s_.prev_var, group_off_of(s_.prev_var));
    std::vector<double> nm(mean.size()), nv(mean.size());
    for (size_t g = 0; g < mean.size(); ++g) {
      nm[g] = (1 - mom) * pm[g] + mom * mean[g];
      nv[g] = (1 - mom) * pv[g] + mom * var[g] * unbias;
    }
    write(ptrs, s_.next_mean, group_off_of(s_.next_mean), nm);
    write(ptrs, s_.next_var, group_off_of(s_.next_var), nv);
  }
  // Offsets per group in another tensor with the statistics' dims.
  std::vector<int64_t> group_off_of(int id) const {
    std::vector<int64_t> out(static_cast<size_t>(groups_));
    const auto st = canon_strides(c_, t_.at(id));
    std::vector<int64_t> dims = c_.dims;
    for (size_t k = 0; k < dims.size(); ++k)
      if (!gmul_[k]) dims[k] = 1;
    for_each_run(dims.data(), static_cast<int>(dims.size()), 0, product(dims), 1, [&](const int64_t* c, int64_t) {
      out[static_cast<size_t>(dot(c, gmul_))] = dot_masked(c, st, gmul_);
    });
    return out;
  }

  void backward(const std::vector<void*>& ptrs, ThreadPool& pool, int64_t tasks) const {
    const std::vector<float> inv = read(ptrs, s_.inv, group_off_of(s_.inv));
    const std::vector<float> mean = s_.mean >= 0 ? read(ptrs, s_.mean, group_off_of(s_.mean)) : std::vector<float>(inv.size(), 0.f);
    const std::vector<float> scale = read(ptrs, s_.scale, param_off_of(s_.scale));
    const size_t G = static_cast<size_t>(groups_), P = static_cast<size_t>(params_);
    std::vector<double> sg(static_cast<size_t>(tasks) * G, 0.0), sgx(sg.size(), 0.0);
    std::vector<double> ds(static_cast<size_t>(tasks) * P, 0.0), db(ds.size(), 0.0);
    runs(pool, tasks, [&](int64_t t, const int64_t* c, int64_t len, int64_t g, int gi, int64_t q, int pi) {
      float xb[kBuf], db_[kBuf];
      const size_t og = static_cast<size_t>(t) * G + static_cast<size_t>(g), op = static_cast<size_t>(t) * P + static_cast<size_t>(q);
      k_.backward_sums(load(ptrs, s_.x, c, len, xb), load(ptrs, s_.dy, c, len, db_), len, &mean[static_cast<size_t>(g)],
                       &inv[static_cast<size_t>(g)], gi, &scale[static_cast<size_t>(q)], pi, &sg[og], &sgx[og], &ds[op],
                       &db[op]);
    });
    const double n = static_cast<double>(volume_ / groups_);
    const std::vector<double> tg = combine(sg, tasks, groups_), tgx = combine(sgx, tasks, groups_);
    std::vector<float> c1(G), c2(G);
    for (size_t g = 0; g < G; ++g) {
      c1[g] = s_.op == Op::RMS_BWD ? 0.0f : static_cast<float>(tg[g] / n);
      c2[g] = static_cast<float>(tgx[g] / n);
    }
    runs(pool, tasks, [&](int64_t, const int64_t* c, int64_t len, int64_t g, int gi, int64_t q, int pi) {
      float xb[kBuf], dyb[kBuf], out[kBuf];
      const size_t k = static_cast<size_t>(g);
      k_.backward_dx(load(ptrs, s_.x, c, len, xb), load(ptrs, s_.dy, c, len, dyb), len, &mean[k], &inv[k], &c1[k],
                     &c2[k], gi, &scale[static_cast<size_t>(q)], pi, out);
      store(ptrs, c, len, out);
    });
    write(ptrs, s_.dscale, param_off_of(s_.dscale), combine(ds, tasks, params_));
    write(ptrs, s_.dbias, param_off_of(s_.dbias), combine(db, tasks, params_));
  }
  // Offsets per parameter in another tensor with the parameters' dims.
  std::vector<int64_t> param_off_of(int id) const {
    std::vector<int64_t> out(static_cast<size_t>(params_));
    const auto st = canon_strides(c_, t_.at(id));
    std::vector<int64_t> dims = c_.dims;
    for (size_t k = 0; k < dims.size(); ++k)
      if (!pmul_[k]) dims[k] = 1;
    for_each_run(dims.data(), static_cast<int>(dims.size()), 0, product(dims), 1, [&](const int64_t* c, int64_t) {
      out[static_cast<size_t>(dot(c, pmul_))] = dot_masked(c, st, pmul_);
    });
    return out;
  }

  GroupedSpec s_;
  const norm::GroupedKernels& k_;
  const norm::NormKernels& nk_;
  const ConvertKernels& cv_;
  std::map<int, ir::Tensor> t_;                  // the node's tensors by id
  std::map<int, std::vector<int64_t>> strides_;  // X, DY, Y/DX in canonical order
  Canon c_;
  int64_t volume_ = 1, groups_ = 1, params_ = 1;
  std::vector<int64_t> gmul_, pmul_;                         // linear group / parameter position per canonical dim
  std::vector<int64_t> group_param_;  // per group: its parameter's linear position (forward)
};

class NormGroupedEngine final : public CpuEngine<GroupedSpec, IsaKnobs> {
 public:
  NormGroupedEngine() : CpuEngine("cpu_norm_grouped") {}

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    // Forward: X read three times (two moment passes and Y); backward: X and DY read twice.
    const double eff = isa_of(k) == Isa::PORTABLE ? 0.25 : 0.5;
    return roofline_seconds(partition_flops(p) * 4.0, partition_bytes(p) * 2.0, t.info(), eff, 3e-6);
  }

 private:
  bool prepare(const Partition& p, const Target& t, GroupedSpec& out, std::string& why) const override {
    return on_cpu(t, why) && read_spec(p, out, why);
  }
  std::unique_ptr<Plan> make_plan(const Partition& p, const Target&, GroupedSpec spec, const Isa& isa) const override {
    return std::make_unique<GroupedPlan>(p, spec, isa);
  }
};

}  // namespace

const Engine& norm_grouped_engine() { return engine_instance<NormGroupedEngine>(); }

}  // namespace dnngraph::cpu
