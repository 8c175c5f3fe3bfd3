// ThreadPool::parallel_for: every index runs exactly once per call, over many back-to-back calls
// (where a worker may still be waking for an earlier call when the next one starts), with grains,
// with more threads (home shares) than CPUs, nested calls run inline, and a pool of one thread.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "runtime/cpu/thread_pool.hpp"

namespace {

TEST(ThreadPool, EveryIndexOnceOverManyCalls) {
  for (int threads : {3, 9}) {  // home shares that no thread runs on are taken by the others
    dnngraph::ThreadPool pool(threads);
    for (int64_t n = 1; n <= 200; ++n) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
      }, n % 7 + 1);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << threads << " threads, n " << n << " index " << i;
    }
  }
}

TEST(ThreadPool, NestedCallsRunInline) {
  dnngraph::ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      pool.parallel_for(10, [&](int64_t b2, int64_t e2) { sum.fetch_add((e2 - b2) * i); });
  });
  EXPECT_EQ(sum.load(), 10 * (15 * 16 / 2));
}

TEST(ThreadPool, OneThreadRunsOnTheCaller) {
  dnngraph::ThreadPool pool(1);
  EXPECT_EQ(pool.size(), 1);
  int64_t covered = 0;
  pool.parallel_for(100, [&](int64_t b, int64_t e) { covered += e - b; });
  EXPECT_EQ(covered, 100);
}

}  // namespace
