// Plan build time (issue #16): build_plans builds concurrently with the same outcome as one by
// one, builds only what it is asked for, planning compiles nothing, long pointwise runs are split
// on GPUs, and ref plans say they are the slow reference. The GPU cases plan for a described H200
// (planning/described_target.hpp), so they run on a machine without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/plan_names.hpp"
#include "dnngraph/dnngraph.hpp"
#include "graph/graph_impl.hpp"
#include "planning/build_limits.hpp"
#include "planning/described_target.hpp"
#include "planning/kernel_cache.hpp"
#include "planning/plan_build.hpp"
#include "runtime/cuda/driver_api.hpp"
#include "common/scoped_env.hpp"

namespace dg = dnngraph;

namespace {

const std::vector<std::string> kExampleGraphs{
    "convnet_block_small.json",        "convnet_block.json",        "tutorial_conv_bias_relu.json",
    "tutorial_conv_bias_relu_small.json", "tutorial_matmul_epilogue_amax.json", "tutorial_matmul_epilogue_amax_small.json",
    "tutorial_sdpa_causal.json",       "tutorial_sdpa_causal_small.json"};

::testing::AssertionResult load_lowered(const std::string& file, dg::Graph& g, const dg::Handle& h) {
  std::ifstream f(std::string(DNNGRAPH_EXAMPLE_GRAPHS) + "/" + file);
  std::stringstream ss;
  ss << f.rdbuf();
  dg::Status s = dg::Graph::from_json(ss.str(), g);
  if (s.ok()) s = g.validate();
  if (s.ok()) s = g.build_operation_graph(h);
  if (!s.ok()) return ::testing::AssertionFailure() << file << ": " << s.to_string();
  return ::testing::AssertionSuccess();
}

void chain(dg::Graph& g, int64_t n) {
  g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  auto x = g.tensor(dg::TensorAttr().set_name("x").set_dim({1, 16, 4, 4}).set_stride({256, 16, 4, 1}));
  auto b = g.tensor(dg::TensorAttr().set_name("b").set_dim({1, 16, 1, 1}).set_stride({16, 1, 1, 1}));
  for (int64_t i = 0; i < n; ++i) x = (i % 2 == 0) ? g.relu(x) : g.bias(x, b);
  x->set_output(true);
}

using test_build::plan_names;

// A target for the described H200 whose kernel cache only records the keys it is asked for.
struct DescribedH200 {
  std::shared_ptr<dg::HandleImpl> handle = dg::describe_handle();
  dg::KernelCacheImpl cache;
  std::vector<dg::KernelKey> keys;
  dg::Target target(bool dynamic = false) {
    cache.record_keys(&keys, false);
    dg::Target t;
    t.handle = handle.get();
    t.dynamic_shapes = dynamic;
    t.kernel_cache = &cache;
    return t;
  }
};

using test_env::ScopedEnv;

}  // namespace

TEST(PlanBuild, AllOnTheCpuBuildsEveryCandidateAsBefore) {
  dg::Handle cpu(dg::Device::cpu());
  std::vector<std::string> first;
  for (const char* threads : {"1", "8"}) {
    ScopedEnv env("DNNGRAPH_BUILD_THREADS", threads);
    dg::Graph g;
    ASSERT_TRUE(load_lowered("convnet_block_small.json", g, cpu));
    ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}).ok());
    ASSERT_TRUE(g.check_support(cpu).ok());
    ASSERT_TRUE(g.build_plans(cpu, dg::BuildPlanPolicy::ALL).ok());
    for (const auto& pp : dg::impl_of(g).plans->parts) {
      EXPECT_EQ(pp.chosen, 0);
      for (const auto& b : pp.built) EXPECT_NE(b, nullptr) << pp.partition.pattern;
    }
    const auto names = plan_names(g);
    EXPECT_GT(names.size(), 1u);
    if (first.empty()) first = names;
    else EXPECT_EQ(names, first) << "with " << threads << " build threads";
  }
}

TEST(PlanBuild, HeuristicsChoiceBuildsOnePlanPerPartition) {
  dg::Handle cpu(dg::Device::cpu());
  dg::Graph g;
  ASSERT_TRUE(load_lowered("convnet_block_small.json", g, cpu));
  ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}).ok());
  ASSERT_TRUE(g.build_plans(cpu).ok());
  for (const auto& pp : dg::impl_of(g).plans->parts) {
    EXPECT_GT(pp.candidates.size(), 1u) << pp.partition.pattern;
    EXPECT_EQ(std::count_if(pp.built.begin(), pp.built.end(), [](const auto& b) { return b != nullptr; }), 1)
        << pp.partition.pattern;
    EXPECT_NE(pp.built[static_cast<size_t>(pp.chosen)], nullptr);
  }
}

// create_execution_plans (plan_partitions) runs every engine's check, knob_space and estimate,
// and check_support only reads the candidate lists: neither asks for a kernel.
TEST(PlanBuild, PlanningForAGpuCompilesNothing) {
  dg::Handle cpu(dg::Device::cpu());
  for (const auto& file : kExampleGraphs) {
    dg::Graph g;
    ASSERT_TRUE(load_lowered(file, g, cpu));
    DescribedH200 h200;
    std::shared_ptr<dg::PlanSet> ps;
    ASSERT_TRUE(dg::plan_partitions(dg::impl_of(g), h200.target(), {dg::HeurMode::A, dg::HeurMode::FALLBACK}, ps).ok());
    EXPECT_TRUE(h200.keys.empty()) << file << " asked for " << h200.keys.size() << " kernels while planning";
    EXPECT_EQ(h200.cache.misses(), 0) << file;
    for (const auto& pp : ps->parts)
      for (const auto& b : pp.built) EXPECT_EQ(b, nullptr);
  }
}

// The own CUDA engines' builds (code generation; the compile is only recorded) on 8 threads ask
// for exactly the kernels one thread does, with the same outcome per candidate.
TEST(PlanBuild, ConcurrentBuildsOfTheCudaEnginesMatchSerialOnes) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "the CUDA engines need NVRTC to accept a partition: " << dg::cuda::nvrtc_error();
  dg::Handle cpu(dg::Device::cpu());
  for (const char* file : {"tutorial_matmul_epilogue_amax.json", "tutorial_conv_bias_relu.json", "convnet_block.json"}) {
    std::vector<std::string> keys[2];
    std::vector<std::string> statuses[2];
    for (int run = 0; run < 2; ++run) {
      ScopedEnv env("DNNGRAPH_BUILD_THREADS", run == 0 ? "1" : "8");
      dg::Graph g;
      ASSERT_TRUE(load_lowered(file, g, cpu));
      DescribedH200 h200;
      const dg::Target t = h200.target();
      std::shared_ptr<dg::PlanSet> ps;
      ASSERT_TRUE(dg::plan_partitions(dg::impl_of(g), t, {dg::HeurMode::A}, ps).ok());
      std::vector<dg::CandidateRef> which;
      for (size_t p = 0; p < ps->parts.size(); ++p)
        for (size_t i = 0; i < ps->parts[p].candidates.size(); ++i)
          if (dg::engine_by_id(ps->parts[p].candidates[i].engine_id)->compiles_kernels()) which.push_back({p, i});
      ASSERT_GT(which.size(), 1u) << file;
      std::vector<dg::Status> status;
      dg::build_candidates(*ps, t, which, status);
      for (const auto& k : h200.keys) keys[run].push_back(k.text());
      std::sort(keys[run].begin(), keys[run].end());
      for (const auto& s : status) statuses[run].push_back(s.to_string());
      EXPECT_EQ(keys[run].size(), which.size()) << file << ": one kernel asked for per candidate";
    }
    EXPECT_EQ(keys[0], keys[1]) << file;
    EXPECT_EQ(statuses[0], statuses[1]) << file;
  }
}

TEST(PlanBuild, LongPointwiseRunsAreSplitOnGpusOnly) {
  const int64_t n = 300;
  dg::Handle cpu(dg::Device::cpu());
  dg::Graph g;
  chain(g, n);
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(cpu).ok());
  ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
  EXPECT_EQ(dg::impl_of(g).plans->parts.size(), 1u) << "the CPU fuses the whole chain";

  DescribedH200 h200;
  std::shared_ptr<dg::PlanSet> ps;
  ASSERT_TRUE(dg::plan_partitions(dg::impl_of(g), h200.target(), {dg::HeurMode::A}, ps).ok());
  const size_t max = dg::kMaxPointwiseNodesOnGpu;
  ASSERT_EQ(ps->parts.size(), (n + max - 1) / max);
  std::vector<int> nodes;
  for (const auto& pp : ps->parts) {
    EXPECT_LE(pp.partition.nodes.size(), max);
    EXPECT_NE(pp.partition.pattern.find("/3]"), std::string::npos) << pp.partition.pattern;
    nodes.insert(nodes.end(), pp.partition.nodes.begin(), pp.partition.nodes.end());
    if (dg::cuda::nvrtc()) {
      EXPECT_EQ(dg::engine_by_id(pp.candidates.front().engine_id)->name(), "cuda_pointwise_jit");
    }
  }
  std::vector<int> all(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
  EXPECT_EQ(nodes, all) << "the runs cover the chain once, in order";
  // Each cut is an intermediate in the workspace; the first run's output feeds the second.
  ASSERT_EQ(ps->parts[0].partition.outputs.size(), 1u);
  const auto& next_inputs = ps->parts[1].partition.inputs;
  EXPECT_NE(std::find(next_inputs.begin(), next_inputs.end(), ps->parts[0].partition.outputs[0]), next_inputs.end());
  EXPECT_GT(ps->intermediates_bytes, 0);
}

// Partitions run in order, so intermediates whose live ranges do not meet share workspace bytes:
// in four runs of a chain, the first cut (written by run 0, read by run 1) and the third (runs 2
// and 3) take the same bytes, the second (runs 1 and 2) its own.
TEST(PlanBuild, IntermediatesShareBytesOnceTheirLiveRangesEnd) {
  dg::Handle cpu(dg::Device::cpu());
  dg::Graph g;
  chain(g, static_cast<int64_t>(3 * dg::kMaxPointwiseNodesOnGpu + 1));
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(cpu).ok());
  DescribedH200 h200;
  std::shared_ptr<dg::PlanSet> ps;
  ASSERT_TRUE(dg::plan_partitions(dg::impl_of(g), h200.target(), {dg::HeurMode::A}, ps).ok());
  ASSERT_EQ(ps->parts.size(), 4u);
  std::vector<int64_t> offsets;
  for (size_t i = 0; i + 1 < ps->parts.size(); ++i) {
    ASSERT_EQ(ps->parts[i].partition.outputs.size(), 1u);
    offsets.push_back(ps->workspace_offset[static_cast<size_t>(ps->parts[i].partition.outputs[0])]);
  }
  const int64_t bytes = 16 * 4 * 4 * 4;  // one 1x16x4x4 fp32 tensor, a multiple of 256
  EXPECT_EQ(offsets[0], offsets[2]);
  EXPECT_NE(offsets[0], offsets[1]);
  EXPECT_EQ(ps->intermediates_bytes, 2 * bytes);
}

TEST(PlanBuild, ThePointwiseJitRejectsALongerPartition) {
  dg::Handle cpu(dg::Device::cpu());
  dg::Graph g;
  chain(g, static_cast<int64_t>(dg::kMaxPointwiseNodesOnGpu) + 1);
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(cpu).ok());
  std::vector<dg::Partition> parts;
  ASSERT_TRUE(dg::partition_graph(*dg::impl_of(g).ir, parts).ok());
  ASSERT_EQ(parts.size(), 1u);
  DescribedH200 h200;
  const dg::Engine* jit = dg::engine_by_id(dg::engine_id_by_name("cuda_pointwise_jit"));
  ASSERT_NE(jit, nullptr);
  const dg::Support s = jit->check(parts[0], h200.target());
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("the partition has 129 nodes, more than the 128 one kernel takes"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find("node '"), std::string::npos) << s.reason;
}

TEST(PlanBuild, FallbackListsAnOwnKernelFirstAndLabelsRef) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "the CUDA engines need NVRTC to accept a partition: " << dg::cuda::nvrtc_error();
  dg::Handle cpu(dg::Device::cpu());
  dg::Graph g;
  ASSERT_TRUE(load_lowered("tutorial_conv_bias_relu.json", g, cpu));
  DescribedH200 h200;
  std::shared_ptr<dg::PlanSet> ps;
  ASSERT_TRUE(dg::plan_partitions(dg::impl_of(g), h200.target(), {dg::HeurMode::FALLBACK}, ps).ok());
  ASSERT_EQ(ps->parts.size(), 1u);
  const auto& c = ps->parts[0].candidates;
  ASSERT_GT(c.size(), 1u);
  EXPECT_EQ(dg::engine_by_id(c.front().engine_id)->name(), "cuda_conv_implicit_gemm") << c.front().label();
  EXPECT_EQ(c.back().label(), "ref (reference, not for speed)");
}

TEST(PlanBuild, ExplainAndPlanNamesSayRefIsTheReference) {
  dg::Handle cpu(dg::Device::cpu());
  dg::Graph g;
  ASSERT_TRUE(load_lowered("tutorial_sdpa_causal_small.json", g, cpu));
  ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}).ok());
  const auto names = plan_names(g);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.back(), "ref (reference, not for speed)");
  EXPECT_NE(g.explain().find(": ref (reference, not for speed)  estimate"), std::string::npos) << g.explain();
}
