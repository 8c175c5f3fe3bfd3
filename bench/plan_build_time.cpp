// Plan build time (issue #16): where the time of build_plans goes, per workload.
//   --describe (no GPU needed): plans for a described H200 (sm_90a, 132 SMs) and times, per
//     workload, planning, code generation alone (a kernel cache that only records keys) and
//     code generation + NVRTC of each own CUDA engine's first candidate per partition (--all:
//     of every own-engine candidate, compiled on DNNGRAPH_BUILD_THREADS threads).
//   --gpu: on cuda:0, a fresh graph per workload: create_execution_plans + check_support, then
//     build_plans(HEURISTICS_CHOICE) (--all: and of a second fresh graph, build_plans(ALL)), with
//     the process-wide kernel cache's AOT hits and compiles. Run it once as is (the library's
//     ahead-of-time kernels) and once with DNNGRAPH_AOT_KERNELS=0 (every kernel compiled cold).
// Workloads: the graph files given (default: examples/graphs/*.json of the source tree), and
// --chain N,...: pointwise chains of N ops (ReLU and bias add in turn, graph_scale_bench's chain),
// --matmul B,M,K,N: matmul x alpha + bias -> GELU with AMAX (the 8x2048^3 case is 8,2048,2048,2048).
// --select NAME / --deselect NAME (repeatable): the graphs' engine filters, so that one process
// times ALL of one engine's plans (cold, as the first process on a machine) and another the rest.
// --each (with --gpu): instead of ALL, build_plan_at_index of every plan one after another, each
// printed with its time and whether it compiles (`EACH workload index name ms [compiles]`).
// Usage: dnngraph_bench_plan_build_time [--describe|--gpu] [--all|--each] [--chain 250,500,1000]
//        [--matmul 8,2048,2048,2048] [--select cudnn] [--deselect cudnn] [--no-files] [GRAPH.json ...]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "dnngraph/dnngraph.hpp"
#include "graph/graph_impl.hpp"
#include "planning/aot_plan.hpp"
#include "planning/described_target.hpp"
#include "planning/kernel_cache.hpp"
#include "planning/plan_build.hpp"

namespace dg = dnngraph;

namespace {

struct Workload {
  std::string name;
  std::function<dg::Status(dg::Graph&)> make;
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<int64_t> list_of(const char* s) {
  std::vector<int64_t> v;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) v.push_back(std::stoll(x));
  return v;
}

Workload file_workload(const std::string& path) {
  return {std::filesystem::path(path).filename().string(), [path](dg::Graph& g) {
            std::ifstream f(path);
            std::stringstream ss;
            ss << f.rdbuf();
            return dg::Graph::from_json(ss.str(), g);
          }};
}

Workload chain_workload(int64_t n) {
  return {"chain of " + std::to_string(n) + " pointwise ops", [n](dg::Graph& g) {
            g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
            auto x = g.tensor(dg::TensorAttr().set_name("x").set_uid(1).set_dim({1, 16, 4, 4}).set_stride({256, 16, 4, 1}));
            auto b = g.tensor(dg::TensorAttr().set_name("b").set_uid(2).set_dim({1, 16, 1, 1}).set_stride({16, 1, 1, 1}));
            for (int64_t i = 0; i < n; ++i) x = (i % 2 == 0) ? g.relu(x) : g.bias(x, b);
            x->set_output(true).set_uid(3);
            return dg::Status{};
          }};
}

Workload matmul_workload(const std::vector<int64_t>& s) {
  const int64_t B = s[0], M = s[1], K = s[2], N = s[3];
  char name[96];
  std::snprintf(name, sizeof(name), "matmul %lldx%lldx%lldx%lld + alpha + bias + GELU + AMAX", (long long)B,
                (long long)M, (long long)K, (long long)N);
  return {name, [=](dg::Graph& g) {
            g.set_io_data_type(dg::DataType::BFLOAT16).set_intermediate_data_type(dg::DataType::FLOAT)
                .set_compute_data_type(dg::DataType::FLOAT);
            auto a = g.tensor(dg::TensorAttr().set_name("A").set_uid(1).set_dim({B, M, K}).set_stride({M * K, K, 1}));
            auto w = g.tensor(dg::TensorAttr().set_name("B").set_uid(2).set_dim({B, K, N}).set_stride({K * N, N, 1}));
            auto alpha = g.tensor(dg::TensorAttr().set_name("alpha").set_uid(3).set_dim({1, 1, 1}).set_stride({1, 1, 1})
                                      .set_data_type(dg::DataType::FLOAT).set_is_pass_by_value(true));
            auto bias = g.tensor(dg::TensorAttr().set_name("bias").set_uid(4).set_dim({1, 1, N}).set_stride({N, N, 1}));
            auto y = g.gelu(g.bias(g.scale(g.matmul(a, w, dg::MatmulAttr()), alpha), bias));
            y->set_output(true).set_uid(5);
            auto amax = g.reduction(y, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX));
            amax->set_dim({1, 1, 1}).set_data_type(dg::DataType::FLOAT).set_output(true).set_uid(6);
            return dg::Status{};
          }};
}

struct EngineFilters {
  std::vector<std::string> select, deselect;
} filters;

bool lower(const Workload& w, dg::Graph& g, const dg::Handle& h) {
  dg::Status s = w.make(g);
  g.select_engines(filters.select).deselect_engines(filters.deselect);
  if (s.ok()) s = g.validate();
  if (s.ok()) s = g.build_operation_graph(h);
  if (!s.ok()) std::printf("| %s | error: %s |\n", w.name.c_str(), s.to_string().c_str());
  return s.ok();
}

// Every own-engine candidate (--all) or each own engine's first per partition.
std::vector<dg::CandidateRef> own_candidates(const dg::PlanSet& ps, bool all) {
  std::vector<dg::CandidateRef> which;
  for (size_t p = 0; p < ps.parts.size(); ++p) {
    std::vector<int> seen;
    for (size_t i = 0; i < ps.parts[p].candidates.size(); ++i) {
      const int e = ps.parts[p].candidates[i].engine_id;
      if (!dg::engine_by_id(e)->compiles_kernels()) continue;
      if (!all && std::find(seen.begin(), seen.end(), e) != seen.end()) continue;
      seen.push_back(e);
      which.push_back({p, i});
    }
  }
  return which;
}

void describe_row(const Workload& w, bool all) {
  dg::Graph g;
  if (!lower(w, g, dg::Handle(dg::Device::cpu()))) return;
  auto gpu = dg::describe_handle();
  dg::Target t;
  t.handle = gpu.get();
  t.dynamic_shapes = dg::impl_of(g).dynamic_shapes;
  auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<dg::PlanSet> ps;
  if (auto s = dg::plan_partitions(dg::impl_of(g), t, {dg::HeurMode::A, dg::HeurMode::FALLBACK}, ps); !s.ok()) return;
  const double plan_ms = ms_since(t0);
  const auto which = own_candidates(*ps, all);
  std::vector<dg::Status> status;
  // Code generation alone: the cache records the keys and compiles nothing.
  dg::KernelCacheImpl keys_only;
  std::vector<dg::KernelKey> keys;
  keys_only.record_keys(&keys, false);
  t.kernel_cache = &keys_only;
  t0 = std::chrono::steady_clock::now();
  dg::build_candidates(*ps, t, which, status);
  const double codegen_ms = ms_since(t0);
  // Code generation + NVRTC, in a cache of its own (the builds then fail to load: no GPU).
  dg::KernelCacheImpl compiled;
  t.kernel_cache = &compiled;
  t0 = std::chrono::steady_clock::now();
  dg::build_candidates(*ps, t, which, status);
  const double total_ms = ms_since(t0);
  std::printf("| %s | %zu | %zu | %zu | %lld | %.1f | %.1f | %.1f |\n", w.name.c_str(), ps->parts.size(), which.size(),
              static_cast<size_t>(compiled.size()), static_cast<long long>(compiled.aot_hits()), plan_ms, codegen_ms,
              total_ms);
}

// Every plan of a fresh A + FALLBACK graph built one after another, each timed: which plans an
// ALL build's time goes to (a runtime compile, a handle's first use, per-config setup).
void each_plan(const Workload& w, const dg::Handle& h) {
  dg::Graph g;
  if (!lower(w, g, h)) return;
  dg::Status s = g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK});
  if (s.ok()) s = g.check_support(h);
  if (!s.ok()) return (void)std::printf("| %s | error: %s |\n", w.name.c_str(), s.to_string().c_str());
  double total = 0;
  for (int64_t i = 0; i < g.get_execution_plan_count(); ++i) {
    std::string name;
    (void)g.get_plan_name_at_index(i, name);
    const auto t0 = std::chrono::steady_clock::now();
    s = g.build_plan_at_index(h, i);
    const double ms = ms_since(t0);
    total += ms;
    std::vector<dg::BehaviorNote> notes;
    const bool compiles = g.get_behavior_notes_for_plan_at_index(i, notes).ok() &&
                          std::count(notes.begin(), notes.end(), dg::BehaviorNote::RUNTIME_COMPILATION) > 0;
    std::printf("  EACH %s %lld %s %.2f ms%s%s\n", w.name.c_str(), static_cast<long long>(i), name.c_str(), ms,
                compiles ? " compiles" : "", s.ok() ? "" : (" error: " + s.to_string()).c_str());
  }
  std::printf("  EACH %s total %.1f ms\n", w.name.c_str(), total);
}

void gpu_row(const Workload& w, const dg::Handle& h, bool all, bool each) {
  dg::KernelCacheImpl& cache = dg::process_kernel_cache();
  auto run = [&](dg::BuildPlanPolicy policy, double& plan_ms, double& build_ms, int64_t& aot, int64_t& compiled) {
    dg::Graph g;
    if (!lower(w, g, h)) return false;
    auto t0 = std::chrono::steady_clock::now();
    dg::Status s = g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK});
    if (s.ok()) s = g.check_support(h);
    plan_ms = ms_since(t0);
    const int64_t aot0 = cache.aot_hits(), miss0 = cache.misses();
    t0 = std::chrono::steady_clock::now();
    if (s.ok()) s = g.build_plans(h, policy);
    build_ms = ms_since(t0);
    aot = cache.aot_hits() - aot0;
    compiled = cache.misses() - miss0 - aot;
    std::string name;
    if (s.ok()) s = g.get_plan_name_at_index(0, name);
    if (!s.ok()) std::printf("| %s | error: %s |\n", w.name.c_str(), s.to_string().c_str());
    if (s.ok() && policy == dg::BuildPlanPolicy::ALL) {
      // How many plans each engine built: the frontend's bench prints its plan count beside its time.
      std::map<std::string, int> per_engine;
      for (int64_t i = 0; i < g.get_execution_plan_count(); ++i) {
        std::string n;
        if (g.get_plan_name_at_index(i, n).ok()) ++per_engine[n.substr(0, n.find('['))];
      }
      std::printf("  ALL of %s: %lld plans:", w.name.c_str(), static_cast<long long>(g.get_execution_plan_count()));
      for (const auto& [engine, count] : per_engine) std::printf(" %s %d", engine.c_str(), count);
      std::printf("\n");
    }
    if (s.ok() && policy == dg::BuildPlanPolicy::HEURISTICS_CHOICE) {
      // Whether plan 0 says its build compiles (cuDNN's runtime fusion, the own engines' NVRTC).
      std::vector<dg::BehaviorNote> notes;
      const bool compiles = g.get_behavior_notes_for_plan_at_index(0, notes).ok() &&
                            std::count(notes.begin(), notes.end(), dg::BehaviorNote::RUNTIME_COMPILATION) > 0;
      std::printf("  plan 0 of %s: %s%s\n", w.name.c_str(), name.c_str(), compiles ? " (RUNTIME_COMPILATION)" : "");
    }
    return s.ok();
  };
  double plan_ms = 0, build_ms = 0, all_plan_ms = 0, all_ms = -1;
  int64_t aot = 0, compiled = 0, all_aot = 0, all_compiled = 0;
  if (!run(dg::BuildPlanPolicy::HEURISTICS_CHOICE, plan_ms, build_ms, aot, compiled)) return;
  if (each) return each_plan(w, h);
  if (all && !run(dg::BuildPlanPolicy::ALL, all_plan_ms, all_ms, all_aot, all_compiled)) return;
  std::printf("| %s | %.1f | %.1f | %lld | %lld | %.1f | %lld |\n", w.name.c_str(), plan_ms, build_ms,
              static_cast<long long>(aot), static_cast<long long>(compiled), all_ms,
              static_cast<long long>(all_compiled));
}

}  // namespace

int main(int argc, char** argv) {
  bool gpu = false, all = false, each = false, files = true;
  std::vector<Workload> work;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--gpu") gpu = true;
    else if (a == "--describe") gpu = false;
    else if (a == "--all") all = true;
    else if (a == "--each") each = true;
    else if (a == "--select" && i + 1 < argc) filters.select.push_back(argv[++i]);
    else if (a == "--deselect" && i + 1 < argc) filters.deselect.push_back(argv[++i]);
    else if (a == "--no-files") files = false;
    else if (a == "--chain" && i + 1 < argc) for (int64_t n : list_of(argv[++i])) work.push_back(chain_workload(n));
    else if (a == "--matmul" && i + 1 < argc) work.push_back(matmul_workload(list_of(argv[++i])));
    else paths.push_back(a);
  }
  if (files && paths.empty())
    for (const auto& e : std::filesystem::directory_iterator(DNNGRAPH_EXAMPLE_GRAPHS)) paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  std::vector<Workload> all_work;
  for (const auto& p : paths) all_work.push_back(file_workload(p));
  all_work.insert(all_work.end(), work.begin(), work.end());
  if (gpu) {
    dg::Handle h(dg::Device::cuda(0));
    if (!h.status().ok()) return std::printf("no GPU: %s\n", h.status().to_string().c_str()), 1;
    std::printf("| workload | plans + support ms | build_plans ms | AOT kernels | compiled | build_plans(ALL) ms | ALL compiled |\n|---|---|---|---|---|---|---|\n");
    for (const auto& w : all_work) gpu_row(w, h, all && !each, each);
  } else {
    std::printf("| workload | partitions | candidates built | kernels | of them AOT | planning ms | codegen ms | codegen + NVRTC (or AOT) ms |\n|---|---|---|---|---|---|---|---|\n");
    for (const auto& w : all_work) describe_row(w, all);
  }
  return 0;
}
