// The CPU GEMM and convolution engines against OpenBLAS (cblas_sgemm) and oneDNN on the same run,
// fp32, all cores: sgemm 1024 and 2048, the tutorial conv, four ResNet-50 layers, a MobileNetV2
// depthwise and a ResNeXt-50 grouped layer at N=1 (NHWC), bf16 convs, conv_wgrad (DW from DY and
// X) on the dense layers against oneDNN's backward weights, and conv + bias + ReLU fused against
// the same conv followed by separate bias and ReLU passes. Also measures the machine's fp32 FMA peak. Prints median wall times (and process CPU
// time, which shows the work done when other processes share the machine) and the ratios.
//
//   dnngraph_bench_cpu_gemm_conv [iterations] [filter]     default 15, every case
//
// `filter`: run only the cases whose name contains it (e.g. "sgemm 2048", "1x1", "relu"), or with a
// leading '=' the case of exactly that name (e.g. "=rn50 1x1 C256 56x56 -> 64", without its fusion rows).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <ctime>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <dnnl.hpp>

#include "cpu_bench_timing.hpp"
#include "dnngraph/dnngraph.hpp"
#include "core/dtype.hpp"
#include "engines/cpu/cpu_features.hpp"
#include "runtime/cpu/thread_pool.hpp"
#include "runtime/handle_impl.hpp"

extern "C" {
void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc);
}

namespace dg = dnngraph;

namespace {

constexpr int kRowMajor = 101, kNoTrans = 111;

using cpu_bench::median;
using cpu_bench::Timing;

// Ours and the peer timed in alternating blocks (ours, peer, ours, peer, ...), each block after
// a pause and 50 ms of untimed calls: load from other processes that comes and goes hits both alike,
// and neither side runs while the other's worker threads still spin (OpenBLAS threads busy-wait
// ~0.1 s after a call, libgomp's for a while too; on 2 cores a spinning thread halves the
// other side). Times are medians over all blocks.
struct Compared {
  Timing ours, peer;
  double ratio_wall = 0, ratio_cpu = 0;  // peer time / our time
};

template <class F, class G>
Compared compare(int iterations, F&& ours, G&& peer) {
  constexpr int kBlocks = 3;
  const int per_block = std::max(1, (iterations + kBlocks - 1) / kBlocks);
  std::vector<double> ow, oc, pw, pc;
  auto timed = [&](auto& fn, std::vector<double>& wall, std::vector<double>& cpu) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the other side's spinners sleep
    // Untimed calls for 50 ms: caches refill, and the cores leave their idle state (after the
    // pause, a 1 ms conv ran at 1.05 ms with one warm-up call, 0.75 ms after 30 ms of them).
    const auto warm_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    do fn(); while (std::chrono::steady_clock::now() < warm_until);
    for (int i = 0; i < per_block; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = cpu_bench::process_cpu_seconds();
      fn();
      cpu.push_back(cpu_bench::process_cpu_seconds() - c0);
      wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  };
  ours();
  peer();
  for (int blk = 0; blk < kBlocks; ++blk) {
    timed(ours, ow, oc);
    timed(peer, pw, pc);
  }
  Compared r{{median(ow), median(oc)}, {median(pw), median(pc)}, 0, 0};
  r.ratio_wall = r.peer.wall / r.ours.wall;
  r.ratio_cpu = r.peer.cpu / r.ours.cpu;
  return r;
}

// Both sides' buffers on 64-byte boundaries, as the library's own allocations and its sessions'
// arenas are: glibc puts a large vector 16 bytes into a page, where every 64-byte vector of
// every tensor straddles two cache lines (a depthwise layer 0.218 against 0.180 ms aligned).
template <class T>
struct CacheAligned {
  using value_type = T;
  CacheAligned() = default;
  template <class U>
  CacheAligned(const CacheAligned<U>&) {}
  T* allocate(size_t n) {
    void* p = std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <class U>
  bool operator==(const CacheAligned<U>&) const { return true; }
};
template <class T>
using Vec = std::vector<T, CacheAligned<T>>;

Vec<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Vec<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// ---- the machine's fp32 peak: independent FMA chains on every core
__attribute__((target("avx2,fma"))) double fma_loop_avx2(int64_t iters) {
  typedef float v8 __attribute__((vector_size(32)));
  // Ten independent chains (FMA latency x pipes < 10), kept in registers; the results are used
  // afterwards, so no iteration can be dropped.
  v8 a0 = v8{} + 0.1f, a1 = v8{} + 0.2f, a2 = v8{} + 0.3f, a3 = v8{} + 0.4f, a4 = v8{} + 0.5f, a5 = v8{} + 0.6f,
     a6 = v8{} + 0.7f, a7 = v8{} + 0.8f, a8 = v8{} + 0.9f, a9 = v8{} + 1.0f;
  const v8 m = v8{} + 0.99999f, c = v8{} + 1e-6f;
  for (int64_t k = 0; k < iters; ++k) {
    a0 = a0 * m + c; a1 = a1 * m + c; a2 = a2 * m + c; a3 = a3 * m + c; a4 = a4 * m + c;
    a5 = a5 * m + c; a6 = a6 * m + c; a7 = a7 * m + c; a8 = a8 * m + c; a9 = a9 * m + c;
  }
  const v8 s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9;
  return static_cast<double>(s[0]);
}

// The same with 512-bit FMAs: on cores with a full-width AVX-512 datapath (Zen 5, Intel server
// cores) their peak is twice the AVX2 one, which is the fraction the rows are reported against.
__attribute__((target("avx512f"))) double fma_loop_avx512(int64_t iters) {
  typedef float v16 __attribute__((vector_size(64)));
  v16 a0 = v16{} + 0.1f, a1 = v16{} + 0.2f, a2 = v16{} + 0.3f, a3 = v16{} + 0.4f, a4 = v16{} + 0.5f, a5 = v16{} + 0.6f,
      a6 = v16{} + 0.7f, a7 = v16{} + 0.8f, a8 = v16{} + 0.9f, a9 = v16{} + 1.0f;
  const v16 m = v16{} + 0.99999f, c = v16{} + 1e-6f;
  for (int64_t k = 0; k < iters; ++k) {
    a0 = a0 * m + c; a1 = a1 * m + c; a2 = a2 * m + c; a3 = a3 * m + c; a4 = a4 * m + c;
    a5 = a5 * m + c; a6 = a6 * m + c; a7 = a7 * m + c; a8 = a8 * m + c; a9 = a9 * m + c;
  }
  const v16 s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9;
  return static_cast<double>(s[0]);
}

// Per-core rate from each thread's own CPU time (immune to other processes sharing the cores: the
// loop touches no memory), times the number of threads; and the plain wall-clock rate.
struct Peak {
  double per_cpu_time = 0, wall = 0;
};

// `lanes`: 8 for the AVX2 loop, 16 for the AVX-512 one.
Peak measure_peak(dg::ThreadPool& pool, int lanes) {
  Peak p;
  if (!dg::cpu::cpu_features().supports(lanes == 16 ? dg::cpu::Isa::AVX512 : dg::cpu::Isa::AVX2)) return p;
  const int64_t iters = 20000000;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<double> rate(static_cast<size_t>(pool.size()), 0.0);
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(pool.size(), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        timespec c0{}, c1{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        volatile double sink = lanes == 16 ? fma_loop_avx512(iters) : fma_loop_avx2(iters);  // keeps the loop alive
        (void)sink;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        const double s = static_cast<double>(c1.tv_sec - c0.tv_sec) + static_cast<double>(c1.tv_nsec - c0.tv_nsec) * 1e-9;
        rate[static_cast<size_t>(i)] = static_cast<double>(iters) * 10 * 2 * lanes / s;
      }
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double sum = 0;
    for (double r : rate) sum += r;
    p.per_cpu_time = std::max(p.per_cpu_time, sum);
    p.wall = std::max(p.wall, static_cast<double>(pool.size()) * iters * 10 * 2 * lanes / s);
  }
  return p;
}

// ---- dnngraph graphs
struct Built {
  dg::Graph g;
  dg::Handle handle{dg::Device::cpu()};
  std::vector<unsigned char> ws;
  dg::VariantPack pack;
  std::string plan;
  void finish(std::vector<std::string> engines = {}) {
    if (!engines.empty()) g.select_engines(engines);
    auto check = [](const dg::Status& s) {
      if (!s.ok()) {
        std::fprintf(stderr, "dnngraph: %s\n", s.to_string().c_str());
        std::exit(1);
      }
    };
    check(g.validate());
    check(g.build_operation_graph(handle));
    check(g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}));
    check(g.check_support(handle));
    check(g.build_plans(handle));
    int64_t bytes = 0;
    check(g.get_workspace_size(bytes));
    ws.resize(static_cast<size_t>(bytes) + 64);
    check(g.get_plan_name_at_index(0, plan));
  }
  void run() {
    if (auto s = g.execute(handle, pack, ws.data()); !s.ok()) {
      std::fprintf(stderr, "execute: %s\n", s.to_string().c_str());
      std::exit(1);
    }
  }
};

struct ConvShape {
  const char* name;
  int64_t c, h, w, k, r, pad, n = 1, groups = 1;
  int64_t oh() const { return h + 2 * pad - r + 1; }
  int64_t ow() const { return w + 2 * pad - r + 1; }
  int64_t cg() const { return c / groups; }  // filter channels
  double flops() const { return 2.0 * n * oh() * ow() * k * cg() * r * r; }
  int64_t in_size() const { return n * h * w * c; }
  int64_t out_size() const { return n * oh() * ow() * k; }
};

// X NHWC, W KRSC, Y NHWC; optional bias + ReLU fused after the conv. `constant`: W is marked
// constant (packed once per plan, as oneDNN's weights are reordered once outside its timed loop).
// `in`: the type of X and W (Y is FLOAT).
void build_conv(Built& b, const ConvShape& s, void* x, void* w, float* bias, float* y, bool fused,
                std::vector<std::string> engines = {}, bool constant = true, dg::DataType in = dg::DataType::FLOAT) {
  auto X = b.g.tensor(dg::TensorAttr().set_name("X").set_dim({s.n, s.c, s.h, s.w}).set_stride({s.h * s.w * s.c, 1, s.w * s.c, s.c}).set_data_type(in));
  auto W = b.g.tensor(dg::TensorAttr().set_name("W").set_dim({s.k, s.cg(), s.r, s.r}).set_stride({s.cg() * s.r * s.r, 1, s.r * s.cg(), s.cg()}).set_data_type(in).set_is_constant(constant));
  auto Y = b.g.conv_fprop(X, W, dg::ConvFpropAttr().set_padding({s.pad, s.pad}).set_stride({1, 1}).set_dilation({1, 1}));
  b.pack = {{X, x}, {W, w}};
  if (fused) {
    auto B = b.g.tensor(dg::TensorAttr().set_name("B").set_dim({1, s.k, 1, 1}).set_stride({s.k, 1, s.k, s.k}).set_data_type(dg::DataType::FLOAT));
    Y = b.g.relu(b.g.bias(Y, B));
    b.pack[B] = bias;
  }
  Y->set_output(true).set_data_type(dg::DataType::FLOAT).set_stride({s.oh() * s.ow() * s.k, 1, s.ow() * s.k, s.k});

  b.pack[Y] = y;
  b.finish(std::move(engines));
}

// ---- oneDNN: src/dst NHWC as the user holds them, weights reordered once to its preferred layout
struct OneDnnConv {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::convolution_forward prim;
  dnnl::memory src, wei, dst;
  // `bf16`: x and w_krsc hold bf16 (src and weights bf16, dst f32).
  OneDnnConv(const ConvShape& s, void* x, void* w_krsc, float* y, bool bf16 = false) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dt in = bf16 ? dt::bf16 : dt::f32;
    const dnnl::memory::dims sd{s.n, s.c, s.h, s.w}, dd{s.n, s.k, s.oh(), s.ow()};
    // Grouped weights are [g, k/g, c/g, r, s]; our KRSC is then goihw-ordered per group ("gohwi").
    const bool grouped = s.groups > 1;
    const dnnl::memory::dims wd = grouped ? dnnl::memory::dims{s.groups, s.k / s.groups, s.cg(), s.r, s.r}
                                          : dnnl::memory::dims{s.k, s.c, s.r, s.r};
    dnnl::memory::desc src_md(sd, in, tag::nhwc), dst_md(dd, dt::f32, tag::nhwc), wei_any(wd, in, tag::any);
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_auto, src_md,
                                         wei_any, dst_md, {1, 1}, {s.pad, s.pad}, {s.pad, s.pad});
    dnnl::convolution_forward::primitive_desc pd(desc, eng);
    prim = dnnl::convolution_forward(pd);
    src = dnnl::memory(src_md, eng, x);
    dst = dnnl::memory(dst_md, eng, y);
    dnnl::memory user_w({wd, in, grouped ? tag::gohwi : tag::ohwi}, eng, w_krsc);
    wei = dnnl::memory(pd.weights_desc(), eng);
    dnnl::reorder(user_w, wei).execute(strm, user_w, wei);
    strm.wait();
  }
  void run() {
    prim.execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
    strm.wait();
  }
};

// The measured fp32 FMA peak of the widest ISA, all cores (FLOP/s): each row's fraction of it.
double g_peak = 0;

// The 1-minute load average (other processes share this machine: a row taken above the core
// count is to be run again), or -1 where /proc/loadavg is not there.
double load_average() {
  double load = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = -1;
    std::fclose(f);
  }
  return load;
}

void print_row(const char* what, const char* ours_name, const Compared& r, const char* peer, double flops) {
  const double ours = flops / r.ours.wall, theirs = flops / r.peer.wall;
  std::printf("%-38s %8.3f ms (cpu %8.3f) %6.1f GF/s %3.0f%% | %-8s %8.3f ms (cpu %8.3f) %6.1f GF/s %3.0f%% | ratio %.2f (cpu %.2f) load %.1f [%s]\n",
              what, r.ours.wall * 1e3, r.ours.cpu * 1e3, ours * 1e-9, g_peak > 0 ? 100 * ours / g_peak : 0.0, peer,
              r.peer.wall * 1e3, r.peer.cpu * 1e3, theirs * 1e-9, g_peak > 0 ? 100 * theirs / g_peak : 0.0, r.ratio_wall,
              r.ratio_cpu, load_average(), ours_name);
  std::fflush(stdout);
}

void bench_sgemm(int64_t n, int iters) {
  auto a = random_vec(static_cast<size_t>(n * n), 1), b = random_vec(static_cast<size_t>(n * n), 2);
  Vec<float> c(static_cast<size_t>(n * n)), c_ref(c.size());
  Built m;
  auto A = m.g.tensor(dg::TensorAttr().set_name("A").set_dim({n, n}).set_stride({n, 1}).set_data_type(dg::DataType::FLOAT));
  auto B = m.g.tensor(dg::TensorAttr().set_name("B").set_dim({n, n}).set_stride({n, 1}).set_data_type(dg::DataType::FLOAT));
  auto C = m.g.matmul(A, B, dg::MatmulAttr());
  C->set_output(true).set_data_type(dg::DataType::FLOAT);
  m.pack = {{A, a.data()}, {B, b.data()}, {C, c.data()}};
  m.finish();
  const int ni = static_cast<int>(n);
  const Compared r = compare(iters, [&] { m.run(); }, [&] {
    cblas_sgemm(kRowMajor, kNoTrans, kNoTrans, ni, ni, ni, 1.0f, a.data(), ni, b.data(), ni, 0.0f, c_ref.data(), ni);
  });
  double err = 0;
  for (size_t i = 0; i < c.size(); ++i) err = std::max(err, static_cast<double>(std::fabs(c[i] - c_ref[i])));
  const std::string what = "sgemm " + std::to_string(n) + " (max diff " + std::to_string(err).substr(0, 8) + ")";
  print_row(what.c_str(), m.plan.c_str(), r, "OpenBLAS", 2.0 * n * n * n);
}

// bf16 A and B (row-major), fp32 C, against oneDNN's matmul with the same row-major operands (no
// reorder: both sides pack per call, as a BLAS call would).
void bench_bf16_gemm(int64_t n, int iters) {
  const auto af = random_vec(static_cast<size_t>(n * n), 8), bf = random_vec(static_cast<size_t>(n * n), 9);
  Vec<uint16_t> a(af.size()), b(bf.size());
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = dg::dtype::float_to_bf16(af[i]);
    b[i] = dg::dtype::float_to_bf16(bf[i]);
  }
  Vec<float> c(static_cast<size_t>(n * n)), c_ref(c.size());
  Built m;
  auto A = m.g.tensor(dg::TensorAttr().set_name("A").set_dim({n, n}).set_stride({n, 1}).set_data_type(dg::DataType::BFLOAT16));
  auto B = m.g.tensor(dg::TensorAttr().set_name("B").set_dim({n, n}).set_stride({n, 1}).set_data_type(dg::DataType::BFLOAT16));
  auto C = m.g.matmul(A, B, dg::MatmulAttr());
  C->set_output(true).set_data_type(dg::DataType::FLOAT);
  m.pack = {{A, a.data()}, {B, b.data()}, {C, c.data()}};
  m.finish();
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const dnnl::memory::dims d{n, n};
  dnnl::memory::desc a_md(d, dt::bf16, tag::ab), b_md(d, dt::bf16, tag::ab), c_md(d, dt::f32, tag::ab);
  dnnl::matmul prim(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), eng));
  dnnl::memory am(a_md, eng, a.data()), bm(b_md, eng, b.data()), cm(c_md, eng, c_ref.data());
  const Compared r = compare(iters, [&] { m.run(); }, [&] {
    prim.execute(strm, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    strm.wait();
  });
  double err = 0;
  for (size_t i = 0; i < c.size(); ++i) err = std::max(err, static_cast<double>(std::fabs(c[i] - c_ref[i])));
  const std::string what = "bf16 gemm " + std::to_string(n) + " (max diff " + std::to_string(err).substr(0, 8) + ")";
  print_row(what.c_str(), m.plan.c_str(), r, "oneDNN", 2.0 * n * n * n);
}

// Our output against the peer's: the largest difference and the largest magnitude, printed.
void print_max_diff(const Vec<float>& got, const Vec<float>& want, const char* name) {
  double err = 0, mag = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, static_cast<double>(std::fabs(got[i] - want[i])));
    mag = std::max(mag, static_cast<double>(std::fabs(want[i])));
  }
  std::printf("  (max |diff| %.2e of max |%s| %.2e)\n", err, name, mag);
}

// A dense 3x3 layer runs on both conv engines: time the one the heuristic did not choose too.
template <class Peer>
void bench_other_3x3_engine(const ConvShape& s, const std::string& what, const std::string& chosen, void* x, void* w,
                            float* y, dg::DataType in, int iters, Peer peer) {
  if (s.groups != 1 || s.r != 3) return;
  const bool chose_implicit = chosen.rfind("cpu_conv_implicit_gemm", 0) == 0;
  Built other;
  build_conv(other, s, x, w, nullptr, y, false, {chose_implicit ? "cpu_conv_winograd_f4x3" : "cpu_conv_implicit_gemm"},
             true, in);
  print_row(what.c_str(), other.plan.c_str(), compare(iters, [&] { other.run(); }, peer), "oneDNN", s.flops());
}

void bench_conv(const ConvShape& s, int iters) {
  auto x = random_vec(static_cast<size_t>(s.in_size()), 3), w = random_vec(static_cast<size_t>(s.k * s.cg() * s.r * s.r), 4);
  Vec<float> y(static_cast<size_t>(s.out_size())), y_ref(y.size());
  OneDnnConv peer(s, x.data(), w.data(), y_ref.data());
  Built def;
  build_conv(def, s, x.data(), w.data(), nullptr, y.data(), false);
  const Compared r = compare(iters, [&] { def.run(); }, [&] { peer.run(); });
  print_max_diff(y, y_ref, "y");
  print_row(s.name, def.plan.c_str(), r, "oneDNN", s.flops());
  bench_other_3x3_engine(s, s.name, def.plan, x.data(), w.data(), y.data(), dg::DataType::FLOAT, iters,
                         [&] { peer.run(); });
  // The weights not marked constant: packed (or transformed) again on every execute.
  if (s.groups == 1) {
    Built repack;
    build_conv(repack, s, x.data(), w.data(), nullptr, y.data(), false, {}, false);
    const std::string what = std::string(s.name) + " (W not constant)";
    print_row(what.c_str(), repack.plan.c_str(), compare(iters, [&] { repack.run(); }, [&] { peer.run(); }), "oneDNN",
              s.flops());
  }
}

// ---- conv_wgrad: DW (KRSC, fp32) from DY and X (NHWC), against oneDNN's backward-weights
// primitive with its diff weights in the layout it prefers (the reorder a user would then need is
// not timed), both at N = 1.
struct OneDnnWgrad {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::convolution_backward_weights prim;
  dnnl::memory src, diff_dst, diff_wei, user_dw;
  OneDnnWgrad(const ConvShape& s, float* x, float* dy, float* dw_krsc) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::dims sd{s.n, s.c, s.h, s.w}, dd{s.n, s.k, s.oh(), s.ow()}, wd{s.k, s.c, s.r, s.r};
    dnnl::memory::desc src_md(sd, dt::f32, tag::nhwc), dst_md(dd, dt::f32, tag::nhwc), wei_any(wd, dt::f32, tag::any);
    const dnnl::memory::dims st{1, 1}, pad{s.pad, s.pad};
    dnnl::convolution_forward::primitive_desc fwd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_auto, src_md,
                                        wei_any, dst_md, st, pad, pad),
        eng);
    dnnl::convolution_backward_weights::primitive_desc pd(
        dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_auto, src_md, wei_any, dst_md, st, pad, pad),
        eng, fwd);
    prim = dnnl::convolution_backward_weights(pd);
    src = dnnl::memory(src_md, eng, x);
    diff_dst = dnnl::memory(dst_md, eng, dy);
    diff_wei = dnnl::memory(pd.diff_weights_desc(), eng);
    user_dw = dnnl::memory({wd, dt::f32, tag::ohwi}, eng, dw_krsc);
  }
  void run() {
    prim.execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_WEIGHTS, diff_wei}});
    strm.wait();
  }
  void to_user() {  // DW in KRSC, for the comparison
    dnnl::reorder(diff_wei, user_dw).execute(strm, diff_wei, user_dw);
    strm.wait();
  }
};

void bench_wgrad(const ConvShape& s, int iters) {
  auto x = random_vec(static_cast<size_t>(s.in_size()), 5), dy = random_vec(static_cast<size_t>(s.out_size()), 6);
  Vec<float> dw(static_cast<size_t>(s.k * s.c * s.r * s.r)), dw_ref(dw.size());
  OneDnnWgrad peer(s, x.data(), dy.data(), dw_ref.data());
  Built b;
  auto X = b.g.tensor(dg::TensorAttr().set_name("X").set_dim({s.n, s.c, s.h, s.w}).set_stride({s.h * s.w * s.c, 1, s.w * s.c, s.c}));
  auto DY = b.g.tensor(dg::TensorAttr().set_name("DY").set_dim({s.n, s.k, s.oh(), s.ow()})
                           .set_stride({s.oh() * s.ow() * s.k, 1, s.ow() * s.k, s.k}));
  X->set_data_type(dg::DataType::FLOAT);
  DY->set_data_type(dg::DataType::FLOAT);
  auto DW = b.g.conv_wgrad(DY, X, dg::ConvWgradAttr().set_padding({s.pad, s.pad}).set_stride({1, 1}).set_dilation({1, 1}));
  DW->set_output(true).set_data_type(dg::DataType::FLOAT).set_dim({s.k, s.c, s.r, s.r})
      .set_stride({s.c * s.r * s.r, 1, s.r * s.c, s.c});
  b.pack = {{X, x.data()}, {DY, dy.data()}, {DW, dw.data()}};
  b.finish();
  const Compared r = compare(iters, [&] { b.run(); }, [&] { peer.run(); });
  peer.to_user();
  print_max_diff(dw, dw_ref, "dw");
  const std::string what = std::string("wgrad ") + s.name;
  print_row(what.c_str(), b.plan.c_str(), r, "oneDNN", s.flops());
}

// bf16 source and weights, fp32 output, weights constant, against oneDNN's bf16 convolution.
void bench_bf16_conv(const ConvShape& s, int iters) {
  auto xf = random_vec(static_cast<size_t>(s.in_size()), 3), wf = random_vec(static_cast<size_t>(s.k * s.cg() * s.r * s.r), 4);
  Vec<uint16_t> x(xf.size()), w(wf.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = dg::dtype::float_to_bf16(xf[i]);
  for (size_t i = 0; i < w.size(); ++i) w[i] = dg::dtype::float_to_bf16(wf[i]);
  Vec<float> y(static_cast<size_t>(s.out_size())), y_ref(y.size());
  OneDnnConv peer(s, x.data(), w.data(), y_ref.data(), true);
  Built def;
  build_conv(def, s, x.data(), w.data(), nullptr, y.data(), false, {}, true, dg::DataType::BFLOAT16);
  const Compared r = compare(iters, [&] { def.run(); }, [&] { peer.run(); });
  print_max_diff(y, y_ref, "y");
  const std::string what = std::string("bf16 ") + s.name;
  print_row(what.c_str(), def.plan.c_str(), r, "oneDNN", s.flops());
  bench_other_3x3_engine(s, what, def.plan, x.data(), w.data(), y.data(), dg::DataType::BFLOAT16, iters,
                         [&] { peer.run(); });
}

// Fused conv + bias + ReLU against the conv then a bias pass and a ReLU pass over memory. The plain
// conv is timed against the separate chain too: fused can at best match the plain conv, so
// separate / plain bounds the ratio any fusion could reach on that layer.
void bench_fusion(const ConvShape& s, int iters) {
  auto x = random_vec(static_cast<size_t>(s.in_size()), 5), w = random_vec(static_cast<size_t>(s.k * s.cg() * s.r * s.r), 6);
  auto bias = random_vec(static_cast<size_t>(s.k), 7);
  const int64_t pixels = s.n * s.oh() * s.ow();
  Vec<float> y(static_cast<size_t>(s.out_size())), z(y.size()), r(y.size());
  Built fused, plain;
  build_conv(fused, s, x.data(), w.data(), bias.data(), r.data(), true);
  build_conv(plain, s, x.data(), w.data(), nullptr, y.data(), false);
  // The passes run on the conv's own pool: a second pool's threads would spin beside it.
  dg::ThreadPool& pool = impl_of(plain.handle).thread_pool();
  auto separate = [&] {
    plain.run();
    pool.parallel_for(pixels, [&](int64_t b, int64_t e) {  // bias pass
      for (int64_t p = b; p < e; ++p)
        for (int64_t k = 0; k < s.k; ++k) z[static_cast<size_t>(p * s.k + k)] = y[static_cast<size_t>(p * s.k + k)] + bias[static_cast<size_t>(k)];
    });
    pool.parallel_for(pixels, [&](int64_t b, int64_t e) {  // ReLU pass
      for (int64_t i = b * s.k; i < e * s.k; ++i) r[static_cast<size_t>(i)] = std::max(z[static_cast<size_t>(i)], 0.0f);
    });
  };
  const Compared c = compare(iters, [&] { fused.run(); }, separate);
  const Compared bound = compare(iters, [&] { plain.run(); }, separate);
  for (size_t i = 0; i < r.size(); ++i)
    if (!(std::fabs(r[i] - std::max(y[i] + bias[i % static_cast<size_t>(s.k)], 0.0f)) <= 1e-4f * (1 + std::fabs(y[i])))) {
      std::printf("  MISMATCH fused vs separate at %zu: %g against %g\n", i, r[i], std::max(y[i] + bias[i % static_cast<size_t>(s.k)], 0.0f));
      break;
    }
  const std::string what = std::string(s.name) + " +bias+relu";
  print_row(what.c_str(), fused.plan.c_str(), c, "separate", s.flops());
  std::printf("  (plain conv %.3f ms against separate %.3f ms: no fusion can exceed %.2f here)\n", bound.ours.wall * 1e3,
              bound.peer.wall * 1e3, bound.ratio_wall);
}

// A bf16 row, skipped with the reason where oneDNN has no bf16 primitive for this CPU (one without
// AVX-512, or capped below it by DNNL_MAX_CPU_ISA for the AVX2 comparison): it throws there.
template <class F>
void bf16_row(const std::string& what, F&& run) {
  try {
    run();
  } catch (const dnnl::error& e) {
    std::printf("%-42s skipped: oneDNN has no bf16 primitive here (%s)\n", what.c_str(), e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::max(3, std::atoi(argv[1])) : 15;
  const std::string filter = argc > 2 ? argv[2] : "";
  auto want = [&](const std::string& name) {
    if (!filter.empty() && filter[0] == '=') return name == filter.substr(1);  // "=name": that case alone
    return filter.empty() || name.find(filter) != std::string::npos;
  };
  dg::Handle h(dg::Device::cpu());
  dg::ThreadPool pool(h.get_num_threads());
  std::printf("cpu: %s\n", dg::cpu::cpu_features().to_string().c_str());
  std::printf("threads: %d, iterations: %d (median)\n", pool.size(), iters);
  const Peak peak = measure_peak(pool, 8), peak512 = measure_peak(pool, 16);
  std::printf("measured fp32 FMA peak (AVX2, all cores): %.1f GFLOP/s from per-thread CPU time, %.1f GFLOP/s wall\n",
              peak.per_cpu_time * 1e-9, peak.wall * 1e-9);
  if (peak512.per_cpu_time > 0)
    std::printf("measured fp32 FMA peak (AVX-512, all cores): %.1f GFLOP/s from per-thread CPU time, %.1f GFLOP/s wall\n",
                peak512.per_cpu_time * 1e-9, peak512.wall * 1e-9);
  g_peak = std::max(peak.per_cpu_time, peak512.per_cpu_time);
  std::printf("%% of peak: of %.1f GFLOP/s (FLOPs as the layer's, padded taps included)\n\n", g_peak * 1e-9);
  if (want("sgemm 1024")) bench_sgemm(1024, iters);
  if (want("sgemm 2048")) bench_sgemm(2048, std::max(3, iters / 3));
  if (want("bf16 gemm 1024")) bf16_row("bf16 gemm 1024", [&] { bench_bf16_gemm(1024, iters); });
  if (want("bf16 gemm 2048")) bf16_row("bf16 gemm 2048", [&] { bench_bf16_gemm(2048, std::max(3, iters / 3)); });
  const ConvShape shapes[] = {{"tutorial 3x3 C128 56x56 -> 256", 128, 56, 56, 256, 3, 1},
                              {"rn50 3x3 C64 56x56 -> 64", 64, 56, 56, 64, 3, 1},
                              {"rn50 1x1 C256 56x56 -> 64", 256, 56, 56, 64, 1, 0},
                              // ResNet-50's 1x1 expansions of stages 3 and 2 (the session's largest 1x1 gaps to onnxruntime).
                              {"rn50 1x1 C256 14x14 -> 1024", 256, 14, 14, 1024, 1, 0},
                              {"rn50 1x1 C128 28x28 -> 512", 128, 28, 28, 512, 1, 0},
                              // Stage 3's 1x1 reductions (five of ResNet-50's layers): pixels 4 KiB apart.
                              {"rn50 1x1 C1024 14x14 -> 256", 1024, 14, 14, 256, 1, 0},
                              {"rn50 3x3 C256 14x14 -> 256", 256, 14, 14, 256, 3, 1},
                              {"rn50 3x3 C512 7x7 -> 512", 512, 7, 7, 512, 3, 1},
                              // ResNet-50's last stage at a 128x128 input (docs/onnx.md's slow layer).
                              {"3x3 C512 4x4 -> 512", 512, 4, 4, 512, 3, 1},
                              {"mbv2 dw 3x3 C144 56x56", 144, 56, 56, 144, 3, 1, 1, 144},
                              // MobileNetV2's last depthwise layer: 2 of every 7 pixels are a row's edges.
                              {"mbv2 dw 3x3 C960 7x7", 960, 7, 7, 960, 3, 1, 1, 960},
                              // MobileNetV2's first expansion (k = 16): its slowest partition, bound by the output.
                              {"mbv2 1x1 C16 112x112 -> 96", 16, 112, 112, 96, 1, 0},
                              {"rnx50 3x3 C128 g32 56x56 -> 128", 128, 56, 56, 128, 3, 1, 1, 32}};
  for (const auto& s : shapes)
    if (want(s.name)) bench_conv(s, iters);
  for (const auto& s : shapes)
    if (s.groups == 1 && want(std::string("bf16 ") + s.name))
      bf16_row(std::string("bf16 ") + s.name, [&] { bench_bf16_conv(s, iters); });
  for (const auto& s : shapes)
    if (s.groups == 1 && want(std::string("wgrad ") + s.name)) bench_wgrad(s, iters);
  std::printf("\n");
  // Fusion also on the layers whose epilogue traffic is a large share of their time: ResNet-50's
  // 1x1 expansions (64 -> 256 channels) and a MobileNetV2 depthwise layer.
  const ConvShape epilogue_heavy[] = {{"rn50 1x1 C64 56x56 -> 256", 64, 56, 56, 256, 1, 0}};
  for (const auto& s : shapes)
    if (want(std::string(s.name) + " +bias+relu")) bench_fusion(s, iters);
  for (const auto& s : epilogue_heavy)
    if (want(std::string(s.name) + " +bias+relu")) bench_fusion(s, iters);
  // A larger batch, whose activations leave the caches, where the separate passes cost more.
  const ConvShape batched[] = {{"tutorial 3x3 C128 56x56 -> 256 N=8", 128, 56, 56, 256, 3, 1, 8},
                               {"rn50 1x1 C256 56x56 -> 64 N=8", 256, 56, 56, 64, 1, 0, 8}};
  for (const auto& s : batched)
    if (want(std::string(s.name) + " +bias+relu")) bench_fusion(s, std::max(3, iters / 3));
  return 0;
}
