// Limits that keep plan build time linear in the graph.
#pragma once
#include <cstddef>

namespace dnngraph {

// The most nodes a pointwise/reduction partition (no anchor) has on a CUDA target: longer ones are
// split into runs of this many, in topological order, before engines are surveyed. NVRTC's time
// grows superlinearly with one kernel's length (measured here, sm_90a, one chain kernel: 128 ops
// 0.6 s, 250 ops 2.3 s, 500 ops 7.6 s, 1000 ops 44 s; docs/perf.md "Plan build time"), while each
// cut costs one intermediate written and read back. cuda_pointwise_jit rejects longer partitions.
constexpr size_t kMaxPointwiseNodesOnGpu = 128;

}  // namespace dnngraph
