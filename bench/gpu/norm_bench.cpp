// GPU benchmark of cuda_norm_rowwise (issue #18): layernorm and rmsnorm, forward (Y) and backward
// (DX, DSCALE, DBIAS), bf16 I/O and parameters, fp32 statistics, on rows of 8192 (8192 x 8192) and
// a transformer's rows (4 x 512 x 4096). Each case is timed by CUDA events (warm-ups, then the
// median of repeats of back-to-back executes), next to a device-to-device copy of the same bytes
// measured in the same run: bytes count each tensor read once and written once, and the copy moves
// half of them each way. The target: at least 85% of the copy's GB/s.
// Every built plan (each knob setting) is timed; the heuristics' choice is listed first.
// Correctness is the GPU tests' (tests/engines/test_cuda_norm.cpp); here the outputs are NaN-poisoned
// before the warm-ups and checked for NaN after.
// bench/gpu/norm_torch.py times torch.nn.functional.layer_norm / rms_norm on the same cases.
//
// usage: dnngraph_bench_gpu_norm_bench [--repeats N] [--case NAME]
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "core/dtype.hpp"
#include "dnngraph/dnngraph.hpp"
#include "event_timing.hpp"
#include "runtime/cuda/context.hpp"
#include "runtime/memory.hpp"

namespace dg = dnngraph;
using dg::DataType;

namespace {

int g_repeats = 7;

void ok(const dg::Status& s, const std::string& what) { gpu_bench::ok_or_exit("norm_bench", s, what); }

struct Shape {
  const char* name;
  gpu_bench::Dims x;
};
const Shape kShapes[] = {{"8192x8192", {8192, 8192}}, {"4x512x4096", {4 * 512, 4096}}};

// One graph and its device tensors: inputs seeded random, outputs poisoned with NaN.
struct Bench {
  dg::Graph g;
  std::vector<dg::TensorPtr> inputs, outputs;
  std::vector<dg::memory::Buffer> bufs;
  dg::VariantPack pack;
  dg::memory::Buffer workspace;
  int64_t ws = 0;
  double bytes = 0;  // each tensor once

  dg::TensorPtr tensor(const std::string& name, const gpu_bench::Dims& d, DataType t) {
    return g.tensor(dg::TensorAttr().set_name(name).set_dim(d).set_stride(gpu_bench::packed(d)).set_data_type(t));
  }
  dg::TensorPtr input(const std::string& name, const gpu_bench::Dims& d, DataType t) {
    inputs.push_back(tensor(name, d, t));
    return inputs.back();
  }
  void output(const dg::TensorPtr& t, DataType type) {
    t->set_output(true).set_data_type(type);
    outputs.push_back(t);
  }
  // Allocates and fills every tensor: values in [lo, hi) (the statistics' INV in [0.5, 1.5)).
  void allocate(dg::HandleImpl& h) {
    uint32_t seed = 1;
    for (auto* list : {&inputs, &outputs})
      for (const auto& t : *list) {
        const int64_t n = gpu_bench::volume(t->get_dim());
        const DataType type = t->get_data_type();
        bufs.emplace_back(h, static_cast<size_t>(n * dg::size_of(type)));
        ok(bufs.back().status(), "allocate " + t->get_name());
        std::vector<uint8_t> host(bufs.back().size());
        std::mt19937 rng(seed++);
        std::uniform_real_distribution<double> u(t->get_name() == "INV" ? 0.5 : -1.0, t->get_name() == "INV" ? 1.5 : 1.0);
        for (int64_t i = 0; i < n; ++i) dg::dtype::store(host.data(), type, i, list == &inputs ? u(rng) : std::nan(""));
        ok(dg::memory::copy_to_device(h, bufs.back().get(), host.data(), host.size()), "upload");
        pack[t] = bufs.back().get();
        bytes += static_cast<double>(host.size());
      }
  }
  void build(dg::Handle& h) {
    g.select_engines({"cuda_norm_rowwise"});
    ok(g.validate(), "validate");
    ok(g.build_operation_graph(h), "build_operation_graph");
    ok(g.create_execution_plans({dg::HeurMode::A}), "create_execution_plans");
    const dg::Status s = g.check_support(h);
    if (!s.ok()) std::fprintf(stderr, "%s\n", g.explain().c_str());
    ok(s, "check_support");
    ok(g.build_plans(h, dg::BuildPlanPolicy::ALL), "build_plans");
    ok(g.get_workspace_size(ws), "workspace");
    workspace = dg::memory::Buffer(impl_of(h), static_cast<size_t>(std::max<int64_t>(ws, 1)));
    allocate(impl_of(h));
  }
  // How many outputs hold a NaN (a slot the plan did not write).
  int64_t nan_outputs(dg::HandleImpl& h) const {
    int64_t bad = 0;
    for (size_t i = inputs.size(); i < bufs.size(); ++i) {
      const dg::TensorPtr& t = outputs[i - inputs.size()];
      std::vector<uint8_t> host(bufs[i].size());
      ok(dg::memory::copy_to_host(h, host.data(), bufs[i].get(), host.size()), "download");
      const int64_t n = static_cast<int64_t>(host.size()) / dg::size_of(t->get_data_type());
      for (int64_t k = 0; k < n; ++k) bad += std::isnan(dg::dtype::load(host.data(), t->get_data_type(), k)) ? 1 : 0;
    }
    return bad;
  }
};

// GB/s of a device-to-device copy of `bytes` / 2 (so that `bytes` are read and written in all).
double copy_gbps(dg::HandleImpl& h, double bytes) {
  const size_t half = static_cast<size_t>(bytes / 2);
  dg::memory::Buffer a(h, half), b(h, half);
  ok(a.status(), "allocate copy source");
  ok(b.status(), "allocate copy target");
  ok(dg::cuda::fill32(h, a.get(), 0x3f800000u, half / 4), "fill");
  const auto& d = *dg::cuda::driver();
  double s = 0;
  auto copy = [&] {
    return dg::cuda::check(d.cuMemcpyDtoDAsync(reinterpret_cast<dg::cuda::CUdeviceptr>(b.get()),
                                               reinterpret_cast<dg::cuda::CUdeviceptr>(a.get()), half,
                                               dg::cuda::stream_of(h)),
                           "cuMemcpyDtoDAsync");
  };
  for (int i = 0; i < 3; ++i) ok(copy(), "copy");
  if (!gpu_bench::seconds_per_call(h, copy, {0.05, 200, g_repeats}, s)) std::exit(1);
  return 2.0 * static_cast<double>(half) / s / 1e9;
}

void run_case(dg::Handle& handle, const std::string& name, Bench& b) {
  dg::HandleImpl& h = impl_of(handle);
  b.build(handle);
  const double copy = copy_gbps(h, b.bytes);
  for (int64_t i = 0; i < b.g.get_execution_plan_count(); ++i) {
    std::string plan;
    ok(b.g.get_plan_name_at_index(i, plan), "plan name");
    auto run = [&] { return b.g.execute_plan_at_index(handle, b.pack, b.workspace.get(), i, b.ws); };
    for (int w = 0; w < 3; ++w) ok(run(), "execute " + plan);
    ok(dg::memory::synchronize(h), "synchronize");
    const int64_t nans = b.nan_outputs(h);
    double s = 0;
    if (!gpu_bench::seconds_per_call(h, run, {0.05, 200, g_repeats}, s)) std::exit(1);
    const double gbps = b.bytes / s / 1e9;
    std::printf("{\"case\": \"%s\", \"plan\": \"%s\", \"heuristic_choice\": %s, \"ms\": %.4f, \"bytes\": %.0f, "
                "\"gbps\": %.1f, \"copy_gbps\": %.1f, \"fraction_of_copy\": %.3f, \"target\": 0.85, "
                "\"nan_outputs\": %lld}\n",
                name.c_str(), plan.c_str(), i == 0 ? "true" : "false", s * 1e3, b.bytes, gbps, copy, gbps / copy,
                static_cast<long long>(nans));
    std::fflush(stdout);
  }
}

// Forward, inference: Y only (what torch's layer_norm / rms_norm return).
void forward(Bench& b, const gpu_bench::Dims& x, bool layernorm) {
  b.g.set_io_data_type(DataType::BFLOAT16).set_intermediate_data_type(DataType::FLOAT).set_compute_data_type(DataType::FLOAT);
  gpu_bench::Dims p = x;
  p[0] = 1;
  auto X = b.input("X", x, DataType::BFLOAT16);
  auto S = b.input("SCALE", p, DataType::BFLOAT16);
  if (layernorm) {
    auto B = b.input("BIAS", p, DataType::BFLOAT16);
    b.output(b.g.layernorm(X, S, B, dg::LayernormAttr().set_epsilon(1e-5))[0], DataType::BFLOAT16);
  } else {
    b.output(b.g.rmsnorm(X, S, dg::RmsnormAttr().set_epsilon(1e-5))[0], DataType::BFLOAT16);
  }
}

// Backward: DX, DSCALE and (layernorm) DBIAS from DY, X, SCALE and the fp32 statistics.
void backward(Bench& b, const gpu_bench::Dims& x, bool layernorm) {
  b.g.set_io_data_type(DataType::BFLOAT16).set_intermediate_data_type(DataType::FLOAT).set_compute_data_type(DataType::FLOAT);
  gpu_bench::Dims p = x, st(x.size(), 1);
  p[0] = 1;
  st[0] = x[0];
  auto DY = b.input("DY", x, DataType::BFLOAT16);
  auto X = b.input("X", x, DataType::BFLOAT16);
  auto S = b.input("SCALE", p, DataType::BFLOAT16);
  std::array<dg::TensorPtr, 3> o;
  if (layernorm)
    o = b.g.layernorm_backward(DY, X, S, b.input("MEAN", st, DataType::FLOAT), b.input("INV", st, DataType::FLOAT), {});
  else
    o = b.g.rmsnorm_backward(DY, X, S, b.input("INV", st, DataType::FLOAT), {});
  b.output(o[0], DataType::BFLOAT16);
  b.output(o[1], DataType::BFLOAT16);
  if (layernorm) b.output(o[2], DataType::BFLOAT16);
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  for (int i = 1; i < argc; ++i) gpu_bench::repeats_or_case(argc, argv, i, g_repeats, only);
  dg::Handle handle(dg::Device::cuda(0));
  if (!handle.status().ok()) {
    std::printf("norm_bench: no CUDA device: %s\n", handle.status().to_string().c_str());
    return 0;
  }
  for (const Shape& s : kShapes)
    for (const bool layernorm : {true, false})
      for (const bool bwd : {false, true}) {
        const std::string name = std::string(layernorm ? "layernorm" : "rmsnorm") + (bwd ? "_bwd_" : "_fwd_") + s.name;
        if (!only.empty() && only != name) continue;
        Bench b;
        if (bwd) backward(b, s.x, layernorm);
        else forward(b, s.x, layernorm);
        run_case(handle, name, b);
      }
  return 0;
}
