// GPU benchmark of cuda_sdpa_flash: every plan the engine offers (wgmma with and without the S/PV
// overlap, mma.sync) on the attention cases of docs/perf.md. Prints one JSON object per (case,
// plan) on stdout; bench/gpu/sdpa_compare.py times PyTorch's SDPA backends on the same cases in the
// same run. Device time by CUDA events: three warm-ups, then the median of timed executes. Inputs
// are seeded random (never zeros); each plan's output is checked against a float64 reference on a
// few sampled rows (max_err), so a fast wrong kernel cannot pass unnoticed.
//
// usage: dnngraph_sdpa_bench [--repeats N] [--case NAME]
//        dnngraph_sdpa_bench --dump DIR       run small cases (GQA, BSHD, cross-attention, fp16) with
//                                             every plan and write inputs and outputs to DIR, for
//                                             sdpa_compare.py to check against PyTorch's backends
//        dnngraph_sdpa_bench --prebuild DIR   compile the kernels the benchmark and the GPU tests
//                                             use for sm_90a into kernel-cache folder DIR (no GPU
//                                             needed); set DNNGRAPH_KERNEL_CACHE_DIR=DIR there
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/dtype.hpp"
#include "bench_util.hpp"
#include "dnngraph/dnngraph.hpp"
#include "engines/cuda/common/nvrtc_compile.hpp"
#include "engines/cuda/sdpa/sdpa_problem.hpp"
#include "planning/kernel_cache.hpp"
#include "runtime/cuda/context.hpp"
#include "runtime/memory.hpp"

namespace dg = dnngraph;
namespace sd = dnngraph::cuda::sdpa;
using dg::DataType;

namespace {

using gpu_bench::random_bf16;

int g_repeats = 20;

void ok(const dg::Status& s, const std::string& what) { gpu_bench::ok_or_exit("dnngraph_sdpa_bench", s, what); }

struct Case {
  const char* name;
  int64_t b, h, s, d;
  bool causal;
};
const Case kCases[] = {
    {"b4_h16_s4096_d128_causal", 4, 16, 4096, 128, true},
    {"b4_h16_s1024_d64_causal", 4, 16, 1024, 64, true},
    {"b4_h16_s4096_d128", 4, 16, 4096, 128, false},
    {"b4_h16_s4096_d64_causal", 4, 16, 4096, 64, true},
};

// FLOPs of the two GEMMs over the visible pairs (causal: half, as every SDPA benchmark counts).
double flops(const Case& c) {
  const double f = 4.0 * static_cast<double>(c.b * c.h * c.d) * static_cast<double>(c.s) * static_cast<double>(c.s);
  return c.causal ? f / 2 : f;
}


// Row i of head (b, h): the float64 attention output, for max_err.
std::vector<double> reference_row(const Case& c, const std::vector<uint16_t>& q, const std::vector<uint16_t>& k,
                                  const std::vector<uint16_t>& v, int64_t b, int64_t h, int64_t i) {
  const int64_t base = (b * c.h + h) * c.s * c.d;
  const int64_t keys = c.causal ? i + 1 : c.s;
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
  std::vector<double> score(static_cast<size_t>(keys));
  double mx = -1e300;
  for (int64_t j = 0; j < keys; ++j) {
    double dot = 0;
    for (int64_t x = 0; x < c.d; ++x)
      dot += static_cast<double>(dg::dtype::bf16_to_float(q[static_cast<size_t>(base + i * c.d + x)])) *
             dg::dtype::bf16_to_float(k[static_cast<size_t>(base + j * c.d + x)]);
    score[static_cast<size_t>(j)] = dot * scale;
    mx = std::max(mx, dot * scale);
  }
  double sum = 0;
  for (auto& sc : score) sum += (sc = std::exp(sc - mx));
  std::vector<double> out(static_cast<size_t>(c.d), 0.0);
  for (int64_t j = 0; j < keys; ++j)
    for (int64_t x = 0; x < c.d; ++x)
      out[static_cast<size_t>(x)] +=
          score[static_cast<size_t>(j)] * dg::dtype::bf16_to_float(v[static_cast<size_t>(base + j * c.d + x)]) / sum;
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void run_case(dg::Handle& handle, const Case& c, const std::shared_ptr<dg::KernelCache>& cache) {
  dg::HandleImpl& hi = impl_of(handle);
  const std::vector<int64_t> dims{c.b, c.h, c.s, c.d}, strides{c.h * c.s * c.d, c.s * c.d, c.d, 1};
  const int64_t n = c.b * c.h * c.s * c.d;
  const auto hq = random_bf16(n, 1), hk = random_bf16(n, 2), hv = random_bf16(n, 3);
  dg::memory::Buffer q(hi, hq.size() * 2), k(hi, hk.size() * 2), v(hi, hv.size() * 2), o(hi, hq.size() * 2);
  for (auto* b : {&q, &k, &v, &o}) ok(b->status(), "allocate");
  ok(dg::memory::copy_to_device(hi, q.get(), hq.data(), hq.size() * 2), "upload");
  ok(dg::memory::copy_to_device(hi, k.get(), hk.data(), hk.size() * 2), "upload");
  ok(dg::memory::copy_to_device(hi, v.get(), hv.data(), hv.size() * 2), "upload");

  dg::Graph g;
  g.set_io_data_type(DataType::BFLOAT16).set_compute_data_type(DataType::FLOAT).select_engines({"cuda_sdpa_flash"});
  g.set_kernel_cache(cache);
  auto T = [&](const char* name) {
    return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(strides).set_data_type(DataType::BFLOAT16));
  };
  auto Q = T("Q"), K = T("K"), V = T("V");
  auto [O, S] = g.sdpa(Q, K, V, dg::SdpaAttr().set_name("attn").set_causal_mask(c.causal));
  O->set_output(true);
  ok(g.validate(), "validate");
  ok(g.build_operation_graph(handle), "build_operation_graph");
  ok(g.create_execution_plans({dg::HeurMode::A}), "create_execution_plans");
  ok(g.check_support(handle), "check_support");
  dg::VariantPack pack{{Q, q.get()}, {K, k.get()}, {V, v.get()}, {O, o.get()}};
  std::unique_ptr<dg::cuda::EventTimer> timer;
  ok(dg::cuda::EventTimer::create(hi, timer), "events");
  for (int64_t p = 0; p < g.get_execution_plan_count(); ++p) {
    std::string plan;
    ok(g.get_plan_name_at_index(p, plan), "plan name");
    ok(g.build_plan_at_index(handle, p), "build " + plan);
    ok(dg::cuda::fill32(hi, o.get(), 0x7fc07fc0u, hq.size() / 2), "poison");  // bf16 NaN pairs
    for (int i = 0; i < 3; ++i) ok(g.execute_plan_at_index(handle, pack, nullptr, p), "execute " + plan);
    ok(dg::memory::synchronize(hi), "synchronize");
    std::vector<double> ms;
    for (int i = 0; i < g_repeats; ++i) {
      ok(timer->start(), "event");
      ok(g.execute_plan_at_index(handle, pack, nullptr, p), "execute " + plan);
      ok(timer->stop(), "event");
      double s = 0;
      ok(timer->seconds(s), "event");
      ms.push_back(s * 1e3);
    }
    // Sampled rows against float64: first, last, and a few in between, of three heads.
    std::vector<uint16_t> ho(hq.size());
    ok(dg::memory::copy_to_host(hi, ho.data(), o.get(), ho.size() * 2), "download");
    double max_err = 0;
    for (int64_t bh : {int64_t{0}, c.b * c.h / 2 + 1, c.b * c.h - 1})
      for (int64_t i : {int64_t{0}, int64_t{1}, c.s / 3 + 5, c.s / 2 + 63, c.s - 2, c.s - 1}) {
        const auto want = reference_row(c, hq, hk, hv, bh / c.h, bh % c.h, i);
        for (int64_t x = 0; x < c.d; ++x) {
          const double got = dg::dtype::bf16_to_float(ho[static_cast<size_t>((bh * c.s + i) * c.d + x)]);
          const double err = std::fabs(got - want[static_cast<size_t>(x)]);
          max_err = std::isnan(got) ? INFINITY : std::max(max_err, err);
        }
      }
    const double t = median(ms);
    std::printf("{\"case\": \"%s\", \"plan\": \"%s\", \"ms\": %.4f, \"tflops\": %.1f, \"max_err\": %.2e, \"b\": %lld, "
                "\"h\": %lld, \"s\": %lld, \"d\": %lld, \"causal\": %s}\n",
                c.name, plan.c_str(), t, flops(c) / (t * 1e-3) / 1e12, max_err, static_cast<long long>(c.b),
                static_cast<long long>(c.h), static_cast<long long>(c.s), static_cast<long long>(c.d),
                c.causal ? "true" : "false");
    std::fflush(stdout);
  }
}

// ---- --dump: small cases for the comparison with PyTorch's own outputs

struct DumpCase {
  const char* name;
  int64_t b, h, hk, sq, skv, d;
  bool causal, bshd;
  DataType type;
};
const DumpCase kDumpCases[] = {
    {"gqa_bshd_causal", 2, 8, 2, 777, 777, 128, true, true, DataType::BFLOAT16},
    {"cross_fp16", 1, 4, 4, 1000, 1203, 64, false, false, DataType::HALF},
    {"causal_d64", 2, 4, 4, 1030, 1030, 64, true, false, DataType::BFLOAT16},
};

void write_file(const std::string& path, const void* data, size_t bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, bytes, f) != bytes) ok(dg::Status(dg::ErrorCode::IO_ERROR, "failed"), "write " + path);
  std::fclose(f);
}

// Inputs as raw 16-bit files (BHSD or BSHD as the case says), one output file per plan, and a JSON
// line per case on stdout naming them.
void dump_case(dg::Handle& handle, const DumpCase& c, const std::string& dir, const std::shared_ptr<dg::KernelCache>& cache) {
  dg::HandleImpl& hi = impl_of(handle);
  auto layout = [&](int64_t heads, int64_t s) {
    return c.bshd ? std::vector<int64_t>{s * heads * c.d, c.d, heads * c.d, 1}
                  : std::vector<int64_t>{heads * s * c.d, s * c.d, c.d, 1};
  };
  const int64_t nq = c.b * c.h * c.sq * c.d, nkv = c.b * c.hk * c.skv * c.d;
  auto host = [&](int64_t n, uint64_t seed) {
    auto v = random_bf16(n, seed);  // bf16 bits; re-rounded to fp16 for HALF cases
    if (c.type == DataType::HALF)
      for (auto& x : v) x = dg::dtype::float_to_half(dg::dtype::bf16_to_float(x));
    return v;
  };
  const auto hq = host(nq, 11), hk = host(nkv, 12), hv = host(nkv, 13);
  dg::memory::Buffer q(hi, hq.size() * 2), k(hi, hk.size() * 2), v(hi, hv.size() * 2), o(hi, hq.size() * 2);
  ok(dg::memory::copy_to_device(hi, q.get(), hq.data(), hq.size() * 2), "upload");
  ok(dg::memory::copy_to_device(hi, k.get(), hk.data(), hk.size() * 2), "upload");
  ok(dg::memory::copy_to_device(hi, v.get(), hv.data(), hv.size() * 2), "upload");
  const std::string base = dir + "/" + c.name;
  write_file(base + ".q", hq.data(), hq.size() * 2);
  write_file(base + ".k", hk.data(), hk.size() * 2);
  write_file(base + ".v", hv.data(), hv.size() * 2);
  dg::Graph g;
  g.set_io_data_type(c.type).set_compute_data_type(DataType::FLOAT).select_engines({"cuda_sdpa_flash"});
  g.set_kernel_cache(cache);
  auto T = [&](const char* name, int64_t heads, int64_t s) {
    return g.tensor(dg::TensorAttr().set_name(name).set_dim({c.b, heads, s, c.d}).set_stride(layout(heads, s))
                        .set_data_type(c.type));
  };
  auto Q = T("Q", c.h, c.sq), K = T("K", c.hk, c.skv), V = T("V", c.hk, c.skv);
  auto [O, S] = g.sdpa(Q, K, V, dg::SdpaAttr().set_name("attn").set_causal_mask(c.causal));
  O->set_output(true).set_stride(layout(c.h, c.sq));
  ok(g.validate(), "validate");
  ok(g.build_operation_graph(handle), "build_operation_graph");
  ok(g.create_execution_plans({dg::HeurMode::A}), "create_execution_plans");
  ok(g.check_support(handle), "check_support");
  dg::VariantPack pack{{Q, q.get()}, {K, k.get()}, {V, v.get()}, {O, o.get()}};
  std::string plans;
  for (int64_t p = 0; p < g.get_execution_plan_count(); ++p) {
    std::string plan;
    ok(g.get_plan_name_at_index(p, plan), "plan name");
    ok(g.build_plan_at_index(handle, p), "build " + plan);
    ok(dg::cuda::fill32(hi, o.get(), 0x7fc07fc0u, hq.size() / 2), "poison");
    ok(g.execute_plan_at_index(handle, pack, nullptr, p), "execute " + plan);
    std::vector<uint16_t> ho(hq.size());
    ok(dg::memory::copy_to_host(hi, ho.data(), o.get(), ho.size() * 2), "download");
    write_file(base + ".o" + std::to_string(p), ho.data(), ho.size() * 2);
    plans += std::string(plans.empty() ? "" : ", ") + "\"" + plan + "\"";
  }
  std::printf("{\"dump\": \"%s\", \"b\": %lld, \"h\": %lld, \"hk\": %lld, \"sq\": %lld, \"skv\": %lld, \"d\": %lld, "
              "\"causal\": %s, \"bshd\": %s, \"type\": \"%s\", \"plans\": [%s]}\n",
              base.c_str(), static_cast<long long>(c.b), static_cast<long long>(c.h), static_cast<long long>(c.hk),
              static_cast<long long>(c.sq), static_cast<long long>(c.skv), static_cast<long long>(c.d),
              c.causal ? "true" : "false", c.bshd ? "true" : "false", c.type == DataType::HALF ? "fp16" : "bf16",
              plans.c_str());
  std::fflush(stdout);
}

// The kernels of the benchmark and of tests/engines/test_cuda_sdpa.cpp on sm_90a, compiled into DIR.
int prebuild(const std::string& dir) {
  auto cache = std::make_shared<dg::KernelCache>();
  cache->set_directory(dir);
  dg::HandleImpl hopper;
  hopper.info.sm_version = 90;
  dg::Target t;
  t.handle = &hopper;
  t.kernel_cache = &impl_of(*cache);
  std::vector<sd::Config> configs;
  auto every_core = [&](DataType in, DataType out, int d, bool neg) {  // the plans knob_space offers
    configs.push_back(sd::config_for(sd::Core::WGMMA, in, out, d, true, neg));
    configs.push_back(sd::config_for(sd::Core::WGMMA, in, out, d, false, neg));
    for (bool turns : {false, true})  // persistent blocks, without and with ping-pong turns
      configs.push_back(sd::config_for(sd::Core::WGMMA, in, out, d, true, neg, 1, turns, true));
    if (d == 64) configs.push_back(sd::config_for(sd::Core::WGMMA, in, out, d, true, neg, 2, false, true));
    if (d <= 128)  // three-stage rings (offered once sdpa_three_stage_ring leaves the GPU gate)
      for (bool turns : {false, true}) configs.push_back(sd::config_for(sd::Core::WGMMA, in, out, d, true, neg, 1, turns, true, 3));
    configs.push_back(sd::config_for(sd::Core::MMA_SYNC, in, out, d, false, neg));
  };
  for (DataType in : {DataType::BFLOAT16, DataType::HALF})
    for (int d : {64, 128}) every_core(in, in, d, false);
  for (int d : {192, 256}) every_core(DataType::BFLOAT16, DataType::BFLOAT16, d, false);
  every_core(DataType::BFLOAT16, DataType::FLOAT, 64, false);
  every_core(DataType::HALF, DataType::HALF, 64, true);
  std::vector<std::thread> workers;
  std::vector<dg::Status> status(configs.size());
  for (unsigned w = 0; w < 2; ++w)
    workers.emplace_back([&, w] {
      for (size_t i = w; i < configs.size(); i += 2) {
        std::vector<uint8_t> cubin;
        status[i] = dg::cuda::compile_cached(t, sd::kernel_source(configs[i]), "cuda_sdpa_flash.cu", cubin);
      }
    });
  for (auto& w : workers) w.join();
  for (size_t i = 0; i < configs.size(); ++i) {
    std::printf("%s: %s\n", configs[i].describe().c_str(), status[i].ok() ? "ok" : status[i].to_string().c_str());
    if (!status[i].ok()) return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string only, dump;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--prebuild" && i + 1 < argc) return prebuild(argv[++i]);
    if (gpu_bench::repeats_or_case(argc, argv, i, g_repeats, only)) continue;
    if (a == "--dump" && i + 1 < argc) dump = argv[++i];
  }
  dg::Handle handle(dg::Device::cuda(0));
  ok(handle.status(), "CUDA device");
  auto cache = std::make_shared<dg::KernelCache>();
  if (const char* dir = std::getenv("DNNGRAPH_KERNEL_CACHE_DIR"); dir && *dir) cache->set_directory(dir);
  if (!dump.empty()) {
    for (const DumpCase& c : kDumpCases) dump_case(handle, c, dump, cache);
    return 0;
  }
  for (const Case& c : kCases)
    if (only.empty() || only == c.name) run_case(handle, c, cache);
  return 0;
}
