// cpu_pool_direct: resample on the CPU: max and average pooling (padding included or excluded),
// nearest and (multi)linear resizing, over any layout (NHWC and NCHW at full speed), on every core.
// Direct: each output folds its own window elements (or interpolation corners) from X, a row of
// outputs at a time; no intermediate pass over memory.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cpu {
const Engine& pool_direct_engine();
}
