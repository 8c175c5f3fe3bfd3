// GPU benchmarks of cuda_pointwise_jit, and the device-copy ceiling they are measured against.
// Prints one JSON object per case on stdout; bench/gpu/compare.py runs the same cases through
// PyTorch on the same machine and prints them side by side. Device time by CUDA events: warm-up
// runs first, then the median of timed single executes. Inputs are seeded random (never zeros).
//
// usage: dnngraph_gpu_bench [--repeats N] [--case NAME]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "bench_util.hpp"
#include "dnngraph/dnngraph.hpp"
#include "runtime/cuda/context.hpp"
#include "runtime/memory.hpp"

namespace dg = dnngraph;
using dg::DataType;
using M = dg::PointwiseMode;

namespace {

int g_repeats = 20;

void ok(const dg::Status& s, const std::string& what) { gpu_bench::ok_or_exit("dnngraph_gpu_bench", s, what); }

dg::TensorPtr tensor(dg::Graph& g, const std::string& name, std::vector<int64_t> dims, DataType t) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(strides).set_data_type(t));
}

// Fills device memory with a 16 MiB tile of seeded random values of type t, repeated; returns the tile.
std::vector<uint8_t> fill_random(dg::HandleImpl& h, void* dst, size_t bytes, DataType t, uint32_t seed) {
  const size_t tile = std::min<size_t>(bytes, size_t{16} << 20);
  std::vector<uint8_t> host(tile);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  const int64_t n = static_cast<int64_t>(tile) / dg::size_of(t);
  for (int64_t i = 0; i < n; ++i) dg::dtype::store(host.data(), t, i, u(rng));
  for (size_t off = 0; off < bytes; off += tile)
    ok(dg::memory::copy_to_device(h, static_cast<char*>(dst) + off, host.data(), std::min(tile, bytes - off)), "upload");
  return host;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median device time of `run` (one enqueue of the work), after three warm-up runs.
double time_ms(dg::HandleImpl& h, const std::function<void()>& run) {
  for (int i = 0; i < 3; ++i) run();
  ok(dg::memory::synchronize(h), "synchronize");
  std::unique_ptr<dg::cuda::EventTimer> timer;
  ok(dg::cuda::EventTimer::create(h, timer), "events");
  std::vector<double> ms;
  for (int i = 0; i < g_repeats; ++i) {
    ok(timer->start(), "event");
    run();
    ok(timer->stop(), "event");
    double s = 0;
    ok(timer->seconds(s), "event");
    ms.push_back(s * 1e3);
  }
  return median(ms);
}

// `ms`: the plan the heuristics chose (what execute() runs); `plans`: every built plan's time.
void report(const std::string& name, double ms, double bytes, const std::string& note, const std::string& plans = "") {
  std::printf("{\"case\": \"%s\", \"engine\": \"dnngraph\", \"ms\": %.4f, \"bytes\": %.0f, \"gbps\": %.1f, \"note\": \"%s\", "
              "\"plans\": \"%s\"}\n",
              name.c_str(), ms, bytes, bytes / (ms * 1e-3) / 1e9, note.c_str(), plans.c_str());
  std::fflush(stdout);
}

size_t bytes_of(const std::vector<int64_t>& dims, DataType t) {
  size_t n = static_cast<size_t>(dg::size_of(t));
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  return n;
}

// A built graph with its device buffers, executed through the public API.
struct Case {
  dg::Graph g;
  std::vector<std::pair<dg::TensorPtr, size_t>> inputs, outputs;  // tensor, bytes
  std::vector<dg::memory::Buffer> buffers;
  std::vector<std::vector<uint8_t>> tiles;  // each input's random tile (the input repeats it)
  dg::VariantPack pack;
  dg::memory::Buffer workspace;
  double bytes = 0;

  // A packed graph input, allocated and filled with random values by build() in declaration order.
  dg::TensorPtr input(const std::string& name, const std::vector<int64_t>& dims, DataType t) {
    auto x = tensor(g, name, dims, t);
    inputs.push_back({x, bytes_of(dims, t)});
    return x;
  }
  // Makes `y` a graph output of type t with these dims, allocated by build().
  void output(const dg::TensorPtr& y, const std::vector<int64_t>& dims, DataType t) {
    y->set_output(true).set_data_type(t);
    outputs.push_back({y, bytes_of(dims, t)});
  }

  void build(dg::Handle& h) {
    g.select_engines({"cuda_pointwise_jit"});
    ok(g.validate(), "validate");
    ok(g.build_operation_graph(h), "build_operation_graph");
    ok(g.create_execution_plans({dg::HeurMode::A}), "create_execution_plans");
    ok(g.check_support(h), "check_support");
    ok(g.build_plans(h, dg::BuildPlanPolicy::ALL), "build_plans");
    int64_t ws = 0;
    ok(g.get_workspace_size(ws), "workspace");
    workspace = dg::memory::Buffer(impl_of(h), static_cast<size_t>(std::max<int64_t>(ws, 1)));
    uint32_t seed = 1;
    for (auto* list : {&inputs, &outputs})
      for (auto& [t, size] : *list) {
        buffers.emplace_back(impl_of(h), size);
        ok(buffers.back().status(), "allocate");
        if (list == &inputs) tiles.push_back(fill_random(impl_of(h), buffers.back().get(), size, t->get_data_type(), seed++));
        pack[t] = buffers.back().get();
        bytes += static_cast<double>(size);
      }
  }
  void run(dg::Handle& h) { ok(g.execute(h, pack, workspace.get()), "execute"); }
  void run_plan(dg::Handle& h, int64_t i) { ok(g.execute_plan_at_index(h, pack, workspace.get(), i), "execute_plan_at_index"); }
};

void bench_copy(dg::Handle& h) {
  const size_t bytes = size_t{1} << 30;
  dg::memory::Buffer a(impl_of(h), bytes), b(impl_of(h), bytes);
  fill_random(impl_of(h), a.get(), bytes, DataType::FLOAT, 9);
  const auto& d = *dg::cuda::driver();
  const double ms = time_ms(impl_of(h), [&] {
    ok(dg::cuda::check(d.cuMemcpyDtoDAsync(reinterpret_cast<dg::cuda::CUdeviceptr>(b.get()),
                                           reinterpret_cast<dg::cuda::CUdeviceptr>(a.get()), bytes,
                                           dg::cuda::stream_of(impl_of(h))),
                       "cuMemcpyDtoDAsync"),
       "copy");
  });
  report("copy_1g", ms, 2.0 * bytes, "cuMemcpyDtoD, bytes read + written");
}

// One pointwise/reduction graph: `make` declares it and lists inputs and outputs.
void bench_graph(dg::Handle& h, const std::string& name, const std::function<void(Case&)>& make, const std::string& note,
                 const std::function<void(Case&)>& verify = nullptr) {
  Case c;
  make(c);
  c.build(h);
  const double ms = time_ms(impl_of(h), [&] { c.run(h); });
  if (verify) verify(c);
  std::string plans;
  for (int64_t i = 0; i < c.g.get_execution_plan_count(); ++i) {
    std::string plan_name;
    ok(c.g.get_plan_name_at_index(i, plan_name), "plan name");
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.4f ms", time_ms(impl_of(h), [&] { c.run_plan(h, i); }));
    plans += (i ? "; " : "") + plan_name + " " + buf;
  }
  report(name, ms, c.bytes, note, plans);
}

// Y = mode(X) over the dims where `out_dims` is 1, of float32 tensors: a reduction partition
// (identity, then the reduction) by itself.
void declare_reduction(Case& c, const std::vector<int64_t>& dims, const std::vector<int64_t>& out_dims,
                       dg::ReductionMode mode) {
  auto x = c.input("X", dims, DataType::FLOAT);
  auto y = c.g.reduction(c.g.pointwise(x, dg::PointwiseAttr().set_mode(M::IDENTITY)), dg::ReductionAttr().set_mode(mode));
  y->set_dim(out_dims);
  c.output(y, out_dims, DataType::FLOAT);
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc) g_repeats = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--case") && i + 1 < argc) only = argv[++i];
  }
  dg::Handle h(dg::Device::cuda(0));
  if (!h.status().ok()) {
    std::fprintf(stderr, "dnngraph_gpu_bench: no GPU: %s\n", h.status().to_string().c_str());
    return 2;
  }
  std::fprintf(stderr, "device: %s\n", impl_of(h).info.signature.c_str());
  auto want = [&](const char* n) { return only.empty() || only == n; };

  if (want("copy_1g")) bench_copy(h);

  if (want("scale_bf16")) bench_graph(h, "scale_bf16", [](Case& c) {
    const std::vector<int64_t> d{int64_t{1} << 28};  // 512 MiB in, 512 MiB out
    auto x = c.input("X", d, DataType::BFLOAT16);
    auto s = c.g.tensor(dg::TensorAttr().set_name("s").set_dim({1}).set_stride({1}).set_data_type(DataType::FLOAT).set_value(2.0));
    c.output(c.g.pointwise(x, s, dg::PointwiseAttr().set_mode(M::MUL)), d, DataType::BFLOAT16);
  }, "Y = X * 2", [&](Case& c) {
    std::vector<uint16_t> y(1 << 20);
    ok(dg::memory::copy_to_host(impl_of(h), y.data(), c.pack.at(c.outputs[0].first), y.size() * 2), "download");
    for (size_t i = 0; i < y.size(); ++i) {
      const double x = dg::dtype::load(c.tiles[0].data(), DataType::BFLOAT16, static_cast<int64_t>(i));
      if (dg::dtype::bf16_to_float(y[i]) != 2 * x) {
        std::fprintf(stderr, "scale_bf16: element %zu is %g, not %g\n", i, dg::dtype::bf16_to_float(y[i]), 2 * x);
        std::exit(1);
      }
    }
  });

  if (want("add_fp32")) bench_graph(h, "add_fp32", [](Case& c) {
    const std::vector<int64_t> d{int64_t{1} << 26};  // 256 MiB each
    auto a = c.input("A", d, DataType::FLOAT), b = c.input("B", d, DataType::FLOAT);
    c.output(c.g.pointwise(a, b, dg::PointwiseAttr().set_mode(M::ADD)), d, DataType::FLOAT);
  }, "Y = A + B");

  if (want("bias_gelu_bf16")) bench_graph(h, "bias_gelu_bf16", [](Case& c) {
    const std::vector<int64_t> d{32768, 8192}, bd{1, 8192};  // 512 MiB
    auto x = c.input("X", d, DataType::BFLOAT16), b = c.input("B", bd, DataType::BFLOAT16);
    c.output(c.g.gelu(c.g.pointwise(x, b, dg::PointwiseAttr().set_mode(M::ADD))), d, DataType::BFLOAT16);
  }, "Y = gelu(X + b), b per column");

  if (want("chain5_amax_fp8")) bench_graph(h, "chain5_amax_fp8", [](Case& c) {
    const std::vector<int64_t> d{16384, 8192}, row{1, 8192}, one{1, 1};  // 256 MiB of bf16
    c.g.set_intermediate_data_type(DataType::FLOAT);
    auto x = c.input("X", d, DataType::BFLOAT16);
    auto s1 = c.input("s1", one, DataType::FLOAT), s2 = c.input("s2", one, DataType::FLOAT);
    auto b = c.input("b", row, DataType::BFLOAT16);
    auto t = c.g.pointwise(x, s1, dg::PointwiseAttr().set_mode(M::MUL));
    t = c.g.pointwise(t, b, dg::PointwiseAttr().set_mode(M::ADD));
    t = c.g.pointwise(t, dg::PointwiseAttr().set_mode(M::GELU_FWD));
    t = c.g.pointwise(t, s2, dg::PointwiseAttr().set_mode(M::MUL));
    c.output(c.g.pointwise(t, dg::PointwiseAttr().set_mode(M::IDENTITY)), d, DataType::FP8_E4M3);
    auto amax = c.g.reduction(t, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX));
    amax->set_dim({1, 1});
    c.output(amax, one, DataType::FLOAT);
  }, "y = fp8(s2 * gelu(x * s1 + b)), amax: one kernel + a 4-byte memset", [&](Case& c) {
    // The input repeats one 16 MiB tile whose length is a multiple of the row, so the amax over the
    // tile is the amax over the tensor: check it against a host computation in double.
    auto v = [&](size_t input, int64_t i) { return dg::dtype::load(c.tiles[input].data(), c.inputs[input].first->get_data_type(), i); };
    const int64_t n = static_cast<int64_t>(c.tiles[0].size() / 2);
    double want = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double t = v(0, i) * v(1, 0) + v(3, i % 8192);
      want = std::max(want, std::fabs(v(2, 0) * 0.5 * t * (1.0 + std::erf(t / std::sqrt(2.0)))));
    }
    float got = 0;
    ok(dg::memory::copy_to_host(impl_of(h), &got, c.pack.at(c.outputs[1].first), 4), "download");
    if (std::fabs(got - want) > 1e-5 * want) {
      std::fprintf(stderr, "chain5_amax_fp8: amax %.7g differs from the host's %.7g\n", got, want);
      std::exit(1);
    }
  });

  if (want("rowsum_fp32")) bench_graph(h, "rowsum_fp32", [](Case& c) {
    declare_reduction(c, {16384, 8192}, {16384, 1}, dg::ReductionMode::ADD);  // 512 MiB
  }, "sum over rows (warp-aggregated atomics)");

  if (want("amax_fp32")) bench_graph(h, "amax_fp32", [](Case& c) {
    declare_reduction(c, {int64_t{1} << 26}, {1}, dg::ReductionMode::AMAX);  // 256 MiB
  }, "max |x| over everything");
  return 0;
}
