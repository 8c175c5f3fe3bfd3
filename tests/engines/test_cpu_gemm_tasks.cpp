// The blocked GEMM driver's task shapes (who computes which block of C, how often A is gathered or
// packed, how the threads share rows and panels), against a naive product, on plain problems.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "engines/cpu/cpu_features.hpp"
#include "cpu_gemm_test_util.hpp"
#include "runtime/cpu/thread_pool.hpp"

namespace {

namespace dg = dnngraph;
namespace cg = dnngraph::cpu::gemm;
using cpu_gemm_test::matches_naive;
using cpu_gemm_test::PlainProblem;

// Every task runs whatever the pool: threads claim their home share of the rows first (by the CPU
// they run on), then the rest; pools of more threads than CPUs have homes no thread is on.
TEST(CpuGemmKernels, DriverRunsEveryTaskWhateverThePool) {
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> u(-1, 1);
  const cg::KernelSet& ks = cg::kernel_set(dg::cpu::cpu_features().best());
  const int64_t m = 203, n = 5 * ks.nr + 3, k = 37;
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
  for (auto& v : a) v = u(rng);
  for (auto& v : b) v = u(rng);
  for (int threads : {1, 3, 5, 8}) {
    dg::ThreadPool pool(threads);
    std::vector<float> c(static_cast<size_t>(m * n), std::nanf(""));
    PlainProblem p(m, n, k);
    p.bind(a, b, c);
    ASSERT_TRUE(cg::run(p, ks, cg::Blocking{2 * ks.mr, 16, ks.nr}, pool, nullptr).ok());
    ASSERT_TRUE(matches_naive(a, b, c, m, n, k)) << threads << " threads";
  }
}

// Where a_rows gathers A per task (an AMX conv's copied tile halves) and the rows fit one block per
// thread, each thread takes one share, so B is streamed once per thread: by rows (unit shares:
// every row gathered once, but for the row tile two shares split), or by columns where B has twice
// A's rows or more (each thread gathers all of A). Without gathering, N is split into single
// panels. The products are the same either way.
TEST(CpuGemmKernels, GatheredRowsTakeOneTaskAThread) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1, 1);
  const cg::KernelSet& ks = cg::kernel_set(dg::cpu::cpu_features().best());
  struct Case {
    int64_t m, n, gathered_rows;  // rows a_rows gathers in all
  };
  const int64_t rows_m = 7 * ks.mr - 3, cols_m = 2 * ks.mr - 3;
  // 7 tiles of 3 panels on 2 threads: 10 and a half units each, so the fourth tile is split.
  for (const Case cs : {Case{rows_m, 3 * ks.nr, rows_m + ks.mr}, Case{cols_m, 8 * ks.nr, 2 * cols_m}}) {
    const int64_t k = 40;
    std::vector<float> a(static_cast<size_t>(cs.m * k)), b(static_cast<size_t>(k * cs.n));
    for (auto& v : a) v = u(rng);
    for (auto& v : b) v = u(rng);
    dg::ThreadPool pool(2);
    std::vector<float> first;
    for (bool gathered : {false, true}) {
      std::vector<float> c(static_cast<size_t>(cs.m * cs.n), std::nanf(""));
      PlainProblem p(cs.m, cs.n, k);
      p.bind(a, b, c);
      p.gathered = gathered;
      ASSERT_TRUE(cg::run(p, ks, cg::default_blocking(ks), pool, nullptr).ok());
      if (gathered) {
        EXPECT_EQ(p.rows_gathered.load(), cs.gathered_rows) << cs.m << " x " << cs.n;
        EXPECT_EQ(c, first);
      } else {
        ASSERT_TRUE(matches_naive(a, b, c, cs.m, cs.n, k));
        first = c;
      }
    }
  }
}

// Unit shares: thread h takes the h-th equal weight of the (row tile, panel) grid in row-major
// order, so 7 row tiles of 3 panels on 2 threads split at the fourth tile's third panel (10.5 units
// rounded to the nearest panel), and 6 on 3 threads at whole tiles; the blocks cover C once.
TEST(CpuGemmKernels, GatheredRowSharesSplitARowTileByPanels) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  const cg::KernelSet& ks = cg::kernel_set(dg::cpu::cpu_features().best());
  ASSERT_EQ(ks.kernel_half, nullptr) << "fp32 kernels run short tiles whole, so every tile weighs the same";
  const int64_t mr = ks.mr, nr = ks.nr, n = 3 * nr, k = 40;
  using Block = std::array<int64_t, 4>;  // m0, mc, n0, nc
  struct Case {
    int threads;
    int64_t m;
    std::vector<Block> blocks;
  };
  const int64_t m7 = 7 * mr - 3, m6 = 6 * mr - 3;
  for (const Case& cs :
       {Case{2, m7,
             {{0, 3 * mr, 0, n}, {3 * mr, mr, 0, 2 * nr}, {3 * mr, mr, 2 * nr, nr}, {4 * mr, m7 - 4 * mr, 0, n}}},
        Case{3, m6, {{0, 2 * mr, 0, n}, {2 * mr, 2 * mr, 0, n}, {4 * mr, m6 - 4 * mr, 0, n}}}}) {
    const int threads = cs.threads;
    const int64_t m = cs.m;
    const std::vector<Block>& blocks = cs.blocks;
    std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
    for (auto& v : a) v = u(rng);
    for (auto& v : b) v = u(rng);
    dg::ThreadPool pool(threads);
    std::vector<float> c(static_cast<size_t>(m * n), std::nanf(""));
    PlainProblem p(m, n, k);
    p.bind(a, b, c);
    p.gathered = true;
    p.record_blocks = true;
    ASSERT_TRUE(cg::run(p, ks, cg::default_blocking(ks), pool, nullptr).ok());
    ASSERT_TRUE(matches_naive(a, b, c, m, n, k)) << threads << " threads";
    std::vector<Block> got;
    for (const auto& blk : p.blocks) got.push_back({blk.m0, blk.mc, blk.n0, blk.nc});
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, blocks) << threads << " threads";
  }
}

// The driver's task shapes at random: sizes, blockings, thread counts and A forms (read in place,
// gathered per task, packed k-major) that reach its row ranges, column and unit shares, leftover
// panels and K blocks; every element of C written once with A x B (C starts as NaN). A task's
// rows past its scratch (a share of 196 rows on scratch sized for 128, 2026-12-07) corrupt the
// heap here: the sanitizer build reports it, a plain build usually aborts.
TEST(CpuGemmKernels, RandomTaskShapesMatchNaive) {
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> u(-1, 1);
  const cg::KernelSet& ks = cg::kernel_set(dg::cpu::cpu_features().best());
  for (int trial = 0; trial < 40; ++trial) {
    int64_t m = 1 + rng() % 700, n = 1 + rng() % 400, k = 1 + rng() % 200;
    while (m * n * k > 6'000'000) n = 1 + n / 2;
    const int threads = 1 + static_cast<int>(rng() % 5);
    cg::Blocking blk;
    blk.mc = ks.mr * (1 + static_cast<int64_t>(rng() % 10));
    blk.kc = 8 * (1 + static_cast<int64_t>(rng() % 40));
    blk.nc = ks.nr * (1 + static_cast<int64_t>(rng() % 20));
    bool gathered = rng() % 2 == 0;
    if (trial % 4 == 3) {  // column shares of gathered rows past one block: every row a thread, in two blocks
      blk.mc = ks.mr * (8 + static_cast<int64_t>(rng() % 3));
      m = blk.mc + 1 + static_cast<int64_t>(rng() % (blk.mc / 2));
      n = 2 * m + static_cast<int64_t>(rng() % 40);
      k = 1 + rng() % 64;
      gathered = true;
    }
    std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
    for (auto& v : a) v = u(rng);
    for (auto& v : b) v = u(rng);
    std::vector<float> c(static_cast<size_t>(m * n), std::nanf(""));
    PlainProblem p(m, n, k);
    p.bind(a, b, c);
    p.gathered = gathered;
    p.kmajor = rng() % 3 == 0;
    dg::ThreadPool pool(trial % 4 == 3 ? 2 : threads);
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(m) + " x " + std::to_string(n) + " x " +
                 std::to_string(k) + ", " + std::to_string(pool.size()) + " threads, kc " + std::to_string(blk.kc) +
                 " mc " + std::to_string(blk.mc) + " nc " + std::to_string(blk.nc) +
                 (p.gathered ? ", gathered" : "") + (p.kmajor ? ", k-major" : ""));
    ASSERT_TRUE(cg::run(p, ks, blk, pool, nullptr).ok());
    ASSERT_TRUE(matches_naive(a, b, c, m, n, k));
  }
}

// Few rows and panels that do not divide among the threads (11 of them, the last partial, on 2
// threads; 13 on 3): each thread computes an equal share of whole panels with all rows, and every
// leftover panel comes back as one row range per thread, split at tile boundaries.
TEST(CpuGemmKernels, LeftoverPanelsSplitByRowsAmongTheThreads) {
  std::mt19937 rng(10);
  std::uniform_real_distribution<float> u(-1, 1);
  const cg::KernelSet& ks = cg::kernel_set(dg::cpu::cpu_features().best());
  struct Case {
    int threads;
    int64_t panels;
  };
  for (const Case cs : {Case{2, 11}, Case{3, 13}}) {
    const int64_t m = 7 * ks.mr - 3, n = cs.panels * ks.nr - 5, k = 40;
    std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
    for (auto& v : a) v = u(rng);
    for (auto& v : b) v = u(rng);
    dg::ThreadPool pool(cs.threads);
    std::vector<float> c(static_cast<size_t>(m * n), std::nanf(""));
    PlainProblem p(m, n, k);
    p.bind(a, b, c);
    p.record_blocks = true;
    ASSERT_TRUE(cg::run(p, ks, cg::default_blocking(ks), pool, nullptr).ok());
    ASSERT_TRUE(matches_naive(a, b, c, m, n, k)) << cs.threads << " threads";
    const int64_t leftover = cs.panels % cs.threads, first_leftover = (cs.panels - leftover) * ks.nr;
    std::vector<std::pair<int64_t, int64_t>> rows_of_last;  // (m0, mc) of the blocks at the last panel
    for (const auto& blk : p.blocks) {
      if (blk.n0 < first_leftover) {
        EXPECT_EQ(blk.mc, m) << "a share's task has every row";
      } else {
        EXPECT_LE(blk.nc, ks.nr) << "a leftover panel is one";
        EXPECT_LT(blk.mc, m) << "a leftover panel's rows are split";
      }
      if (blk.n0 == (cs.panels - 1) * ks.nr) rows_of_last.emplace_back(blk.m0, blk.mc);
    }
    std::sort(rows_of_last.begin(), rows_of_last.end());
    ASSERT_EQ(rows_of_last.size(), static_cast<size_t>(cs.threads));
    for (int h = 0; h < cs.threads; ++h) {
      EXPECT_EQ(rows_of_last[static_cast<size_t>(h)].first, h * 7 / cs.threads * ks.mr);
      EXPECT_EQ(rows_of_last[static_cast<size_t>(h)].first % ks.mr, 0);
    }
  }
}

// A packed per task in k-major panels (a matmul's A) is packed once per task and K block, so tasks
// take whole rows where they can: with few rows (one row range) the threads' column shares are one
// task each, each thread packing all of A (an encoder's 128 x 768 x 3072 FFN packed it three times
// a thread: 10% of its time); with more rows each thread takes one row range with all columns,
// every row packed once (512 x 768 x 768: 7% faster).
TEST(CpuGemmKernels, PackedRowsOnceAThreadWhereOneRowRangeSharesColumns) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  const cg::KernelSet& ks = cg::kernel_set(dg::cpu::cpu_features().best());
  for (const int64_t tiles : {7, 20}) {
    const int64_t m = tiles * ks.mr - 3, n = 24 * ks.nr, k = 40;
    std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
    for (auto& v : a) v = u(rng);
    for (auto& v : b) v = u(rng);
    dg::ThreadPool pool(2);
    std::vector<float> c(static_cast<size_t>(m * n), std::nanf(""));
    PlainProblem p(m, n, k);
    p.bind(a, b, c);
    p.kmajor = true;
    ASSERT_TRUE(cg::run(p, ks, cg::default_blocking(ks), pool, nullptr).ok());
    ASSERT_TRUE(matches_naive(a, b, c, m, n, k)) << tiles << " tiles";
    // One K block: column shares pack all rows once a thread, row ranges each row once.
    EXPECT_EQ(p.rows_gathered.load(), tiles == 7 ? 2 * m : m) << tiles << " tiles";
  }
}

}  // namespace
