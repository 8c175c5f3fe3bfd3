// Plan persistence benchmarks (not a test): what serialization and the kernel cache save at build time.
//   1. cold build vs deserialize: the five build steps from scratch against Graph::deserialize of
//      the same graph's bytes;
//   2. cold vs cached build of the dynamic-shape conv x (n,64,32,32) * w (64,64,3,3), pad 1, for
//      n = 8, 16, 24, 32: each cold build gets a fresh KernelCache, the cached builds share one
//      that n = 8 filled. Kernel cache hits and misses are printed beside the times.
// Medians of --reps builds. Usage: dnngraph_bench_plan_cache [--device cpu|cuda] [--reps N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "dnngraph/dnngraph.hpp"

namespace dg = dnngraph;

namespace {

void conv_graph(dg::Graph& g, int64_t n) {
  g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT).set_dynamic_shape_enabled(true);
  auto x = g.tensor(dg::TensorAttr().set_name("X").set_uid(1).set_dim({n, 64, 32, 32}).set_stride({64 * 1024, 1024, 32, 1}));
  auto w = g.tensor(dg::TensorAttr().set_name("W").set_uid(2).set_dim({64, 64, 3, 3}).set_stride({576, 9, 3, 1}));
  auto y = g.conv_fprop(x, w, dg::ConvFpropAttr().set_padding({1, 1}).set_stride({1, 1}).set_dilation({1, 1}));
  y->set_output(true).set_uid(3);
}

dg::Status build(dg::Graph& g, const dg::Handle& h) {
  if (auto s = g.validate(); !s.ok()) return s;
  if (auto s = g.build_operation_graph(h); !s.ok()) return s;
  if (auto s = g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}); !s.ok()) return s;
  if (auto s = g.check_support(h); !s.ok()) return s;
  return g.build_plans(h);
}

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void check(const dg::Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "%s: %s\n", what, s.to_string().c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  dg::Device device = dg::Device::cpu();
  int reps = 50;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      device = std::strcmp(argv[++i], "cpu") ? dg::Device::cuda(0) : dg::Device::cpu();
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--device cpu|cuda] [--reps N]\n", argv[0]);
      return 2;
    }
  }
  dg::Handle h(device);
  check(h.status(), "opening the device");
  std::printf("plan_cache on %s, median of %d builds\n\n", device.to_string().c_str(), reps);

  std::printf("cold build vs deserialize (dynamic-shape conv, n = 8)\n");
  std::vector<uint8_t> bytes;
  {
    dg::Graph g;
    conv_graph(g, 8);
    check(build(g, h), "building");
    check(g.serialize(bytes), "serializing");
    std::string plan;
    check(g.get_plan_name_at_index(0, plan), "naming");
    std::printf("  plan: %s, %zu bytes serialized\n", plan.c_str(), bytes.size());
  }
  std::vector<double> cold_t, reload_t;
  for (int r = 0; r < reps; ++r) {
    dg::Graph g, g2;
    conv_graph(g, 8);
    cold_t.push_back(seconds_of([&] { check(build(g, h), "building"); }));
    reload_t.push_back(seconds_of([&] { check(g2.deserialize(h, bytes), "deserializing"); }));
  }
  const double cold = median(cold_t), reload = median(reload_t);
  std::printf("  cold build %10.3f ms\n  deserialize %9.3f ms\n  cold / deserialize = %.2fx\n\n", cold * 1e3,
              reload * 1e3, cold / reload);

  std::printf("cold vs cached build across batch sizes (dynamic shapes on)\n");
  std::printf("  %4s %14s %14s %8s %12s\n", "n", "cold ms", "cached ms", "ratio", "cache h/m");
  auto shared = std::make_shared<dg::KernelCache>();
  {
    dg::Graph g;  // n = 8 fills the shared cache
    conv_graph(g, 8);
    g.set_kernel_cache(shared);
    check(build(g, h), "building");
  }
  for (int64_t n : {8, 16, 24, 32}) {
    const int64_t hits0 = shared->hits(), misses0 = shared->misses();
    std::vector<double> cold_t, cached_t;
    for (int r = 0; r < reps; ++r) {
      dg::Graph a, b;
      conv_graph(a, n);
      conv_graph(b, n);
      a.set_kernel_cache(std::make_shared<dg::KernelCache>());
      b.set_kernel_cache(shared);
      cold_t.push_back(seconds_of([&] { check(build(a, h), "building"); }));
      cached_t.push_back(seconds_of([&] { check(build(b, h), "building"); }));
    }
    const double cold_n = median(cold_t), cached_n = median(cached_t);
    std::printf("  %4lld %14.3f %14.3f %7.2fx %5lld/%-5lld\n", static_cast<long long>(n), cold_n * 1e3, cached_n * 1e3,
                cold_n / cached_n, static_cast<long long>(shared->hits() - hits0),
                static_cast<long long>(shared->misses() - misses0));
  }
  std::printf("  (cache h/m: kernel cache hits/misses over the %d cached builds; 0/0 means no engine of this\n"
              "   plan compiles kernels, so there is nothing to cache)\n", reps);
  return 0;
}
