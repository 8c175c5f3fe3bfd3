// cpu_sdpa_flash against an unfused matmul -> masked softmax -> matmul built from the same fp32
// kernels (the engine's GEMM tile and exp2), so the ratio measures what fusion buys: tiles kept in
// cache, the score matrix never written to memory, masked tiles skipped.
//
//   dnngraph_bench_cpu_sdpa [b h s d] [iterations] [threads]     default: 1 8 1024 64, 10, all cores
//
// Prints the median time of each, GFLOP/s over the visible (unmasked) pairs, and the ratio, for a
// causal mask (the target case) and without a mask.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "cpu_bench_timing.hpp"
#include "dnngraph/dnngraph.hpp"
#include "engines/cpu/sdpa/flash_kernels.hpp"
#include "runtime/cpu/thread_pool.hpp"
#include "runtime/handle_impl.hpp"

namespace dg = dnngraph;
namespace sk = dnngraph::cpu::sdpa;

namespace {

struct Shape {
  int64_t b = 1, h = 8, s = 1024, d = 64;
  int64_t heads() const { return b * h; }
};

using cpu_bench::median_time;
using cpu_bench::Timing;

// Unfused attention over dense BHSD fp32 tensors: S = scale * Q K^T for every pair (as a GEMM
// does), softmax over each row with the causal mask applied, O = P V. Each phase is one parallel
// pass over all heads, like three framework ops; S lives in memory between them.
class Unfused {
 public:
  Unfused(const Shape& sh, bool causal) : sh_(sh), causal_(causal), rows_pad_((sh.s + sk::kMr - 1) / sk::kMr * sk::kMr) {
    s_.assign(static_cast<size_t>(sh.heads() * rows_pad_ * sh.s), 0.0f);
    kt_.resize(static_cast<size_t>(sh.heads() * sh.d * sh.s));
  }

  void run(dg::ThreadPool& pool, const float* q, const float* k, const float* v, float* o) {
    const sk::Kernels& kern = sk::kernels(true);
    const int64_t S = sh_.s, D = sh_.d, blocks = (S + kRows - 1) / kRows;
    const float scale = static_cast<float>(1.44269504088896340736 / std::sqrt(static_cast<double>(D)));
    auto block_rows = [&](int64_t i0) { return std::min(kRows, S - i0); };
    auto scores = [&](int64_t bh) { return s_.data() + bh * rows_pad_ * S; };
    // Phase 1: S = Q K^T (K transposed once per head, as a GEMM packs its B operand).
    pool.parallel_for(sh_.heads(), [&](int64_t b0, int64_t b1) {
      for (int64_t bh = b0; bh < b1; ++bh)
        for (int64_t j = 0; j < S; ++j)
          for (int64_t c = 0; c < D; ++c) kt_[static_cast<size_t>((bh * D + c) * S + j)] = k[(bh * S + j) * D + c];
    });
    pool.parallel_for(sh_.heads() * blocks, [&](int64_t t0, int64_t t1) {
      std::vector<float> qs(static_cast<size_t>(kRows * D));
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t bh = t / blocks, i0 = t % blocks * kRows, rows = block_rows(i0);
        const int64_t m = (rows + sk::kMr - 1) / sk::kMr * sk::kMr;
        std::fill(qs.begin(), qs.end(), 0.0f);
        for (int64_t x = 0; x < rows * D; ++x) qs[static_cast<size_t>(x)] = q[(bh * S + i0) * D + x] * scale;
        kern.gemm(m, S, D, qs.data(), D, kt_.data() + bh * D * S, S, scores(bh) + i0 * S, S, false, nullptr);
      }
    });
    // Phase 2: masked softmax, rows normalized.
    pool.parallel_for(sh_.heads() * S, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t bh = r / S, i = r % S, lo = 0, hi = causal_ ? i + 1 : S;
        float m = -std::numeric_limits<float>::infinity(), l = 0;
        float* row = scores(bh) + i * S;
        kern.softmax(row, S, 1, S, &lo, &hi, &m, &l, nullptr, 0, 0);
        const float inv = 1.0f / l;
        for (int64_t j = 0; j < S; ++j) row[j] *= inv;
      }
    });
    // Phase 3: O = P V.
    pool.parallel_for(sh_.heads() * blocks, [&](int64_t t0, int64_t t1) {
      std::vector<float> tile(static_cast<size_t>(kRows * D));
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t bh = t / blocks, i0 = t % blocks * kRows, rows = block_rows(i0);
        const int64_t m = (rows + sk::kMr - 1) / sk::kMr * sk::kMr;
        kern.gemm(m, D, S, scores(bh) + i0 * S, S, v + bh * S * D, D, tile.data(), D, false, nullptr);
        std::copy(tile.begin(), tile.begin() + rows * D, o + (bh * S + i0) * D);
      }
    });
  }

  static constexpr int64_t kRows = 8 * sk::kMr;

 private:
  Shape sh_;
  bool causal_;
  int64_t rows_pad_;  // rows of S per head, padded to the GEMM's row block
  std::vector<float> s_, kt_;
};

struct Flash {
  dg::Graph g;
  dg::TensorPtr q, k, v, o;
  std::vector<char> workspace;
};

bool build_flash(Flash& f, const Shape& sh, bool causal, dg::Handle& handle) {
  f.g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  f.g.select_engines({"cpu_sdpa_flash"});
  const std::vector<int64_t> dims{sh.b, sh.h, sh.s, sh.d}, strides{sh.h * sh.s * sh.d, sh.s * sh.d, sh.d, 1};
  auto t = [&](const char* name) { return f.g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(strides)); };
  f.q = t("Q"), f.k = t("K"), f.v = t("V");
  f.o = f.g.sdpa(f.q, f.k, f.v, dg::SdpaAttr().set_causal_mask(causal))[0];
  f.o->set_output(true);
  for (const dg::Status& s : {f.g.validate(), f.g.build_operation_graph(handle), f.g.create_execution_plans({dg::HeurMode::A}),
                              f.g.check_support(handle), f.g.build_plans(handle)}) {
    if (!s.ok()) {
      std::fprintf(stderr, "cpu_sdpa_flash: %s\n", s.to_string().c_str());
      return false;
    }
  }
  int64_t ws = 0;
  (void)f.g.get_workspace_size(ws);
  f.workspace.resize(static_cast<size_t>(ws) + 1);
  return true;
}

int run_case(const Shape& sh, bool causal, int iterations, dg::Handle& handle) {
  const size_t n = static_cast<size_t>(sh.heads() * sh.s * sh.d);
  std::vector<float> q(n), k(n), v(n), o_flash(n), o_unfused(n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto* x : {&q, &k, &v})
    for (auto& e : *x) e = u(rng);
  Flash f;
  if (!build_flash(f, sh, causal, handle)) return 1;
  std::string plan;
  (void)f.g.get_plan_name_at_index(0, plan);
  dg::VariantPack pack{{f.q, q.data()}, {f.k, k.data()}, {f.v, v.data()}, {f.o, o_flash.data()}};
  bool ok = true;
  const Timing t_flash = median_time(iterations, [&] { ok &= f.g.execute(handle, pack, f.workspace.data()).ok(); });
  Unfused unfused(sh, causal);
  dg::ThreadPool& pool = impl_of(handle).thread_pool();
  const Timing t_unfused =
      median_time(iterations, [&] { unfused.run(pool, q.data(), k.data(), v.data(), o_unfused.data()); });
  double max_diff = 0;
  for (size_t i = 0; i < n; ++i) max_diff = std::max(max_diff, static_cast<double>(std::fabs(o_flash[i] - o_unfused[i])));
  const double pairs = static_cast<double>(sh.heads()) * (causal ? sh.s * (sh.s + 1) / 2.0 : double(sh.s) * sh.s);
  const double gflop = pairs * 4.0 * static_cast<double>(sh.d) * 1e-9;
  std::printf("%-7s b%lld h%lld s%lld d%lld fp32, %d threads, kernels %s\n", causal ? "causal" : "no mask",
              static_cast<long long>(sh.b), static_cast<long long>(sh.h), static_cast<long long>(sh.s),
              static_cast<long long>(sh.d), handle.get_num_threads(), sk::kernels(true).isa);
  std::printf("  %-30s %9s %9s %9s\n", "", "wall ms", "GFLOP/s", "cpu ms");
  std::printf("  %-30s %9.2f %9.1f %9.2f\n", plan.c_str(), t_flash.wall * 1e3, gflop / t_flash.wall, t_flash.cpu * 1e3);
  std::printf("  %-30s %9.2f %9.1f %9.2f\n", "unfused (same kernels)", t_unfused.wall * 1e3, gflop / t_unfused.wall,
              t_unfused.cpu * 1e3);
  std::printf("  ratio unfused / flash: %.2fx wall, %.2fx cpu   max |O diff| %.2e%s\n", t_unfused.wall / t_flash.wall,
              t_unfused.cpu / t_flash.cpu, max_diff, ok ? "" : "   (an execute call FAILED)");
  return ok && max_diff < 1e-4 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Shape sh;
  if (argc >= 5) sh = Shape{std::atoll(argv[1]), std::atoll(argv[2]), std::atoll(argv[3]), std::atoll(argv[4])};
  const int iterations = argc >= 6 ? std::atoi(argv[5]) : 10;
  const int threads = argc >= 7 ? std::atoi(argv[6]) : 0;
  if (sh.s % sk::kNr != 0 || sh.d % sk::kNr != 0) {
    std::fprintf(stderr, "the unfused baseline needs s and d to be multiples of %lld\n", static_cast<long long>(sk::kNr));
    return 2;
  }
  dg::Handle handle(dg::Device::cpu());
  handle.set_num_threads(threads);
  int rc = run_case(sh, true, iterations, handle);
  rc |= run_case(sh, false, iterations, handle);
  return rc;
}
