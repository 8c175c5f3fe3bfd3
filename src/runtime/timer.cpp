#include "runtime/timer.hpp"

#include <chrono>

#include "core/log.hpp"
#include "runtime/cuda/context.hpp"

namespace dnngraph {
namespace {

class SteadyClockTimer final : public Timer {
 public:
  explicit SteadyClockTimer(HandleImpl& h) : handle_(h) {}
  Status start() override {
    if (auto s = drain(); !s.ok()) return s;
    start_ = std::chrono::steady_clock::now();
    return {};
  }
  Status stop(double& seconds) override {
    if (auto s = drain(); !s.ok()) return s;
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    return {};
  }

 private:
  // On CUDA the clock only means something once the stream has finished the work.
  Status drain() { return handle_.device.is_cuda() ? cuda::synchronize(handle_) : Status{}; }
  HandleImpl& handle_;
  std::chrono::steady_clock::time_point start_;
};

class CudaEventTimer final : public Timer {
 public:
  explicit CudaEventTimer(std::unique_ptr<cuda::EventTimer> events) : events_(std::move(events)) {}
  Status start() override { return events_->start(); }
  Status stop(double& seconds) override {
    if (auto s = events_->stop(); !s.ok()) return s;
    return events_->seconds(seconds);
  }

 private:
  std::unique_ptr<cuda::EventTimer> events_;
};

}  // namespace

std::unique_ptr<Timer> make_timer(HandleImpl& handle) {
  if (handle.device.is_cuda()) {
    std::unique_ptr<cuda::EventTimer> events;
    if (auto s = cuda::EventTimer::create(handle, events); s.ok())
      return std::make_unique<CudaEventTimer>(std::move(events));
    else
      DG_LOG(INFO) << "timer: no CUDA event timer (" << s.to_string() << "); timing with the host clock";
  }
  return std::make_unique<SteadyClockTimer>(handle);
}

}  // namespace dnngraph
