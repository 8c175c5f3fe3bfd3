#include "planning/heuristics.hpp"

#include <algorithm>

#include "core/log.hpp"
#include "planning/calibration.hpp"
#include "planning/shipped_kernels.hpp"

namespace dnngraph {
namespace {

constexpr int kRefEngineId = 0;

bool wants(const std::vector<HeurMode>& modes, HeurMode m) { return std::find(modes.begin(), modes.end(), m) != modes.end(); }

// By calibrated cost, ref last; equal costs keep the engines' own order (cuDNN's configs all share
// one estimate, so they stay in cuDNN's heuristic order).
std::vector<Candidate> by_cost(std::vector<Candidate> c) {
  std::stable_sort(c.begin(), c.end(), [](const Candidate& x, const Candidate& y) {
    if ((x.engine_id == kRefEngineId) != (y.engine_id == kRefEngineId)) return y.engine_id == kRefEngineId;
    return x.ranked_s() < y.ranked_s();
  });
  return c;
}

std::vector<Candidate> mode_fallback(std::vector<Candidate> c) {
  std::stable_partition(c.begin(), c.end(), [](const Candidate& x) { return x.engine_id != kRefEngineId; });
  return c;
}

// The tuning DB's recorded winner for this partition and device moved first. A record naming an
// unknown engine, knobs its engine's schema rejects, or a setting that is no longer a candidate is
// ignored (and logged).
std::vector<Candidate> recorded_first(std::vector<Candidate> c, const Partition& p, const RecordedWinners& recorded) {
  const auto found = recorded.find(partition_nodes_key(p));
  if (found == recorded.end()) return c;
  const TuningRecord* rec = &found->second;
  const int engine = engine_id_by_name(rec->engine);
  if (engine < 0) {
    DG_LOG(INFO) << "tuning DB: the record names engine '" << rec->engine << "', which this library does not have";
    return c;
  }
  if (auto s = engine_by_id(engine)->check_knobs(rec->knobs); !s.ok()) {
    DG_LOG(INFO) << "tuning DB: the record's knobs are not the engine's: " << s.message();
    return c;
  }
  auto it = std::find_if(c.begin(), c.end(), [&](const Candidate& x) { return x.engine_id == engine && x.knobs == rec->knobs; });
  if (it == c.end()) {
    DG_LOG(INFO) << "tuning DB: the recorded " << rec->engine << " [" << knobs_to_string(rec->knobs)
                 << "] is no longer a candidate of partition " << p.pattern;
    return c;
  }
  std::rotate(c.begin(), it, it + 1);
  c.front().measured_s = rec->seconds;
  c.front().from_tuning_db = true;
  return c;
}

}  // namespace

void prefer_ready_within_tie(std::vector<Candidate>& ranked, const std::function<bool(const Candidate&)>& compiles) {
  if (ranked.size() < 2 || ranked.front().engine_id == kRefEngineId) return;
  const int head_engine = ranked.front().engine_id;
  const double head_s = ranked.front().ranked_s();
  const double band = std::max(head_s * kFirstBuildTie, head_s + kFirstBuildTieSeconds);
  size_t end = 1;  // one past the candidates inside the band (ref ranks last and never takes the head's place)
  while (end < ranked.size() && ranked[end].engine_id != kRefEngineId && ranked[end].ranked_s() <= band) ++end;
  auto challenger = [&](const Candidate& c) { return !(c.engine_id == head_engine && c.ranked_s() == head_s); };
  // Probing runs code generation: only where a challenger exists, and the head compiles.
  if (std::none_of(ranked.begin() + 1, ranked.begin() + static_cast<std::ptrdiff_t>(end), challenger) ||
      !compiles(ranked.front()))
    return;
  for (size_t i = 1; i < end; ++i) {
    if (!challenger(ranked[i]) || compiles(ranked[i])) continue;
    std::rotate(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(i), ranked.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    ranked.front().ready_first = true;
    return;
  }
}

bool build_compiles(const Candidate& c, const Partition& p, const Target& target) {
  const Engine* e = engine_by_id(c.engine_id);
  if (!e) return false;
  // (A build that fails before asking for a kernel is not known to be ready: counted as compiling.)
  if (e->compiles_kernels())
    return !first_kernel_present(*e, p, shipped_kernel_target(*e, p, target, c.knobs), c.knobs, false);
  const auto notes = e->behavior_notes(p, target, c.knobs);
  return std::find(notes.begin(), notes.end(), BehaviorNote::RUNTIME_COMPILATION) != notes.end();
}

void calibrate_candidates(std::vector<Candidate>& candidates, const Partition& p, const DeviceInfo& info,
                          const std::vector<CalibrationEntry>& table) {
  const WorkloadClass cls = classify(p, info);
  const std::string device = calibration_device(info);
  for (Candidate& c : candidates) {
    const Engine* e = engine_by_id(c.engine_id);
    c.calibration = e ? calibration_for(table, device, e->name(), cls).factor : 1.0;
  }
}

RecordedWinners recorded_winners(const ir::Graph& g, const Target& target, const std::vector<HeurMode>& modes) {
  RecordedWinners out;
  if (!wants(modes, HeurMode::A) && !wants(modes, HeurMode::B)) return out;
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

void order_candidates(PartitionPlans& pp, const Target& target, const RecordedWinners& recorded,
                      const std::vector<HeurMode>& modes, const std::vector<CalibrationEntry>& table) {
  calibrate_candidates(pp.candidates, pp.partition, target.info(), table);
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
      case HeurMode::A:
      case HeurMode::B: {
        std::vector<Candidate> ranked = by_cost(all);
        prefer_ready_within_tie(ranked, [&](const Candidate& c) { return build_compiles(c, pp.partition, target); });
        append(recorded_first(std::move(ranked), pp.partition, recorded));
        break;
      }
      case HeurMode::FALLBACK: append(mode_fallback(all)); break;
    }
  }
  pp.candidates = std::move(ordered);
}

}  // namespace dnngraph
