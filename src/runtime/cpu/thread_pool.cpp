#include "runtime/cpu/thread_pool.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace dnngraph {
namespace {
thread_local bool t_inside_pool = false;

// Spins up to ~2 ms for `ready` before the caller blocks: waking a blocked thread can cost more
// than a whole short job on a VM (on the 2-vCPU dev machine a 1 ms conv lost its second thread,
// and oneDNN's with OMP_WAIT_POLICY=PASSIVE ran 2.5x slower), and jobs often come back to back.
// 200 us was too short: a worker idle through the last task of a 2 ms conv (up to 0.3 ms) fell
// asleep, woke late for the next call, and the caller ran it alone (3x3 C256 14x14: 4.3 vs 2.4 ms).
// The spin yields its core every ~64 pauses: when more threads are runnable than there are cores
// (a loaded machine, a process pinned to fewer cores), the thread it waits for may need this very
// core, and a plain spin would hold it for the scheduler's whole time slice (4 ms here).
template <class Ready>
void spin_briefly(Ready ready) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(2000);
  for (int i = 1; !ready(); ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (i % 64 == 0) {
      if (std::chrono::steady_clock::now() > until) return;
      std::this_thread::yield();
    }
  }
}
}  // namespace

ThreadPool::ThreadPool(int threads) {
  int n = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  home_next_.assign(static_cast<size_t>(n), 0);
  home_end_.assign(static_cast<size_t>(n), 0);
  for (int i = 0; i + 1 < n; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain) {
  if (n <= 0) return;
  const int64_t chunks_wanted = static_cast<int64_t>(size()) * 4;
  const int64_t chunk = std::max<int64_t>(std::max<int64_t>(grain, 1), (n + chunks_wanted - 1) / chunks_wanted);
  if (t_inside_pool || workers_.empty() || n <= chunk) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    n_ = n;
    chunk_ = chunk;
    const int64_t chunks = (n + chunk - 1) / chunk, homes = size();
    for (int64_t h = 0; h < homes; ++h) {
      home_next_[static_cast<size_t>(h)] = h * chunks / homes;
      home_end_[static_cast<size_t>(h)] = (h + 1) * chunks / homes;
    }
    unfinished_ = chunks;
    ++generation_;
  }
  wake_.notify_all();
  t_inside_pool = true;
  run_chunks();
  t_inside_pool = false;
  // Done when every chunk has run, whoever ran it: a worker that the scheduler has not run yet
  // (a loaded machine) is not waited for; it finds no chunk left when it wakes. Waiting for every
  // worker to check in cost a scheduler slice per parallel_for whenever one was descheduled
  // (MobileNetV2's 53 partitions: ~88 ms a run instead of ~12 under load 4).
  spin_briefly([this] { return unfinished_.load(std::memory_order_acquire) == 0; });
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return unfinished_ == 0; });
  job_ = nullptr;  // under the lock: no worker can claim a chunk of it any more
}

int64_t ThreadPool::claim_chunk(int home) {
  const int homes = size();
  if (home_next_[static_cast<size_t>(home)] < home_end_[static_cast<size_t>(home)])
    return home_next_[static_cast<size_t>(home)]++;
  for (int k = 1; k < homes; ++k) {  // another share's last chunk: its owner keeps its first ones
    const size_t h = static_cast<size_t>((home + k) % homes);
    if (home_next_[h] < home_end_[h]) return --home_end_[h];
  }
  return -1;
}

void ThreadPool::run_chunks() {
  const int cpu = current_cpu();
  const int home = cpu >= 0 ? cpu % size() : 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t begin, end;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!job_) return;
      const int64_t c = claim_chunk(home);
      if (c < 0) return;
      job = job_;
      begin = c * chunk_;
      end = std::min(n_, begin + chunk_);
    }
    (*job)(begin, end);
    std::lock_guard<std::mutex> lock(mutex_);
    if (--unfinished_ == 0) done_.notify_all();
  }
}

void ThreadPool::worker_loop(int) {
  t_inside_pool = true;
  uint64_t seen = 0;
  for (;;) {
    spin_briefly([&] { return generation_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_chunks();
  }
}

int current_cpu() {
#if defined(__linux__)
  return sched_getcpu();
#else
  return -1;
#endif
}

}  // namespace dnngraph
