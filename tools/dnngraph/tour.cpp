// dnngraph tour: the tutorial's workloads, in order, on the best device present: a fused conv
// with every plan timed, a matmul epilogue with AMAX, causal attention, serialize/reload, dynamic
// batch sizes with a shared kernel cache, and CUDA-graph capture on a GPU. Every result is checked
// against the reference engine. Without a GPU everything runs on the CPU at reduced sizes.
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "graphs.hpp"
#include "host_tensors.hpp"
#include "reference_check.hpp"
#include "planning/introspect.hpp"
#include "tour_workloads.hpp"

namespace dnngraph::cli {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Plans with ref in them are not timed above this many FLOPs (ref runs at well under 1 GFLOP/s).
constexpr double kRefTimingFlopLimit = 2e9;

struct TourOptions {
  std::string device;  // empty: the best device present
  bool quick = false;
  bool check_by_slices = false;
  uint64_t seed = 1;
  std::vector<std::string> engines;  // empty: every engine
};

class Tour {
 public:
  Tour(const TourOptions& o, Device device, std::string why_not_gpu)
      : opts_(o), handle_(device), why_not_gpu_(std::move(why_not_gpu)) {
    gpu_ = device.is_cuda();
    sizes_ = gpu_ && !o.quick ? TourSizes::full() : TourSizes::reduced();
    by_slices_ = o.check_by_slices || gpu_;
    iters_ = o.quick ? 1 : (gpu_ ? 20 : 3);
  }

  int run() {
    print_intro();
    conv_step();
    matmul_step();
    attention_step();
    serialize_step();
    dynamic_step();
    cuda_graph_step();
    std::cout << "\ntour: " << passed_ << " steps passed, " << skipped_ << " skipped, " << failed_ << " failed\n";
    return failed_ ? kExitCheckFailed : 0;
  }

 private:
  void print_intro() const {
    std::cout << "dnngraph tour on " << handle_.device().to_string();
    if (!gpu_) std::cout << " (no GPU: " << why_not_gpu_ << ")";
    std::cout << "\n";
    if (!gpu_ || opts_.quick)
      std::cout << "sizes reduced so that the reference engine keeps up: " << sizes_.describe() << "\n";
    else
      std::cout << "tutorial sizes: " << sizes_.describe() << "\n";
    if (by_slices_)
      std::cout << "outputs are checked against ref on the first and the last batch element (ref is slow at full size)\n";
  }

  void header(int n, const Workload& w) const {
    std::cout << "\n[" << n << "/6] " << w.title << "\n    " << w.summary << "\n";
  }
  void step_failed(const Status& s, const std::string& what) {
    std::cout << "    FAILED: " << what << ": " << s.to_string() << "\n";
    ++failed_;
  }
  void step_done(bool ok) {
    std::cout << "    result: " << (ok ? "ok" : "CHECK FAILED") << "\n";
    ok ? ++passed_ : ++failed_;
  }
  void step_skipped(const std::string& why) {
    std::cout << "    skipped: " << why << "\n";
    ++skipped_;
  }

  // Compares `tensors` with `ref`, prints one line per output; true when all agree.
  bool report_check(const Graph& g, const Reference& ref, const std::vector<HostTensor>& tensors, const char* indent) {
    std::vector<Comparison> cmp;
    std::vector<std::string> unchecked;
    compare_with_reference(ref, tensors, graph_tolerance(g), cmp, unchecked);
    bool ok = !cmp.empty();
    for (const auto& c : cmp) {
      std::cout << indent << "check " << format_comparison(c) << "\n";
      ok &= c.ok;
    }
    for (const auto& u : unchecked) std::cout << indent << u << "\n";
    return ok;
  }

  // Executes plan `index` (-1: the chosen plans) on fresh NaN-poisoned outputs, downloads them.
  Status execute_into(const Graph& g, DeviceTensors& dev, std::vector<HostTensor>& tensors, int64_t index) {
    int64_t ws = 0;
    if (auto s = index < 0 ? g.get_workspace_size(ws) : g.get_workspace_size_plan_at_index(index, ws); !s.ok()) return s;
    if (auto s = dev.reserve_workspace(ws); !s.ok()) return s;
    if (auto s = dev.poison_outputs(); !s.ok()) return s;
    auto s = index < 0 ? g.execute(handle_, dev.pack(), dev.workspace(), dev.workspace_bytes())
                       : g.execute_plan_at_index(handle_, dev.pack(), dev.workspace(), index, dev.workspace_bytes());
    if (!s.ok()) return s;
    return dev.download_outputs(tensors);
  }

  // "1.234 ms, 12.3 GFLOP/s"; `median_s` receives the time when it was measured.
  std::string time_line(const Graph& g, DeviceTensors& dev, int64_t index, bool has_ref, double* median_s = nullptr) {
    const double flops = introspect::graph_flops(g);
    if (has_ref && flops > kRefTimingFlopLimit) return "not timed (it runs the ref engine)";
    Timing t;
    auto s = time_runs(handle_, iters_, [&] {
      return index < 0 ? g.execute(handle_, dev.pack(), dev.workspace(), dev.workspace_bytes())
                       : g.execute_plan_at_index(handle_, dev.pack(), dev.workspace(), index, dev.workspace_bytes());
    }, t);
    if (!s.ok()) return "timing failed: " + s.to_string();
    if (median_s) *median_s = t.median_s;
    const std::string rate = format_rate(flops, t.median_s);
    return format_seconds(t.median_s) + (rate.empty() ? "" : ", " + rate);
  }

  // Builds the workload's graph (all plans or the heuristics' choice), makes its inputs and ref.
  Status prepare(const Workload& w, Graph& g, BuildPlanPolicy policy, std::vector<HostTensor>& tensors,
                 Reference& ref, double& build_s) {
    g = w.build(w.batch);
    if (!opts_.engines.empty()) g.select_engines(opts_.engines);
    const auto t0 = Clock::now();
    if (auto s = build_graph(g, handle_, policy); !s.ok()) return s;
    build_s = seconds_since(t0);
    if (auto s = make_host_tensors(g, opts_.seed, tensors); !s.ok()) return s;
    return compute_reference(w, g, tensors, by_slices_, ref);
  }

  void print_partitions(const Graph& g, double build_s) const {
    std::cout << "    built in " << format_seconds(build_s) << ":\n";
    for (const auto& line : partition_lines(g)) std::cout << "      " << line << "\n";
  }

  // (1) The fused conv: every plan built, run, checked and timed.
  void conv_step() {
    const Workload w = conv_workload(sizes_.conv);
    header(1, w);
    std::vector<HostTensor> tensors;
    double build_s = 0;
    if (auto s = prepare(w, conv_graph_, BuildPlanPolicy::ALL, tensors, conv_ref_, build_s); !s.ok())
      return step_failed(s, "building");
    print_partitions(conv_graph_, build_s);
    DeviceTensors dev;
    if (auto s = dev.upload(handle_, tensors); !s.ok()) return step_failed(s, "uploading inputs");
    bool ok = true;
    int64_t fastest = -1;
    double fastest_s = 0;
    const auto names = plan_names(conv_graph_);
    for (int64_t i = 0; i < static_cast<int64_t>(names.size()); ++i) {
      std::cout << "    " << names[static_cast<size_t>(i)] << "\n";
      const bool has_ref = names[static_cast<size_t>(i)].find("ref") != std::string::npos;
      if (has_ref && introspect::graph_flops(conv_graph_) > kRefTimingFlopLimit) {
        std::cout << "      not run at this size: it uses the ref engine (dnngraph run --plan " << i << " runs it)\n";
        continue;
      }
      if (auto s = execute_into(conv_graph_, dev, tensors, i); !s.ok()) {
        std::cout << "      not run: " << s.to_string() << "\n";
        continue;
      }
      ok &= report_check(conv_graph_, conv_ref_, tensors, "      ");
      double median = -1;
      std::cout << "      time: " << time_line(conv_graph_, dev, i, has_ref, &median) << "\n";
      if (median >= 0 && (fastest < 0 || median < fastest_s)) {
        fastest = i;
        fastest_s = median;
      }
    }
    if (fastest >= 0)
      std::cout << "    fastest: plan " << fastest << " at " << format_seconds(fastest_s)
                << (fastest == 0 ? " (the heuristics' first choice)" : "; the heuristics ranked plan 0 first") << "\n";
    conv_inputs_ = tensors;
    step_done(ok);
  }

  // A workload run by the heuristics' choice: its graph, host tensors (outputs downloaded) and ref.
  struct ChosenRun {
    Graph g;
    std::vector<HostTensor> tensors;
    Reference ref;
    bool checked_ok = false;  // the outputs agreed with ref
  };

  // Runs a workload's heuristics' choice: build, plans, check, time. False when the step already
  // failed (and was counted).
  bool run_chosen(const Workload& w, ChosenRun& r) {
    double build_s = 0;
    if (auto s = prepare(w, r.g, BuildPlanPolicy::HEURISTICS_CHOICE, r.tensors, r.ref, build_s); !s.ok())
      return step_failed(s, "building"), false;
    print_partitions(r.g, build_s);
    for (const auto& line : plan_names(r.g)) std::cout << "      " << line << "\n";
    DeviceTensors dev;
    if (auto s = dev.upload(handle_, r.tensors); !s.ok()) return step_failed(s, "uploading inputs"), false;
    if (auto s = execute_into(r.g, dev, r.tensors, -1); !s.ok()) return step_failed(s, "executing"), false;
    r.checked_ok = report_check(r.g, r.ref, r.tensors, "    ");
    std::cout << "    time (heuristics' choice): " << time_line(r.g, dev, -1, chosen_plan_uses(r.g, "ref")) << "\n";
    return true;
  }

  // (2) matmul -> scale -> bias -> GELU with AMAX.
  void matmul_step() {
    const Workload w = matmul_workload(sizes_.matmul);
    header(2, w);
    ChosenRun r;
    if (!run_chosen(w, r)) return;
    // Ref sees one batch element at a time; the amax spans the whole batch, so it is checked
    // against the engine's own Y.
    if (by_slices_) r.checked_ok &= check_amax_against_output(r.tensors, graph_tolerance(r.g), "    ");
    step_done(r.checked_ok);
  }

  // (3) Causal attention.
  void attention_step() {
    const Workload w = sdpa_workload(sizes_.attention);
    header(3, w);
    ChosenRun r;
    if (run_chosen(w, r)) step_done(r.checked_ok);
  }

  // (4) The conv graph of step 1, serialized, reloaded without building, executed by uid.
  void serialize_step() {
    std::cout << "\n[4/6] serialize the built conv plan, reload it, execute by uid\n";
    if (conv_inputs_.empty()) return step_skipped("step 1 did not build");
    std::vector<uint8_t> blob;
    const auto t0 = Clock::now();
    if (auto s = conv_graph_.serialize(blob); !s.ok()) return step_failed(s, "serialize");
    const double ser_s = seconds_since(t0);
    Graph reloaded;
    const auto t1 = Clock::now();
    if (auto d = reloaded.deserialize(handle_, blob); !d.ok()) return step_failed(d, "deserialize");
    const double de_s = seconds_since(t1);
    std::cout << "    " << blob.size() << " bytes, serialized in " << format_seconds(ser_s) << ", reloaded in "
              << format_seconds(de_s) << "\n";
    std::vector<HostTensor> tensors = conv_inputs_;
    DeviceTensors dev;
    if (auto u = dev.upload(handle_, tensors); !u.ok()) return step_failed(u, "uploading inputs");
    if (auto e = execute_into(reloaded, dev, tensors, -1); !e.ok()) return step_failed(e, "executing the reloaded plan");
    step_done(report_check(conv_graph_, conv_ref_, tensors, "    "));
  }

  // (5) One graph at several batch sizes with dynamic shapes and a shared kernel cache.
  void dynamic_step() {
    Workload w = matmul_workload(sizes_.matmul);
    w.title = "dynamic batch sizes: the matmul epilogue with a shared kernel cache";
    w.summary = "the graph of step 2 at batch sizes";
    for (int64_t b : sizes_.dynamic_batches) w.summary += " " + std::to_string(b);
    w.summary += ", dynamic shapes on, one KernelCache shared by every graph";
    header(5, w);
    auto cache = std::make_shared<KernelCache>();
    bool ok = true;
    for (int64_t batch : sizes_.dynamic_batches) {
      Graph g = w.build(batch);
      g.set_dynamic_shape_enabled(true).set_kernel_cache(cache);
      if (!opts_.engines.empty()) g.select_engines(opts_.engines);
      const auto t0 = Clock::now();
      if (auto s = build_graph(g, handle_); !s.ok()) return step_failed(s, "batch " + std::to_string(batch));
      const double build_s = seconds_since(t0);
      std::vector<HostTensor> tensors;
      Reference ref;
      DeviceTensors dev;
      Workload at = w;
      at.batch = batch;
      if (auto s = make_host_tensors(g, opts_.seed + static_cast<uint64_t>(batch), tensors); !s.ok()) return step_failed(s, "inputs");
      if (auto s = compute_reference(at, g, tensors, by_slices_, ref); !s.ok()) return step_failed(s, "ref");
      if (auto s = dev.upload(handle_, tensors); !s.ok()) return step_failed(s, "uploading inputs");
      if (auto s = execute_into(g, dev, tensors, -1); !s.ok()) return step_failed(s, "executing");
      std::cout << "    batch " << batch << ": built in " << format_seconds(build_s) << " (kernel cache: " << cache->size()
                << " kernels, " << cache->hits() << " hits, " << cache->misses() << " compiles)\n";
      ok &= report_check(g, ref, tensors, "      ");
      if (by_slices_) ok &= check_amax_against_output(tensors, graph_tolerance(g), "      ");
    }
    if (cache->misses() == 0)
      std::cout << "    no engine compiled a kernel on " << handle_.device().to_string() << ", so the cache stayed empty\n";
    step_done(ok);
  }

  // (6) CUDA graphs: on a GPU only.
  void cuda_graph_step() {
    std::cout << "\n[6/6] capture the conv plan into a CUDA graph\n";
    if (!gpu_) return step_skipped("CUDA graphs need a GPU; this run is on the CPU");
    if (conv_inputs_.empty()) return step_skipped("step 1 did not build");
    if (chosen_plan_uses(conv_graph_, "ref"))
      return step_skipped("the chosen conv plan uses the ref engine, which stages through host memory and cannot be captured");
    std::vector<HostTensor> tensors = conv_inputs_;
    DeviceTensors dev;
    if (auto s = dev.upload(handle_, tensors); !s.ok()) return step_failed(s, "uploading inputs");
    int64_t ws = 0;
    if (auto s = conv_graph_.get_workspace_size(ws); !s.ok()) return step_failed(s, "workspace size");
    if (auto s = dev.reserve_workspace(ws); !s.ok()) return step_failed(s, "workspace");
    CudaGraphRun run;
    if (auto s = run_in_cuda_graph(handle_, conv_graph_, dev, iters_, run); !s.ok()) return step_failed(s, "CUDA graph");
    if (auto d = dev.download_outputs(tensors); !d.ok()) return step_failed(d, "downloading outputs");
    std::cout << "    captured " << run.nodes << " nodes (one child graph); replay " << format_seconds(run.replay_s) << " vs "
              << format_seconds(run.stream_s) << " launched on the stream\n";
    step_done(report_check(conv_graph_, conv_ref_, tensors, "    "));
  }

  TourOptions opts_;
  Handle handle_;
  std::string why_not_gpu_;
  bool gpu_ = false;
  bool by_slices_ = false;
  int iters_ = 3;
  TourSizes sizes_;
  Graph conv_graph_;
  Reference conv_ref_;
  std::vector<HostTensor> conv_inputs_;
  int passed_ = 0, skipped_ = 0, failed_ = 0;
};

}  // namespace

void add_tour_command(CLI::App& app) {
  auto o = std::make_shared<TourOptions>();
  auto* cmd = app.add_subcommand("tour", "Walk the tutorial's workloads on the best device present, checked against ref");
  cmd->add_option("--device", o->device, "cpu, cuda or cuda:N (default: the best device present)");
  cmd->add_flag("--quick", o->quick, "reduced sizes and one timed run per plan, on any device");
  cmd->add_flag("--check-by-slices", o->check_by_slices,
                "check only the first and last batch element against ref (the default at full sizes)");
  cmd->add_option("--seed", o->seed, "seed of the random inputs")->capture_default_str();
  cmd->add_option("--engines", o->engines, "only these engines, comma-separated (e.g. ref)")->delimiter(',');
  cmd->callback([o] {
    Device device = Device::cpu();
    std::string why_not_gpu;
    if (o->device.empty()) device = best_device(why_not_gpu);
    else exit_on_error(parse_device(o->device, device), "--device");
    if (device.is_cpu() && why_not_gpu.empty() && !o->device.empty()) why_not_gpu = "--device cpu";
    Handle probe(device);
    exit_on_error(probe.status(), "opening " + device.to_string());
    Tour tour(*o, device, why_not_gpu);
    if (int rc = tour.run(); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dnngraph::cli
