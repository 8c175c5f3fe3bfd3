// GPU benchmark of cuda_sdpa_backward_flash on the attention cases of docs/perf.md: the forward
// (cuda_sdpa_flash, with stats) makes O and STATS from seeded random bf16 Q, K, V; dO is seeded
// random too; then every plan of the backward's list (mode A's first) is timed by CUDA events
// (three warm-ups, the median of timed executes). Prints one JSON object per plan. Correctness is
// the GPU tests' (test_cuda_sdpa_backward, against ref); here every gradient is poisoned with NaN
// before the warm-ups and checked for NaN after, and each plan's gradients are compared with the
// last plan's (the deterministic mma.sync core): the largest difference relative to that plan's
// largest magnitude.
// bench/gpu/sdpa_backward_torch.py times PyTorch's flash backward on the same cases.
//
// usage: dnngraph_bench_gpu_sdpa_backward_bench [--repeats N] [--case NAME]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "core/dtype.hpp"
#include "dnngraph/dnngraph.hpp"
#include "runtime/cuda/context.hpp"
#include "runtime/memory.hpp"

namespace dg = dnngraph;
using dg::DataType;

namespace {

using gpu_bench::random_bf16;

int g_repeats = 10;

void ok(const dg::Status& s, const std::string& what) { gpu_bench::ok_or_exit("sdpa_backward_bench", s, what); }

struct Case {
  const char* name;
  int64_t b, h, s, d;
  bool causal;
};
const Case kCases[] = {
    {"b4_h16_s4096_d128_causal", 4, 16, 4096, 128, true},
    {"b4_h16_s1024_d64_causal", 4, 16, 1024, 64, true},
    {"b4_h16_s4096_d128", 4, 16, 4096, 128, false},
};

// The backward's FLOPs as FlashAttention counts them: 2.5 times the forward's two GEMMs (causal: half).
double flops(const Case& c) {
  const double f = 10.0 * static_cast<double>(c.b * c.h * c.d) * static_cast<double>(c.s) * static_cast<double>(c.s);
  return c.causal ? f / 2 : f;
}


struct Bufs {
  std::vector<dg::memory::Buffer> all;
  void* add(dg::HandleImpl& hi, size_t bytes) {
    all.emplace_back(hi, bytes);
    ok(all.back().status(), "allocate");
    return all.back().get();
  }
};

void run_case(dg::Handle& handle, const Case& c) {
  dg::HandleImpl& hi = impl_of(handle);
  const std::vector<int64_t> dims{c.b, c.h, c.s, c.d}, strides{c.h * c.s * c.d, c.s * c.d, c.d, 1};
  const int64_t n = c.b * c.h * c.s * c.d;
  const size_t bytes = static_cast<size_t>(n) * 2;
  Bufs bufs;
  void *q = bufs.add(hi, bytes), *k = bufs.add(hi, bytes), *v = bufs.add(hi, bytes), *o = bufs.add(hi, bytes);
  void *d_o = bufs.add(hi, bytes), *dq = bufs.add(hi, bytes), *dk = bufs.add(hi, bytes), *dv = bufs.add(hi, bytes);
  void* stats = bufs.add(hi, static_cast<size_t>(c.b * c.h * c.s) * 4);
  int seed = 1;
  for (void* p : {q, k, v, d_o}) ok(dg::memory::copy_to_device(hi, p, random_bf16(n, seed++).data(), bytes), "upload");

  auto T = [&](dg::Graph& g, const char* name) {
    return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(strides).set_data_type(DataType::BFLOAT16));
  };
  auto S = [&](dg::Graph& g) {
    return g.tensor(dg::TensorAttr().set_name("STATS").set_dim({c.b, c.h, c.s, 1}).set_stride({c.h * c.s, c.s, 1, 1})
                        .set_data_type(DataType::FLOAT));
  };
  auto build = [&](dg::Graph& g) {
    ok(g.validate(), "validate");
    ok(g.build_operation_graph(handle), "build_operation_graph");
    ok(g.create_execution_plans({dg::HeurMode::A}), "create_execution_plans");
    ok(g.check_support(handle), "check_support");
    ok(g.build_plans(handle), "build_plans");
  };
  {  // the forward, for O and STATS
    dg::Graph f;
    f.set_io_data_type(DataType::BFLOAT16).set_compute_data_type(DataType::FLOAT).select_engines({"cuda_sdpa_flash"});
    auto Q = T(f, "Q"), K = T(f, "K"), V = T(f, "V");
    auto [O, ST] = f.sdpa(Q, K, V, dg::SdpaAttr().set_is_inference(false).set_causal_mask(c.causal));
    O->set_output(true);
    ST->set_output(true);
    build(f);
    ok(f.execute(handle, {{Q, q}, {K, k}, {V, v}, {O, o}, {ST, stats}}, nullptr), "forward");
  }
  dg::Graph g;
  g.set_io_data_type(DataType::BFLOAT16).set_compute_data_type(DataType::FLOAT).select_engines({"cuda_sdpa_backward_flash"});
  auto Q = T(g, "Q"), K = T(g, "K"), V = T(g, "V"), O = T(g, "O"), DO = T(g, "dO"), ST = S(g);
  auto [DQ, DK, DV] = g.sdpa_backward(Q, K, V, O, DO, ST, dg::SdpaBackwardAttr().set_causal_mask(c.causal));
  for (auto& t : {DQ, DK, DV}) t->set_output(true);
  ok(g.validate(), "validate");
  ok(g.build_operation_graph(handle), "build_operation_graph");
  ok(g.create_execution_plans({dg::HeurMode::A}), "create_execution_plans");
  ok(g.check_support(handle), "check_support");
  dg::VariantPack pack{{Q, q}, {K, k}, {V, v}, {O, o}, {DO, d_o}, {ST, stats}, {DQ, dq}, {DK, dk}, {DV, dv}};
  const int64_t plans = g.get_execution_plan_count();
  std::vector<std::vector<float>> last;  // the last plan's gradients, dQ dK dV
  for (int64_t idx = plans - 1; idx >= 0; --idx) {
    ok(g.build_plan_at_index(handle, idx), "build_plan_at_index");
    int64_t ws_bytes = 0;
    ok(g.get_workspace_size_plan_at_index(idx, ws_bytes), "workspace");
    void* ws = bufs.add(hi, static_cast<size_t>(std::max<int64_t>(ws_bytes, 16)));
    for (void* p : {dq, dk, dv}) ok(dg::cuda::fill32(hi, p, 0x7fc07fc0u, static_cast<size_t>(n / 2)), "poison");
    for (int i = 0; i < 3; ++i) ok(g.execute_plan_at_index(handle, pack, ws, idx), "execute");
    ok(dg::memory::synchronize(hi), "synchronize");
    std::unique_ptr<dg::cuda::EventTimer> timer;
    ok(dg::cuda::EventTimer::create(hi, timer), "events");
    std::vector<double> ms;
    for (int i = 0; i < g_repeats; ++i) {
      ok(timer->start(), "event");
      ok(g.execute_plan_at_index(handle, pack, ws, idx), "execute");
      ok(timer->stop(), "event");
      double sec = 0;
      ok(timer->seconds(sec), "event");
      ms.push_back(sec * 1e3);
    }
    int64_t nans = 0;
    double diff = 0, scale = 0;
    std::vector<uint16_t> host(static_cast<size_t>(n));
    std::vector<std::vector<float>> grads;
    for (void* p : {dq, dk, dv}) {
      ok(dg::memory::copy_to_host(hi, host.data(), p, bytes), "download");
      grads.emplace_back(host.size());
      for (size_t i = 0; i < host.size(); ++i) {
        const float x = dg::dtype::bf16_to_float(host[i]);
        nans += std::isnan(x) ? 1 : 0;
        grads.back()[i] = x;
      }
    }
    if (last.empty()) last = grads;
    for (size_t t = 0; t < 3; ++t)
      for (size_t i = 0; i < grads[t].size(); ++i) {
        diff = std::max(diff, static_cast<double>(std::fabs(grads[t][i] - last[t][i])));
        scale = std::max(scale, static_cast<double>(std::fabs(last[t][i])));
      }
    std::sort(ms.begin(), ms.end());
    const double t = ms[ms.size() / 2];
    std::string plan;
    ok(g.get_plan_name_at_index(idx, plan), "plan name");
    std::printf("{\"case\": \"%s\", \"plan\": \"%s\", \"mode_a\": %s, \"ms\": %.4f, \"tflops\": %.1f, "
                "\"nan_gradients\": %lld, \"max_diff_vs_last_plan\": %.3g}\n",
                c.name, plan.c_str(), idx == 0 ? "true" : "false", t, flops(c) / (t * 1e-3) / 1e12,
                static_cast<long long>(nans), scale > 0 ? diff / scale : diff);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  for (int i = 1; i < argc; ++i) gpu_bench::repeats_or_case(argc, argv, i, g_repeats, only);
  dg::Handle handle(dg::Device::cuda(0));
  ok(handle.status(), "CUDA device");
  for (const Case& c : kCases)
    if (only.empty() || only == c.name) run_case(handle, c);
  return 0;
}
