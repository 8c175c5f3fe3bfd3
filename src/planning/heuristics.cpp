#include "planning/heuristics.hpp"

#include <algorithm>

namespace dnngraph {
namespace {

constexpr int kRefEngineId = 0;

std::vector<Candidate> mode_a(std::vector<Candidate> c) {
  std::stable_sort(c.begin(), c.end(), [](const Candidate& x, const Candidate& y) {
    if ((x.engine_id == kRefEngineId) != (y.engine_id == kRefEngineId)) return y.engine_id == kRefEngineId;
    return x.estimate_s < y.estimate_s;
  });
  return c;
}

std::vector<Candidate> mode_fallback(std::vector<Candidate> c) {
  std::stable_partition(c.begin(), c.end(), [](const Candidate& x) { return x.engine_id != kRefEngineId; });
  return c;
}

}  // namespace

void order_candidates(PartitionPlans& pp, const ir::Graph&, const Target&, const std::vector<HeurMode>& modes) {
  std::vector<Candidate> all = pp.candidates, ordered;
  auto append = [&](const std::vector<Candidate>& list) {
    for (const auto& c : list) {
      const bool dup = std::any_of(ordered.begin(), ordered.end(),
                                   [&](const Candidate& o) { return o.engine_id == c.engine_id && o.knobs == c.knobs; });
      if (!dup) ordered.push_back(c);
    }
  };
  for (HeurMode m : modes) {
    switch (m) {
      case HeurMode::A: append(mode_a(all)); break;
      case HeurMode::B: append(mode_a(all)); break;  // the tuning DB's record is put first by planning/tuning_db
      case HeurMode::FALLBACK: append(mode_fallback(all)); break;
    }
  }
  pp.candidates = std::move(ordered);
}

}  // namespace dnngraph
