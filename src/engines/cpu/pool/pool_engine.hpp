// cpu_pool: resample on the CPU: max and average pooling (padding included or excluded), nearest
// and (multi)linear resizing, over any layout (NHWC and NCHW at full speed), on every core.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cpu {
const Engine& pool_engine();
}
