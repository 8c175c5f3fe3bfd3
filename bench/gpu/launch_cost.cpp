// Host cost of execute() against the kernel launches it makes (issue #16: at most 1 us more).
// On a CUDA handle, 200 calls enqueued back to back, then one sync; the median of 9 rounds, in
// microseconds per call:
//   cuLaunchKernel  the driver's launch of an empty kernel (and dg::cuda::launch, which every own
//                   plan's launch goes through)
//   plan       the plan's Plan::execute alone (variant pack resolved once)
//   execute    Graph::execute with a tensor-keyed pack (the user's call)
//   execute_uid  Graph::execute with a uid-keyed pack
// for a one-ReLU graph (cuda_pointwise_jit: one launch per execute) and a 1x64x32x32 3x3 conv +
// bias + ReLU (the own conv engine, and cuDNN's first plan when the cudnn engine is there).
//
//   dnngraph_bench_gpu_launch_cost
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "engines/cuda/common/nvrtc_compile.hpp"
#include "graph/graph_impl.hpp"
#include "planning/plan_set.hpp"
#include "runtime/cuda/context.hpp"

namespace dg = dnngraph;
using namespace gpu_bench;
using Clock = std::chrono::steady_clock;

namespace {

double us_per_call(dg::HandleImpl& h, const std::function<void()>& call) {
  constexpr int kCalls = 200;
  std::vector<double> rounds;
  for (int i = 0; i < 20; ++i) call();  // warm: caches, graphs by pointer set
  for (int r = 0; r < 9; ++r) {
    (void)dg::memory::synchronize(h);
    const auto t0 = Clock::now();
    for (int i = 0; i < kCalls; ++i) call();
    rounds.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kCalls);
    (void)dg::memory::synchronize(h);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

struct LaunchBaseline {
  double driver_us = -1;  // cuLaunchKernel alone
  double library_us = -1;  // dg::cuda::launch: the thread's context checked, then cuLaunchKernel
};

LaunchBaseline empty_launch_us(dg::HandleImpl& h) {
  const std::string src = "extern \"C\" __global__ void dg_empty(float* p, int n) { if (n < 0) p[0] = 0.f; }\n";
  std::vector<uint8_t> cubin;
  const std::string arch = "sm_" + std::to_string(h.info.sm_version) + (h.info.sm_version == 90 ? "a" : "");
  std::shared_ptr<dg::cuda::Module> module;
  dg::cuda::CUfunction f = nullptr;
  if (!check(dg::cuda::nvrtc_compile(src, "empty.cu", arch, cubin), "compile") ||
      !check(dg::cuda::Module::load(h, cubin, module), "load") || !check(module->function("dg_empty", f), "function"))
    return {};
  float* p = nullptr;
  int n = 1;
  void* args[] = {&p, &n};
  const auto* d = dg::cuda::driver();
  LaunchBaseline b;
  b.driver_us = us_per_call(h, [&] { (void)d->cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, dg::cuda::stream_of(h), args, nullptr); });
  b.library_us = us_per_call(h, [&] { (void)dg::cuda::launch(h, f, {1, 32, 0}, args, "dg_empty"); });
  std::printf("LAUNCH empty kernel: cuLaunchKernel %.2f us, dg::cuda::launch %.2f us\n", b.driver_us, b.library_us);
  return b;
}

// The four costs of one built graph's plan `idx` (its only partition).
void costs(const char* what, dg::Graph& g, dg::Handle& handle, const dg::VariantPack& pack, double launch_us) {
  dg::HandleImpl& h = impl_of(handle);
  std::string label;
  (void)g.get_plan_name_at_index(0, label);
  int64_t ws = 0;
  (void)g.get_workspace_size(ws);
  dg::memory::Buffer workspace(h, static_cast<size_t>(ws) + 256);
  dg::UidVariantPack by_uid;
  for (const auto& [t, p] : pack) by_uid[t->get_uid()] = p;
  std::vector<void*> ptrs;
  std::vector<double> scalars;
  if (!check(dg::resolve_pack(impl_of(g), handle, &pack, nullptr, workspace.get(), -1, 0, ptrs, scalars), "resolve"))
    return;
  const auto& pp = impl_of(g).plans->parts.at(0);
  const auto& plan = pp.built.at(static_cast<size_t>(pp.chosen));
  const dg::ExecArgs args{h, ptrs, static_cast<char*>(workspace.get()) + impl_of(g).plans->intermediates_bytes};
  const double plan_us = us_per_call(h, [&] { (void)plan->execute(args); });
  const double exec_us = us_per_call(h, [&] { (void)g.execute(handle, pack, workspace.get()); });
  const double uid_us = us_per_call(h, [&] { (void)g.execute(handle, by_uid, workspace.get()); });
  std::printf("LAUNCH %-22s cuLaunchKernel %.2f | plan %.2f | execute %.2f | execute_uid %.2f | execute - cuLaunchKernel %.2f us  [%s]\n",
              what, launch_us, plan_us, exec_us, uid_us, exec_us - launch_us, label.c_str());
}

dg::Graph built(dg::Handle& handle, std::function<void(dg::Graph&)> make, const std::vector<std::string>& engines) {
  dg::Graph g;
  g.set_io_data_type(dg::DataType::BFLOAT16).set_intermediate_data_type(dg::DataType::FLOAT)
      .set_compute_data_type(dg::DataType::FLOAT);
  make(g);
  g.select_engines(engines);
  if (!check(g.validate(), "validate") || !check(g.build_operation_graph(handle), "lower") ||
      !check(g.create_execution_plans({dg::HeurMode::A}), "plans") || !check(g.check_support(handle), "support") ||
      !check(g.build_plans(handle), "build"))
    std::printf("%s", g.explain().c_str());
  return g;
}

}  // namespace

int main() {
  dg::Handle handle(dg::Device::cuda(0));
  if (!check(handle.status(), "cuda:0")) return 1;
  dg::HandleImpl& h = impl_of(handle);
  std::printf("device %s\n", h.info.name.c_str());
  const double launch_us = empty_launch_us(h).driver_us;

  DeviceTensor x(h, 256, dg::DataType::BFLOAT16, 1);
  dg::memory::Buffer y(h, 512);
  dg::TensorPtr X, Y;
  auto relu = [&](dg::Graph& g) {
    X = g.tensor(dg::TensorAttr().set_name("X").set_dim({1, 256}).set_stride({256, 1}).set_uid(1));
    Y = g.relu(X);
    Y->set_output(true).set_uid(2);
  };
  dg::Graph r = built(handle, relu, {"cuda_pointwise_jit"});
  costs("relu 256 (own)", r, handle, {{X, x.buf.get()}, {Y, y.get()}}, launch_us);

  const Dims xd{1, 64, 32, 32}, wd{64, 64, 3, 3}, bd{1, 64, 1, 1};
  DeviceTensor cx(h, volume(xd), dg::DataType::BFLOAT16, 2), cw(h, volume(wd), dg::DataType::BFLOAT16, 3),
      cb(h, 64, dg::DataType::BFLOAT16, 4);
  dg::memory::Buffer cy(h, static_cast<size_t>(volume(xd)) * 2);
  dg::TensorPtr CX, CW, CB, CY;
  auto conv = [&](dg::Graph& g) {
    CX = g.tensor(dg::TensorAttr().set_name("X").set_dim(xd).set_stride(channels_last(xd)).set_uid(1));
    CW = g.tensor(dg::TensorAttr().set_name("W").set_dim(wd).set_stride(channels_last(wd)).set_uid(2));
    CB = g.tensor(dg::TensorAttr().set_name("B").set_dim(bd).set_stride(channels_last(bd)).set_uid(3));
    CY = g.relu(g.bias(g.conv_fprop(CX, CW, dg::ConvFpropAttr().set_padding({1, 1})), CB));
    CY->set_output(true).set_stride(channels_last(xd)).set_uid(4);
  };
  for (const char* engine : {"cuda_conv_implicit_gemm", "cudnn"}) {
    dg::Graph c = built(handle, conv, {engine});
    if (!impl_of(c).plans || impl_of(c).stage < dg::Stage::PLANS_BUILT) continue;
    costs((std::string("conv 1x64x32x32 ") + engine).c_str(), c, handle,
          {{CX, cx.buf.get()}, {CW, cw.buf.get()}, {CB, cb.buf.get()}, {CY, cy.get()}}, launch_us);
  }
  return 0;
}
