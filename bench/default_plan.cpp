// The plan a user gets by default against the best plan in the same list, on the CPU or a GPU:
// for each workload the planner's list (heuristics A, B and FALLBACK: mode A's first plan is the
// default's, and cuDNN's best is over every config its three modes offer; ref left out of the
// timing) is built and timed plan by plan, and the program prints mode A's first plan beside the
// fastest, the fastest own plan and the fastest vendor plans (cudnn, cublaslt). It also prints,
// per engine, the measured / estimated time of the engine's first candidate: bench/calibrate.py
// turns those CALIB lines into src/planning/calibration_table.inc, the table mode A ranks by.
//
//   dnngraph_bench_default_plan [--device cpu|cuda] [--only SUBSTRING[,...]] [--own N] [--vendor N]
//                               [--build-only] [--budget SECONDS] [--rounds N]
//
// --only: workloads whose names contain one of the substrings, or (a part ending in '$') the one named.
// --own N: the first N candidates of each own engine are timed (default 3 on CUDA, where each
// compiles with NVRTC; every one on the CPU); --vendor N: the first N of each vendor engine
// (default 24). --build-only: build those plans and stop (fills DNNGRAPH_BENCH_CACHE, the kernel
// cache's folder, so that parallel processes can compile before the timed run). The tuning DB is
// pointed at an empty file: mode A's pick here is the heuristics', not an earlier tune's.
// --rounds N (default 1): time every plan N times, in list order and then backwards in turn, and
// take the median round (the slower of two): on an H100 whatever plan stood 7th in an SDPA list
// ran 8% faster than its neighbours in two calls (docs/perf.md, 2026-12-06), a place, not a plan.
//
// Lines: CAND <workload> <index> <engine> <estimate ms> <calibration> <measured ms or -> <label>
//        [rounds <ms>,<ms>...]
//        ROW <workload> mode_a <ms> <x of best> best <ms> own <ms> cudnn <ms> cublaslt <ms> | labels
//        CALIB <device> <engine> <family> <size class> <precision> <measured / estimate> <workload>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../tests/common/dims.hpp"
#include "sampled_check.hpp"
#include "core/dtype.hpp"
#include "dnngraph/dnngraph.hpp"
#include "dnngraph/kernel_cache.hpp"
#include "graph/graph_impl.hpp"
#include "planning/calibration.hpp"
#include "planning/plan_set.hpp"
#include "runtime/cuda/context.hpp"
#include "runtime/memory.hpp"

namespace dg = dnngraph;
using test_dims::channels_last;
using test_dims::Dims;
using test_dims::packed;
using test_dims::volume;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  bool cuda = false;
  std::string only;
  int own = -1;  // -1: the device's default
  int vendor = 24;
  bool build_only = false;
  double budget_s = 1e9;
  int rounds = 1;
} g_opt;
const Clock::time_point g_start = Clock::now();
double elapsed() { return std::chrono::duration<double>(Clock::now() - g_start).count(); }

// A part ending in '$' names one workload exactly (bench/gpu/default_plan.sh's one process per
// workload: "rn50_1x1_c256_56_k64" is also a substring of its fp32 twin's name).
bool selected(const std::string& name) {
  if (g_opt.only.empty()) return true;
  size_t start = 0;
  while (start <= g_opt.only.size()) {
    const size_t end = std::min(g_opt.only.find(',', start), g_opt.only.size());
    const std::string part = g_opt.only.substr(start, end - start);
    if (!part.empty() && part.back() == '$' && name == part.substr(0, part.size() - 1)) return true;
    if (!part.empty() && part.back() != '$' && name.find(part) != std::string::npos) return true;
    start = end + 1;
  }
  return false;
}

bool check(const dg::Status& s, const std::string& what) {
  if (!s.ok()) std::printf("ERROR %s: %s\n", what.c_str(), s.to_string().c_str());
  return s.ok();
}

bool is_vendor(std::string_view engine) { return engine == "cudnn" || engine == "cublaslt"; }

// Buffers of one workload, random in [-1, 1); the host copy of each stays for the reference.
struct Buffers {
  dg::HandleImpl& h;
  std::vector<dg::memory::Buffer> held;
  std::map<const void*, std::pair<std::vector<uint8_t>, dg::DataType>> host;
  explicit Buffers(dg::HandleImpl& handle) : h(handle) {}
  void* random(int64_t elems, dg::DataType t, uint32_t seed) {
    held.emplace_back(h, static_cast<size_t>(elems * dg::size_of(t)) + 64);
    std::vector<uint8_t> bytes(held.back().size());
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int64_t i = 0; i < elems; ++i) dg::dtype::store(bytes.data(), t, i, u(rng));
    (void)dg::memory::copy_to_device(h, held.back().get(), bytes.data(), bytes.size());
    host[held.back().get()] = {std::move(bytes), t};
    return held.back().get();
  }
  bench_check::HostTensor host_of(const void* device) const {
    const auto& e = host.at(device);
    return {&e.first, e.second};
  }
  void* zeros(int64_t bytes) {
    held.emplace_back(h, static_cast<size_t>(bytes) + 64);
    return held.back().get();
  }
};

// Seconds per call: CUDA events on a GPU (median of 5 repeats of ~10 ms), wall time on the CPU
// (median of repeats of ~50 ms). One call first; a plan slower than `give_up_s` is not repeated.
double seconds_per_call(dg::HandleImpl& h, const std::function<dg::Status()>& call, double give_up_s) {
  const double target = g_opt.cuda ? 0.01 : 0.05;
  auto wall = [&](int calls) {
    (void)dg::memory::synchronize(h);
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) (void)call();
    (void)dg::memory::synchronize(h);
    return std::chrono::duration<double>(Clock::now() - t0).count() / calls;
  };
  std::unique_ptr<dg::cuda::EventTimer> timer;
  if (g_opt.cuda && !check(dg::cuda::EventTimer::create(h, timer), "event timer")) return -1;
  auto timed = [&](int calls) {
    if (!timer) return wall(calls);
    double s = 0;
    (void)timer->start();
    for (int i = 0; i < calls; ++i) (void)call();
    (void)timer->stop();
    (void)timer->seconds(s);
    return s / calls;
  };
  const double first = timed(1);
  if (first > give_up_s) return first;
  const int calls = std::max(3, std::min(1000, static_cast<int>(target / std::max(first, 1e-7))));
  std::vector<double> reps;
  for (int r = 0; r < 5; ++r) reps.push_back(timed(calls));
  std::sort(reps.begin(), reps.end());
  return reps[reps.size() / 2];
}

std::shared_ptr<dg::KernelCache> kernel_cache() {
  static std::shared_ptr<dg::KernelCache> cache = [] {
    auto c = std::make_shared<dg::KernelCache>();
    if (const char* dir = std::getenv("DNNGRAPH_BENCH_CACHE")) c->set_directory(dir);
    return c;
  }();
  return cache;
}

struct Timed {
  double ms = 1e30;
  std::string label;
};

// ROW line: mode A's plan, the best of the list, and the best of each kind (own, cudnn, cublaslt).
void print_row(const std::string& name, const Timed& mode_a, const Timed& overall, const std::map<std::string, Timed>& best,
               const std::string& own_checked) {
  auto ms_of = [&](const char* key) {
    auto it = best.find(key);
    return it == best.end() ? std::string("-") : std::to_string(it->second.ms);
  };
  auto label_of = [&](const char* key) {
    auto it = best.find(key);
    return it == best.end() ? std::string("-") : it->second.label;
  };
  std::printf("ROW %s mode_a %.5f %.3f best %.5f own %s cudnn %s cublaslt %s | mode_a=%s best=%s own=%s cudnn=%s cublaslt=%s "
              "own_checked=%s\n",
              name.c_str(), mode_a.ms, mode_a.ms / overall.ms, overall.ms, ms_of("own").c_str(), ms_of("cudnn").c_str(),
              ms_of("cublaslt").c_str(), mode_a.label.c_str(), overall.label.c_str(), label_of("own").c_str(),
              label_of("cudnn").c_str(), label_of("cublaslt").c_str(), own_checked.c_str());
}

// Fills the checked output with NaN before a plan's first call.
void poison(dg::HandleImpl& h, const bench_check::OutputCheck& c) {
  const size_t bytes = static_cast<size_t>(c.elems * dg::size_of(c.type)), words = (bytes + 3) / 4;
  const uint32_t pattern = bench_check::nan_pattern(c.type);
  if (g_opt.cuda) {
    (void)dg::cuda::fill32(h, c.device_out, pattern, words);
  } else {
    auto* w = static_cast<uint32_t*>(c.device_out);
    for (size_t i = 0; i < words; ++i) w[i] = pattern;
  }
}

// The plan's output against the workload's reference; prints a CHECK line, returns whether it passed.
bool check_output(dg::HandleImpl& h, const bench_check::OutputCheck& c, const std::string& name, size_t index,
                  const std::string& engine) {
  std::vector<uint8_t> out(static_cast<size_t>(c.elems * dg::size_of(c.type)));
  if (!check(dg::memory::copy_to_host(h, out.data(), c.device_out, out.size()), name + " read back")) return false;
  const bench_check::CheckResult r = bench_check::compare(c, out);
  const bool ok = r.passed(c.tolerance);
  std::printf("CHECK %s %zu %s %s max_err %.2e nan %lld\n", name.c_str(), index, engine.c_str(), ok ? "ok" : "FAIL",
              r.max_err, static_cast<long long>(r.nan_count));
  return ok;
}

void run(const std::string& name, dg::Graph& g, dg::Handle& handle, const dg::VariantPack& pack,
         const bench_check::OutputCheck& out_check = {}) {
  dg::HandleImpl& h = impl_of(handle);
  g.set_kernel_cache(kernel_cache());
  g.deselect_engines({"ref"});  // the reference engine runs for correctness, not speed
  if (!check(g.validate(), name) || !check(g.build_operation_graph(handle), name) ||
      !check(g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::B, dg::HeurMode::FALLBACK}), name) ||
      !check(g.check_support(handle), name)) {
    std::printf("%s\n", g.explain().c_str());
    return;
  }
  const auto& parts = impl_of(g).plans->parts;
  if (parts.size() != 1) {
    std::printf("NOTE %s: %zu partitions; plans are timed per partition only for one\n%s", name.c_str(), parts.size(),
                g.explain().c_str());
    return;
  }
  const auto& pp = parts[0];
  const dg::WorkloadClass cls = dg::classify(pp.partition, h.info);
  const std::string device = dg::calibration_device(h.info);
  const int own_limit = g_opt.own >= 0 ? g_opt.own : (g_opt.cuda ? 3 : 1 << 20);
  // The candidates to time, built and checked once; each round times them all, the even rounds in
  // list order and the odd ones backwards, so a plan's time does not depend on where it stands.
  struct Timing {
    size_t index;
    std::string engine, label;
    bool first_of_engine;
    int64_t ws = 0;
    std::vector<double> ms;  // one per round; empty: not built, failed or wrong
  };
  std::vector<Timing> timings;
  std::map<std::string, int> taken;
  int own_checked = 0, own_passed = 0;
  double fastest_ms = 1e30;
  for (size_t i = 0; i < pp.candidates.size() && elapsed() < g_opt.budget_s; ++i) {
    const dg::Candidate& c = pp.candidates[i];
    const std::string engine(dg::engine_by_id(c.engine_id)->name());
    const bool first_of_engine = taken[engine] == 0;
    if (i > 0 && taken[engine] >= (is_vendor(engine) ? g_opt.vendor : own_limit)) continue;
    if (g_opt.build_only && is_vendor(engine)) continue;  // vendors keep no kernels on disk to fill
    ++taken[engine];
    Timing t{i, engine, c.label(), first_of_engine, 0, {}};
    const int64_t idx = static_cast<int64_t>(i);
    if (check(g.build_plan_at_index(handle, idx), name + " build " + t.label) && !g_opt.build_only) {
      (void)g.get_workspace_size_plan_at_index(idx, t.ws);
      dg::memory::Buffer workspace(h, static_cast<size_t>(t.ws) + 256);
      auto once = [&] { return g.execute_plan_at_index(handle, pack, workspace.get(), idx, t.ws); };
      if (out_check.enabled()) poison(h, out_check);
      if (check(once(), name + " execute " + t.label)) {
        const double give_up = fastest_ms < 1e29 ? 30 * fastest_ms * 1e-3 : 1.0;
        double ms = seconds_per_call(h, once, give_up) * 1e3;
        if (out_check.enabled()) {
          const bool ok = check_output(h, out_check, name, i, engine);
          if (!is_vendor(engine)) ++own_checked, own_passed += ok ? 1 : 0;
          if (!ok) ms = -1;  // a wrong plan is not a candidate for best
        }
        if (ms > 0) t.ms.push_back(ms), fastest_ms = std::min(fastest_ms, ms);
      }
    }
    timings.push_back(std::move(t));
  }
  for (int round = 1; round < g_opt.rounds && !g_opt.build_only; ++round)
    for (size_t k = 0; k < timings.size(); ++k) {
      Timing& t = timings[round % 2 ? timings.size() - 1 - k : k];
      if (t.ms.empty()) continue;
      const auto idx = static_cast<int64_t>(t.index);
      dg::memory::Buffer workspace(h, static_cast<size_t>(t.ws) + 256);
      auto once = [&] { return g.execute_plan_at_index(handle, pack, workspace.get(), idx, t.ws); };
      t.ms.push_back(seconds_per_call(h, once, 30 * t.ms.front() * 1e-3) * 1e3);
    }
  std::map<std::string, Timed> best;  // by engine name
  Timed mode_a, overall;
  for (Timing& t : timings) {
    const dg::Candidate& c = pp.candidates[t.index];
    std::sort(t.ms.begin(), t.ms.end());
    const double ms = t.ms.empty() ? -1 : t.ms[t.ms.size() / 2];  // the median round (the slower of two)
    std::string rounds;
    for (size_t r = 0; t.ms.size() > 1 && r < t.ms.size(); ++r) rounds += (r ? "," : " rounds ") + std::to_string(t.ms[r]);
    std::printf("CAND %s %zu %s %.5f %.3f %s %s%s\n", name.c_str(), t.index, t.engine.c_str(), c.estimate_s * 1e3,
                c.calibration, ms > 0 ? std::to_string(ms).c_str() : "-", t.label.c_str(), rounds.c_str());
    if (ms <= 0) continue;
    if (t.first_of_engine)
      std::printf("CALIB %s %s %s %s %s %.4f %s\n", device.c_str(), t.engine.c_str(),
                  std::string(dg::to_string(cls.family)).c_str(), std::string(dg::to_string(cls.size)).c_str(),
                  std::string(dg::to_string(cls.precision)).c_str(), ms * 1e-3 / c.estimate_s, name.c_str());
    if (t.index == 0) mode_a = {ms, t.label};
    if (ms < overall.ms) overall = {ms, t.label};
    Timed& b = best[is_vendor(t.engine) ? t.engine : "own"];
    if (ms < b.ms) b = {ms, t.label};
  }
  if (g_opt.build_only || mode_a.ms > 1e29) return;
  print_row(name, mode_a, overall, best,
            out_check.enabled() ? std::to_string(own_passed) + "/" + std::to_string(own_checked) : "none");
  std::fflush(stdout);
}

// Workloads named "tf32_..." let FLOAT convolutions and matmuls round to TF32 (PyTorch's default
// for cuDNN convolutions); "fp32_..." ones compute in fp32, dnngraph's default.
dg::Graph new_graph(dg::DataType io, const std::string& name = "") {
  dg::Graph g;
  g.set_io_data_type(io).set_intermediate_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  if (name.rfind("tf32_", 0) == 0) g.set_allow_tf32(true);
  return g;
}

// conv R x S (pad R/2, stride 1) + bias + ReLU, NHWC / KRSC; `groups`: filters see C / groups channels.
void conv(dg::Handle& handle, const std::string& name, dg::DataType t, int64_t n, int64_t c, int64_t hw, int64_t k,
          int64_t r, int64_t groups = 1, int64_t stride = 1) {
  if (!selected(name)) return;
  Buffers buf(impl_of(handle));
  const int64_t ohw = (hw + 2 * (r / 2) - r) / stride + 1;
  const Dims xd{n, c, hw, hw}, wd{k, c / groups, r, r}, yd{n, k, ohw, ohw}, bd{1, k, 1, 1};
  dg::Graph g = new_graph(t, name);
  auto X = g.tensor(dg::TensorAttr().set_name("X").set_dim(xd).set_stride(channels_last(xd)));
  auto W = g.tensor(dg::TensorAttr().set_name("W").set_dim(wd).set_stride(channels_last(wd)));
  auto B = g.tensor(dg::TensorAttr().set_name("B").set_dim(bd).set_stride(channels_last(bd)));
  auto Y = g.relu(g.bias(g.conv_fprop(X, W, dg::ConvFpropAttr().set_padding({r / 2, r / 2}).set_stride({stride, stride})
                                              .set_dilation({1, 1})), B));
  Y->set_output(true).set_stride(channels_last(yd));
  void *x = buf.random(volume(xd), t, 1), *w = buf.random(volume(wd), t, 2), *b = buf.random(volume(bd), t, 3);
  void* y = buf.zeros(volume(yd) * dg::size_of(t));
  bench_check::ConvFpropReference ref{buf.host_of(x), buf.host_of(w), buf.host_of(b), n, c, k, groups};
  ref.in[1] = ref.in[2] = hw;
  ref.out[1] = ref.out[2] = ohw;
  ref.filt[1] = ref.filt[2] = r;
  ref.pad[1] = ref.pad[2] = r / 2;
  ref.stride[1] = ref.stride[2] = stride;
  bench_check::OutputCheck check{y, volume(yd), t, ref};
  // TF32 rounds the inputs to a 10-bit mantissa: over a deep reduction (3x3 x 512 = 4608 terms)
  // cuDNN's TF32 configs land near 1.2e-2 of the output's scale, past the fp32 rows' 1e-2.
  if (name.rfind("tf32_", 0) == 0) check.tolerance = 3e-2;
  run(name, g, handle, {{X, x}, {W, w}, {B, b}, {Y, y}}, check);
}

// 3D conv T x R x S (pad 1, stride 1) + bias + ReLU, NDHWC / KTRSC (a video network's layer).
void conv3d(dg::Handle& handle, const std::string& name, dg::DataType t, int64_t n, int64_t c, int64_t depth,
            int64_t hw, int64_t k) {
  if (!selected(name)) return;
  Buffers buf(impl_of(handle));
  const Dims xd{n, c, depth, hw, hw}, wd{k, c, 3, 3, 3}, yd{n, k, depth, hw, hw}, bd{1, k, 1, 1, 1};
  dg::Graph g = new_graph(t, name);
  auto X = g.tensor(dg::TensorAttr().set_name("X").set_dim(xd).set_stride(channels_last(xd)));
  auto W = g.tensor(dg::TensorAttr().set_name("W").set_dim(wd).set_stride(channels_last(wd)));
  auto B = g.tensor(dg::TensorAttr().set_name("B").set_dim(bd).set_stride(channels_last(bd)));
  auto Y = g.relu(g.bias(g.conv_fprop(X, W, dg::ConvFpropAttr().set_padding({1, 1, 1}).set_stride({1, 1, 1})
                                              .set_dilation({1, 1, 1})), B));
  Y->set_output(true).set_stride(channels_last(yd));
  void *x = buf.random(volume(xd), t, 1), *w = buf.random(volume(wd), t, 2), *b = buf.random(volume(bd), t, 3);
  void* y = buf.zeros(volume(yd) * dg::size_of(t));
  bench_check::ConvFpropReference ref{buf.host_of(x), buf.host_of(w), buf.host_of(b), n, c, k, 1};
  const int64_t sp[3] = {depth, hw, hw};
  for (int d = 0; d < 3; ++d) ref.in[d] = ref.out[d] = sp[d], ref.filt[d] = 3, ref.pad[d] = 1;
  run(name, g, handle, {{X, x}, {W, w}, {B, b}, {Y, y}}, {y, volume(yd), t, ref});
}

// Transposed convolution R x R, stride 2, pad (R - 2) / 2 (a decoder's 2x up-sampling layer), as
// conv_dgrad: dy [n, k, hw, hw] -> dx [n, c, 2 hw, 2 hw], filters [k, c, R, R], NHWC / KRSC.
void conv_transposed(dg::Handle& handle, const std::string& name, dg::DataType t, int64_t n, int64_t k, int64_t hw,
                     int64_t c, int64_t r) {
  if (!selected(name)) return;
  Buffers buf(impl_of(handle));
  const int64_t pad = (r - 2) / 2, out_hw = 2 * hw;
  const Dims dyd{n, k, hw, hw}, wd{k, c, r, r}, dxd{n, c, out_hw, out_hw};
  dg::Graph g = new_graph(t, name);
  auto DY = g.tensor(dg::TensorAttr().set_name("DY").set_dim(dyd).set_stride(channels_last(dyd)));
  auto W = g.tensor(dg::TensorAttr().set_name("W").set_dim(wd).set_stride(channels_last(wd)));
  auto DX = g.conv_dgrad(DY, W, dg::ConvDgradAttr().set_padding({pad, pad}).set_stride({2, 2}).set_dilation({1, 1}));
  DX->set_output(true).set_dim(dxd).set_stride(channels_last(dxd));
  void *dy = buf.random(volume(dyd), t, 1), *w = buf.random(volume(wd), t, 2);
  void* dx = buf.zeros(volume(dxd) * dg::size_of(t));
  const bench_check::ConvDgradReference ref{buf.host_of(dy), buf.host_of(w), n, c, k, out_hw, out_hw, hw, hw, r, r,
                                            pad, 2};
  run(name, g, handle, {{DY, dy}, {W, w}, {DX, dx}}, {dx, volume(dxd), t, ref});
}

// (batch x m x k) x (batch x k x n), then `epilogue`: none, "chain" (x 0.125 + bias, GELU, AMAX)
// or "bias_relu".
void matmul(dg::Handle& handle, const std::string& name, dg::DataType t, int64_t batch, int64_t m, int64_t n,
            int64_t k, const std::string& epilogue) {
  if (!selected(name)) return;
  Buffers buf(impl_of(handle));
  const Dims ad{batch, m, k}, bd{batch, k, n}, cd{batch, m, n}, biasd{1, 1, n};
  dg::Graph g = new_graph(t, name);
  auto A = g.tensor(dg::TensorAttr().set_name("A").set_dim(ad).set_stride(packed(ad)));
  auto B = g.tensor(dg::TensorAttr().set_name("B").set_dim(bd).set_stride(packed(bd)));
  auto C = g.matmul(A, B, dg::MatmulAttr());
  void *a = buf.random(volume(ad), t, 4), *b = buf.random(volume(bd), t, 5);
  dg::VariantPack pack{{A, a}, {B, b}};
  bench_check::MatmulReference ref{buf.host_of(a), buf.host_of(b), {}, m, n, k, 0};
  if (epilogue != "none") {
    auto Bias = g.tensor(dg::TensorAttr().set_name("bias").set_dim(biasd).set_stride(packed(biasd)));
    pack[Bias] = buf.random(n, t, 6);
    ref.bias = buf.host_of(pack[Bias]);
    ref.epilogue = epilogue == "chain" ? 2 : 1;
    if (epilogue == "chain") {
      C = g.gelu(g.bias(g.scale(C, g.tensor(0.125)), Bias));
      auto Amax = g.reduction(C, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX));
      Amax->set_dim({1, 1, 1}).set_output(true).set_data_type(dg::DataType::FLOAT);
      pack[Amax] = buf.zeros(4);
    } else {
      C = g.relu(g.bias(C, Bias));
    }
  }
  C->set_output(true);
  pack[C] = buf.zeros(volume(cd) * dg::size_of(t));
  run(name, g, handle, pack, {pack[C], volume(cd), t, ref});
}

// The FP8 GEMM of cuBLASLt's samples (issue #24's FP8 row): A [m, k] x B stored [n, k], both of
// type t, times A's and B's descales (device scalars 0.5 and 4), bf16 out, AMAX of it. Own FP8
// plans are held back until checked on a GPU: DNNGRAPH_UNCHECKED_ENGINES=gemm_fp8 offers them.
void fp8_matmul(dg::Handle& handle, const std::string& name, dg::DataType t, int64_t m, int64_t n, int64_t k) {
  if (!selected(name)) return;
  Buffers buf(impl_of(handle));
  const Dims ad{1, m, k}, bd{1, k, n}, cd{1, m, n}, one{1, 1, 1};
  dg::Graph g = new_graph(dg::DataType::BFLOAT16, name);
  auto A = g.tensor(dg::TensorAttr().set_name("A").set_dim(ad).set_stride(packed(ad)).set_data_type(t));
  auto B = g.tensor(dg::TensorAttr().set_name("B").set_dim(bd).set_stride({k * n, 1, k}).set_data_type(t));
  auto scalar = [&](const char* nm) {
    return g.tensor(dg::TensorAttr().set_name(nm).set_dim(one).set_stride(one).set_data_type(dg::DataType::FLOAT));
  };
  auto DA = scalar("descale_a"), DB = scalar("descale_b");
  auto C = g.scale(g.scale(g.matmul(A, B, dg::MatmulAttr()), DA), DB);
  C->set_output(true);
  auto Amax = g.reduction(C, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX));
  Amax->set_dim(one).set_output(true).set_data_type(dg::DataType::FLOAT);
  void *a = buf.random(volume(ad), t, 4), *b = buf.random(volume(bd), t, 5);
  const float da = 0.5f, db = 4.0f;
  void *pa = buf.zeros(4), *pb = buf.zeros(4);
  (void)dg::memory::copy_to_device(impl_of(handle), pa, &da, 4);
  (void)dg::memory::copy_to_device(impl_of(handle), pb, &db, 4);
  void* c = buf.zeros(volume(cd) * 2);
  bench_check::MatmulReference ref{buf.host_of(a), buf.host_of(b), {}, m, n, k, 3, true, double(da) * db};
  run(name, g, handle, {{A, a}, {B, b}, {DA, pa}, {DB, pb}, {C, c}, {Amax, buf.zeros(4)}},
      {c, volume(cd), dg::DataType::BFLOAT16, ref});
}

// Causal attention, [b, h, s, d] packed, scale 1/sqrt(d).
void sdpa(dg::Handle& handle, const std::string& name, dg::DataType t, int64_t b, int64_t heads, int64_t s, int64_t d) {
  if (!selected(name)) return;
  Buffers buf(impl_of(handle));
  const Dims qd{b, heads, s, d};
  dg::Graph g = new_graph(t, name);
  auto T = [&](const char* n) { return g.tensor(dg::TensorAttr().set_name(n).set_dim(qd).set_stride(packed(qd))); };
  auto Q = T("Q"), K = T("K"), V = T("V");
  auto [O, S] = g.sdpa(Q, K, V, dg::SdpaAttr().set_is_inference(true).set_causal_mask(true));
  O->set_output(true);
  run(name, g, handle,
      {{Q, buf.random(volume(qd), t, 7)}, {K, buf.random(volume(qd), t, 8)}, {V, buf.random(volume(qd), t, 9)},
       {O, buf.zeros(volume(qd) * dg::size_of(t))}});
}

// A pointwise chain: relu((x + b) * s), NHWC.
void pointwise(dg::Handle& handle, const std::string& name, dg::DataType t, int64_t n, int64_t c, int64_t hw) {
  if (!selected(name)) return;
  Buffers buf(impl_of(handle));
  const Dims xd{n, c, hw, hw}, bd{1, c, 1, 1};
  dg::Graph g = new_graph(t, name);
  auto X = g.tensor(dg::TensorAttr().set_name("X").set_dim(xd).set_stride(channels_last(xd)));
  auto B = g.tensor(dg::TensorAttr().set_name("B").set_dim(bd).set_stride(channels_last(bd)));
  auto Y = g.relu(g.scale(g.bias(X, B), g.tensor(0.5)));
  Y->set_output(true).set_stride(channels_last(xd));
  run(name, g, handle,
      {{X, buf.random(volume(xd), t, 10)}, {B, buf.random(volume(bd), t, 11)}, {Y, buf.zeros(volume(xd) * dg::size_of(t))}});
}

void gpu_workloads(dg::Handle& h) {
  const auto bf16 = dg::DataType::BFLOAT16;
  conv(h, "conv_tutorial_n32c128_56_k256", bf16, 32, 128, 56, 256, 3);
  conv(h, "rn50_3x3_c64_56_k64", bf16, 32, 64, 56, 64, 3);
  conv(h, "rn50_3x3_c256_14_k256", bf16, 32, 256, 14, 256, 3);
  conv(h, "rn50_1x1_c256_56_k64", bf16, 32, 256, 56, 64, 1);
  conv(h, "rn50_3x3_c128_28_k128", bf16, 32, 128, 28, 128, 3);
  conv(h, "rn50_3x3_c512_7_k512", bf16, 32, 512, 7, 512, 3);
  conv(h, "rn50_3x3_n8_c64_32_k64", bf16, 8, 64, 32, 64, 3);
  conv(h, "rn50_3x3_n1_c64_32_k64", bf16, 1, 64, 32, 64, 3);
  conv(h, "mbv2_depthwise_3x3_c144_56", bf16, 32, 144, 56, 144, 3, 144);
  // ResNet-50's stem (3 input channels, 7x7 stride 2): its slowest layer under torch.compile's dnngraph backend.
  conv(h, "rn50_stem_7x7s2_c3_224_k64", bf16, 32, 3, 224, 64, 7, 1, 2);
  conv_transposed(h, "convT_4x4s2_c128to64_64_n8", bf16, 8, 128, 64, 64, 4);
  conv3d(h, "conv3d_3x3x3_c64_16x56_k64_n4", bf16, 4, 64, 16, 56, 64);
  matmul(h, "gemm_8192", bf16, 1, 8192, 8192, 8192, "none");
  matmul(h, "gemm_4096_bias_relu", bf16, 1, 4096, 4096, 4096, "bias_relu");
  matmul(h, "matmul_8x2048_chain", bf16, 8, 2048, 2048, 2048, "chain");
  matmul(h, "matmul_16x512x1024x512_chain", bf16, 16, 512, 512, 1024, "chain");
  matmul(h, "matmul_16x1024x4096x1024_chain", bf16, 16, 1024, 4096, 1024, "chain");
  fp8_matmul(h, "fp8_gemm_8192_descale_amax", dg::DataType::FP8_E4M3, 8192, 8192, 8192);
  sdpa(h, "sdpa_b4h16s1024d64_causal", bf16, 4, 16, 1024, 64);
  sdpa(h, "sdpa_b4h16s4096d128_causal", bf16, 4, 16, 4096, 128);
  pointwise(h, "pointwise_bias_scale_relu_n32c256_56", bf16, 32, 256, 56);
  // fp32 graphs (an ONNX model as exported): engines' fp32 efficiency is calibrated on its own.
  const auto f32 = dg::DataType::FLOAT;
  conv(h, "fp32_conv_tutorial_n32c128_56_k256", f32, 32, 128, 56, 256, 3);
  conv(h, "fp32_rn50_3x3_c64_56_k64", f32, 32, 64, 56, 64, 3);
  conv(h, "fp32_rn50_3x3_c256_14_k256", f32, 32, 256, 14, 256, 3);
  conv(h, "fp32_rn50_1x1_c256_56_k64", f32, 32, 256, 56, 64, 1);
  conv(h, "fp32_rn50_3x3_c512_7_k512", f32, 32, 512, 7, 512, 3);
  conv(h, "fp32_rn50_3x3_n1_c64_32_k64", f32, 1, 64, 32, 64, 3);
  conv(h, "fp32_mbv2_depthwise_3x3_c144_56", f32, 32, 144, 56, 144, 3, 144);
  matmul(h, "fp32_gemm_4096_bias_relu", f32, 1, 4096, 4096, 4096, "bias_relu");
  conv(h, "tf32_conv_tutorial_n32c128_56_k256", f32, 32, 128, 56, 256, 3);
  conv(h, "tf32_rn50_3x3_c64_56_k64", f32, 32, 64, 56, 64, 3);
  conv(h, "tf32_rn50_1x1_c256_56_k64", f32, 32, 256, 56, 64, 1);
  conv(h, "tf32_rn50_3x3_c512_7_k512", f32, 32, 512, 7, 512, 3);
}

void cpu_workloads(dg::Handle& h) {
  const auto f32 = dg::DataType::FLOAT;
  matmul(h, "sgemm_1024", f32, 1, 1024, 1024, 1024, "none");
  matmul(h, "sgemm_2048", f32, 1, 2048, 2048, 2048, "none");
  matmul(h, "sgemm_512_bias_relu", f32, 1, 512, 512, 512, "bias_relu");
  conv(h, "conv_tutorial_n1c128_56_k256", f32, 1, 128, 56, 256, 3);
  conv(h, "rn50_3x3_c256_14_k256", f32, 1, 256, 14, 256, 3);
  conv(h, "rn50_1x1_c256_56_k64", f32, 1, 256, 56, 64, 1);
  conv(h, "rn50_3x3_c64_56_k64", f32, 1, 64, 56, 64, 3);
  conv(h, "rn50_3x3_c512_7_k512", f32, 1, 512, 7, 512, 3);
  conv(h, "mbv2_depthwise_3x3_c144_56", f32, 1, 144, 56, 144, 3, 144);
  conv(h, "mbv2_1x1_c16_112_k96", f32, 1, 16, 112, 96, 1);
  // bf16 inference (AVX512_BF16 / AMX plans where the CPU has them; fp32 plans elsewhere).
  const auto bf16 = dg::DataType::BFLOAT16;
  conv(h, "bf16_rn50_3x3_c256_14_k256", bf16, 1, 256, 14, 256, 3);
  conv(h, "bf16_rn50_1x1_c256_14_k1024", bf16, 1, 256, 14, 1024, 1);
  conv(h, "bf16_rn50_1x1_c128_28_k512", bf16, 1, 128, 28, 512, 1);
  conv(h, "bf16_mbv2_1x1_c16_112_k96", bf16, 1, 16, 112, 96, 1);
  sdpa(h, "sdpa_b1h8s512d64_causal", f32, 1, 8, 512, 64);
  pointwise(h, "pointwise_bias_scale_relu_n1c256_56", f32, 1, 256, 56);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--device") g_opt.cuda = std::strcmp(next, "cuda") == 0, ++i;
    else if (a == "--only") g_opt.only = next, ++i;
    else if (a == "--own") g_opt.own = std::atoi(next), ++i;
    else if (a == "--vendor") g_opt.vendor = std::atoi(next), ++i;
    else if (a == "--budget") g_opt.budget_s = std::atof(next), ++i;
    else if (a == "--build-only") g_opt.build_only = true;
    else if (a == "--rounds") g_opt.rounds = std::max(1, std::atoi(next)), ++i;
    else {
      std::fprintf(stderr, "usage: %s [--device cpu|cuda] [--only S[,S...]] [--own N] [--vendor N] [--build-only] "
                           "[--budget SECONDS] [--rounds N]\n", argv[0]);
      return 64;
    }
  }
  // Mode A without an earlier tune's records: a DB file that does not exist.
  const std::string db = "/tmp/dnngraph_default_plan_bench_" + std::to_string(::getpid()) + ".db";
  ::setenv("DNNGRAPH_TUNING_DB", db.c_str(), 1);
  dg::Handle handle(g_opt.cuda ? dg::Device::cuda(0) : dg::Device::cpu());
  if (!check(handle.status(), g_opt.cuda ? "cuda:0" : "cpu")) return 1;
  const dg::DeviceInfo& info = impl_of(handle).info;
  std::printf("DEVICE %s | %s | calibration key %s | peak %.0f GFLOP/s, %.0f GB/s\n", info.name.c_str(),
              info.signature.c_str(), dg::calibration_device(info).c_str(), info.peak_flops * 1e-9,
              info.peak_bytes_per_s * 1e-9);
  if (g_opt.cuda) gpu_workloads(handle);
  else cpu_workloads(handle);
  std::printf("done in %.1f s\n", elapsed());
  return 0;
}
