// Which launch order pays for a wgmma conv or GEMM kernel (runtime/cuda/driver_ext.hpp's
// LaunchOrder): programmatic dependent launches hide the next launch's set-up under this one's
// end, which matters where a CTA's whole share of the work is short.
#pragma once
#include <algorithm>
#include <cstdint>

#include "runtime/cuda/driver_ext.hpp"

namespace dnngraph::cuda {

// A/B on an H100 (2026-12-06, docs/perf.md): programmatic launches took 7-11% off convs whose CTAs
// each ran 9 k steps (RN50 3x3 C64 32² at N1 and N8), moved 1x1, GEMM and tutorial-sized layers by
// under 1.5%, and slowed single-wave layers whose CTAs ran 36 k steps by 4-16% (C256 14², C512 7²
// split-K): so only where a CTA's share is at most this many k steps.
inline constexpr int64_t kProgrammaticMaxSteps = 16;

// `units` (tile, k range) units of `ksteps` k steps each over a persistent grid of `grid` CTAs.
inline LaunchOrder launch_order_for(int64_t units, int64_t grid, int64_t ksteps) {
  const int64_t per_cta = (units + std::max<int64_t>(grid, 1) - 1) / std::max<int64_t>(grid, 1) * ksteps;
  return per_cta <= kProgrammaticMaxSteps ? LaunchOrder::PROGRAMMATIC : LaunchOrder::STREAM;
}

// The persistent grid for `units` units in groups of `cluster` CTAs: at most one CTA per SM and at
// most `max_clusters` clusters (max_active_clusters; 0: unknown, SMs / cluster), so that every
// cluster is resident from the start and none runs as a second wave.
inline int64_t persistent_grid(int64_t units, int64_t cluster, int64_t sms, int64_t max_clusters) {
  const int64_t cl = std::max<int64_t>(cluster, 1);
  int64_t slots = std::max<int64_t>(sms / cl, 1);
  if (max_clusters > 0) slots = std::min(slots, max_clusters);
  return std::min((units + cl - 1) / cl, slots) * cl;
}

}  // namespace dnngraph::cuda
