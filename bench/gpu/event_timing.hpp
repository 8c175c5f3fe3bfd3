// The GPU time of one call, by CUDA events: a timed call sizes a repeat of calls to a target
// duration, and the median over several repeats is the time per call. The caller warms up first.
#pragma once
#include <algorithm>
#include <memory>
#include <vector>

#include "bench_util.hpp"
#include "runtime/cuda/context.hpp"

namespace gpu_bench {

struct RepeatPlan {
  double target_s;  // the duration of one repeat
  int max_calls;    // calls per repeat at the most (3 at the least)
  int repeats;
};

// Seconds per call of `call` (the median over plan.repeats repeats) into `out`; false, with the
// error printed, when the events fail.
template <class Call>
bool seconds_per_call(dg::HandleImpl& h, Call&& call, const RepeatPlan& plan, double& out) {
  std::unique_ptr<dg::cuda::EventTimer> timer;
  if (!check(dg::cuda::EventTimer::create(h, timer), "timer")) return false;
  double secs = 0;
  (void)timer->start();
  (void)call();
  (void)timer->stop();
  (void)timer->seconds(secs);
  const int calls = std::max(3, std::min(plan.max_calls, static_cast<int>(plan.target_s / std::max(secs, 1e-6))));
  std::vector<double> times;
  for (int rep = 0; rep < plan.repeats; ++rep) {
    (void)timer->start();
    for (int i = 0; i < calls; ++i) (void)call();
    (void)timer->stop();
    if (!check(timer->seconds(secs), "timing")) return false;
    times.push_back(secs / calls);
  }
  std::sort(times.begin(), times.end());
  out = times[times.size() / 2];
  return true;
}

}  // namespace gpu_bench
