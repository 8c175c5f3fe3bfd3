#include "planning/aot_plan.hpp"

#include <set>

#include "planning/plan_build.hpp"

namespace dnngraph {

namespace {

// Builds the own-engine candidates of g's partitions: each engine's first (`all` false) or all.
Status build_own_candidates(const GraphImpl& g, const Target& target, bool all, std::vector<std::string>& labels,
                            int& failed) {
  std::shared_ptr<PlanSet> ps;
  if (auto s = plan_partitions(g, target, {HeurMode::A}, ps); !s.ok()) return s;
  std::vector<CandidateRef> which;
  for (size_t p = 0; p < ps->parts.size(); ++p) {
    std::set<int> seen;
    const auto& cands = ps->parts[p].candidates;
    for (size_t i = 0; i < cands.size(); ++i)
      if (engine_by_id(cands[i].engine_id)->compiles_kernels() && (seen.insert(cands[i].engine_id).second || all)) {
        which.push_back({p, i});
        labels.push_back(ps->parts[p].partition.pattern + ": " + cands[i].label());
      }
  }
  std::vector<Status> status;
  build_candidates(*ps, target, which, status);
  failed = 0;
  for (const Status& s : status) failed += s.ok() ? 0 : 1;
  return {};
}

}  // namespace

Status build_first_own_candidates(const GraphImpl& g, const Target& target, std::vector<std::string>& labels,
                                  int& failed) {
  return build_own_candidates(g, target, false, labels, failed);
}

Status build_all_own_candidates(const GraphImpl& g, const Target& target, std::vector<std::string>& labels,
                                int& failed) {
  return build_own_candidates(g, target, true, labels, failed);
}

}  // namespace dnngraph
