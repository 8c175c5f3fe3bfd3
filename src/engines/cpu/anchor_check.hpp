// The check every CPU engine anchored on a matmul or a convolution starts with: the partition's
// anchor, its input types, its compute type and an epilogue the CPU epilogue executor runs.
#pragma once
#include <string>
#include <string_view>

#include "engines/cpu/epilogue/epilogue.hpp"
#include "planning/engine.hpp"

namespace dnngraph::cpu {

// The partition's anchor node (or null) and its compiled epilogue; `why` says what failed.
// Checks: CPU device, anchor of the expected op, its inputs of a packable type, fp32-compatible
// compute type, and an epilogue this executor runs.
const ir::Node* check_anchor(const Partition& p, const Target& t, std::string_view op, Epilogue& epi,
                             std::string& why);

}  // namespace dnngraph::cpu
