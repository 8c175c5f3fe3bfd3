// Shape-generic kernels shipped with the library. The own CUDA engines generate a kernel per
// shape unless the graph has dynamic shapes, in which case sizes and strides are kernel arguments
// and one kernel serves every shape. The library's ahead-of-time kernels (tools/aot) include the
// dynamic-shape kernels of every candidate of the example graphs, so a plan whose own kernel is not
// shipped but whose dynamic-shape form is gets built as for dynamic shapes: it loads that kernel
// instead of running NVRTC. The choice reads only the library's AOT table, so a plan serialized by
// one build of the library reloads the same way in another process.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph {

// Whether building engine e's candidate k of partition p on t would take its first kernel without
// compiling (from memory, the cache folder or the AOT table; `shipped_only`: the AOT table), asked by
// code generation under a KernelPresenceProbe, which ends the build there. A build that fails before
// asking for a kernel answers false. Not on a thread that already holds a probe.
bool first_kernel_present(const Engine& e, const Partition& p, const Target& t, const Knobs& k, bool shipped_only);

// The target to build (or reload) engine e's candidate k of partition p with: t, or t as for
// dynamic shapes where only that form's kernel is shipped.
Target shipped_kernel_target(const Engine& e, const Partition& p, const Target& t, const Knobs& k);

}  // namespace dnngraph
