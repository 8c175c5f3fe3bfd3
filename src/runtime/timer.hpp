// Device timers: the time of the work submitted to a handle between start() and stop(). CUDA
// handles time with events on the handle's stream (device time, not host clocks around stream
// synchronizations); the CPU, and CUDA when events cannot be made, read a steady clock.
#pragma once
#include <memory>

#include "dnngraph/status.hpp"
#include "runtime/handle_impl.hpp"

namespace dnngraph {

class Timer {
 public:
  virtual ~Timer() = default;
  virtual Status start() = 0;
  virtual Status stop(double& seconds) = 0;
};

// The best timer the handle's device offers.
std::unique_ptr<Timer> make_timer(HandleImpl& handle);

}  // namespace dnngraph
