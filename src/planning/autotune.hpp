// Autotuning: time every built candidate of every partition, put the fastest first, record it in
// the tuning DB (read back by heuristic mode B). Graph::autotune and `dnngraph tune` both use this.
#pragma once
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "planning/plan_set.hpp"

namespace dnngraph {

struct AutotuneOptions {
  int warmup = 1;              // untimed runs per candidate (their time still feeds the give-up rule)
  int repeats = 5;             // timed runs per candidate; the median counts
  double give_up_ratio = 10;   // a candidate this much slower than the best so far stops being timed
  bool record = true;          // write each partition's winner to the tuning DB
  std::string db_path;         // empty: TuningDb::default_path()
  // Whether a tuning DB that cannot be written fails the call (dnngraph tune --db); otherwise it is
  // only logged, since the plans are tuned either way and only the next process pays.
  bool record_required = false;
  std::vector<std::string>* db_warnings = nullptr;  // receives the DB's warnings (damaged lines), if set
  // Called after each candidate: (candidates timed so far, candidates to time in all).
  std::function<void(size_t, size_t)> progress;
};

struct CandidateTiming {
  size_t partition = 0;
  size_t rank = 0;             // position in the reordered list (0 = chosen)
  std::string label;           // "engine[knobs]"
  double seconds = std::numeric_limits<double>::infinity();  // median, or the time that made it give up
  int runs = 0;                // timed runs behind `seconds`
  bool gave_up = false;        // stopped early: hopeless against the best so far
  int64_t workspace = 0;
  std::string error;           // set when the candidate failed to run
};

// Times every built candidate (partitions are independent; each is timed alone, after one run of
// the whole graph has filled the intermediates), reorders each partition's candidates fastest
// first, sets `chosen` to the fastest and records it. Unbuilt candidates keep their order, after
// the timed ones. `timings` (optional) receives one entry per timed candidate.
Status autotune_graph(GraphImpl& g, const Handle& handle, const VariantPack* by_tensor, const UidVariantPack* by_uid,
                      void* workspace, const AutotuneOptions& options, std::vector<CandidateTiming>* timings);

}  // namespace dnngraph
