// The autotuner's timer on CUDA handles: CUDA events recorded on the handle's stream, so candidates
// are timed by device time, not by host clocks around stream synchronizations.
#pragma once
#include <memory>

#include "planning/autotune.hpp"

namespace dnngraph::cuda {

// Null when the events cannot be created (the caller then keeps its host-clock timer).
std::unique_ptr<Timer> make_event_timer(HandleImpl& h);

}  // namespace dnngraph::cuda
