// The cublaslt vendor engine. Without a GPU: which partitions match cuBLASLt's matmul + epilogue
// (and why the others do not), the column-major operand descriptions, algorithm knobs through a
// fake configuration getter, descriptors made by the real library where it is installed. With a
// GPU: every heuristic algorithm of several matmul graphs against ref, serialization, FP8 + AMAX.
#include <gtest/gtest.h>

#include "common/partitions.hpp"
#include "engines/cublaslt/cublaslt_engine.hpp"
#include "engines/cublaslt/lt_descriptors.hpp"
#include "engines/test_cuda_util.hpp"

namespace dnngraph::cublaslt {
namespace {

namespace ct = dnngraph::cuda::testing;
namespace dg = dnngraph;
using M = PointwiseMode;
using T = DataType;

struct MatmulCase {
  int64_t batch = 1, m = 32, n = 24, k = 16;
  T in = T::BFLOAT16, out = T::BFLOAT16;
  bool b_col_major = false;  // B [K, N] stored with unit stride along K
  bool broadcast_b = true;   // B's batch dim is 1
  bool alpha = false, bias = false;
  M act = M::NOT_SET;
  bool amax = false;
  bool allow_tf32 = false;
};

ct::Builder matmul_graph(const MatmulCase& c) {
  return [c](dg::Graph& g) {
    g.set_io_data_type(c.in).set_intermediate_data_type(T::FLOAT).set_compute_data_type(T::FLOAT);
    g.set_allow_tf32(c.allow_tf32);
    auto a = ct::input(g, "A", {c.batch, c.m, c.k}, c.in);
    const int64_t bb = c.broadcast_b ? 1 : c.batch;
    auto b = c.b_col_major ? ct::input(g, "B", {bb, c.k, c.n}, c.in, {c.k * c.n, 1, c.k})
                           : ct::input(g, "B", {bb, c.k, c.n}, c.in);
    auto y = g.matmul(a, b, dg::MatmulAttr().set_name("mm"));
    if (c.alpha) y = g.scale(y, g.tensor(0.375));
    if (c.bias) y = g.bias(y, ct::input(g, "bias", {1, 1, c.n}, c.out == T::FLOAT ? T::FLOAT : c.out));
    if (c.act != M::NOT_SET) y = g.pointwise(y, dg::PointwiseAttr().set_mode(c.act).set_name("act"));
    y->set_output(true).set_data_type(c.out);
    if (c.amax) {
      auto r = g.reduction(y, dg::ReductionAttr().set_mode(ReductionMode::AMAX).set_name("amax"));
      r->set_dim({1, 1, 1}).set_output(true).set_data_type(T::FLOAT);
    }
  };
}

using test_partitions::Parts;
using test_partitions::partition_on_cpu;

bool match(const MatmulCase& c, LtProblem& lp, std::string& why) {
  Parts ps;
  partition_on_cpu(matmul_graph(c), ps);
  EXPECT_EQ(ps.parts.size(), 1u);
  return !ps.parts.empty() && match_partition(ps.parts[0], lp, why);
}

TEST(CublasLtMatch, ScaleBiasReluIsOneCallWithTheOperandsSwapped) {
  MatmulCase c;
  c.batch = 3;
  c.alpha = c.bias = true;
  c.act = M::RELU_FWD;
  LtProblem lp;
  std::string why;
  ASSERT_TRUE(match(c, lp, why)) << why;
  EXPECT_EQ(lp.epilogue, Epilogue::RELU_BIAS);
  EXPECT_GE(lp.alpha, 0);
  EXPECT_GE(lp.bias, 0);
  EXPECT_EQ(lp.m, c.n);
  EXPECT_EQ(lp.n, c.m);
  EXPECT_EQ(lp.k, c.k);
  EXPECT_EQ(lp.batch, 3);
  // cuBLASLt's A is the graph's row-major B: stored as B^T (N x K, ld N), no transpose, broadcast.
  EXPECT_EQ(lp.a.op, Op::N);
  EXPECT_EQ(lp.a.rows, static_cast<uint64_t>(c.n));
  EXPECT_EQ(lp.a.ld, c.n);
  EXPECT_EQ(lp.a.batch_stride, 0);
  // cuBLASLt's B is the graph's A: stored as A^T (K x M, ld K), batch stride M*K.
  EXPECT_EQ(lp.b.op, Op::N);
  EXPECT_EQ(lp.b.rows, static_cast<uint64_t>(c.k));
  EXPECT_EQ(lp.b.batch_stride, c.m * c.k);
  EXPECT_EQ(lp.d.rows, static_cast<uint64_t>(c.n));
  EXPECT_EQ(lp.d.ld, c.n);
  EXPECT_EQ(lp.b.type, CudaType::R_16BF);
  EXPECT_EQ(lp.compute, ComputeType::C_32F);
}

// FLOAT matmuls are exact fp32 unless the graph allows TF32; half-precision inputs ignore the switch.
TEST(CublasLtMatch, FloatRunsAsTf32OnlyWhenTheGraphAllowsIt) {
  for (const T in : {T::FLOAT, T::BFLOAT16})
    for (const bool allowed : {false, true}) {
      MatmulCase c;
      c.in = c.out = in;
      c.allow_tf32 = allowed;
      LtProblem lp;
      std::string why;
      ASSERT_TRUE(match(c, lp, why)) << why;
      EXPECT_EQ(lp.compute, in == T::FLOAT && allowed ? ComputeType::C_32F_FAST_TF32 : ComputeType::C_32F);
    }
}

TEST(CublasLtMatch, AColumnMajorOperandIsTransposedByCublasLt) {
  MatmulCase c;
  c.b_col_major = true;
  LtProblem lp;
  std::string why;
  ASSERT_TRUE(match(c, lp, why)) << why;
  EXPECT_EQ(lp.a.op, Op::T);
  EXPECT_EQ(lp.a.rows, static_cast<uint64_t>(c.k));
  EXPECT_EQ(lp.a.cols, static_cast<uint64_t>(c.n));
  EXPECT_EQ(lp.a.ld, c.k);
  EXPECT_EQ(lp.epilogue, Epilogue::DEFAULT);
}

TEST(CublasLtMatch, WhatCublasLtCannotFuseHasAReason) {
  struct Bad {
    MatmulCase c;
    const char* reason;
  };
  std::vector<Bad> bad;
  MatmulCase gelu_erf;
  gelu_erf.act = M::GELU_FWD;
  bad.push_back({gelu_erf, "tanh approximation"});
  MatmulCase sigmoid;
  sigmoid.act = M::SIGMOID_FWD;
  bad.push_back({sigmoid, "cuBLASLt's epilogues are"});
  MatmulCase amax_bf16;
  amax_bf16.amax = true;
  bad.push_back({amax_bf16, "FP8 matmuls only"});
  for (const auto& b : bad) {
    LtProblem lp;
    std::string why;
    EXPECT_FALSE(match(b.c, lp, why)) << b.reason;
    EXPECT_NE(why.find(b.reason), std::string::npos) << why;
  }
  // A bias after the activation is no cuBLASLt epilogue.
  Parts ps;
  partition_on_cpu([](dg::Graph& g) {
    auto a = ct::input(g, "A", {1, 8, 8}, T::FLOAT);
    auto b = ct::input(g, "B", {1, 8, 8}, T::FLOAT);
    auto r = g.bias(g.relu(g.matmul(a, b, dg::MatmulAttr())), ct::input(g, "bias", {1, 1, 8}, T::FLOAT));
    r->set_output(true);
  }, ps);
  LtProblem lp;
  std::string why;
  EXPECT_FALSE(match_partition(ps.parts[0], lp, why));
  EXPECT_NE(why.find("before the activation"), std::string::npos) << why;
}

TEST(CublasLtMatch, Fp8WithAmaxKeepsAnInternalResultInTheWorkspace) {
  Parts ps;
  partition_on_cpu([](dg::Graph& g) {
    auto a = ct::input(g, "A", {1, 32, 64}, T::FP8_E4M3);
    auto b = ct::input(g, "B", {1, 64, 16}, T::FP8_E4M3, {1024, 1, 64});
    auto y = g.matmul(a, b, dg::MatmulAttr());
    y->set_data_type(T::FLOAT);
    auto r = g.reduction(y, dg::ReductionAttr().set_mode(ReductionMode::AMAX));
    r->set_dim({1, 1, 1}).set_output(true).set_data_type(T::FLOAT);
  }, ps);
  LtProblem lp;
  std::string why;
  ASSERT_TRUE(match_partition(ps.parts[0], lp, why)) << why;
  EXPECT_GE(lp.amax, 0);
  EXPECT_TRUE(lp.d_in_workspace);
  EXPECT_EQ(lp.d_bytes, 32 * 16 * 4);
  EXPECT_EQ(lp.a.type, CudaType::R_8F_E4M3);
}

TEST(CublasLtMatch, BatchDimsThatDoNotFlattenAreRefused) {
  Parts ps;
  partition_on_cpu([](dg::Graph& g) {
    // A [2, 3, 8, 8] whose two batch dims are stored in swapped order.
    auto a = ct::input(g, "A", {2, 3, 8, 8}, T::FLOAT, {64, 128, 8, 1});
    auto b = ct::input(g, "B", {2, 3, 8, 8}, T::FLOAT);
    g.matmul(a, b, dg::MatmulAttr())->set_output(true);
  }, ps);
  LtProblem lp;
  std::string why;
  EXPECT_FALSE(match_partition(ps.parts[0], lp, why));
  EXPECT_NE(why.find("do not flatten"), std::string::npos) << why;
}

// A fake cublasLtMatmulAlgoConfigGetAttribute: ID 21, TILE 15, STAGES 8, SPLITK 4, the rest 0.
cublasStatus_t fake_config_get(const MatmulAlgo*, int attr, void* buf, size_t size, size_t* written) {
  const uint32_t values[] = {21, 15, 4, 0, 0, 0, 8, 0, 0};
  if (attr < 0 || attr > 8) return 7;
  if (size == 2) *static_cast<uint16_t*>(buf) = static_cast<uint16_t>(values[attr]);
  else *static_cast<uint32_t*>(buf) = values[attr];
  *written = size;
  return STATUS_SUCCESS;
}

TEST(CublasLtKnobs, TheAlgorithmsConfigurationNamesTheCandidate) {
  LtApi a{};
  a.cublasLtMatmulAlgoConfigGetAttribute = fake_config_get;
  const Knobs k = algo_knobs(a, MatmulAlgo{});
  EXPECT_EQ(knobs_to_string(k), "algo=21,splitk=4,stages=8,tile=15");
}

// check_knobs needs no cuBLASLt: a record's knobs are checked against the attribute table.
TEST(CublasLtKnobs, CheckKnobsKnowsTheConfigurationAttributes) {
  EXPECT_TRUE(engine().check_knobs({{"algo", 21}, {"splitk", 4}, {"stages", 8}, {"tile", 15}}).ok());
  auto expect_error = [](const Knobs& k, const std::string& part) {
    const Status s = engine().check_knobs(k);
    EXPECT_EQ(s.code(), ErrorCode::INVALID_VALUE) << knobs_to_string(k);
    EXPECT_NE(s.message().find(part), std::string::npos) << s.message();
  };
  expect_error({{"tile", 15}}, "the knobs name no algorithm ('algo')");
  expect_error({{"algo", 1}, {"tile_m", 128}}, "no knob 'tile_m' (its knobs: algo, tile, stages");
  expect_error({{"algo", 1}, {"cluster", 70000}}, "knob cluster=70000 is not in 0..65535");
  expect_error({{"algo", 1}, {"tile", -1}}, "knob tile=-1 is not in 0..4294967295");
}

TEST(CublasLtKnobs, TheRealLibraryMakesTheDescriptorsWithoutAGpu) {
  if (!api()) GTEST_SKIP() << error();
  MatmulCase c;
  c.batch = 2;
  c.bias = true;
  c.act = M::GELU_APPROX_TANH_FWD;
  LtProblem lp;
  std::string why;
  ASSERT_TRUE(match(c, lp, why)) << why;
  LtDescriptors d;
  const Status s = make_descriptors(*api(), lp, false, d);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_NE(d.desc, nullptr);
  EXPECT_NE(d.pref, nullptr);
}

// ---------------------------------------------------------------- on a GPU

using Rig = ct::DeviceRig;

class CublasLtGpu : public ct::VendorGpuTest<LtApi, api, error> {
 protected:
  // Every heuristic algorithm (up to max_plans) of the graph against ref; false when cublaslt rejects
  // the graph (`why` then holds explain()'s verdict).
  bool every_plan_matches_ref(const ct::Builder& build, int64_t max_plans, std::string* why = nullptr,
                              double tol_scale = 1.0) {
    dg::Handle cpu(dg::Device::cpu());
    ct::Outputs want;
    ct::RunOptions o;
    o.engine = "ref";
    EXPECT_TRUE(ct::run_graph(build, cpu, o, want));
    dg::Graph g;
    build(g);
    g.select_engines({"cublaslt"});
    EXPECT_TRUE(g.validate().ok());
    EXPECT_TRUE(g.build_operation_graph(*h_).ok());
    EXPECT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
    if (Status s = g.check_support(*h_); !s.ok()) {
      if (why) *why = s.message();
      else ADD_FAILURE() << s.to_string();
      return false;
    }
    Rig rig(*h_, g);
    const int64_t n = std::min(g.get_execution_plan_count(), max_plans);
    for (int64_t i = 0; i < n; ++i) {
      std::string name;
      EXPECT_TRUE(g.get_plan_name_at_index(i, name).ok());
      EXPECT_EQ(name.rfind("cublaslt[algo=", 0), 0u) << name;
      const Status built = g.build_plan_at_index(*h_, i);
      EXPECT_TRUE(built.ok()) << name << ": " << built.to_string();
      if (!built.ok()) continue;
      int64_t ws = 0;
      EXPECT_TRUE(g.get_workspace_size_plan_at_index(i, ws).ok());
      const memory::Buffer workspace = ct::workspace_buffer(*h_, ws);
      rig.poison();
      const Status run = g.execute_plan_at_index(*h_, rig.pack, workspace.get(), i, ws);
      EXPECT_TRUE(run.ok()) << name << ": " << run.to_string();
      rig.expect_matches(want, name, tol_scale);
    }
    return n > 0;
  }
};

TEST_F(CublasLtGpu, EveryAlgorithmMatchesRef) {
  MatmulCase relu_bias;
  relu_bias.batch = 3;
  relu_bias.m = 96, relu_bias.n = 64, relu_bias.k = 48;
  relu_bias.alpha = relu_bias.bias = true;
  relu_bias.act = M::RELU_FWD;
  EXPECT_TRUE(every_plan_matches_ref(matmul_graph(relu_bias), 8));
  MatmulCase gelu_fp32;
  gelu_fp32.in = gelu_fp32.out = T::FLOAT;
  gelu_fp32.batch = 2, gelu_fp32.broadcast_b = false;
  gelu_fp32.bias = true;
  gelu_fp32.act = M::GELU_APPROX_TANH_FWD;
  EXPECT_TRUE(every_plan_matches_ref(matmul_graph(gelu_fp32), 4));
  // The same as TF32 (10-bit mantissa inputs): a normwise error near 2^-11, so 50x fp32's bound.
  gelu_fp32.allow_tf32 = true;
  gelu_fp32.k = 256;
  EXPECT_TRUE(every_plan_matches_ref(matmul_graph(gelu_fp32), 4, nullptr, 50.0));
  MatmulCase plain_half;
  plain_half.in = plain_half.out = T::HALF;
  plain_half.b_col_major = true;
  plain_half.m = 40, plain_half.n = 56, plain_half.k = 72;
  EXPECT_TRUE(every_plan_matches_ref(matmul_graph(plain_half), 4));
}

TEST_F(CublasLtGpu, Fp8MatmulWithAmax) {
  const ct::Builder build = [](dg::Graph& g) {
    auto a = ct::input(g, "A", {1, 64, 64}, T::FP8_E4M3);
    auto b = ct::input(g, "B", {1, 64, 32}, T::FP8_E4M3, {2048, 1, 64});
    auto y = g.matmul(a, b, dg::MatmulAttr());
    y->set_output(true).set_data_type(T::FLOAT);
    auto r = g.reduction(y, dg::ReductionAttr().set_mode(ReductionMode::AMAX));
    r->set_dim({1, 1, 1}).set_output(true).set_data_type(T::FLOAT);
  };
  std::string why;
  if (!every_plan_matches_ref(build, 4, &why)) {
    // cuBLASLt may offer no FP8 kernel with AMAX for this shape; the reason must then be its own.
    EXPECT_NE(why.find("cuBLASLt"), std::string::npos) << why;
    GTEST_SKIP() << why;
  }
}

TEST_F(CublasLtGpu, SerializedPlanReloads) {
  MatmulCase c;
  c.bias = true;
  c.act = M::RELU_FWD;
  dg::Graph g;
  matmul_graph(c)(g);
  g.select_engines({"cublaslt"});
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(*h_).ok());
  ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
  ASSERT_TRUE(g.build_plans(*h_).ok());
  std::vector<uint8_t> bytes;
  dg::Graph loaded;
  ASSERT_TRUE(ct::serialize_and_reload(g, *h_, loaded, bytes));
  dg::Handle cpu(dg::Device::cpu());
  ct::Outputs want;
  ct::RunOptions o;
  o.engine = "ref";
  ASSERT_TRUE(ct::run_graph(matmul_graph(c), cpu, o, want));
  Rig rig(*h_, loaded);
  ASSERT_TRUE(ct::execute_in_workspace(loaded, *h_, rig.pack));
  rig.expect_matches(want, "deserialized");
}

}  // namespace
}  // namespace dnngraph::cublaslt
