// Limits that keep plan build time linear in the graph.
#pragma once
#include <cstddef>

namespace dnngraph {

// The most nodes a pointwise/reduction partition (no anchor) has on a CUDA target: longer ones are
// split into runs of this many, in topological order, before engines are surveyed. NVRTC's time
// grows superlinearly with one kernel's length (sm_90a, one chain kernel, one loop per op: 128
// ops 0.9 s, 400 ops 5.1 s, 1000 ops 33 s; with the ops in one loop over the lanes, as the emitter
// now writes them: 0.45 s, 1.3 s, 4.8 s; docs/perf.md "Plan build time"), while each cut costs
// one intermediate written and read back. cuda_pointwise_jit rejects longer partitions.
constexpr size_t kMaxPointwiseNodesOnGpu = 128;

}  // namespace dnngraph
