// ThreadPool: a fixed set of workers running parallel_for over index ranges.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dnngraph {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads <= 0: hardware concurrency
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls fn(begin, end) over chunks of [0, n), on the workers and the calling thread; returns when
  // all are done. Calls from several threads at once are serialized. Nested calls run inline.
  // Each thread first runs the chunks of its home share of [0, n) (home: the CPU it runs on, modulo
  // size()), then takes the others' last ones: consecutive calls over the same rows (a network's
  // layers) tend to find them in the same core's cache.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain = 1);

 private:
  void worker_loop(int index);
  // Claims and runs chunks of the current job until none is left (the caller and the workers).
  void run_chunks();
  // Under mutex_: the next chunk for a thread whose home share is `home`, or -1 when none is left.
  int64_t claim_chunk(int home);
  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one parallel_for at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t n_ = 0, chunk_ = 0;
  // Per home share (one per thread of the pool): its next and one-past-last unclaimed chunk.
  std::vector<int64_t> home_next_, home_end_;
  std::atomic<int64_t> unfinished_{0};   // chunks not yet run to their end; written under mutex_, read while spinning
  std::atomic<uint64_t> generation_{0};  // written under mutex_; read while spinning
  bool stop_ = false;
};

// The CPU the calling thread runs on now (Linux), or -1 where the OS does not say: a hint for
// cache locality only (the thread may move at any time).
int current_cpu();

}  // namespace dnngraph
