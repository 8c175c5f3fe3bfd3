#include "planning/shipped_kernels.hpp"

#include <memory>

#include "planning/aot_kernels.hpp"
#include "planning/kernel_cache.hpp"

namespace dnngraph {
namespace {

// Whether building k on t would take its first kernel from the AOT table (code generation only:
// the probe ends the build at its first kernel and compiles nothing).
bool first_kernel_shipped(const Engine& e, const Partition& p, const Target& t, const Knobs& k) {
  KernelPresenceProbe probe(true);
  std::unique_ptr<Plan> plan;
  (void)e.build(p, t, k, plan);
  return probe.asked() && probe.present();
}

}  // namespace

Target shipped_kernel_target(const Engine& e, const Partition& p, const Target& t, const Knobs& k) {
  if (t.dynamic_shapes || !e.builds_concurrently() || !aot_kernels_available() || !t.handle) return t;
  if (first_kernel_shipped(e, p, t, k)) return t;
  Target generic = t;
  generic.dynamic_shapes = true;
  return first_kernel_shipped(e, p, generic, k) ? generic : t;
}

}  // namespace dnngraph
