// dnngraph tune GRAPH.json: builds every candidate plan, times each one (progress on stderr),
// prints every candidate's rank, time and workspace, records the winners in the tuning DB and
// draws the spread between the fastest and the slowest plan as an SVG bar chart.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>

#include "commands.hpp"
#include "graphs.hpp"
#include "host_tensors.hpp"
#include "reference_check.hpp"
#include "planning/introspect.hpp"
#include "planning/autotune.hpp"
#include "planning/tuning_db.hpp"

namespace dnngraph::cli {
namespace {

struct TuneOptions : GraphFileOptions {
  std::string db_path;  // empty: TuningDb::default_path()
  std::string chart_path;
  int warmup = 1;
  int repeats = 5;
  bool record = true;
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

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Fastest and slowest measured time of a partition; {0, 0} when nothing ran.
std::pair<double, double> spread(const std::vector<CandidateTiming>& t, size_t part) {
  double lo = 0, hi = 0;
  for (const auto& c : t)
    if (c.partition == part && c.error.empty()) {
      lo = lo == 0 ? c.seconds : std::min(lo, c.seconds);
      hi = std::max(hi, c.seconds);
    }
  return {lo, hi};
}

// One horizontal bar per candidate, ranked, per partition; bar length is time over the partition's
// slowest, so the spread between the fastest and slowest plan reads at a glance.
Status write_chart(const std::string& path, const std::string& title, const Graph& g,
                   const std::vector<CandidateTiming>& timings) {
  constexpr int kLabelW = 300, kBarW = 420, kTextW = 140, kRowH = 22, kTop = 40;
  const int width = kLabelW + kBarW + kTextW;
  std::ostringstream body;
  int y = kTop;
  const auto parts = introspect::partitions(g);
  for (size_t p = 0; p < parts.size(); ++p) {
    const auto [lo, hi] = spread(timings, p);
    std::ostringstream head;
    head << "partition " << p << " (" << parts[p].pattern << ")";
    if (lo > 0) head << ": fastest " << format_seconds(lo) << ", slowest " << format_seconds(hi) << ", spread "
                     << std::fixed << std::setprecision(1) << hi / lo << "x";
    body << "<text x=\"8\" y=\"" << y + 15 << "\" font-weight=\"bold\">" << xml_escape(head.str()) << "</text>\n";
    y += kRowH;
    for (const auto& t : timings) {
      if (t.partition != p) continue;
      const bool failed = !t.error.empty();
      const int w = failed || hi <= 0 ? 0 : std::max(1, static_cast<int>(kBarW * t.seconds / hi));
      const char* color = failed ? "#c62828" : t.rank == 0 ? "#2e7d32" : t.gave_up ? "#9e9e9e" : "#1565c0";
      const std::string note = failed ? "failed" : format_seconds(t.seconds) + (t.gave_up ? " (gave up)" : "");
      body << "<text x=\"" << kLabelW - 6 << "\" y=\"" << y + 15 << "\" text-anchor=\"end\">" << t.rank << ". "
           << xml_escape(t.label) << "</text>\n"
           << "<rect x=\"" << kLabelW << "\" y=\"" << y + 3 << "\" width=\"" << w << "\" height=\"" << kRowH - 6
           << "\" fill=\"" << color << "\"/>\n"
           << "<text x=\"" << kLabelW + w + 6 << "\" y=\"" << y + 15 << "\">" << xml_escape(note) << "</text>\n";
      y += kRowH;
    }
    y += kRowH / 2;
  }
  std::ofstream out(path);
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << y + 10
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"8\" y=\"22\" font-size=\"15\">" << xml_escape(title) << "</text>\n"
      << body.str() << "</svg>\n";
  out.close();
  if (!out) return {ErrorCode::IO_ERROR, "cannot write the chart '" + path + "'"};
  return {};
}

void print_table(const Graph& g, const std::vector<CandidateTiming>& timings) {
  const auto parts = introspect::partitions(g);
  for (size_t p = 0; p < parts.size(); ++p) {
    std::cout << "partition " << p << " (" << parts[p].pattern << "):\n";
    std::cout << "  " << std::left << std::setw(6) << "rank" << std::setw(44) << "plan" << std::right << std::setw(12)
              << "time" << std::setw(6) << "runs" << std::setw(14) << "workspace" << "\n";
    for (const auto& t : timings) {
      if (t.partition != p) continue;
      std::cout << "  " << std::left << std::setw(6) << t.rank << std::setw(44) << t.label << std::right << std::setw(12)
                << (t.error.empty() ? format_seconds(t.seconds) : "failed") << std::setw(6) << t.runs << std::setw(14)
                << t.workspace << (t.gave_up ? "  gave up early: hopeless against the best" : "")
                << (t.error.empty() ? "" : "  " + t.error) << "\n";
    }
    const size_t unbuilt = parts[p].candidates.size() -
                           static_cast<size_t>(std::count_if(timings.begin(), timings.end(), [&](auto& t) { return t.partition == p; }));
    if (unbuilt) std::cout << "  (" << unbuilt << " candidates could not be built)\n";
    const auto [lo, hi] = spread(timings, p);
    if (lo > 0)
      std::cout << "  fastest " << format_seconds(lo) << ", slowest " << format_seconds(hi) << ": the engine choice is worth "
                << std::fixed << std::setprecision(1) << hi / lo << "x\n" << std::defaultfloat;
  }
}

void tune_graph(const TuneOptions& o) {
  Graph g;
  exit_on_error(load_graph_file(o.graph_path, g), o.graph_path);
  std::string why_not_cuda;
  const Device device = chosen_device(o, why_not_cuda);
  Handle handle(device);
  exit_on_error(handle.status(), "opening " + device.to_string());
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
  print_table(g, timings);
  for (const auto& w : db_warnings) std::cerr << "warning: tuning DB: " << w << "\n";
  exit_on_error(tuned, "tuning");
  std::string chosen;
  exit_on_error(g.get_plan_name_at_index(0, chosen), "naming the plan");
  std::cout << "chosen: " << chosen << "\n";
  if (o.record) std::cout << "recorded in " << opts.db_path << "\n";
  if (!o.chart_path.empty()) {
    const std::string title = "dnngraph tune " + o.graph_path + " on " + device.to_string();
    exit_on_error(write_chart(o.chart_path, title, g, timings), "--chart");
    std::cout << "chart: " << o.chart_path << "\n";
  }
}

}  // namespace

void add_tune_command(CLI::App& app) {
  auto o = std::make_shared<TuneOptions>();
  auto* cmd = app.add_subcommand("tune", "Time every candidate plan of a graph JSON file and record the fastest");
  add_graph_file_options(*cmd, *o);
  cmd->add_option("--db", o->db_path, "tuning DB file (default: $DNNGRAPH_TUNING_DB, else $DNNGRAPH_CACHE_DIR/tuning.db, "
                                      "else ~/.cache/dnngraph/tuning.db)");
  cmd->add_option("--chart", o->chart_path, "write an SVG bar chart of every candidate's time");
  cmd->add_option("--warmup", o->warmup, "untimed runs per candidate")->capture_default_str()
      ->check(CLI::Range(0, std::numeric_limits<int>::max()));
  cmd->add_option("--repeats", o->repeats, "timed runs per candidate (the median counts)")->capture_default_str()
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  cmd->add_flag("!--no-record", o->record, "do not write the winners to the tuning DB");
  cmd->callback([o] { tune_graph(*o); });
}

}  // namespace dnngraph::cli
