// run_concurrently: the helper build_plans compiles candidates on. Every task runs once, results
// land in their own slots whatever thread ran them, and a throwing task neither stops the others
// nor escapes on a worker thread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "planning/parallel_build.hpp"

namespace dg = dnngraph;

TEST(ParallelBuild, EveryTaskRunsOnceIntoItsSlot) {
  for (unsigned threads : {1u, 2u, 7u, 64u}) {
    std::vector<int> runs(100, 0);
    std::vector<size_t> out(100, 0);
    dg::run_concurrently(runs.size(), [&](size_t i) {
      ++runs[i];
      out[i] = i * i;
    }, threads);
    for (size_t i = 0; i < runs.size(); ++i) {
      EXPECT_EQ(runs[i], 1) << "task " << i << " with " << threads << " threads";
      EXPECT_EQ(out[i], i * i);
    }
  }
}

TEST(ParallelBuild, TasksRunAtOnceOnSeveralThreads) {
  // Each task waits until two are inside at once: with one thread this would never finish, so
  // the tasks time out instead of hanging (and the test fails) if the helper ran them in turn.
  std::atomic<int> inside{0}, peak{0};
  std::mutex m;
  std::set<std::thread::id> ids;
  dg::run_concurrently(4, [&](size_t) {
    {
      std::lock_guard<std::mutex> lock(m);
      ids.insert(std::this_thread::get_id());
    }
    const int now = ++inside;
    int seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {}
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (peak.load() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    --inside;
  }, 4);
  EXPECT_GE(peak.load(), 2);
  EXPECT_GE(ids.size(), 2u);
}

TEST(ParallelBuild, OneThreadRunsInOrderOnTheCaller) {
  std::vector<size_t> order;
  const auto caller = std::this_thread::get_id();
  dg::run_concurrently(5, [&](size_t i) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    order.push_back(i);
  }, 1);
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4}));
  dg::run_concurrently(0, [&](size_t) { ADD_FAILURE() << "no task to run"; }, 8);
}

TEST(ParallelBuild, TheLowestThrowingTaskIsRethrownAfterAllRan) {
  std::atomic<int> ran{0};
  try {
    dg::run_concurrently(20, [&](size_t i) {
      ++ran;
      if (i == 3 || i == 11) throw std::runtime_error("task " + std::to_string(i));
    }, 4);
    FAIL() << "nothing was rethrown";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "task 3");
  }
  EXPECT_EQ(ran.load(), 20);
}

TEST(ParallelBuild, ThreadsComeFromTheEnvironmentOrTheMachine) {
  const char* saved = std::getenv("DNNGRAPH_BUILD_THREADS");
  const std::string keep = saved ? saved : "";
  setenv("DNNGRAPH_BUILD_THREADS", "3", 1);
  EXPECT_EQ(dg::build_threads(), 3u);
  setenv("DNNGRAPH_BUILD_THREADS", "0", 1);  // not a positive number: the machine's
  EXPECT_EQ(dg::build_threads(), std::max(1u, std::thread::hardware_concurrency()));
  if (saved) setenv("DNNGRAPH_BUILD_THREADS", keep.c_str(), 1);
  else unsetenv("DNNGRAPH_BUILD_THREADS");
}
