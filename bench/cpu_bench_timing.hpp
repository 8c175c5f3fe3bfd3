// Timing for the CPU benchmarks: median wall time and median process CPU time (all threads) per
// call. On a shared machine the CPU time shows the work done while scheduled, when other
// processes inflate the wall time.
#pragma once
#include <algorithm>
#include <chrono>
#include <ctime>
#include <vector>

namespace cpu_bench {

struct Timing {
  double wall = 0, cpu = 0;
};

inline double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One untimed call (warm-up), then the medians of `iterations` timed calls.
template <class Fn>
Timing median_time(int iterations, Fn&& fn) {
  fn();
  std::vector<double> wall, cpu;
  for (int i = 0; i < iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const double c0 = process_cpu_seconds();
    fn();
    cpu.push_back(process_cpu_seconds() - c0);
    wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return {median(wall), median(cpu)};
}

}  // namespace cpu_bench
