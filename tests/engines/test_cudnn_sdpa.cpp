// The cudnn engine's attention lowering and its native CUDA-graph replay. Without a GPU: the
// tensor plans of an sdpa partition (K read as K^T, the by-value constants), the reasons for what
// is not offered, and the descriptors finalized by the real library where it is installed. With a
// GPU: every cuDNN plan of sdpa graphs (causal, scale, padding, stats) against ref, and plans
// replayed through cuDNN's native CUDA graph while the variant pack's pointers change between calls.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "engines/cudnn/cudnn_engine.hpp"
#include "engines/cudnn/graph_cache.hpp"
#include "engines/cudnn/handles.hpp"
#include "engines/cudnn/op_graph.hpp"
#include "engines/cudnn/sdpa_lower.hpp"
#include "engines/cudnn_test_graphs.hpp"
#include "engines/test_cuda_util.hpp"
#include "fusion/partition.hpp"
#include "planning/parallel_build.hpp"
#include "planning/plan_set.hpp"

namespace dnngraph::cudnn {
namespace {

namespace ct = dnngraph::cuda::testing;
namespace dg = dnngraph;
using T = DataType;

struct SdpaCase {
  int64_t b = 1, h = 2, hk = 2, sq = 64, skv = 64, d = 64, dv = 64;
  T type = T::BFLOAT16;
  bool causal = false, bottom_right = false, stats = false, bias = false;  // bias: [1, h, sq, skv]
  std::optional<double> scale;
  std::optional<int64_t> left, right;  // the diagonal band's bounds, when given
  std::vector<int32_t> seq_q, seq_kv;  // the padding mask, when given
};

ct::Builder sdpa_graph(const SdpaCase& c) {
  return [=](dg::Graph& g) {
    g.set_io_data_type(c.type).set_intermediate_data_type(T::FLOAT).set_compute_data_type(T::FLOAT);
    auto q = ct::input(g, "Q", {c.b, c.h, c.sq, c.d}, c.type);
    auto k = ct::input(g, "K", {c.b, c.hk, c.skv, c.d}, c.type);
    auto v = ct::input(g, "V", {c.b, c.hk, c.skv, c.dv}, c.type);
    dg::SdpaAttr a;
    a.set_name("attn").set_is_inference(!c.stats);
    if (c.scale) a.set_attn_scale(*c.scale);
    if (c.causal && c.bottom_right) a.set_causal_mask_bottom_right(true);
    else if (c.causal) a.set_causal_mask(true);
    else if (c.bottom_right) a.set_diagonal_alignment(dg::DiagonalAlignment::BOTTOM_RIGHT);
    if (c.left) a.set_diagonal_band_left_bound(*c.left);
    if (c.right) a.set_diagonal_band_right_bound(*c.right);
    if (!c.seq_q.empty()) {
      a.set_padding_mask(true)
          .set_seq_len_q(ct::input(g, "SEQ_Q", {c.b, 1, 1, 1}, T::INT32))
          .set_seq_len_kv(ct::input(g, "SEQ_KV", {c.b, 1, 1, 1}, T::INT32));
    }
    if (c.bias) a.set_bias(ct::input(g, "BIAS", {1, c.h, c.sq, c.skv}, c.type));
    auto [o, stats] = g.sdpa(q, k, v, a);
    o->set_output(true).set_data_type(c.type);
    if (c.stats) stats->set_output(true);
  };
}

std::vector<Partition> partitions_of(const ct::Builder& build, dg::Graph& g) {
  build(g);
  dg::Handle cpu(dg::Device::cpu());
  EXPECT_TRUE(g.validate().ok());
  EXPECT_TRUE(g.build_operation_graph(cpu).ok());
  std::vector<Partition> parts;
  EXPECT_TRUE(partition_graph(*impl_of(g).ir, parts).ok());
  return parts;
}

std::string sdpa_reason(const SdpaCase& c) {
  dg::Graph g;
  auto parts = partitions_of(sdpa_graph(c), g);
  if (parts.size() != 1) return "partitions: " + std::to_string(parts.size());
  return unsupported_reason(parts[0]);
}

// ---------------------------------------------------------------- without a GPU

TEST(CudnnSdpa, KIsReadTransposedAndTheConstantsAreByValue) {
  SdpaCase c;
  c.b = 2, c.h = 4, c.hk = 2, c.sq = 16, c.skv = 24, c.d = 32, c.dv = 40, c.causal = true, c.scale = 0.3;
  c.seq_q = {16, 5}, c.seq_kv = {24, 9};
  dg::Graph g;
  auto parts = partitions_of(sdpa_graph(c), g);
  ASSERT_EQ(parts.size(), 1u);
  std::vector<TensorPlan> plans;
  ASSERT_TRUE(plan_tensors(parts[0], plans).ok());
  const TensorPlan* k = nullptr;
  std::map<int64_t, const TensorPlan*> constants;
  for (const auto& t : plans) {
    if (t.id >= 0 && parts[0].tensor(t.id).name == "K") k = &t;
    if (t.id < 0) constants[t.uid] = &t;
  }
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->dims, (std::vector<int64_t>{2, 2, 32, 24}));         // K^T [b, hk, d, skv]
  EXPECT_EQ(k->strides, (std::vector<int64_t>{2 * 24 * 32, 24 * 32, 1, 32}));  // the same bytes
  ASSERT_EQ(constants.size(), 2u);
  float scale = 0, neg = 0;
  std::memcpy(&scale, &constants.at(kSdpaScaleUid)->value, 4);
  std::memcpy(&neg, &constants.at(kSdpaNegInfUid)->value, 4);
  EXPECT_FLOAT_EQ(scale, 0.3f);
  EXPECT_TRUE(neg < -1e38f) << neg;
  EXPECT_TRUE(constants.at(kSdpaScaleUid)->by_value);
  const PackLayout pack = pack_layout(plans);
  // Q, K, V, SEQ_Q, SEQ_KV, O and the two constants (STATS is virtual in inference).
  EXPECT_EQ(pack.ids.size(), 8u);
}

TEST(CudnnSdpa, TheScaleDefaultsToOneOverSqrtDAndNoMaskNeedsNoInfinity) {
  SdpaCase c;
  c.d = 64, c.dv = 64;
  dg::Graph g;
  auto parts = partitions_of(sdpa_graph(c), g);
  ASSERT_EQ(parts.size(), 1u);
  std::vector<TensorPlan> plans;
  ASSERT_TRUE(plan_tensors(parts[0], plans).ok());
  int constants = 0;
  for (const auto& t : plans) {
    if (t.id >= 0) continue;
    ++constants;
    float v = 0;
    std::memcpy(&v, &t.value, 4);
    EXPECT_EQ(t.uid, kSdpaScaleUid);
    EXPECT_FLOAT_EQ(v, 0.125f);
  }
  EXPECT_EQ(constants, 1);
}

TEST(CudnnSdpa, WhatIsNotOfferedHasAReason) {
  SdpaCase c;
  EXPECT_EQ(sdpa_reason(c), "");
  c.causal = true;
  EXPECT_EQ(sdpa_reason(c), "");
  c.type = T::FLOAT;
  EXPECT_NE(sdpa_reason(c).find("node 'attn' (sdpa): data type FLOAT"), std::string::npos) << sdpa_reason(c);
  c.type = T::HALF;
  c.bottom_right = true;
  EXPECT_EQ(sdpa_reason(c), "");
  c.left = 8, c.right = 2;
  EXPECT_EQ(sdpa_reason(c), "");
  c.left = 0;
  EXPECT_NE(sdpa_reason(c).find("a diagonal band left bound of 0 (cuDNN's sliding window"), std::string::npos)
      << sdpa_reason(c);
  c.left.reset(), c.right.reset(), c.sq = 96;  // bottom-right causal, more queries than keys
  EXPECT_NE(sdpa_reason(c).find("needs seq_q <= seq_kv (seq_q 96 > seq_kv 64)"), std::string::npos) << sdpa_reason(c);
  c.seq_q = {96}, c.seq_kv = {64}, c.b = 1;  // the padding lengths align it per batch: cuDNN's call
  EXPECT_EQ(sdpa_reason(c), "");
  c.stats = true;  // cuDNN's stats of padded rows are infinite (ref: 0)
  EXPECT_NE(sdpa_reason(c).find("the stats output with the padding mask"), std::string::npos) << sdpa_reason(c);
}

// ALiBi, dropout, ragged offsets, paged K/V and K/V head counts apart are not lowered: each is named.
TEST(CudnnSdpa, TheOptionalInputsAreNotLoweredYet) {
  dg::Graph g;
  g.set_io_data_type(T::BFLOAT16).set_intermediate_data_type(T::FLOAT).set_compute_data_type(T::FLOAT);
  auto q = ct::input(g, "Q", {1, 2, 64, 64}, T::BFLOAT16);
  auto k = ct::input(g, "K", {1, 2, 64, 64}, T::BFLOAT16);
  auto v = ct::input(g, "V", {1, 1, 64, 64}, T::BFLOAT16);
  dg::SdpaAttr a;
  a.set_name("attn").set_alibi_mask(true).set_bias(ct::input(g, "B", {1, 1, 64, 64}, T::BFLOAT16));
  g.sdpa(q, k, v, a)[0]->set_output(true);
  dg::Handle cpu(dg::Device::cpu());
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(cpu).ok());
  std::vector<Partition> parts;
  ASSERT_TRUE(partition_graph(*impl_of(g).ir, parts).ok());
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(unsupported_reason(parts[0]),
            "node 'attn' (sdpa): ALiBi, K and V of different head counts (not lowered to cuDNN by this engine yet)");
}

// The band masks' constants: the dims as lengths for bottom-right, the left bound folded with them
// without padding, INT32 with padding (whose lengths are tensors).
TEST(CudnnSdpa, BandConstantsFollowTheAlignmentAndPadding) {
  auto constants_of = [](const SdpaCase& c) {
    dg::Graph g;
    auto parts = partitions_of(sdpa_graph(c), g);
    std::vector<TensorPlan> plans;
    EXPECT_TRUE(plan_tensors(parts.at(0), plans).ok());
    std::map<int64_t, TensorPlan> out;
    for (const auto& t : plans)
      if (t.id < 0) out[t.uid] = t;
    return out;
  };
  auto i32 = [](const TensorPlan& t) {
    int32_t v = 0;
    std::memcpy(&v, &t.value, 4);
    EXPECT_EQ(t.dtype, Dtype::INT32);
    return v;
  };
  auto f32 = [](const TensorPlan& t) {
    float v = 0;
    std::memcpy(&v, &t.value, 4);
    EXPECT_EQ(t.dtype, Dtype::FLOAT);
    return v;
  };
  SdpaCase c;
  c.sq = 32, c.skv = 80, c.causal = true, c.bottom_right = true, c.left = 10;
  auto k = constants_of(c);
  EXPECT_EQ(k.size(), 5u);  // scale, -inf, s_kv, s_q, left (no right: causal is 0)
  EXPECT_EQ(i32(k.at(kSdpaSeqKvUid)), 80);
  EXPECT_EQ(i32(k.at(kSdpaSeqQUid)), 32);
  EXPECT_FLOAT_EQ(f32(k.at(kSdpaLeftUid)), 10.0f - 80 + 32);
  c.right = 3, c.seq_q = {32}, c.seq_kv = {80}, c.b = 1;
  k = constants_of(c);
  EXPECT_EQ(k.size(), 4u);  // scale, -inf, right, left: the lengths are the padding tensors
  EXPECT_EQ(i32(k.at(kSdpaRightUid)), 3);
  EXPECT_EQ(i32(k.at(kSdpaLeftUid)), 10);
  c.bottom_right = false, c.causal = false;
  k = constants_of(c);
  EXPECT_FLOAT_EQ(f32(k.at(kSdpaLeftUid)), 10.0f);
}

TEST(CudnnSdpa, TheRealLibraryFinalizesTheAttentionGraphsOperations) {
  if (!api()) GTEST_SKIP() << error();
  for (bool padded : {false, true})
    for (bool stats : {false, true}) {
      SdpaCase c;
      c.causal = true, c.stats = stats;
      if (padded) c.seq_q = {40}, c.seq_kv = {50};
      dg::Graph g;
      auto parts = partitions_of(sdpa_graph(c), g);
      ASSERT_EQ(parts.size(), 1u);
      Lowered low;
      const Status s = lower_partition(*api(), parts[0], low);
      ASSERT_TRUE(s.ok()) << s.to_string();
      // matmul, scale, [padding: 2 GEN_INDEX, 2 CMP_LT, AND, SELECT], causal: 2 GEN_INDEX, CMP_GE,
      // SELECT; max, sub, exp, sum, log, add (the stats, virtual in inference), div, matmul.
      EXPECT_EQ(low.ops.size(), 2u + (padded ? 6u : 0u) + 4u + 4u + 2u + 2u);
      c.bias = true;  // one pointwise add more
      dg::Graph bias_graph;
      Lowered with_bias;
      ASSERT_TRUE(lower_partition(*api(), partitions_of(sdpa_graph(c), bias_graph).at(0), with_bias).ok());
      EXPECT_EQ(with_bias.ops.size(), low.ops.size() + 1);
      c.bias = false;
      // Bottom-right with a sliding window: the right bound adds s_kv, subtracts s_q; the left
      // bound: 2 GEN_INDEX, ADD, [SUB, ADD with padding], CMP_GT, SELECT.
      c.bottom_right = true, c.left = 16;
      dg::Graph band_graph;
      auto band_parts = partitions_of(sdpa_graph(c), band_graph);
      Lowered band;
      const Status bs = lower_partition(*api(), band_parts.at(0), band);
      ASSERT_TRUE(bs.ok()) << bs.to_string();
      EXPECT_EQ(band.ops.size(), low.ops.size() + 2u + 5u + (padded ? 2u : 0u));
    }
}

// ---------------------------------------------------------------- on a GPU

using Rig = ct::DeviceRig;

Status plan_with(const ct::Builder& build, dg::Handle& h, dg::Graph& g, const char* engine) {
  build(g);
  g.select_engines({engine});
  for (const Status& s : {g.validate(), g.build_operation_graph(h),
                          g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::B, dg::HeurMode::FALLBACK}),
                          g.check_support(h)})
    if (!s.ok()) return {s.code(), s.message() + "\n" + g.explain()};
  return {};
}

ct::Outputs ref_outputs(const ct::Builder& build, uint32_t seed,
                        const std::map<std::string, std::vector<int32_t>>& fixed = {}) {
  dg::Handle cpu(dg::Device::cpu());
  dg::Graph g;
  const Status planned = plan_with(build, cpu, g, "ref");
  EXPECT_TRUE(planned.ok()) << planned.to_string();
  EXPECT_TRUE(g.build_plans(cpu).ok());
  Rig rig(cpu, g, seed, fixed);
  int64_t ws = 0;
  EXPECT_TRUE(g.get_workspace_size(ws).ok());
  const memory::Buffer workspace = ct::workspace_buffer(cpu, ws);
  const Status run = g.execute(cpu, rig.pack, workspace.get(), ws);
  EXPECT_TRUE(run.ok()) << run.to_string();
  return rig.read();
}

class CudnnSdpaGpu : public ct::VendorGpuTest<CudnnApi, api, error> {};

constexpr uint32_t kSeed = 7919u;

// Every cuDNN plan of the sdpa graph against ref. A graph cuDNN declines must say so with cuDNN's words.
void expect_sdpa_plans_match_ref(const SdpaCase& c, dg::Handle& h, const std::string& what) {
  std::map<std::string, std::vector<int32_t>> fixed;
  if (!c.seq_q.empty()) fixed = {{"SEQ_Q", c.seq_q}, {"SEQ_KV", c.seq_kv}};
  const auto build = sdpa_graph(c);
  const ct::Outputs want = ref_outputs(build, kSeed, fixed);
  dg::Graph g;
  const Status planned = plan_with(build, h, g, "cudnn");
  ASSERT_TRUE(planned.ok()) << what << ": " << planned.to_string();
  Rig rig(h, g, kSeed, fixed);
  int64_t built = 0;
  for (int64_t i = 0; i < g.get_execution_plan_count(); ++i) {
    std::string name;
    ASSERT_TRUE(g.get_plan_name_at_index(i, name).ok());
    if (Status s = g.build_plan_at_index(h, i); !s.ok()) {
      EXPECT_NE(s.message().find("CUDNN_STATUS_"), std::string::npos) << s.to_string();
      continue;
    }
    ++built;
    // the second and third runs make and replay the plan's CUDA graph
    ASSERT_NO_FATAL_FAILURE(rig.expect_plan_matches(g, i, 3, want, what + ", " + name));
    const auto& pp = impl_of(g).plans->parts.at(0);
    std::printf("[ INFO ] %s: %s matches ref (launched by %s)\n", what.c_str(), name.c_str(),
                launch_path(*pp.built.at(pp.index_for(i))).c_str());
  }
  EXPECT_GT(built, 0) << what;
}

TEST_F(CudnnSdpaGpu, CausalBf16MatchesRef) {
  SdpaCase c;
  c.b = 2, c.h = 4, c.hk = 4, c.sq = 128, c.skv = 128, c.d = 64, c.dv = 64, c.causal = true;
  expect_sdpa_plans_match_ref(c, *h_, "bf16 causal 2x4x128x128 d64");
}

TEST_F(CudnnSdpaGpu, ScaledFp16WithStatsMatchesRef) {
  SdpaCase c;
  c.b = 1, c.h = 2, c.hk = 2, c.sq = 64, c.skv = 96, c.d = 128, c.dv = 128, c.type = T::HALF, c.scale = 0.2;
  c.stats = true;
  expect_sdpa_plans_match_ref(c, *h_, "fp16 scale 0.2 stats 1x2x64x96 d128");
}

TEST_F(CudnnSdpaGpu, GroupedQueryCausalWithPaddingMatchesRef) {
  SdpaCase c;
  c.b = 2, c.h = 4, c.hk = 2, c.sq = 64, c.skv = 64, c.d = 64, c.dv = 64, c.causal = true;
  c.seq_q = {64, 37}, c.seq_kv = {64, 23};
  expect_sdpa_plans_match_ref(c, *h_, "bf16 GQA causal padded 2x4(2)x64x64");
}

TEST_F(CudnnSdpaGpu, PaddingOnlyMatchesRef) {
  SdpaCase c;
  c.b = 3, c.h = 2, c.hk = 2, c.sq = 48, c.skv = 80, c.d = 64, c.dv = 64, c.type = T::HALF;
  c.seq_q = {48, 10, 33}, c.seq_kv = {80, 1, 57};
  expect_sdpa_plans_match_ref(c, *h_, "fp16 padded 3x2x48x80");
}

// Bottom-right causal: the last query sees the last key (more keys than queries, the KV-cache case).
// The bias lowering, unrun when written (no GPU): every plan cuDNN offers must match ref.
TEST_F(CudnnSdpaGpu, BiasMatchesRef) {
  SdpaCase c;
  c.b = 2, c.h = 4, c.hk = 4, c.sq = 64, c.skv = 96, c.causal = true, c.bias = true, c.stats = true;
  expect_sdpa_plans_match_ref(c, *h_, "bf16 causal + bias 2x4x64x96");
}

TEST_F(CudnnSdpaGpu, BottomRightCausalMatchesRef) {
  SdpaCase c;
  c.b = 2, c.h = 4, c.hk = 4, c.sq = 64, c.skv = 160, c.causal = true, c.bottom_right = true;
  expect_sdpa_plans_match_ref(c, *h_, "bf16 bottom-right causal 2x4x64x160");
  c.type = T::HALF, c.hk = 2, c.seq_q = {64, 21}, c.seq_kv = {160, 75};
  expect_sdpa_plans_match_ref(c, *h_, "fp16 GQA bottom-right causal padded");
}

// Sliding windows (a left bound) with a causal or wider right bound, in both alignments.
TEST_F(CudnnSdpaGpu, SlidingWindowMatchesRef) {
  SdpaCase c;
  c.b = 2, c.h = 2, c.hk = 2, c.sq = 128, c.skv = 128, c.causal = true, c.left = 16;
  expect_sdpa_plans_match_ref(c, *h_, "bf16 causal window 16, 2x2x128x128");
  c.sq = 64, c.skv = 192, c.bottom_right = true, c.left = 40, c.type = T::HALF;
  expect_sdpa_plans_match_ref(c, *h_, "fp16 bottom-right causal window 40, 2x2x64x192");
  c.seq_q = {64, 30}, c.seq_kv = {192, 77}, c.left = 24, c.causal = false, c.right = 5;
  expect_sdpa_plans_match_ref(c, *h_, "fp16 bottom-right band [-24, +5] padded");
  SdpaCase w;
  w.sq = 96, w.skv = 96, w.left = 20, w.right = 7;
  expect_sdpa_plans_match_ref(w, *h_, "bf16 top-left band [-20, +7] 1x2x96x96");
  w.right.reset();
  expect_sdpa_plans_match_ref(w, *h_, "bf16 top-left left bound 20 only");
}

// Y = relu(conv(X, W) + B), NHWC bf16: cuDNN's sm90 engines with the native CUDA-graph note.
ct::Builder conv_bias_relu_nhwc() {
  return [](dg::Graph& g) {
    g.set_io_data_type(T::BFLOAT16).set_intermediate_data_type(T::FLOAT).set_compute_data_type(T::FLOAT);
    auto nhwc = [&](const char* name, std::vector<int64_t> d) {
      return ct::input(g, name, d, T::BFLOAT16, {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]});
    };
    auto y = g.conv_fprop(nhwc("X", {4, 32, 14, 14}), nhwc("W", {64, 32, 3, 3}),
                          dg::ConvFpropAttr().set_padding({1, 1}).set_stride({1, 1}).set_dilation({1, 1}));
    auto r = g.relu(g.bias(y, nhwc("B", {1, 64, 1, 1})));
    r->set_output(true).set_data_type(T::BFLOAT16);
  };
}

// Two pointer sets with different data and two workspaces, in runs of two or three calls: the
// graph is made on the second call with a pointer set and updated when the set changes; one that
// kept stale pointers would read the other inputs or leave NaN in the outputs.
TEST_F(CudnnSdpaGpu, NativeGraphFollowsThePointersFromCallToCall) {
  const auto build = conv_bias_relu_nhwc();
  const ct::Outputs want_a = ref_outputs(build, kSeed), want_b = ref_outputs(build, 104729u);
  dg::Graph g;
  const Status planned = plan_with(build, *h_, g, "cudnn");
  ASSERT_TRUE(planned.ok()) << planned.to_string();
  Rig a(*h_, g, kSeed, {}), b(*h_, g, 104729u, {});
  ASSERT_NO_FATAL_FAILURE(test_graphs::for_each_built_plan(g, *h_, 6, [&](int64_t i, const std::string& name,
                                                                         int64_t ws) {
    const memory::Buffer w1 = ct::workspace_buffer(*h_, ws);
    const memory::Buffer w2 = ct::workspace_buffer(*h_, ws);
    const char* order = "aaabbbaabbaa";  // the last four with the second workspace
    for (int call = 0; order[call]; ++call) {
      Rig& r = order[call] == 'b' ? b : a;
      r.poison();
      const Status run = g.execute_plan_at_index(*h_, r.pack, (call < 8 ? w1 : w2).get(), i, ws);
      ASSERT_TRUE(run.ok()) << name << ": " << run.to_string();
      r.expect_matches(&r == &a ? want_a : want_b, name + ", call " + std::to_string(call));
    }
  }));
}

// Attention plans (cuDNN's native graphs) with more pointer sets than a plan keeps graphs for:
// two alternated, all cycled, then the last two alone until they replace idle graphs (a native
// graph updated with cudnnBackendUpdateCudaGraph), then all again; every call against ref.
TEST_F(CudnnSdpaGpu, NativeGraphsPerPointerSetFollowTheBuffers) {
  SdpaCase c;
  c.b = 1, c.h = 2, c.hk = 2, c.sq = 64, c.skv = 128, c.causal = true, c.bottom_right = true;
  const auto build = sdpa_graph(c);
  const int sets = static_cast<int>(GraphCache::kCapacity) + 2;
  std::vector<ct::Outputs> want;
  std::vector<std::unique_ptr<Rig>> rigs;
  dg::Graph g;
  const Status planned = plan_with(build, *h_, g, "cudnn");
  ASSERT_TRUE(planned.ok()) << planned.to_string();
  for (int i = 0; i < sets; ++i) {
    want.push_back(ref_outputs(build, kSeed + 977u * static_cast<uint32_t>(i)));
    rigs.push_back(std::make_unique<Rig>(*h_, g, kSeed + 977u * static_cast<uint32_t>(i),
                                         std::map<std::string, std::vector<int32_t>>{}));
  }
  std::vector<int> order{0, 1, 0, 1, 0, 1};
  for (int t = 0; t < 2; ++t)
    for (int i = 0; i < sets; ++i) order.push_back(i);
  for (uint64_t t = 0; t < GraphCache::kIdleCalls + 4; ++t) order.push_back(sets - 1 - static_cast<int>(t % 2));
  for (int i = 0; i < sets; ++i) order.push_back(i);
  ASSERT_NO_FATAL_FAILURE(test_graphs::for_each_built_plan(g, *h_, 2, [&](int64_t p, const std::string& name,
                                                                         int64_t ws) {
    const memory::Buffer workspace = ct::workspace_buffer(*h_, ws);
    for (size_t call = 0; call < order.size(); ++call) {
      Rig& r = *rigs[static_cast<size_t>(order[call])];
      r.poison();
      const Status run = g.execute_plan_at_index(*h_, r.pack, workspace.get(), p, ws);
      ASSERT_TRUE(run.ok()) << name << ": " << run.to_string();
      r.expect_matches(want[static_cast<size_t>(order[call])], name + ", call " + std::to_string(call));
    }
  }));
}

// build_plans(ALL) builds cuDNN's runtime-compiled attention configs at once, each on a handle of
// the context's pool (handles.hpp); every plan then runs on the handle it was built on (called here
// from the test's thread, not the builder's) and matches ref.
TEST_F(CudnnSdpaGpu, ConfigsBuiltAtOnceOnHandlesOfTheirOwnMatchRef) {
  SdpaCase c;
  c.b = 2, c.h = 4, c.hk = 4, c.sq = 128, c.skv = 192, c.d = 64, c.dv = 64, c.causal = true;
  const auto build = sdpa_graph(c);
  const ct::Outputs want = ref_outputs(build, kSeed);
  dg::Graph g;
  ASSERT_TRUE(plan_with(build, *h_, g, "cudnn").ok());
  const Status all = g.build_plans(*h_, dg::BuildPlanPolicy::ALL);
  ASSERT_TRUE(all.ok()) << all.to_string();
  Rig rig(*h_, g, kSeed, {});
  const auto& pp = impl_of(g).plans->parts.at(0);
  int64_t built = 0;
  for (int64_t i = 0; i < g.get_execution_plan_count(); ++i) {
    if (!pp.built.at(pp.index_for(i))) continue;
    std::string name;
    ASSERT_TRUE(g.get_plan_name_at_index(i, name).ok());
    ++built;
    ASSERT_NO_FATAL_FAILURE(rig.expect_plan_matches(g, i, 3, want, "built at once, " + name));
  }
  std::printf("[ INFO ] %lld of %lld configs built at once; the context has %zu cuDNN handles\n",
              static_cast<long long>(built), static_cast<long long>(g.get_execution_plan_count()),
              handle_count(impl_of(*h_)));
  EXPECT_GT(built, 0);
  if (built > 1 && dg::build_threads() > 1) {
    EXPECT_GT(handle_count(impl_of(*h_)), 1u);
  }
}

// A whole dnngraph graph captured on the handle's stream while its cuDNN plan already holds a
// native graph: the plan runs cudnnBackendExecute inside the capture; the replay is right, and so
// is a plain execute afterwards.
TEST_F(CudnnSdpaGpu, StreamCaptureAfterNativeReplays) {
  const auto build = conv_bias_relu_nhwc();
  const ct::Outputs want = ref_outputs(build, kSeed);
  void* stream = nullptr;
  ASSERT_TRUE(cuda::create_stream(impl_of(*h_), &stream).ok());
  ASSERT_TRUE(h_->set_stream(stream).ok());
  dg::Graph g;
  ASSERT_TRUE(plan_with(build, *h_, g, "cudnn").ok());
  ASSERT_TRUE(g.build_plans(*h_).ok());
  Rig rig(*h_, g, kSeed, {});
  int64_t ws = 0;
  ASSERT_TRUE(g.get_workspace_size(ws).ok());
  const memory::Buffer workspace = ct::workspace_buffer(*h_, ws);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(g.execute(*h_, rig.pack, workspace.get(), ws).ok());  // makes the graph
  {
    ct::CapturedGraph captured;
    ASSERT_TRUE(captured.capture(g, *h_, rig.pack, workspace.get()));
    rig.poison();
    ASSERT_TRUE(captured.launch(*h_));
    rig.expect_matches(want, "captured graph replay");
    rig.poison();
    ASSERT_TRUE(g.execute(*h_, rig.pack, workspace.get(), ws).ok());
    rig.expect_matches(want, "execute after the capture");
  }
  (void)h_->set_stream(nullptr);
  cuda::destroy_stream(impl_of(*h_), stream);
}

}  // namespace
}  // namespace dnngraph::cudnn
