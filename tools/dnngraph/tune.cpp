// dnngraph tune GRAPH.json: builds every candidate plan, times each one (progress on stderr),
// prints every candidate's rank, time and workspace, records the winners in the tuning DB and
// draws every candidate's time as an SVG bar chart (tune_chart.hpp). With --json, stdout holds one
// JSON object instead of the text (schema: docs/cli.md); progress stays on stderr.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>

#include "commands.hpp"
#include "graphs.hpp"
#include "host_tensors.hpp"
#include "json_report.hpp"
#include "reference_check.hpp"
#include "planning/introspect.hpp"
#include "planning/autotune.hpp"
#include "planning/tuning_db.hpp"
#include "tune_chart.hpp"

namespace dnngraph::cli {
namespace {

struct TuneOptions : GraphFileOptions {
  std::string db_path;  // empty: TuningDb::default_path()
  std::string chart_path;
  int warmup = 1;
  int repeats = 5;
  bool record = true;
  bool json = false;
};

// A bar redrawn in place with an ETA on a terminal; into a file or pipe, one plain line per tenth.
void draw_progress(size_t done, size_t total) {
  using Clock = std::chrono::steady_clock;
  static Clock::time_point start = Clock::now();
  static size_t last_tenth = 0;
  if (done == 0) start = Clock::now(), last_tenth = 0;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  if (!isatty(fileno(stderr))) {
    const size_t tenth = total ? 10 * done / total : 10;
    if (done != total && (done == 0 || tenth == last_tenth)) return;
    last_tenth = tenth;
    std::fprintf(stderr, "timing: %zu/%zu candidates, %.1f s\n", done, total, elapsed);
    return;
  }
  constexpr int kWidth = 30;
  const int filled = total ? static_cast<int>(kWidth * done / total) : kWidth;
  std::string eta = "";
  if (done > 0 && done < total) eta = ", ~" + std::to_string(static_cast<int>(elapsed / done * (total - done) + 0.5)) + " s left";
  std::fprintf(stderr, "\rtiming [%s%s] %zu/%zu candidates%s   ", std::string(static_cast<size_t>(filled), '#').c_str(),
               std::string(static_cast<size_t>(kWidth - filled), '.').c_str(), done, total, eta.c_str());
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

// Candidates of partition `p` that were not timed: they could not be built.
size_t unbuilt_candidates(const introspect::PartitionView& part, const std::vector<CandidateTiming>& timings, size_t p) {
  const auto timed = std::count_if(timings.begin(), timings.end(), [&](const auto& t) { return t.partition == p; });
  return part.candidates.size() - static_cast<size_t>(timed);
}

// The plan column is as wide as the longest plan name (at least 44), so every row lines up.
void print_table(const Graph& g, const std::vector<CandidateTiming>& timings) {
  size_t plan_w = 44;
  for (const auto& t : timings) plan_w = std::max(plan_w, t.label.size() + 2);
  const int pw = static_cast<int>(plan_w);
  const auto parts = introspect::partitions(g);
  for (size_t p = 0; p < parts.size(); ++p) {
    std::cout << "partition " << p << " (" << parts[p].pattern << "):\n";
    std::cout << "  " << std::left << std::setw(6) << "rank" << std::setw(pw) << "plan" << std::right << std::setw(12)
              << "time" << std::setw(6) << "runs" << std::setw(14) << "workspace" << "\n";
    for (const auto& t : timings) {
      if (t.partition != p) continue;
      std::cout << "  " << std::left << std::setw(6) << t.rank << std::setw(pw) << t.label << std::right << std::setw(12)
                << (t.error.empty() ? format_seconds(t.seconds) : "failed") << std::setw(6) << t.runs << std::setw(14)
                << t.workspace << (t.gave_up ? "  gave up early: hopeless against the best" : "")
                << (t.error.empty() ? "" : "  " + t.error) << "\n";
    }
    if (const size_t unbuilt = unbuilt_candidates(parts[p], timings, p))
      std::cout << "  (" << unbuilt << " candidates could not be built)\n";
    const TimeSpread s = spread_of(timings, p);
    if (s.fastest_s > 0)
      std::cout << "  fastest " << format_seconds(s.fastest_s) << ", slowest " << format_seconds(s.slowest_s)
                << ": the engine choice is worth " << std::fixed << std::setprecision(1) << s.slowest_s / s.fastest_s
                << "x\n" << std::defaultfloat;
  }
}

// The same facts as JSON (schema: docs/cli.md), per partition.
nlohmann::json partitions_report(const Graph& g, const std::vector<CandidateTiming>& timings) {
  nlohmann::json out = nlohmann::json::array();
  const auto parts = introspect::partitions(g);
  for (size_t p = 0; p < parts.size(); ++p) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& t : timings)
      if (t.partition == p) rows.push_back(timing_json(t));
    const TimeSpread s = spread_of(timings, p);
    const bool timed = s.fastest_s > 0;
    out.push_back({{"index", p}, {"pattern", parts[p].pattern}, {"nodes", parts[p].nodes},
                   {"candidates", parts[p].candidates.size()}, {"unbuilt", unbuilt_candidates(parts[p], timings, p)},
                   {"timings", rows}, {"fastest_s", timed ? nlohmann::json(s.fastest_s) : nlohmann::json(nullptr)},
                   {"slowest_s", timed ? nlohmann::json(s.slowest_s) : nlohmann::json(nullptr)},
                   {"spread", timed ? nlohmann::json(s.slowest_s / s.fastest_s) : nlohmann::json(nullptr)}});
  }
  return out;
}

void tune_graph(const TuneOptions& o) {
  Graph g;
  exit_on_error(load_graph_file(o.graph_path, g), o.graph_path);
  std::string why_not_cuda;
  const Device device = chosen_device(o, why_not_cuda);
  Handle handle(device);
  exit_on_error(handle.status(), "opening " + device.to_string());
  if (!o.json)
    std::cout << "graph: " << o.graph_path << ", device: " << device.to_string() << " (" << introspect::device_info(handle).name << ")\n";
  if (!o.engines.empty()) g.select_engines(o.engines);
  exit_on_error(plan_graph(g, handle), "planning");
  exit_on_error(g.build_plans(handle, BuildPlanPolicy::ALL), "building every plan");

  std::vector<HostTensor> tensors;
  exit_on_error(make_host_tensors(g, o.seed, tensors), "making inputs");
  DeviceTensors dev;
  exit_on_error(dev.upload(handle, tensors), "uploading inputs");
  int64_t ws = 0;
  exit_on_error(g.get_workspace_size(ws), "workspace size");
  exit_on_error(dev.reserve_workspace(ws), "allocating the workspace");

  AutotuneOptions opts;
  opts.warmup = o.warmup;
  opts.repeats = o.repeats;
  opts.record = o.record;
  opts.db_path = o.db_path.empty() ? TuningDb::default_path() : o.db_path;
  opts.record_required = true;  // "recorded in" must be true when printed
  std::vector<std::string> db_warnings;
  opts.db_warnings = &db_warnings;
  opts.progress = draw_progress;
  std::vector<CandidateTiming> timings;
  const Status tuned = introspect::autotune(g, handle, dev.pack(), dev.workspace(), opts, &timings);
  if (!o.json) print_table(g, timings);
  for (const auto& w : db_warnings) std::cerr << "warning: tuning DB: " << w << "\n";
  exit_on_error(tuned, "tuning");
  std::string chosen;
  exit_on_error(g.get_plan_name_at_index(0, chosen), "naming the plan");
  if (!o.chart_path.empty()) {
    const std::string title = "dnngraph tune " + o.graph_path + " on " + device.to_string() + " (" +
                              introspect::device_info(handle).name + "), " + std::to_string(o.repeats) + " runs each";
    exit_on_error(write_tune_chart(o.chart_path, title, introspect::partitions(g), timings), "--chart");
  }
  if (o.json) {
    print_json({{"graph", o.graph_path}, {"device", device.to_string()}, {"device_name", introspect::device_info(handle).name},
                {"warmup", o.warmup}, {"repeats", o.repeats}, {"partitions", partitions_report(g, timings)},
                {"chosen", chosen}, {"recorded_in", o.record ? nlohmann::json(opts.db_path) : nlohmann::json(nullptr)},
                {"tuning_db_warnings", db_warnings},
                {"chart", o.chart_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.chart_path)}});
    return;
  }
  std::cout << "chosen: " << chosen << "\n";
  if (o.record) std::cout << "recorded in " << opts.db_path << "\n";
  if (!o.chart_path.empty()) std::cout << "chart: " << o.chart_path << "\n";
}

}  // namespace

void add_tune_command(CLI::App& app) {
  auto o = std::make_shared<TuneOptions>();
  auto* cmd = app.add_subcommand("tune", "Time every candidate plan of a graph JSON file and record the fastest");
  add_graph_file_options(*cmd, *o);
  cmd->add_option("--db", o->db_path, "tuning DB file (default: $DNNGRAPH_TUNING_DB, else $DNNGRAPH_CACHE_DIR/tuning.db, "
                                      "else ~/.cache/dnngraph/tuning.db)");
  cmd->add_option("--chart", o->chart_path, "write an SVG bar chart of every candidate's time (ms), the chosen one marked");
  cmd->add_flag("--json", o->json, "print one JSON object instead of the text (schema: docs/cli.md)");
  cmd->add_option("--warmup", o->warmup, "untimed runs per candidate")->capture_default_str()
      ->check(CLI::Range(0, std::numeric_limits<int>::max()));
  cmd->add_option("--repeats", o->repeats, "timed runs per candidate (the median counts)")->capture_default_str()
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  cmd->add_flag("!--no-record", o->record, "do not write the winners to the tuning DB");
  cmd->callback([o] { tune_graph(*o); });
}

}  // namespace dnngraph::cli
