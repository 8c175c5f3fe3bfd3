// Mode A's first-build tie: a head whose build compiles gives way to a plan within kFirstBuildTie
// of its estimate that compiles nothing (heuristics.hpp), and the kernel cache's presence probe
// that tells which own-engine builds would compile, without compiling or counting anything.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dnngraph/dnngraph.hpp"
#include "graph/graph_impl.hpp"
#include "planning/described_target.hpp"
#include "planning/heuristics.hpp"
#include "planning/kernel_cache.hpp"
#include "planning/plan_build.hpp"
#include "runtime/cuda/driver_api.hpp"

namespace dg = dnngraph;

namespace {

dg::Candidate cand(int engine, double estimate_s, int64_t knob = 0) {
  dg::Candidate c;
  c.engine_id = engine;
  c.estimate_s = estimate_s;
  c.knobs = {{"tile", knob}};
  return c;
}

std::vector<int> engines_of(const std::vector<dg::Candidate>& c) {
  std::vector<int> out;
  for (const auto& x : c) out.push_back(x.engine_id);
  return out;
}

// Engines 5 and 7 compile when built; 6, 8 and ref (0) do not.
bool compiles(const dg::Candidate& c) { return c.engine_id == 5 || c.engine_id == 7; }

}  // namespace

TEST(FirstBuildTie, AReadyPlanInsideTheBandGoesFirst) {
  std::vector<dg::Candidate> ranked = {cand(5, 1.00), cand(7, 1.01), cand(6, 1.04), cand(8, 1.2), cand(0, 9)};
  dg::prefer_ready_within_tie(ranked, compiles);
  EXPECT_EQ(engines_of(ranked), (std::vector<int>{6, 5, 7, 8, 0}));  // the rest keep their order
  EXPECT_TRUE(ranked.front().ready_first);
  EXPECT_FALSE(ranked[1].ready_first);
}

TEST(FirstBuildTie, TinyPartitionsTieWithinALaunchsJitter) {
  // 1 us against 2.9 us: 2.9x, but 1.9 us apart (kFirstBuildTieSeconds); 3.5 us is not.
  std::vector<dg::Candidate> tiny = {cand(5, 1.0e-6), cand(6, 2.9e-6)};
  dg::prefer_ready_within_tie(tiny, compiles);
  EXPECT_EQ(engines_of(tiny), (std::vector<int>{6, 5}));
  std::vector<dg::Candidate> apart = {cand(5, 1.0e-6), cand(6, 3.5e-6)};
  dg::prefer_ready_within_tie(apart, compiles);
  EXPECT_EQ(engines_of(apart), (std::vector<int>{5, 6}));
}

TEST(FirstBuildTie, OutsideTheBandOrAReadyHeadNothingMoves) {
  std::vector<dg::Candidate> beyond = {cand(5, 1.00), cand(6, 1.06)};
  dg::prefer_ready_within_tie(beyond, compiles);
  EXPECT_EQ(engines_of(beyond), (std::vector<int>{5, 6}));
  EXPECT_FALSE(beyond.front().ready_first);

  int asked = 0;
  std::vector<dg::Candidate> ready_head = {cand(6, 1.00), cand(8, 1.00)};
  dg::prefer_ready_within_tie(ready_head, [&](const dg::Candidate& c) { return ++asked, compiles(c); });
  EXPECT_EQ(engines_of(ready_head), (std::vector<int>{6, 8}));
  EXPECT_EQ(asked, 1) << "only the head is asked when it builds without compiling";
}

TEST(FirstBuildTie, RefAndTheHeadEnginesSharedEstimateKeepTheirPlaces) {
  // cuDNN's configs share one estimate and stay in cuDNN's order; ref is never put first.
  std::vector<dg::Candidate> ranked = {cand(5, 1.0, 0), cand(5, 1.0, 1), cand(0, 1.0)};
  dg::prefer_ready_within_tie(ranked, [](const dg::Candidate& c) { return c.knobs.at("tile") == 0 && c.engine_id != 0; });
  EXPECT_EQ(ranked.front().knobs.at("tile"), 0);
  EXPECT_EQ(ranked.back().engine_id, 0);
  // A config of the same engine with an estimate of its own is a plan like any other.
  std::vector<dg::Candidate> own = {cand(5, 1.0, 0), cand(5, 1.03, 1)};
  dg::prefer_ready_within_tie(own, [](const dg::Candidate& c) { return c.knobs.at("tile") == 0; });
  EXPECT_EQ(own.front().knobs.at("tile"), 1);
}

TEST(KernelPresenceProbe, AnswersWithoutCompilingOrCounting) {
  dg::KernelCacheImpl cache;
  dg::KernelKey present{0x1234, "-O3 ", "sm_90", "nvrtc 13.0"}, absent{0x5678, "-O3 ", "sm_90", "nvrtc 13.0"};
  ASSERT_TRUE(cache.insert(present, {1, 2, 3}).ok());
  std::vector<dg::KernelKey> log;
  cache.record_keys(&log, true);
  int compiled = 0;
  auto compile = [&](dg::KernelCacheImpl::Binary& b) { return ++compiled, b = {9}, dg::Status{}; };
  dg::KernelCacheImpl::Binary got;
  for (const auto* key : {&present, &absent}) {
    dg::KernelPresenceProbe probe;
    EXPECT_EQ(cache.get_or_compile(*key, compile, got).code(), dg::ErrorCode::DEVICE_NOT_AVAILABLE);
    EXPECT_TRUE(probe.asked());
    EXPECT_EQ(probe.present(), key == &present);
    // A second kernel of the same build is not looked at.
    EXPECT_FALSE(cache.get_or_compile(present, compile, got).ok());
  }
  EXPECT_EQ(compiled, 0);
  EXPECT_TRUE(log.empty()) << "a probe is not a request for the AOT generator's key list";
  EXPECT_EQ(cache.hits() + cache.misses(), 0);
  EXPECT_TRUE(cache.get_or_compile(absent, compile, got).ok()) << "no probe on the thread: compiled as before";
  EXPECT_EQ(compiled, 1);
}

// An own CUDA engine's candidate on a described H200: its build compiles until its kernel is in the
// cache, and the probe finds it there by code generation alone.
TEST(KernelPresenceProbe, BuildCompilesFollowsTheCache) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "the CUDA engines need NVRTC to accept a partition: " << dg::cuda::nvrtc_error();
  dg::Graph g;
  dg::Handle cpu(dg::Device::cpu());
  g.set_io_data_type(dg::DataType::BFLOAT16).set_compute_data_type(dg::DataType::FLOAT);
  // A shape of no example graph, so the library's ahead-of-time kernels do not hold it.
  auto A = g.tensor(dg::TensorAttr().set_name("A").set_dim({3, 80, 48}).set_stride({80 * 48, 48, 1}));
  auto B = g.tensor(dg::TensorAttr().set_name("B").set_dim({3, 48, 112}).set_stride({48 * 112, 112, 1}));
  g.relu(g.matmul(A, B, dg::MatmulAttr()))->set_output(true);
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(cpu).ok());
  auto h200 = dg::describe_handle();
  dg::KernelCacheImpl cache;
  dg::Target t;
  t.handle = h200.get();
  t.kernel_cache = &cache;
  std::shared_ptr<dg::PlanSet> ps;
  ASSERT_TRUE(dg::plan_partitions(dg::impl_of(g), t, {dg::HeurMode::A}, ps).ok());
  const dg::PartitionPlans& pp = ps->parts.at(0);
  const dg::Candidate* own = nullptr;
  for (const auto& c : pp.candidates)
    if (dg::engine_by_id(c.engine_id)->compiles_kernels()) own = own ? own : &c;
  ASSERT_NE(own, nullptr) << "no own CUDA engine took the matmul";
  EXPECT_TRUE(dg::build_compiles(*own, pp.partition, t));

  std::vector<dg::KernelKey> keys;
  cache.record_keys(&keys, false);
  std::unique_ptr<dg::Plan> plan;
  (void)dg::engine_by_id(own->engine_id)->build(pp.partition, t, own->knobs, plan);
  cache.record_keys(nullptr, true);
  ASSERT_EQ(keys.size(), 1u);
  ASSERT_TRUE(cache.insert(keys[0], {1, 2, 3}).ok());
  const int64_t counted = cache.hits() + cache.misses();
  EXPECT_FALSE(dg::build_compiles(*own, pp.partition, t));
  EXPECT_EQ(cache.hits() + cache.misses(), counted);
}
