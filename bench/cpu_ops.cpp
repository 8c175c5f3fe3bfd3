// The CPU memory-bound engines against the machine's copy bandwidth:
//  - cpu_pointwise_fused: x * alpha + bias -> activation (GELU, ReLU) -> cast to bf16 with the AMAX
//    of the activation in one pass, against the same five ops run one pass each (five graphs, the
//    same engine, fp32 intermediates in memory);
//  - cpu_norm_rowwise: layernorm and rmsnorm (fp32 and bf16), GB/s of X read + Y written;
//  - cpu_pool_direct: max pooling 3x3/2 NHWC, average pooling 2x2/2 NCHW, bilinear 2x resize NHWC.
// The copy bandwidth is memcpy of a 256 MiB buffer over the same thread pool (bytes read + written).
//
//   dnngraph_bench_cpu_ops [iterations] [threads]     default: 10, all cores
//
// Prints median wall and process CPU times, GB/s (bytes the op must move: inputs read once,
// outputs written once) and the fraction of the copy bandwidth, by wall time and per CPU-second
// (the steadier measure on a shared machine). Every graph is checked to run on the engine named.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "cpu_bench_timing.hpp"
#include "dnngraph/dnngraph.hpp"
#include "runtime/cpu/thread_pool.hpp"
#include "runtime/handle_impl.hpp"

namespace dg = dnngraph;
using Dims = std::vector<int64_t>;

namespace {

int g_iterations = 10;

using cpu_bench::Timing;

// cpu_bench::median_time over the iterations the command line asked for.
template <class Fn>
Timing median_time(Fn&& fn) {
  return cpu_bench::median_time(g_iterations, fn);
}

Dims packed_strides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) s[i] = s[i + 1] * dims[i + 1];
  return s;
}
Dims nhwc_strides(const Dims& d) { return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]}; }

int64_t volume(const Dims& d) {
  int64_t v = 1;
  for (int64_t x : d) v *= x;
  return v;
}

// A host buffer of random values of one type.
struct Buffer {
  std::vector<unsigned char> bytes;
  Buffer(int64_t n, dg::DataType t, uint32_t seed) : bytes(static_cast<size_t>(n * dg::size_of(t))) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-2, 2);
    for (int64_t i = 0; i < n; ++i) dg::dtype::store(bytes.data(), t, i, u(rng));
  }
  void* data() { return bytes.data(); }
};

// One built graph restricted to one engine, ready to execute.
struct Runner {
  dg::Graph g;
  dg::VariantPack pack;
  std::vector<unsigned char> workspace;
  std::string plan;

  bool build(dg::Handle& h, const std::string& engine) {
    g.select_engines({engine});
    if (!g.validate().ok() || !g.build_operation_graph(h).ok() ||
        !g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}).ok() || !g.check_support(h).ok() ||
        !g.build_plans(h).ok()) {
      std::fprintf(stderr, "could not build on %s:\n%s\n", engine.c_str(), g.explain().c_str());
      return false;
    }
    int64_t ws = 0;
    (void)g.get_workspace_size(ws);
    workspace.resize(static_cast<size_t>(ws) + 1);
    (void)g.get_plan_name_at_index(0, plan);
    return plan.rfind(engine, 0) == 0 && plan.find(" + ") == std::string::npos;
  }
  void run(dg::Handle& h, int64_t index = -1) {
    const auto s = index < 0 ? g.execute(h, pack, workspace.data())
                             : g.execute_plan_at_index(h, pack, workspace.data(), index);
    if (!s.ok()) {
      std::fprintf(stderr, "execute failed: %s\n", s.to_string().c_str());
      std::exit(1);
    }
  }
  // Times every plan (one per ISA for cpu_norm_rowwise and cpu_pool_direct): fn(plan name, timing).
  template <class Fn>
  void time_each_plan(dg::Handle& h, Fn&& fn) {
    for (int64_t i = 0; i < g.get_execution_plan_count(); ++i) {
      std::string name;
      if (!g.build_plan_at_index(h, i).ok() || !g.get_plan_name_at_index(i, name).ok()) continue;
      int64_t ws = 0;
      (void)g.get_workspace_size(ws);
      workspace.resize(static_cast<size_t>(ws) + 1);
      fn(name, median_time([&] { run(h, i); }));
    }
  }
};

dg::TensorPtr declare(dg::Graph& g, const char* name, const Dims& dims, const Dims& strides, dg::DataType t) {
  return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(strides).set_data_type(t));
}

void output(const dg::TensorPtr& t, const Dims& dims, const Dims& strides, dg::DataType type) {
  t->set_dim(dims).set_stride(strides).set_data_type(type).set_output(true);
}

// Bytes per second of memcpy (read + write) by wall time and per CPU-second.
Timing copy_bandwidth(dg::ThreadPool& pool) {
  const int64_t n = int64_t{256} << 20;
  std::vector<char> src(static_cast<size_t>(n), 1), dst(static_cast<size_t>(n), 0);
  const int64_t chunk = int64_t{1} << 20;
  const Timing t = median_time([&] {
    pool.parallel_for(n / chunk, [&](int64_t b, int64_t e) {
      std::memcpy(dst.data() + b * chunk, src.data() + b * chunk, static_cast<size_t>((e - b) * chunk));
    });
  });
  return {2.0 * static_cast<double>(n) / t.wall, 2.0 * static_cast<double>(n) / t.cpu};
}

// One table row: times, GB/s by wall time, and the fraction of the copy bandwidth by wall time and
// per CPU-second.
void report(const char* what, const Timing& t, double bytes, const Timing& copy_bw) {
  std::printf("| %s | %.2f / %.2f ms | %.2f GB/s | %.0f%% | %.0f%% |\n", what, t.wall * 1e3, t.cpu * 1e3,
              bytes / t.wall * 1e-9, 100.0 * bytes / t.wall / copy_bw.wall, 100.0 * bytes / t.cpu / copy_bw.cpu);
}

const char* kHeader = "| %s | wall / CPU time | GB/s (wall) | of copy bw (wall) | of copy bw (per CPU-s) |\n|---|---|---|---|---|\n";

// ---- pointwise: one pass against five

void bench_pointwise(dg::Handle& h, const Timing& copy_bw, dg::PointwiseMode act) {
  const Dims dims{4096, 4096}, bias_dims{1, 4096};
  const int64_t n = volume(dims);
  Buffer x(n, dg::DataType::FLOAT, 1), bias(dims[1], dg::DataType::FLOAT, 2);
  Buffer y(n, dg::DataType::BFLOAT16, 3), amax(1, dg::DataType::FLOAT, 4);
  Buffer t1(n, dg::DataType::FLOAT, 5), t2(n, dg::DataType::FLOAT, 6), t3(n, dg::DataType::FLOAT, 7);
  const Dims st = packed_strides(dims), one{1, 1};
  const auto F = dg::DataType::FLOAT;
  const char* E = "cpu_pointwise_fused";

  Runner fused;
  {
    dg::Graph& g = fused.g;
    auto X = declare(g, "x", dims, st, F);
    auto B = declare(g, "bias", bias_dims, packed_strides(bias_dims), F);
    auto a = g.pointwise(g.bias(g.scale(X, g.tensor(0.5)), B), dg::PointwiseAttr().set_mode(act));
    auto Y = g.pointwise(a, dg::PointwiseAttr().set_mode(dg::PointwiseMode::IDENTITY));
    auto A = g.reduction(a, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX));
    output(Y, dims, st, dg::DataType::BFLOAT16);
    output(A, one, one, F);
    fused.pack = {{X, x.data()}, {B, bias.data()}, {Y, y.data()}, {A, amax.data()}};
  }
  if (!fused.build(h, E)) return;
  // The same ops, one graph (one pass over memory) each.
  std::vector<std::unique_ptr<Runner>> steps;
  auto step = [&](const std::function<void(Runner&)>& make) {
    steps.push_back(std::make_unique<Runner>());
    make(*steps.back());
    return steps.back()->build(h, E);
  };
  bool ok = step([&](Runner& r) {
    auto X = declare(r.g, "x", dims, st, F);
    auto T = r.g.scale(X, r.g.tensor(0.5));
    output(T, dims, st, F);
    r.pack = {{X, x.data()}, {T, t1.data()}};
  });
  ok = ok && step([&](Runner& r) {
    auto X = declare(r.g, "t1", dims, st, F);
    auto B = declare(r.g, "bias", bias_dims, packed_strides(bias_dims), F);
    auto T = r.g.bias(X, B);
    output(T, dims, st, F);
    r.pack = {{X, t1.data()}, {B, bias.data()}, {T, t2.data()}};
  });
  ok = ok && step([&](Runner& r) {
    auto X = declare(r.g, "t2", dims, st, F);
    auto T = r.g.pointwise(X, dg::PointwiseAttr().set_mode(act));
    output(T, dims, st, F);
    r.pack = {{X, t2.data()}, {T, t3.data()}};
  });
  ok = ok && step([&](Runner& r) {
    auto X = declare(r.g, "t3", dims, st, F);
    auto T = r.g.pointwise(X, dg::PointwiseAttr().set_mode(dg::PointwiseMode::IDENTITY));
    output(T, dims, st, dg::DataType::BFLOAT16);
    r.pack = {{X, t3.data()}, {T, y.data()}};
  });
  ok = ok && step([&](Runner& r) {
    auto X = declare(r.g, "t3", dims, st, F);
    auto T = r.g.reduction(X, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX));
    output(T, one, one, F);
    r.pack = {{X, t3.data()}, {T, amax.data()}};
  });
  if (!ok) return;
  const Timing tf = median_time([&] { fused.run(h); });
  const Timing tu = median_time([&] {
    for (auto& s : steps) s->run(h);
  });
  const double nb = static_cast<double>(n);
  std::printf("\npointwise: x[4096,4096] fp32 * alpha + bias -> %s -> bf16, AMAX (cpu_pointwise_fused)\n\n",
              std::string(dg::to_string(act)).c_str());
  std::printf(kHeader, "variant (bytes moved)");
  report("fused, one pass (6 B/element)", tf, 6.0 * nb, copy_bw);
  report("five passes (34 B/element)", tu, 34.0 * nb, copy_bw);
  std::printf("\nfused speed-up over five passes: %.2fx wall, %.2fx CPU time\n", tu.wall / tf.wall, tu.cpu / tf.cpu);
}

// ---- normalizations

void bench_norm(dg::Handle& h, const Timing& copy_bw, bool rms, dg::DataType t, const Dims& dims) {
  const int64_t n = volume(dims);
  const Dims pd{1, dims[1]};
  Buffer x(n, t, 11), scale(dims[1], dg::DataType::FLOAT, 12), bias(dims[1], dg::DataType::FLOAT, 13), y(n, t, 14);
  Runner r;
  auto X = declare(r.g, "x", dims, packed_strides(dims), t);
  auto S = declare(r.g, "scale", pd, packed_strides(pd), dg::DataType::FLOAT);
  auto B = declare(r.g, "bias", pd, packed_strides(pd), dg::DataType::FLOAT);
  dg::TensorPtr Y;
  if (rms) Y = r.g.rmsnorm(X, S, dg::RmsnormAttr().set_epsilon(1e-5).set_bias(B))[0];
  else Y = r.g.layernorm(X, S, B, dg::LayernormAttr().set_epsilon(1e-5))[0];
  output(Y, dims, packed_strides(dims), t);
  r.pack = {{X, x.data()}, {S, scale.data()}, {B, bias.data()}, {Y, y.data()}};
  if (!r.build(h, "cpu_norm_rowwise")) return;
  r.time_each_plan(h, [&](const std::string& plan, const Timing& sec) {
    const std::string what = std::string(rms ? "rmsnorm" : "layernorm") + " [" + std::to_string(dims[0]) + ", " +
                             std::to_string(dims[1]) + "] " + std::string(dg::to_string(t)) + " (" + plan + ")";
    report(what.c_str(), sec, 2.0 * static_cast<double>(n * dg::size_of(t)), copy_bw);
  });
}

// ---- pooling and resizing

void bench_resample(dg::Handle& h, const Timing& copy_bw, const char* what, const Dims& xd, const Dims& yd, bool nhwc,
                    const dg::ResampleAttr& attr) {
  const auto F = dg::DataType::FLOAT;
  Buffer x(volume(xd), F, 21), y(volume(yd), F, 22);
  Runner r;
  auto X = declare(r.g, "x", xd, nhwc ? nhwc_strides(xd) : packed_strides(xd), F);
  auto Y = r.g.resample(X, attr);
  output(Y, yd, nhwc ? nhwc_strides(yd) : packed_strides(yd), F);
  r.pack = {{X, x.data()}, {Y, y.data()}};
  if (!r.build(h, "cpu_pool_direct")) return;
  r.time_each_plan(h, [&](const std::string& plan, const Timing& sec) {
    report((std::string(what) + " (" + plan + ")").c_str(), sec, 4.0 * static_cast<double>(volume(xd) + volume(yd)),
           copy_bw);
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_iterations = std::max(1, std::atoi(argv[1]));
  dg::Handle h(dg::Device::cpu());
  if (argc > 2) impl_of(h).num_threads = std::atoi(argv[2]);
  dg::ThreadPool& pool = impl_of(h).thread_pool();
  const Timing copy_bw = copy_bandwidth(pool);
  std::printf("threads: %d; copy bandwidth (memcpy 256 MiB, read + write): %.1f GB/s by wall time, %.1f GB/s per CPU-second\n",
              pool.size(), copy_bw.wall * 1e-9, copy_bw.cpu * 1e-9);

  bench_pointwise(h, copy_bw, dg::PointwiseMode::RELU_FWD);
  bench_pointwise(h, copy_bw, dg::PointwiseMode::GELU_FWD);

  std::printf("\nnormalizations (cpu_norm_rowwise), X read + Y written:\n\n");
  std::printf(kHeader, "op");
  bench_norm(h, copy_bw, false, dg::DataType::FLOAT, {8192, 1024});
  bench_norm(h, copy_bw, false, dg::DataType::BFLOAT16, {8192, 1024});
  bench_norm(h, copy_bw, true, dg::DataType::FLOAT, {8192, 1024});
  bench_norm(h, copy_bw, false, dg::DataType::FLOAT, {2, 1 << 22});

  std::printf("\npooling and resizing (cpu_pool_direct), fp32, X read + Y written:\n\n");
  std::printf(kHeader, "op");
  using RM = dg::ResampleMode;
  bench_resample(h, copy_bw, "maxpool 3x3/2 pad 1, NHWC [16,64,112,112]", {16, 64, 112, 112}, {16, 64, 56, 56}, true,
                 dg::ResampleAttr().set_resampling_mode(RM::MAXPOOL).set_window({3, 3}).set_stride({2, 2}).set_padding({1, 1}));
  bench_resample(h, copy_bw, "avgpool 2x2/2, NCHW [16,64,112,112]", {16, 64, 112, 112}, {16, 64, 56, 56}, false,
                 dg::ResampleAttr().set_resampling_mode(RM::AVGPOOL_EXCLUDE_PADDING).set_window({2, 2}).set_stride({2, 2}));
  bench_resample(h, copy_bw, "bilinear 2x, NHWC [16,64,56,56]", {16, 64, 56, 56}, {16, 64, 112, 112}, true,
                 dg::ResampleAttr().set_resampling_mode(RM::BILINEAR));
  return 0;
}
