#include "planning/heuristics.hpp"

#include <algorithm>

#include "core/log.hpp"

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

// Mode A's order with the tuning DB's recorded winner for this partition and device moved first.
// A record naming an unknown engine, knobs its engine's schema rejects, or a setting that is no
// longer a candidate is ignored.
std::vector<Candidate> mode_b(std::vector<Candidate> c, const Partition& p, const RecordedWinners& recorded) {
  c = mode_a(std::move(c));
  const auto found = recorded.find(partition_nodes_key(p));
  if (found == recorded.end()) return c;
  const TuningRecord* rec = &found->second;
  const int engine = engine_id_by_name(rec->engine);
  if (engine < 0) {
    DG_LOG(INFO) << "mode B: the record names engine '" << rec->engine << "', which this library does not have";
    return c;
  }
  if (auto s = engine_by_id(engine)->check_knobs(rec->knobs); !s.ok()) {
    DG_LOG(INFO) << "mode B: the record's knobs are not the engine's: " << s.message();
    return c;
  }
  auto it = std::find_if(c.begin(), c.end(), [&](const Candidate& x) { return x.engine_id == engine && x.knobs == rec->knobs; });
  if (it == c.end()) {
    DG_LOG(INFO) << "mode B: the recorded " << rec->engine << " [" << knobs_to_string(rec->knobs)
                 << "] is no longer a candidate of partition " << p.pattern;
    return c;
  }
  std::rotate(c.begin(), it, it + 1);
  c.front().measured_s = rec->seconds;
  return c;
}

}  // namespace

RecordedWinners recorded_winners(const ir::Graph& g, const Target& target, const std::vector<HeurMode>& modes) {
  RecordedWinners out;
  if (std::find(modes.begin(), modes.end(), HeurMode::B) == modes.end()) return out;
  std::vector<TuningRecord> records;
  std::vector<std::string> warnings;
  if (!TuningDb(TuningDb::default_path()).load(records, warnings).ok()) return out;
  const uint64_t fingerprint = g.fingerprint(g.dynamic_shapes);
  const std::string& device = target.info().signature;
  // The first record in the DB's order wins, as TuningDb::find would pick it.
  for (auto& r : records)
    if (r.fingerprint == fingerprint && r.device == device) out.emplace(r.nodes, std::move(r));
  return out;
}

void order_candidates(PartitionPlans& pp, const RecordedWinners& recorded, const std::vector<HeurMode>& modes) {
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
      case HeurMode::B: append(mode_b(all, pp.partition, recorded)); break;
      case HeurMode::FALLBACK: append(mode_fallback(all)); break;
    }
  }
  pp.candidates = std::move(ordered);
}

}  // namespace dnngraph
