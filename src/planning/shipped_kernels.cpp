#include "planning/shipped_kernels.hpp"

#include <memory>

#include "planning/aot_kernels.hpp"
#include "planning/kernel_cache.hpp"

namespace dnngraph {

bool first_kernel_present(const Engine& e, const Partition& p, const Target& t, const Knobs& k, bool shipped_only) {
  KernelPresenceProbe probe(shipped_only);
  std::unique_ptr<Plan> plan;
  (void)e.build(p, t, k, plan);  // ends at its first kernel: the probe compiles nothing
  return probe.asked() && probe.present();
}

Target shipped_kernel_target(const Engine& e, const Partition& p, const Target& t, const Knobs& k) {
  if (t.dynamic_shapes || !e.compiles_kernels() || !aot_kernels_available() || !t.handle) return t;
  if (first_kernel_present(e, p, t, k, true)) return t;
  Target generic = t;
  generic.dynamic_shapes = true;
  return first_kernel_present(e, p, generic, k, true) ? generic : t;
}

}  // namespace dnngraph
