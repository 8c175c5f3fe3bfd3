// dnngraph's own engines beside the vendor engines (cudnn, cublaslt) in one plan list, measured in
// the same run on the workloads of shared/bench/ANCHORS.md (bf16, fp32 accumulation, NHWC):
// the tutorial conv 3x3 + bias + ReLU, ResNet-50 3x3 layers, and the tutorial matmul chain.
//
//   dnngraph_vendor_bench [--own N] [--vendor N] [--only SUBSTRING] [--budget SECONDS]
//
// For each workload every candidate of the planner is listed; the first N of each own engine
// (default 1: own engines compile with NVRTC, so "own" is the heuristics' first choice, not the
// best own plan) and up to N vendor plans (default 80) are built and
// timed with CUDA events (median of 5 repeats of ~10 ms). Prints
//   PLAN <workload> <ms> <label>
//   RESULT <workload> own <ms> <label> | cudnn <ms> <label> (<n> plans) | own/cudnn <x> | anchor <ms> cudnn/anchor <x>
//   HOST <workload> <label> <us per execute_plan_at_index>, <us per Plan::execute> (host time of one
//        enqueue through the Graph API, and of the engine's plan alone); for the cuDNN plan also
//        the same plan rebuilt with DNNGRAPH_CUDNN_NATIVE_GRAPH=0 (cudnnBackendExecute on every
//        call, cuDNN's own launch path)
//   SETS <workload> <label> host us per call with the same pointers, 2 and 4 pointer sets
//        alternated, and a new pointer set every call (the cuDNN plan's graphs by pointer set;
//        again for the plan rebuilt with DNNGRAPH_CUDNN_NATIVE_GRAPH=0)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "event_timing.hpp"
#include "core/dtype.hpp"
#include "dnngraph/dnngraph.hpp"
#include "engines/cudnn/cudnn_engine.hpp"
#include "engines/vendor_libraries.hpp"
#include "graph/graph_impl.hpp"
#include "planning/plan_set.hpp"
#include "runtime/cuda/context.hpp"
#include "runtime/memory.hpp"

namespace dg = dnngraph;
using namespace gpu_bench;
using Clock = std::chrono::steady_clock;

namespace {

int g_own = 1, g_vendor = 80;
double g_budget = 1e9;
std::string g_only;
const Clock::time_point g_start = Clock::now();

double elapsed() { return std::chrono::duration<double>(Clock::now() - g_start).count(); }

using dg::Status;

bool is_vendor(const std::string& engine) { return engine == "cudnn" || engine == "cublaslt"; }

struct Timed {
  double ms = 1e30;
  std::string label;
  int64_t index = -1;
};

// Median time of one execute() of plan `idx`, in seconds.
double time_plan(dg::Graph& g, dg::Handle& handle, const dg::VariantPack& pack, void* ws, int64_t ws_bytes,
                 int64_t idx) {
  auto once = [&] { return g.execute_plan_at_index(handle, pack, ws, idx, ws_bytes); };
  for (int i = 0; i < 3; ++i) (void)once();  // warm up
  double seconds = 1e30;
  (void)seconds_per_call(impl_of(handle), once, {0.01, 500, 5}, seconds);  // repeats of ~10 ms
  return seconds;
}

// Host microseconds per execute() of plan `idx`: 100 calls enqueued back to back, then one sync.
double host_us(dg::Graph& g, dg::Handle& handle, const dg::VariantPack& pack, void* ws, int64_t ws_bytes,
               int64_t idx) {
  constexpr int kCalls = 100;
  (void)dg::memory::synchronize(impl_of(handle));
  const auto t0 = Clock::now();
  for (int i = 0; i < kCalls; ++i) (void)g.execute_plan_at_index(handle, pack, ws, idx, ws_bytes);
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kCalls;
  (void)dg::memory::synchronize(impl_of(handle));
  return us;
}

// The same for the engine's Plan::execute alone (the variant pack resolved once, outside the loop).
double engine_host_us(dg::Graph& g, dg::Handle& handle, const dg::VariantPack& pack, void* ws, int64_t idx) {
  constexpr int kCalls = 100;
  std::vector<void*> ptrs;
  std::vector<double> scalars;
  if (!check(dg::resolve_pack(impl_of(g), handle, &pack, nullptr, ws, -1, 0, ptrs, scalars), "resolve_pack")) return -1;
  const auto& pp = impl_of(g).plans->parts.at(0);
  const auto& plan = pp.built.at(pp.index_for(idx));
  if (!plan) return -1;
  const dg::ExecArgs args{impl_of(handle), ptrs, static_cast<char*>(ws) + impl_of(g).plans->intermediates_bytes};
  (void)dg::memory::synchronize(impl_of(handle));
  const auto t0 = Clock::now();
  for (int i = 0; i < kCalls; ++i) (void)plan->execute(args);
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kCalls;
  (void)dg::memory::synchronize(impl_of(handle));
  return us;
}

// Pointer sets for the host-cost runs: set j points every tensor of the workload's pack j * 256
// bytes into one allocation per tensor (set 0's data is random, the others hold whatever the
// allocation holds: the host cost of a launch does not depend on the data).
struct PointerSets {
  std::vector<dg::memory::Buffer> buffers;
  std::vector<dg::VariantPack> packs;
  std::vector<std::vector<void*>> ptrs;  // resolved by IR tensor id, for Plan::execute
  std::vector<std::vector<double>> scalars;

  PointerSets(dg::Graph& g, dg::Handle& handle, const dg::VariantPack& pack, int count, void* ws)
      : packs(static_cast<size_t>(count)), ptrs(packs.size()), scalars(packs.size()) {
    for (const auto& [t, p] : pack) {
      int64_t bytes = 0;
      for (const auto& it : impl_of(g).ir->tensors)
        if (it.uid == t->get_uid()) bytes = it.span_bytes();
      buffers.emplace_back(impl_of(handle), static_cast<size_t>(bytes + 256 * count));
      for (int j = 0; j < count; ++j) packs[static_cast<size_t>(j)][t] = static_cast<char*>(buffers.back().get()) + 256 * j;
    }
    for (size_t j = 0; j < packs.size(); ++j)
      (void)check(dg::resolve_pack(impl_of(g), handle, &packs[j], nullptr, ws, -1, 0, ptrs[j], scalars[j]), "resolve_pack");
  }
};

// Host microseconds per call over 100 calls, call i with pointer set `first + i % cycle` (cycle 0:
// a new set on every call, none seen before), after 3 cycles of warm-up: through the Graph API
// (execute_plan_at_index) or the engine's Plan::execute alone.
double sets_host_us(dg::Graph& g, dg::Handle& handle, const PointerSets& sets, int first, int cycle, void* ws,
                    int64_t ws_bytes, int64_t idx, bool graph_api) {
  constexpr int kCalls = 100;
  const auto& pp = impl_of(g).plans->parts.at(0);
  const auto& plan = pp.built.at(pp.index_for(idx));
  if (!plan) return -1;
  char* plan_ws = static_cast<char*>(ws) + impl_of(g).plans->intermediates_bytes;
  auto call = [&](int i) {
    const size_t j = static_cast<size_t>(first + (cycle ? i % cycle : i));
    if (graph_api) return g.execute_plan_at_index(handle, sets.packs[j], ws, idx, ws_bytes);
    return plan->execute(dg::ExecArgs{impl_of(handle), sets.ptrs[j], plan_ws});
  };
  for (int i = 0; cycle && i < 3 * cycle; ++i) (void)call(i);
  (void)dg::memory::synchronize(impl_of(handle));
  const auto t0 = Clock::now();
  for (int i = 0; i < kCalls; ++i) (void)call(i);
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kCalls;
  (void)dg::memory::synchronize(impl_of(handle));
  return us;
}

// SETS line: host us per call of the plan for the same pointers every call, 2 and 4 pointer sets
// alternated, and a new pointer set every call; each through the Graph API / Plan::execute.
void pointer_set_costs(const std::string& name, const std::string& label, dg::Graph& g, dg::Handle& handle,
                       const dg::VariantPack& pack, int64_t idx) {
  int64_t ws = 0;
  (void)g.get_workspace_size_plan_at_index(idx, ws);
  dg::memory::Buffer workspace(impl_of(handle), static_cast<size_t>(ws) + 256);
  const PointerSets sets(g, handle, pack, 7 + 2 * 100, workspace.get());
  std::printf("SETS %s %s us per call (execute_plan_at_index / Plan::execute):", name.c_str(), label.c_str());
  const int first[] = {0, 1, 3}, cycle[] = {1, 2, 4};
  const char* what[] = {"same pointers", "2 sets alternated", "4 sets cycled"};
  for (int k = 0; k < 3; ++k)
    std::printf(" %s %.2f / %.2f |", what[k], sets_host_us(g, handle, sets, first[k], cycle[k], workspace.get(), ws, idx, true),
                sets_host_us(g, handle, sets, first[k], cycle[k], workspace.get(), ws, idx, false));
  const double api = sets_host_us(g, handle, sets, 7, 0, workspace.get(), ws, idx, true);
  std::printf(" a new set every call %.2f / %.2f\n", api, sets_host_us(g, handle, sets, 107, 0, workspace.get(), ws, idx, false));
}

// The best cuDNN plan's launch paths on the same run: its graphs by pointer set (SETS), then the
// plan rebuilt with DNNGRAPH_CUDNN_NATIVE_GRAPH=0 (cudnnBackendExecute on every call, the path
// cuDNN itself offers), its GPU time and host time.
void cudnn_launch_paths(const std::string& name, dg::Graph& g, dg::Handle& handle, const dg::VariantPack& pack,
                        const Timed& dnn) {
  dg::HandleImpl& h = impl_of(handle);
  int64_t ws = 0;
  (void)g.get_workspace_size_plan_at_index(dnn.index, ws);
  dg::memory::Buffer w1(h, static_cast<size_t>(ws) + 256);
  pointer_set_costs(name, dnn.label, g, handle, pack, dnn.index);
  auto& pp = impl_of(g).plans->parts.at(0);
  auto& slot = pp.built.at(pp.index_for(dnn.index));
  std::printf("PATH %s %s launches by %s\n", name.c_str(), dnn.label.c_str(), dg::cudnn::launch_path(*slot).c_str());
  auto native = std::move(slot);
  setenv("DNNGRAPH_CUDNN_NATIVE_GRAPH", "0", 1);
  const bool rebuilt = check(g.build_plan_at_index(handle, dnn.index), name + " rebuild without the native graph");
  unsetenv("DNNGRAPH_CUDNN_NATIVE_GRAPH");
  if (rebuilt) {
    (void)g.execute_plan_at_index(handle, pack, w1.get(), dnn.index, ws);
    const double ms = time_plan(g, handle, pack, w1.get(), ws, dnn.index) * 1e3;
    std::printf("HOST %s %s cudnnBackendExecute: %.2f us per execute_plan_at_index, %.2f us per Plan::execute, "
                "%.4f ms on the GPU\n",
                name.c_str(), dnn.label.c_str(), host_us(g, handle, pack, w1.get(), ws, dnn.index),
                engine_host_us(g, handle, pack, w1.get(), dnn.index), ms);
    pointer_set_costs(name, dnn.label + " (DNNGRAPH_CUDNN_NATIVE_GRAPH=0)", g, handle, pack, dnn.index);
  }
  slot = std::move(native);
}

void run(const std::string& name, dg::Graph& g, dg::Handle& handle, const dg::VariantPack& pack, double anchor_ms) {
  dg::HandleImpl& h = impl_of(handle);
  g.deselect_engines({"ref"});
  if (!check(g.validate(), name) || !check(g.build_operation_graph(handle), name) ||
      !check(g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::B, dg::HeurMode::FALLBACK}), name) ||
      !check(g.check_support(handle), name)) {
    std::printf("%s\n", g.explain().c_str());
    return;
  }
  const auto& cands = impl_of(g).plans->parts.at(0).candidates;
  std::printf("WORKLOAD %s: %zu candidates\n", name.c_str(), cands.size());
  std::map<std::string, int> taken;
  std::map<std::string, Timed> best;  // "own" / engine name
  int vendor_timed = 0, build_failures = 0;
  for (size_t i = 0; i < cands.size() && elapsed() < g_budget; ++i) {
    const std::string engine(dg::engine_by_id(cands[i].engine_id)->name());
    if (taken[engine] >= (is_vendor(engine) ? g_vendor : g_own)) continue;
    ++taken[engine];
    const int64_t idx = static_cast<int64_t>(i);
    const std::string label = cands[i].label();
    if (Status s = g.build_plan_at_index(handle, idx); !s.ok()) {
      if (!is_vendor(engine)) check(s, name + " build " + label);
      ++build_failures;  // a vendor config that does not finalize for this graph is skipped, as autotune does
      continue;
    }
    int64_t ws = 0;
    (void)g.get_workspace_size_plan_at_index(idx, ws);
    dg::memory::Buffer workspace(h, static_cast<size_t>(ws) + 256);
    if (!check(g.execute_plan_at_index(handle, pack, workspace.get(), idx, ws), name + " execute " + label)) continue;
    const double ms = time_plan(g, handle, pack, workspace.get(), ws, idx) * 1e3;
    std::printf("PLAN %s %.4f %s\n", name.c_str(), ms, label.c_str());
    Timed& b = best[is_vendor(engine) ? engine : "own"];
    if (ms < b.ms) b = {ms, label, idx};
    vendor_timed += is_vendor(engine);
  }
  const Timed own = best["own"], dnn = best["cudnn"], lt = best["cublaslt"];
  if (dnn.index < 0) std::printf("NOTE %s: no cuDNN plan ran (see explain() for cudnn's verdict)\n", name.c_str());
  std::printf("RESULT %s own %.4f %s | cudnn %.4f %s (%d vendor plans timed) | own/cudnn %.2f | anchor %.4f "
              "cudnn/anchor %.3f",
              name.c_str(), own.ms, own.label.c_str(), dnn.ms, dnn.label.c_str(), vendor_timed, own.ms / dnn.ms,
              anchor_ms, dnn.ms / anchor_ms);
  if (lt.index >= 0) std::printf(" | cublaslt %.4f %s", lt.ms, lt.label.c_str());
  std::printf(" | %d plans did not build\n", build_failures);
  for (const Timed* t : {&dnn, &own}) {
    if (t->index < 0) continue;
    int64_t ws = 0;
    (void)g.get_workspace_size_plan_at_index(t->index, ws);
    dg::memory::Buffer workspace(h, static_cast<size_t>(ws) + 256);
    const double graph_us = host_us(g, handle, pack, workspace.get(), ws, t->index);
    std::printf("HOST %s %s %.2f us per execute_plan_at_index, %.2f us per Plan::execute\n", name.c_str(),
                t->label.c_str(), graph_us, engine_host_us(g, handle, pack, workspace.get(), t->index));
  }
  if (dnn.index >= 0) cudnn_launch_paths(name, g, handle, pack, dnn);
  std::fflush(stdout);
}

// Whether --only leaves out the workload.
bool left_out(const std::string& name) { return !g_only.empty() && name.find(g_only) == std::string::npos; }

// The workloads' graphs: bf16 I/O, fp32 intermediates and accumulation.
dg::Graph bf16_graph() {
  dg::Graph g;
  g.set_io_data_type(dg::DataType::BFLOAT16).set_intermediate_data_type(dg::DataType::FLOAT)
      .set_compute_data_type(dg::DataType::FLOAT);
  return g;
}

// conv 3x3 pad 1 + bias + ReLU, NHWC bf16.
void conv(dg::Handle& handle, const std::string& name, int64_t n, int64_t c, int64_t hw, int64_t k, double anchor) {
  if (left_out(name)) return;
  dg::HandleImpl& h = impl_of(handle);
  const Dims xd{n, c, hw, hw}, wd{k, c, 3, 3}, yd{n, k, hw, hw}, bd{1, k, 1, 1};
  DeviceTensor x(h, volume(xd), dg::DataType::BFLOAT16, 1), w(h, volume(wd), dg::DataType::BFLOAT16, 2),
      b(h, volume(bd), dg::DataType::BFLOAT16, 3);
  dg::memory::Buffer y(h, static_cast<size_t>(volume(yd) * 2));
  dg::Graph g = bf16_graph();
  auto X = g.tensor(dg::TensorAttr().set_name("X").set_dim(xd).set_stride(channels_last(xd)));
  auto W = g.tensor(dg::TensorAttr().set_name("W").set_dim(wd).set_stride(channels_last(wd)));
  auto B = g.tensor(dg::TensorAttr().set_name("B").set_dim(bd).set_stride(channels_last(bd)));
  auto Y = g.relu(g.bias(g.conv_fprop(X, W, dg::ConvFpropAttr().set_padding({1, 1})), B));
  Y->set_output(true).set_stride(channels_last(yd));
  run(name, g, handle, {{X, x.buf.get()}, {W, w.buf.get()}, {B, b.buf.get()}, {Y, y.get()}}, anchor);
}

// The tutorial matmul chain: (16,512,1024) x (16,1024,512) x 0.125 + bias -> GELU, with AMAX.
void matmul(dg::Handle& handle, const std::string& name, double anchor) {
  if (left_out(name)) return;
  dg::HandleImpl& h = impl_of(handle);
  const Dims ad{16, 512, 1024}, bd{16, 1024, 512}, cd{16, 512, 512}, biasd{1, 1, 512};
  DeviceTensor a(h, volume(ad), dg::DataType::BFLOAT16, 4), b(h, volume(bd), dg::DataType::BFLOAT16, 5),
      bias(h, 512, dg::DataType::BFLOAT16, 6);
  dg::memory::Buffer c(h, static_cast<size_t>(volume(cd) * 2)), amax(h, 4);
  dg::Graph g = bf16_graph();
  auto A = g.tensor(dg::TensorAttr().set_name("A").set_dim(ad).set_stride(packed(ad)));
  auto B = g.tensor(dg::TensorAttr().set_name("B").set_dim(bd).set_stride(packed(bd)));
  auto Bias = g.tensor(dg::TensorAttr().set_name("bias").set_dim(biasd).set_stride(packed(biasd)));
  auto C = g.gelu(g.bias(g.scale(g.matmul(A, B, dg::MatmulAttr()), g.tensor(0.125)), Bias));
  auto Amax = g.reduction(C, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX));
  Amax->set_dim({1, 1, 1}).set_output(true).set_data_type(dg::DataType::FLOAT);
  C->set_output(true);
  run(name, g, handle, {{A, a.buf.get()}, {B, b.buf.get()}, {Bias, bias.buf.get()}, {C, c.get()}, {Amax, amax.get()}},
      anchor);
}

// Causal attention, bf16, [b, h, s, d] packed, scale 1/sqrt(d).
void sdpa(dg::Handle& handle, const std::string& name, int64_t b, int64_t hd, int64_t s, int64_t d, double anchor) {
  if (left_out(name)) return;
  dg::HandleImpl& h = impl_of(handle);
  const Dims qd{b, hd, s, d};
  DeviceTensor q(h, volume(qd), dg::DataType::BFLOAT16, 7), k(h, volume(qd), dg::DataType::BFLOAT16, 8),
      v(h, volume(qd), dg::DataType::BFLOAT16, 9);
  dg::memory::Buffer o(h, static_cast<size_t>(volume(qd) * 2));
  dg::Graph g = bf16_graph();
  auto t = [&](const char* n) { return g.tensor(dg::TensorAttr().set_name(n).set_dim(qd).set_stride(packed(qd))); };
  auto Q = t("Q"), K = t("K"), V = t("V");
  auto [O, S] = g.sdpa(Q, K, V, dg::SdpaAttr().set_is_inference(true).set_causal_mask(true));
  O->set_output(true);
  run(name, g, handle, {{Q, q.buf.get()}, {K, k.buf.get()}, {V, v.buf.get()}, {O, o.get()}}, anchor);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--own")) g_own = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--vendor")) g_vendor = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--only")) g_only = argv[i + 1];
    else if (!std::strcmp(argv[i], "--budget")) g_budget = std::atof(argv[i + 1]);
  }
  dg::Handle handle(dg::Device::cuda(0));
  if (!check(handle.status(), "cuda:0")) return 1;
  std::printf("device %s\n%s", impl_of(handle).info.name.c_str(), dg::describe_vendor_libraries().c_str());
  conv(handle, "conv_tutorial_n32", 32, 128, 56, 256, 0.0986);
  sdpa(handle, "sdpa_tutorial_b4h16s1024d64_causal", 4, 16, 1024, 64, 0.0413);
  conv(handle, "rn50_3x3_c64_56", 32, 64, 56, 64, 0.0385);
  conv(handle, "rn50_3x3_c256_14", 32, 256, 14, 256, 0.0309);
  conv(handle, "rn50_3x3_n8_c64_32", 8, 64, 32, 64, 0.0174);
  matmul(handle, "matmul_tutorial_chain", 0.0323);
  sdpa(handle, "sdpa_b4h16s4096d128_causal", 4, 16, 4096, 128, 0.4841);
  std::printf("done in %.1f s\n", elapsed());
  return 0;
}
