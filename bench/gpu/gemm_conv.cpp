// GPU benchmark of the tensor-core GEMM and implicit-GEMM convolution engines with fused
// epilogues: the workloads of shared/bench/ANCHORS.md. Prints one line per workload:
//   RESULT <name> <ms> <TFLOP/s> <plan name>
// bench/gpu/gemm_conv_torch.py runs this program and PyTorch eager on the same machine, in the
// same run, and prints them side by side.
//
//   dnngraph_gemm_conv_bench [--plans N] [--plan I] [--only SUBSTRING[,SUBSTRING...]]
//                            [--plan-filter SUBSTRING[,SUBSTRING...]] [--build-only]
//
// --plan I: only plan I of each workload (for a profiler's --launch-skip: one build launch, then
// the timed ones). --plan-filter: of the first N plans, only those whose names contain one of the
// substrings (say "epilogue=": every register-epilogue plan, wherever the list ranks it).
//
// With GEMM_BENCH_CACHE set, compiled kernels are kept in that folder (the kernel cache's disk
// layer): build-only runs of single workloads can fill it in parallel before the timed run.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "event_timing.hpp"
#include "core/dtype.hpp"
#include "dnngraph/dnngraph.hpp"
#include "dnngraph/kernel_cache.hpp"
#include "runtime/cuda/context.hpp"
#include "runtime/memory.hpp"

namespace dg = dnngraph;
using namespace gpu_bench;

namespace {

int g_plans = 2;
int g_plan = -1;  // --plan: only this index
std::string g_only;         // comma-separated name substrings; empty: every workload
std::string g_plan_filter;  // comma-separated plan name substrings; empty: every plan

// Whether `name` contains one of the comma-separated substrings of `list` (an empty list: yes).
bool contains_any(const std::string& name, const std::string& list) {
  if (list.empty()) return true;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t end = std::min(list.find(',', start), list.size());
    const std::string part = list.substr(start, end - start);
    if (!part.empty() && name.find(part) != std::string::npos) return true;
    start = end + 1;
  }
  return false;
}
bool selected(const std::string& name) { return contains_any(name, g_only); }
bool g_build_only = false;

std::shared_ptr<dg::KernelCache> kernel_cache() {
  static std::shared_ptr<dg::KernelCache> cache = [] {
    auto c = std::make_shared<dg::KernelCache>();
    if (const char* dir = std::getenv("GEMM_BENCH_CACHE")) c->set_directory(dir);
    return c;
  }();
  return cache;
}

// Builds up to g_plans plans of the graph, times each (median of 7 repeats of `iters` runs) and
// prints the fastest.
void run(const std::string& name, dg::Graph& g, dg::Handle& handle, const dg::VariantPack& pack, double flops) {
  if (!selected(name)) return;
  dg::HandleImpl& h = impl_of(handle);
  g.set_kernel_cache(kernel_cache());
  if (!check(g.validate(), name) || !check(g.build_operation_graph(handle), name) ||
      !check(g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::B, dg::HeurMode::FALLBACK}), name) ||
      !check(g.check_support(handle), name)) {
    std::printf("%s\n", g.explain().c_str());
    return;
  }
  double best = 1e30;
  std::string best_name;
  const int64_t plans = std::min<int64_t>(std::max(g_plans, g_plan + 1), g.get_execution_plan_count());
  for (int64_t idx = 0; idx < plans; ++idx) {
    if (g_plan >= 0 && idx != g_plan) continue;
    std::string pname;
    if (!g.get_plan_name_at_index(idx, pname).ok() || !contains_any(pname, g_plan_filter)) continue;
    if (!check(g.build_plan_at_index(handle, idx), name + " build")) continue;
    if (g_build_only) {
      std::printf("BUILT %s %d %s\n", name.c_str(), static_cast<int>(idx), pname.c_str());
      continue;
    }
    int64_t ws = 0;
    (void)g.get_workspace_size_plan_at_index(idx, ws);
    dg::memory::Buffer workspace(h, static_cast<size_t>(ws) + 256);
    auto once = [&] { return g.execute_plan_at_index(handle, pack, workspace.get(), idx, ws); };
    if (!check(once(), name + " execute")) continue;
    (void)dg::memory::synchronize(h);
    double t = 0;
    if (!seconds_per_call(h, once, {0.02, 200, 7}, t)) return;  // repeats of ~20 ms
    std::printf("PLAN %s %d %.4f ms %s\n", name.c_str(), static_cast<int>(idx), t * 1e3, pname.c_str());
    if (t < best) best = t, best_name = pname;
  }
  if (best < 1e30)
    std::printf("RESULT %s %.4f %.1f %s\n", name.c_str(), best * 1e3, flops / best * 1e-12, best_name.c_str());
  std::fflush(stdout);
}

// conv (R x S, pad, stride 1) [+ bias + ReLU], NHWC bf16 (or `t`: FLOAT runs as TF32), fp32
// accumulation; `depthwise`: groups == C == K (filters [C, 1, R, S]).
void conv(dg::Handle& handle, const std::string& name, int64_t n, int64_t c, int64_t hw, int64_t k, int64_t r,
          bool fused, bool depthwise = false, dg::DataType t = dg::DataType::BFLOAT16) {
  if (!selected(name)) return;
  dg::HandleImpl& h = impl_of(handle);
  const int64_t pad = r / 2;
  const Dims xd{n, c, hw, hw}, wd{k, depthwise ? 1 : c, r, r}, yd{n, k, hw, hw}, bd{1, k, 1, 1};
  DeviceTensor x(h, volume(xd), t, 1), w(h, volume(wd), t, 2), b(h, volume(bd), t, 3);
  dg::memory::Buffer y(h, static_cast<size_t>(volume(yd) * dg::size_of(t)));
  dg::Graph g;
  g.set_io_data_type(t).set_intermediate_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  g.set_allow_tf32(t == dg::DataType::FLOAT);
  auto X = g.tensor(dg::TensorAttr().set_name("X").set_dim(xd).set_stride(channels_last(xd)));
  auto W = g.tensor(dg::TensorAttr().set_name("W").set_dim(wd).set_stride(channels_last(wd)));
  auto Y = g.conv_fprop(X, W, dg::ConvFpropAttr().set_padding({pad, pad}).set_stride({1, 1}).set_dilation({1, 1}));
  dg::VariantPack pack{{X, x.buf.get()}, {W, w.buf.get()}};
  if (fused) {
    auto B = g.tensor(dg::TensorAttr().set_name("B").set_dim(bd).set_stride(channels_last(bd)));
    Y = g.pointwise(g.bias(Y, B), dg::PointwiseAttr().set_mode(dg::PointwiseMode::RELU_FWD));
    pack[B] = b.buf.get();
  }
  Y->set_output(true).set_stride(channels_last(yd));
  pack[Y] = y.get();
  g.select_engines({depthwise ? "cuda_conv_depthwise_direct" : "cuda_conv_implicit_gemm"});
  run(name, g, handle, pack, 2.0 * volume(yd) * (depthwise ? 1 : c) * r * r);
}

// (batch x m x k) x (batch x k x n) [x alpha + bias -> GELU (or `act`), AMAX], bf16 (or `t`: FLOAT
// runs as TF32) in and out; `b_k_major`: B stored [batch, n, k].
void matmul(dg::Handle& handle, const std::string& name, int64_t batch, int64_t m, int64_t n, int64_t k, bool chain,
            dg::DataType t = dg::DataType::BFLOAT16, bool b_k_major = false,
            dg::PointwiseMode act = dg::PointwiseMode::GELU_FWD) {
  if (!selected(name)) return;
  dg::HandleImpl& h = impl_of(handle);
  const Dims ad{batch, m, k}, bd{batch, k, n}, cd{batch, m, n}, biasd{1, 1, n};
  DeviceTensor a(h, volume(ad), t, 4), b(h, volume(bd), t, 5), bias(h, n, t, 6);
  dg::memory::Buffer c(h, static_cast<size_t>(volume(cd) * dg::size_of(t))), amax(h, 4);
  dg::Graph g;
  g.set_io_data_type(t).set_intermediate_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  g.set_allow_tf32(t == dg::DataType::FLOAT);
  auto A = g.tensor(dg::TensorAttr().set_name("A").set_dim(ad).set_stride(packed(ad)));
  auto B = g.tensor(dg::TensorAttr().set_name("B").set_dim(bd).set_stride(b_k_major ? Dims{k * n, 1, k} : packed(bd)));
  auto C = g.matmul(A, B, dg::MatmulAttr());
  dg::VariantPack pack{{A, a.buf.get()}, {B, b.buf.get()}};
  if (chain) {
    auto alpha = g.tensor(dg::TensorAttr().set_name("alpha").set_dim({1, 1, 1}).set_stride({1, 1, 1})
                              .set_data_type(dg::DataType::FLOAT));
    alpha->set_is_pass_by_value(true).set_value(0.125);
    auto Bias = g.tensor(dg::TensorAttr().set_name("bias").set_dim(biasd).set_stride(packed(biasd)));
    C = g.pointwise(g.bias(g.scale(C, alpha), Bias), dg::PointwiseAttr().set_mode(act));
    auto Amax = g.reduction(C, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX));
    Amax->set_dim({1, 1, 1}).set_output(true).set_data_type(dg::DataType::FLOAT);
    pack[Bias] = bias.buf.get();
    pack[Amax] = amax.get();
  }
  C->set_output(true);
  pack[C] = c.get();
  g.select_engines({"cuda_gemm_wgmma_tma", "cuda_gemm_mma_sync"});
  run(name, g, handle, pack, 2.0 * batch * m * n * k);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--plans") && i + 1 < argc) g_plans = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--plan") && i + 1 < argc) g_plan = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--only") && i + 1 < argc) g_only = argv[++i];
    if (!std::strcmp(argv[i], "--plan-filter") && i + 1 < argc) g_plan_filter = argv[++i];
    if (!std::strcmp(argv[i], "--build-only")) g_build_only = true;
  }
  dg::Handle handle(dg::Device::cuda(0));
  if (!handle.status().ok()) {
    std::printf("ERROR no CUDA handle: %s\n", handle.status().to_string().c_str());
    return 1;
  }
  matmul(handle, "gemm_8192_plain", 1, 8192, 8192, 8192, false);
  matmul(handle, "gemm_8x2048_chain", 8, 2048, 2048, 2048, true);
  // The same without the chain, and with ReLU for GELU: what the epilogue's chain costs.
  matmul(handle, "gemm_8x2048_plain", 8, 2048, 2048, 2048, false);
  matmul(handle, "gemm_8x2048_relu_chain", 8, 2048, 2048, 2048, true, dg::DataType::BFLOAT16, false,
         dg::PointwiseMode::RELU_FWD);
  matmul(handle, "gemm_16x1024x4096x1024_chain", 16, 1024, 4096, 1024, true);
  conv(handle, "conv_tutorial_n32c128_56_k256", 32, 128, 56, 256, 3, true);
  conv(handle, "conv_tutorial_alone", 32, 128, 56, 256, 3, false);
  conv(handle, "rn50_3x3_c64_56_k64", 32, 64, 56, 64, 3, true);
  conv(handle, "rn50_3x3_c256_14_k256", 32, 256, 14, 256, 3, true);
  conv(handle, "rn50_3x3_n8_c64_32_k64", 8, 64, 32, 64, 3, true);
  conv(handle, "rn50_1x1_c256_56_k64", 32, 256, 56, 64, 1, true);
  conv(handle, "rn50_3x3_c128_28_k128", 32, 128, 28, 128, 3, true);
  conv(handle, "rn50_3x3_c512_7_k512", 32, 512, 7, 512, 3, true);
  conv(handle, "rn50_3x3_n1_c64_32_k64", 1, 64, 32, 64, 3, true);
  conv(handle, "depthwise_3x3_c256_28", 32, 256, 28, 256, 3, true, true);
  matmul(handle, "tf32_gemm_8192_plain", 1, 8192, 8192, 8192, false, dg::DataType::FLOAT);
  matmul(handle, "tf32_gemm_8192_bt", 1, 8192, 8192, 8192, false, dg::DataType::FLOAT, true);
  conv(handle, "tf32_conv_tutorial_n32c128_56_k256", 32, 128, 56, 256, 3, true, false, dg::DataType::FLOAT);
  // Skinny-deep: 64 or 128 tiles of 128 x 128 under-fill 132 SMs (split-K's case).
  matmul(handle, "gemm_splitk_1024x1024x16384_plain", 1, 1024, 1024, 16384, false);
  matmul(handle, "gemm_splitk_2048x1024x8192_chain", 1, 2048, 1024, 8192, true);
  return 0;
}
