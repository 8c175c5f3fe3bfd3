// The cudnn vendor engine on a GPU: every cuDNN plan of fused conv and matmul graphs against ref
// (TF32 where the graph allows it), serialization, dynamic shapes with a kernel cache, CUDA-graph
// capture, a plan's graphs per pointer set, and cuDNN's own reason in explain(). Skipped without a
// GPU and cuDNN.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "engines/cudnn/cudnn_engine.hpp"
#include "engines/cudnn/graph_cache.hpp"
#include "engines/cudnn_test_graphs.hpp"
#include "engines/test_cuda_util.hpp"
#include "planning/plan_set.hpp"

namespace dnngraph::cudnn {
namespace {

namespace ct = dnngraph::cuda::testing;
namespace dg = dnngraph;
using namespace test_graphs;  // its graphs, and T for DataType

using Rig = ct::DeviceRig;

ct::Outputs ref_outputs(const ct::Builder& build, uint32_t seed = 1) {
  dg::Handle cpu(dg::Device::cpu());
  ct::Outputs want;
  ct::RunOptions o;
  o.engine = "ref";
  o.seed = seed;
  EXPECT_TRUE(ct::run_graph(build, cpu, o, want));
  return want;
}

Status plan_cudnn(const ct::Builder& build, dg::Handle& h, dg::Graph& g, bool dynamic = false) {
  build(g);
  g.select_engines({"cudnn"}).set_dynamic_shape_enabled(dynamic);
  for (const Status& s : {g.validate(), g.build_operation_graph(h),
                          g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::B, dg::HeurMode::FALLBACK}),
                          g.check_support(h)})
    if (!s.ok()) return {s.code(), s.message() + "\n" + g.explain()};
  return {};
}

// Builds and runs plan i of the graph for i < max_plans (every cuDNN engine config), each against ref.
// FLOAT graphs may find no config: cuDNN's fused engines for them can be TF32-only, which dnngraph
// refuses for FLOAT (the reason then says so).
void expect_every_plan_matches_ref(const ct::Builder& build, dg::Handle& h, int64_t max_plans, double tol_scale = 1.0) {
  const ct::Outputs want = ref_outputs(build);
  dg::Graph g;
  const Status planned = plan_cudnn(build, h, g);
  if (!planned.ok() && planned.message().find("in full FLOAT precision (no TF32)") != std::string::npos) {
    std::printf("[ NOTE ] cuDNN has no full-precision config here: %s\n", planned.message().substr(0, 300).c_str());
    return;
  }
  ASSERT_TRUE(planned.ok()) << planned.to_string();
  Rig rig(h, g);
  const int64_t n = std::min(g.get_execution_plan_count(), max_plans);
  int64_t built = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::string name;
    ASSERT_TRUE(g.get_plan_name_at_index(i, name).ok());
    EXPECT_EQ(name.rfind("cudnn[cudnn_engine=", 0), 0u) << name;
    if (Status s = g.build_plan_at_index(h, i); !s.ok()) {
      // A config of modes B/FALLBACK may not finalize for this graph (autotune skips it); cuDNN says why.
      EXPECT_GT(i, 0) << "cuDNN's first choice does not build: " << s.to_string();
      EXPECT_NE(s.message().find("CUDNN_STATUS_"), std::string::npos) << s.to_string();
      continue;
    }
    ++built;
    // the second run makes and launches the plan's CUDA graph
    ASSERT_NO_FATAL_FAILURE(rig.expect_plan_matches(g, i, 2, want, name, tol_scale));
  }
  EXPECT_GT(built, 0);
}

class CudnnGpu : public ct::VendorGpuTest<CudnnApi, api, error> {};

TEST_F(CudnnGpu, FusedConvEveryPlanMatchesRef) {
  expect_every_plan_matches_ref(conv_bias_relu({2, 32, 12, 12}, 64, {1, 1}, {1, 1}, {1, 1}, T::BFLOAT16), *h_, 100);
  expect_every_plan_matches_ref(conv_bias_relu({3, 16, 9, 11}, 24, {1, 0}, {2, 1}, {1, 2}, T::FLOAT), *h_, 6);
  expect_every_plan_matches_ref(conv_bias_relu({2, 16, 21}, 32, {1}, {1}, {1}, T::HALF), *h_, 4);
}

// With allow_tf32 a FLOAT conv may take cuDNN's tensor-core configs: they must plan, and match ref
// within TF32's error (inputs rounded to a 10-bit mantissa: a normwise error near 2^-11).
TEST_F(CudnnGpu, Tf32ConvPlansWhenTheGraphAllowsIt) {
  const ct::Builder fp32 = conv_bias_relu({2, 64, 14, 14}, 64, {1, 1}, {1, 1}, {1, 1}, T::FLOAT);
  const ct::Builder tf32 = [fp32](dg::Graph& g) {
    fp32(g);
    g.set_allow_tf32(true);
  };
  dg::Graph g;
  const Status planned = plan_cudnn(tf32, *h_, g);
  ASSERT_TRUE(planned.ok()) << planned.to_string();
  expect_every_plan_matches_ref(tf32, *h_, 6, 50.0);
}

// conv_dgrad (a stride-2 transposed convolution) and conv_wgrad on their own: offered since these
// checks, every config against ref.
TEST_F(CudnnGpu, DgradAndWgradEveryPlanMatchesRef) {
  expect_every_plan_matches_ref(conv_dgrad_stride2({2, 32, 9, 7}, 24, 4, T::BFLOAT16), *h_, 24);
  expect_every_plan_matches_ref(conv_dgrad_stride2({1, 16, 6, 6}, 8, 4, T::HALF), *h_, 8);
  expect_every_plan_matches_ref(conv_wgrad_3x3({2, 24, 10, 9}, 32, T::BFLOAT16), *h_, 24);
  expect_every_plan_matches_ref(conv_wgrad_3x3({1, 16, 7, 7}, 8, T::HALF), *h_, 8);
}

TEST_F(CudnnGpu, MatmulEpilogueEveryPlanMatchesRef) {
  expect_every_plan_matches_ref(matmul_epilogue(3, 64, 48, 40, T::BFLOAT16), *h_, 8);
  expect_every_plan_matches_ref(matmul_epilogue(2, 32, 24, 16, T::HALF), *h_, 4);
}

// The plan names of the graph planned with `modes`, cudnn only.
std::vector<std::string> cudnn_plans(const ct::Builder& build, dg::Handle& h, const std::vector<dg::HeurMode>& modes) {
  dg::Graph g;
  build(g);
  g.select_engines({"cudnn"});
  std::vector<std::string> names;
  for (const Status& s : {g.validate(), g.build_operation_graph(h), g.create_execution_plans(modes)})
    if (!s.ok()) return ADD_FAILURE() << s.to_string(), names;
  for (int64_t i = 0; i < g.get_execution_plan_count(); ++i) {
    std::string name;
    EXPECT_TRUE(g.get_plan_name_at_index(i, name).ok());
    names.push_back(name);
  }
  return names;
}

// The engine offers the configs of the modes the plans are made for, as the frontend asks cuDNN:
// [A, FALLBACK] gets no config that only mode B offers (each one a build_plans(ALL) compiles).
TEST_F(CudnnGpu, OnlyTheRequestedHeuristicModesConfigsAreOffered) {
  for (const auto& build : {conv_bias_relu({2, 32, 12, 12}, 64, {1, 1}, {1, 1}, {1, 1}, T::BFLOAT16),
                            matmul_epilogue(3, 64, 48, 40, T::BFLOAT16)}) {
    const auto a = cudnn_plans(build, *h_, {dg::HeurMode::A});
    const auto b = cudnn_plans(build, *h_, {dg::HeurMode::B});
    const auto fallback = cudnn_plans(build, *h_, {dg::HeurMode::FALLBACK});
    const auto a_fallback = cudnn_plans(build, *h_, {dg::HeurMode::A, dg::HeurMode::FALLBACK});
    const auto every = cudnn_plans(build, *h_, {dg::HeurMode::A, dg::HeurMode::B, dg::HeurMode::FALLBACK});
    ASSERT_FALSE(a.empty());
    auto has = [](const std::vector<std::string>& v, const std::string& n) {
      return std::find(v.begin(), v.end(), n) != v.end();
    };
    for (const auto& n : a_fallback) EXPECT_TRUE(has(a, n) || has(fallback, n)) << n;
    for (const auto& n : a) EXPECT_TRUE(has(a_fallback, n)) << n;
    for (const auto& n : fallback) EXPECT_TRUE(has(a_fallback, n)) << n;
    for (const auto& n : every) EXPECT_TRUE(has(a_fallback, n) || has(b, n)) << n;
    for (const auto& n : b) EXPECT_TRUE(has(every, n)) << n;
    size_t b_only = 0;
    for (const auto& n : b) b_only += has(a_fallback, n) ? 0 : 1;
    EXPECT_EQ(every.size(), a_fallback.size() + b_only);
    std::printf("[ NOTE ] cuDNN configs: A %zu, B %zu, FALLBACK %zu, A+FALLBACK %zu, all %zu\n", a.size(), b.size(),
                fallback.size(), a_fallback.size(), every.size());
  }
}

TEST_F(CudnnGpu, SerializedPlanReloadsWithoutHeuristicsChoiceChanging) {
  const auto build = conv_bias_relu({2, 16, 8, 8}, 32, {1, 1}, {1, 1}, {1, 1}, T::HALF);
  const ct::Outputs want = ref_outputs(build);
  dg::Graph g;
  ASSERT_TRUE(plan_cudnn(build, *h_, g).ok());
  ASSERT_TRUE(g.build_plans(*h_).ok());
  std::vector<uint8_t> bytes;
  dg::Graph loaded;
  ASSERT_TRUE(ct::serialize_and_reload(g, *h_, loaded, bytes));
  EXPECT_NE(loaded.explain().find("cudnn[cudnn_engine="), std::string::npos);
  Rig rig(*h_, loaded);
  ASSERT_TRUE(ct::execute_in_workspace(loaded, *h_, rig.pack));
  rig.expect_matches(want, "deserialized plan");
  // A corrupt cuDNN payload is an error, not a crash: flip a byte inside the JSON.
  bytes[bytes.size() / 2] ^= 0x5a;
  dg::Graph broken;
  EXPECT_FALSE(broken.deserialize(*h_, bytes).ok());
}

TEST_F(CudnnGpu, DynamicShapesShareAKernelCache) {
  auto cache = std::make_shared<dg::KernelCache>();
  for (int64_t n : {2, 6}) {
    const auto build = conv_bias_relu({n, 16, 10, 10}, 32, {1, 1}, {1, 1}, {1, 1}, T::BFLOAT16);
    const ct::Outputs want = ref_outputs(build);
    dg::Graph g;
    g.set_kernel_cache(cache);
    ASSERT_TRUE(plan_cudnn(build, *h_, g, true).ok());
    ASSERT_TRUE(g.build_plans(*h_).ok());
    Rig rig(*h_, g);
    ASSERT_TRUE(ct::execute_in_workspace(g, *h_, rig.pack));
    rig.expect_matches(want, "n = " + std::to_string(n));
  }
}

TEST_F(CudnnGpu, RunsOnTheHandlesStreamInsideACudaGraph) {
  const auto build = conv_bias_relu({2, 16, 8, 8}, 16, {1, 1}, {1, 1}, {1, 1}, T::BFLOAT16);
  const ct::Outputs want = ref_outputs(build);
  void* stream = nullptr;
  ASSERT_TRUE(cuda::create_stream(impl_of(*h_), &stream).ok());
  ASSERT_TRUE(h_->set_stream(stream).ok());
  dg::Graph g;
  ASSERT_TRUE(plan_cudnn(build, *h_, g).ok());
  ASSERT_TRUE(g.build_plans(*h_).ok());
  Rig rig(*h_, g);
  int64_t ws = 0;
  ASSERT_TRUE(g.get_workspace_size(ws).ok());
  const memory::Buffer workspace = ct::workspace_buffer(*h_, ws);
  {
    ct::CapturedGraph captured;
    ASSERT_TRUE(captured.capture(g, *h_, rig.pack, workspace.get()));
    rig.poison();
    ASSERT_TRUE(captured.launch(*h_));
    rig.expect_matches(want, "CUDA graph replay");
  }
  (void)h_->set_stream(nullptr);
  cuda::destroy_stream(impl_of(*h_), stream);
}

// Pointer sets with different data: two alternated, then four cycled, then more sets than a plan
// keeps graphs for, then two of them long enough to replace idle graphs, on two workspaces and,
// for the second half of the calls, on another stream;
// then the whole graph captured with populate_cuda_graph, and plain executes again. Every call's
// outputs are NaN-poisoned and checked against ref, so a graph that held another set's pointers
// (or workspace) would show.
TEST_F(CudnnGpu, EachPointerSetReplaysItsOwnGraph) {
  const auto build = conv_bias_relu({2, 16, 8, 8}, 32, {1, 1}, {1, 1}, {1, 1}, T::BFLOAT16);
  const int sets = static_cast<int>(GraphCache::kCapacity) + 2;
  std::vector<ct::Outputs> want;
  for (int i = 0; i < sets; ++i) want.push_back(ref_outputs(build, 11u + static_cast<uint32_t>(i)));
  dg::Graph g;
  ASSERT_TRUE(plan_cudnn(build, *h_, g).ok());
  std::vector<std::unique_ptr<Rig>> rigs;
  for (int i = 0; i < sets; ++i) rigs.push_back(std::make_unique<Rig>(*h_, g, 11u + static_cast<uint32_t>(i)));
  std::vector<int> order;
  // push_back, not insert of a list: GCC 12 at -O3 warns of an overflow in the inlined insert.
  for (int t = 0; t < 4; ++t)
    for (int i : {0, 1}) order.push_back(i);
  for (int t = 0; t < 4; ++t)
    for (int i : {0, 1, 2, 3}) order.push_back(i);
  for (int t = 0; t < 3; ++t)
    for (int i = 0; i < sets; ++i) order.push_back(i);
  // The last two sets alone until the least recently used graphs have sat idle: they take their
  // places (a captured graph updated to other pointers), then every set once more.
  for (uint64_t t = 0; t < 2 * GraphCache::kIdleCalls; ++t) order.push_back(sets - 1 - static_cast<int>(t % 2));
  for (int i = 0; i < sets; ++i) order.push_back(i);
  void* stream = nullptr;
  ASSERT_TRUE(cuda::create_stream(impl_of(*h_), &stream).ok());
  ASSERT_NO_FATAL_FAILURE(for_each_built_plan(g, *h_, 3, [&](int64_t p, const std::string& name, int64_t ws) {
    const memory::Buffer w1 = ct::workspace_buffer(*h_, ws);
    const memory::Buffer w2 = ct::workspace_buffer(*h_, ws);
    ASSERT_TRUE(h_->set_stream(nullptr).ok());
    for (size_t call = 0; call < order.size(); ++call) {
      if (call == order.size() / 2) {
        ASSERT_TRUE(h_->set_stream(stream).ok());
      }
      Rig& r = *rigs[static_cast<size_t>(order[call])];
      void* w = (call / 12) % 2 ? w2.get() : w1.get();
      r.poison();
      const Status run = g.execute_plan_at_index(*h_, r.pack, w, p, ws);
      ASSERT_TRUE(run.ok()) << name << ": " << run.to_string();
      r.expect_matches(want[static_cast<size_t>(order[call])], name + ", call " + std::to_string(call) + " (set " +
                                                                   std::to_string(order[call]) + ")");
    }
  }));
  // The graph's default plan, captured whole on the handle's stream with set 1, then executed
  // plainly with sets 0 and 1 (whose graphs the plan holds).
  ASSERT_TRUE(g.build_plans(*h_).ok());
  int64_t ws = 0;
  ASSERT_TRUE(g.get_workspace_size(ws).ok());
  const memory::Buffer workspace = ct::workspace_buffer(*h_, ws);
  for (int t = 0; t < 2; ++t) {
    for (int i : {0, 1}) ASSERT_TRUE(g.execute(*h_, rigs[static_cast<size_t>(i)]->pack, workspace.get(), ws).ok());
  }
  {
    ct::CapturedGraph captured;
    ASSERT_TRUE(captured.capture(g, *h_, rigs[1]->pack, workspace.get()));
    rigs[1]->poison();
    ASSERT_TRUE(captured.launch(*h_));
    rigs[1]->expect_matches(want[1], "populate_cuda_graph replay");
    for (int i : {0, 1, 0}) {
      rigs[static_cast<size_t>(i)]->poison();
      ASSERT_TRUE(g.execute(*h_, rigs[static_cast<size_t>(i)]->pack, workspace.get(), ws).ok());
      rigs[static_cast<size_t>(i)]->expect_matches(want[static_cast<size_t>(i)],
                                                   "execute after the capture, set " + std::to_string(i));
    }
  }
  (void)h_->set_stream(nullptr);
  cuda::destroy_stream(impl_of(*h_), stream);
}

}  // namespace
}  // namespace dnngraph::cudnn
