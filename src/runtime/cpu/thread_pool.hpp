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
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain = 1);

 private:
  void worker_loop(int index);
  // Claims and runs chunks of the current job until none is left (the caller and the workers).
  void run_chunks();
  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one parallel_for at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t n_ = 0, chunk_ = 0;
  int64_t next_ = 0;
  std::atomic<int64_t> unfinished_{0};   // chunks not yet run to their end; written under mutex_, read while spinning
  std::atomic<uint64_t> generation_{0};  // written under mutex_; read while spinning
  bool stop_ = false;
};

// The CPU the calling thread runs on now (Linux), or -1 where the OS does not say: a hint for
// cache locality only (the thread may move at any time).
int current_cpu();

}  // namespace dnngraph
