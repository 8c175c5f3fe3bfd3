// autotune: warm-up, timed repeats, median; hopeless candidates are dropped early.
#include "planning/autotune.hpp"

#include <algorithm>
#include <numeric>

#include "core/log.hpp"
#include "core/no_throw.hpp"
#include "dnngraph/version.hpp"
#include "planning/tuning_db.hpp"
#include "runtime/timer.hpp"

namespace dnngraph {
namespace {

struct Measurement {
  double seconds = std::numeric_limits<double>::infinity();
  int runs = 0;
  bool gave_up = false;
  bool timed = false;  // false: not built, not run
  Status error;
  bool ok() const { return timed && error.ok(); }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Measurement time_plan(const Plan& plan, const ExecArgs& args, Timer& timer, const AutotuneOptions& o, double best) {
  Measurement m;
  m.timed = true;
  auto run_once = [&](double& seconds) -> Status {
    if (auto s = timer.start(); !s.ok()) return s;
    if (auto s = plan.execute(args); !s.ok()) return s;
    return timer.stop(seconds);
  };
  double seconds = 0;
  for (int i = 0; i < o.warmup; ++i)
    if (m.error = run_once(seconds); !m.error.ok()) return m;
  std::vector<double> samples;
  for (int i = 0; i < std::max(1, o.repeats); ++i) {
    if (m.error = run_once(seconds); !m.error.ok()) return m;
    samples.push_back(seconds);
    // Even its fastest run loses by the give-up ratio: more runs cannot make it the winner.
    if (*std::min_element(samples.begin(), samples.end()) > o.give_up_ratio * best) {
      m.gave_up = i + 1 < std::max(1, o.repeats);
      break;
    }
  }
  m.seconds = median(samples);
  m.runs = static_cast<int>(samples.size());
  return m;
}

// Fastest first; then candidates that failed; then the unbuilt ones in their heuristic order.
std::vector<size_t> ranking(const std::vector<Measurement>& m) {
  std::vector<size_t> order(m.size());
  std::iota(order.begin(), order.end(), 0);
  auto group = [&](size_t i) { return m[i].ok() ? 0 : m[i].timed ? 1 : 2; };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (group(a) != group(b)) return group(a) < group(b);
    return group(a) == 0 && m[a].seconds < m[b].seconds;
  });
  return order;
}

void reorder(PartitionPlans& pp, const std::vector<Measurement>& m, size_t part, std::vector<CandidateTiming>* out) {
  const std::vector<size_t> order = ranking(m);
  std::vector<Candidate> candidates;
  std::vector<std::shared_ptr<Plan>> built;
  for (size_t rank = 0; rank < order.size(); ++rank) {
    const size_t i = order[rank];
    candidates.push_back(pp.candidates[i]);
    candidates.back().measured_s = m[i].ok() ? m[i].seconds : -1;
    built.push_back(pp.built[i]);
    if (out && m[i].timed)
      out->push_back({part, rank, pp.candidates[i].label(), m[i].seconds, m[i].runs, m[i].gave_up,
                      pp.built[i]->workspace_size(), m[i].error.ok() ? std::string() : m[i].error.to_string()});
  }
  pp.candidates = std::move(candidates);
  pp.built = std::move(built);
  pp.chosen = 0;
}

Status record_winners(const GraphImpl& g, const Handle& handle, const AutotuneOptions& o) {
  const uint64_t fingerprint = g.ir->fingerprint(g.ir->dynamic_shapes);
  std::vector<TuningRecord> records;
  for (const auto& pp : g.plans->parts) {
    const Candidate& c = pp.candidates[static_cast<size_t>(pp.chosen)];
    if (c.measured_s < 0) continue;
    records.push_back({fingerprint, partition_nodes_key(pp.partition), impl_of(handle).info.signature, kVersionString,
                       std::string(engine_by_id(c.engine_id)->name()), c.knobs, c.measured_s});
  }
  TuningDb db(o.db_path.empty() ? TuningDb::default_path() : o.db_path);
  std::vector<std::string> warnings;
  const Status s = db.store(records, warnings);
  if (o.db_warnings) o.db_warnings->insert(o.db_warnings->end(), warnings.begin(), warnings.end());
  if (s.ok()) return {};
  return {s.code(), "autotune: the winners were not recorded: " + s.message()};
}

}  // namespace

Status autotune_graph(GraphImpl& g, const Handle& handle, const VariantPack* by_tensor, const UidVariantPack* by_uid,
                      void* workspace, const AutotuneOptions& options, std::vector<CandidateTiming>* timings) {
  std::vector<void*> ptrs;
  std::vector<double> scalars;
  if (auto s = resolve_pack(g, handle, by_tensor, by_uid, workspace, -1, g.plans ? g.plans->workspace_bytes() : 0, ptrs, scalars); !s.ok()) return s;
  PlanSet& ps = *g.plans;
  auto current_choice = [&] {
    std::vector<size_t> choice;
    for (const auto& pp : ps.parts) choice.push_back(static_cast<size_t>(pp.chosen));
    return choice;
  };
  // Partitions are timed in order, each on real data: its inputs are what its producers' chosen
  // plans wrote just before (intermediates share bytes once their live ranges end, so a run of the
  // whole graph first would leave later partitions' values in them). An output stored over its
  // input (Engine::output_alias) changes that input with every timed run, so the partitions after
  // it are timed on other values of the same shapes; the last run below recomputes them all.
  size_t total = 0, done = 0;
  for (const auto& pp : ps.parts) total += static_cast<size_t>(std::count_if(pp.built.begin(), pp.built.end(), [](auto& b) { return b != nullptr; }));
  auto timer = make_timer(impl_of(handle));
  void* engine_ws = workspace ? static_cast<char*>(workspace) + ps.intermediates_bytes : nullptr;
  for (size_t p = 0; p < ps.parts.size(); ++p) {
    PartitionPlans& pp = ps.parts[p];
    std::vector<Measurement> m(pp.candidates.size());
    double best = std::numeric_limits<double>::infinity();
    Status last_error;
    for (size_t i = 0; i < pp.candidates.size(); ++i) {
      if (!pp.built[i]) continue;
      m[i] = time_plan(*pp.built[i], ExecArgs{impl_of(handle), ptrs, engine_ws}, *timer, options, best);
      if (m[i].ok()) best = std::min(best, m[i].seconds);
      else last_error = m[i].error;
      DG_LOG(INFO) << "autotune: partition " << p << ": " << pp.candidates[i].label() << ": "
                   << (m[i].ok() ? std::to_string(m[i].seconds * 1e3) + " ms" : m[i].error.to_string())
                   << (m[i].gave_up ? " (gave up)" : "");
      if (options.progress) options.progress(++done, total);
    }
    if (best == std::numeric_limits<double>::infinity())
      return {ErrorCode::GRAPH_EXECUTION_FAILED,
              "autotune: no built candidate of partition " + std::to_string(p) + " ('" + pp.partition.pattern +
                  "') ran" + (last_error.ok() ? std::string(": none is built") : ": " + last_error.to_string())};
    reorder(pp, m, p, timings);
    // The chosen plan's outputs for the partitions after it (a failing candidate may have left others).
    if (const auto& plan = pp.built[static_cast<size_t>(pp.chosen)]; plan) {
      if (auto s = plan->execute(ExecArgs{impl_of(handle), ptrs, engine_ws}); !s.ok()) {
        DG_LOG(INFO) << "autotune: partition " << p << ": the chosen plan failed: " << s.to_string();
      }
    }
  }
  // Leave the outputs holding the chosen plans' results, as execute() would.
  if (auto s = run_partitions(g, handle, ptrs, workspace, current_choice()); !s.ok()) return s;
  if (!options.record) return {};
  const Status recorded = record_winners(g, handle, options);
  if (options.record_required) return recorded;
  if (!recorded.ok()) {
    DG_LOG(ERROR) << recorded.message();
  }
  return {};
}

Status Graph::autotune(const Handle& handle, const VariantPack& pack, void* workspace) {
  return no_throw(ErrorCode::GRAPH_EXECUTION_FAILED, "autotune", [&] {
    return autotune_graph(*impl_, handle, &pack, nullptr, workspace, AutotuneOptions{}, nullptr);
  });
}
Status Graph::autotune(const Handle& handle, const UidVariantPack& pack, void* workspace) {
  return no_throw(ErrorCode::GRAPH_EXECUTION_FAILED, "autotune", [&] {
    return autotune_graph(*impl_, handle, nullptr, &pack, workspace, AutotuneOptions{}, nullptr);
  });
}

}  // namespace dnngraph
