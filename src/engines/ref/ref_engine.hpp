// The reference engine: every op, plain loops, double accumulation. It is the oracle every other
// engine is tested against, and the engine of last resort.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::ref {
const Engine& engine();
}
