#include "engines/cuda/event_timer.hpp"

#include "core/log.hpp"
#include "runtime/cuda/context.hpp"

namespace dnngraph::cuda {
namespace {

class CudaEventTimer final : public Timer {
 public:
  explicit CudaEventTimer(std::unique_ptr<EventTimer> events) : events_(std::move(events)) {}
  Status start() override { return events_->start(); }
  Status stop(double& seconds) override {
    if (auto s = events_->stop(); !s.ok()) return s;
    return events_->seconds(seconds);
  }

 private:
  std::unique_ptr<EventTimer> events_;
};

}  // namespace

std::unique_ptr<Timer> make_event_timer(HandleImpl& h) {
  std::unique_ptr<EventTimer> events;
  if (auto s = EventTimer::create(h, events); !s.ok()) {
    DG_LOG(INFO) << "autotune: no CUDA event timer (" << s.to_string() << "); timing with the host clock";
    return nullptr;
  }
  return std::make_unique<CudaEventTimer>(std::move(events));
}

}  // namespace dnngraph::cuda
