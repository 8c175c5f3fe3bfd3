// cuda_pointwise_jit against the reference engine, on a GPU (skipped without one): every pointwise
// mode, every load/store type, broadcasting, transposed and misaligned operands, every reduction
// over all or part of the dims, deterministic sums, dynamic shapes through the kernel cache, and
// plan serialization. Shapes are small and random; outputs are poisoned with NaN before each run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "engines/cuda/pointwise/pointwise_jit.hpp"
#include "common/build_steps.hpp"
#include "engines/test_cuda_util.hpp"
#include "planning/plan_set.hpp"

namespace dnngraph::cuda {
namespace {

using namespace testing;
using M = PointwiseMode;
using R = ReductionMode;
using T = DataType;

constexpr const char* kEngine = "cuda_pointwise_jit";

// A random shape of rank 1..4 with 1..40 elements per dim.
std::vector<int64_t> random_dims(std::mt19937& rng) {
  std::uniform_int_distribution<int> rank(1, 4), extent(1, 40);
  std::vector<int64_t> d(static_cast<size_t>(rank(rng)));
  for (auto& x : d) x = extent(rng);
  return d;
}

// The same dims with each one set to 1 with probability 1/3 (a broadcast operand).
std::vector<int64_t> broadcast_of(std::vector<int64_t> d, std::mt19937& rng) {
  for (auto& x : d)
    if (rng() % 3 == 0) x = 1;
  return d;
}

// A pass-by-value FLOAT scalar of the given rank (all dims 1).
dg::TensorPtr scalar(dg::Graph& g, const std::string& name, double v, int rank = 3) {
  return g.tensor(dg::TensorAttr().set_name(name).set_dim(std::vector<int64_t>(static_cast<size_t>(rank), 1))
                      .set_stride(std::vector<int64_t>(static_cast<size_t>(rank), 1)).set_data_type(T::FLOAT).set_value(v));
}

class CudaPointwise : public ::testing::Test {
 protected:
  void SetUp() override {
    h_ = cuda_handle(skip_);
    DG_SKIP_WITHOUT_GPU(h_, skip_);
  }
  RunOptions opts(uint32_t seed = 1) const {
    RunOptions o;
    o.engine = kEngine;
    o.seed = seed;
    return o;
  }
  std::string skip_;
  std::unique_ptr<dg::Handle> h_;
};

TEST_F(CudaPointwise, EveryUnaryMode) {
  std::mt19937 rng(11);
  for (M m : {M::ABS, M::CEIL, M::COS, M::EXP, M::FLOOR, M::LOG, M::NEG, M::RSQRT, M::SIN, M::SQRT, M::TAN, M::ERF,
              M::IDENTITY, M::RECIPROCAL, M::RELU_FWD, M::TANH_FWD, M::SIGMOID_FWD, M::ELU_FWD, M::GELU_FWD,
              M::SOFTPLUS_FWD, M::SWISH_FWD, M::GELU_APPROX_TANH_FWD, M::LOGICAL_NOT}) {
    const auto dims = random_dims(rng);
    SCOPED_TRACE(std::string(to_string(m)));
    expect_matches_ref([&](dg::Graph& g) { pw(g, m, input(g, "X", dims, T::FLOAT))->set_output(true); }, *h_,
                       opts(static_cast<uint32_t>(m)));
  }
}

TEST_F(CudaPointwise, EveryBinaryModeWithBroadcasting) {
  std::mt19937 rng(12);
  for (M m : {M::ADD, M::ADD_SQUARE, M::DIV, M::MAX, M::MIN, M::MOD, M::MUL, M::POW, M::SUB, M::ATAN2, M::RELU_BWD,
              M::TANH_BWD, M::SIGMOID_BWD, M::ELU_BWD, M::GELU_BWD, M::SOFTPLUS_BWD, M::SWISH_BWD,
              M::GELU_APPROX_TANH_BWD, M::CMP_EQ, M::CMP_NEQ, M::CMP_GT, M::CMP_GE, M::CMP_LT, M::CMP_LE,
              M::LOGICAL_AND, M::LOGICAL_OR}) {
    const auto dims = random_dims(rng);
    const auto bdims = broadcast_of(dims, rng);
    SCOPED_TRACE(std::string(to_string(m)));
    expect_matches_ref(
        [&](dg::Graph& g) { pw(g, m, input(g, "A", dims, T::FLOAT), input(g, "B", bdims, T::FLOAT))->set_output(true); },
        *h_, opts(static_cast<uint32_t>(m)));
  }
}

TEST_F(CudaPointwise, SelectIndexScalarsAndActivationParameters) {
  expect_matches_ref(
      [](dg::Graph& g) {
        auto x = input(g, "X", {6, 33}, T::FLOAT);
        auto y = input(g, "Y", {1, 33}, T::FLOAT);
        auto alpha = scalar(g, "alpha", 0.75, 2);
        auto idx = g.pointwise(x, dg::PointwiseAttr().set_mode(M::GEN_INDEX).set_axis(1));
        auto sel = pw(g, M::BINARY_SELECT, x, pw(g, M::MUL, y, alpha), pw(g, M::CMP_GT, x, y));
        auto r = g.pointwise(pw(g, M::ADD, sel, idx), dg::PointwiseAttr().set_mode(M::RELU_FWD).set_relu_lower_clip(1)
                                                          .set_relu_upper_clip(20).set_relu_lower_clip_slope(0.25));
        r->set_output(true);
        g.pointwise(x, dg::PointwiseAttr().set_mode(M::ELU_FWD).set_elu_alpha(0.5))->set_output(true);
        g.pointwise(x, dg::PointwiseAttr().set_mode(M::SWISH_FWD).set_swish_beta(1.7))->set_output(true);
      },
      *h_, opts());
}

// ReLU (and ReLU6) keep NaN, take -inf to 0 and -0 to +0, as ref and the CPU engines do: the
// slope-free form is a compare and a select, where lo + 0 * (x - lo) made relu(-inf) NaN.
TEST_F(CudaPointwise, ReluKeepsNanAndTakesMinusInfinityToZero) {
  const float nan = std::nanf(""), inf = INFINITY;
  const std::vector<float> x{-inf, inf, nan, -0.0f, -1.0f, 2.0f, 7.0f, 0.0f};
  std::vector<int32_t> bits(x.size());
  std::memcpy(bits.data(), x.data(), x.size() * 4);
  for (const std::optional<double> upper : {std::optional<double>{}, std::optional<double>{6.0}}) {
    SCOPED_TRACE(upper ? "relu6" : "relu");
    dg::Graph g;
    auto attr = dg::PointwiseAttr().set_mode(M::RELU_FWD).set_name("relu");
    if (upper) attr.set_relu_upper_clip(*upper);
    g.pointwise(input(g, "X", {8}, T::FLOAT), attr)->set_output(true).set_data_type(T::FLOAT);
    g.select_engines({kEngine});
    const Status built = test_build::run_build_steps(g, *h_);
    ASSERT_TRUE(built.ok()) << built.to_string() << "\n" << g.explain();
    int64_t ws = 0;
    ASSERT_TRUE(g.get_workspace_size(ws).ok());
    DeviceRig rig(*h_, g, 1, {{"X", bits}});
    auto workspace = workspace_buffer(*h_, ws);
    ASSERT_TRUE(g.execute(*h_, rig.pack, workspace.get(), ws).ok());
    const Outputs out = rig.read();
    ASSERT_EQ(out.size(), 1u);
    std::vector<float> y(x.size());
    std::memcpy(y.data(), out.begin()->second.data(), y.size() * 4);
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(y[i])) << i;
        continue;
      }
      const float want = std::min(x[i] <= 0.0f ? 0.0f : x[i], upper ? static_cast<float>(*upper) : inf);
      EXPECT_EQ(y[i], want) << "relu(" << x[i] << ")";
      EXPECT_FALSE(std::signbit(y[i])) << "relu(" << x[i] << ")";
    }
  }
}

TEST_F(CudaPointwise, EveryLoadAndStoreType) {
  const T ins[] = {T::FLOAT, T::HALF, T::BFLOAT16, T::INT8, T::INT32, T::BOOLEAN, T::UINT8, T::FP8_E4M3, T::FP8_E5M2};
  const T outs[] = {T::FLOAT, T::HALF, T::BFLOAT16, T::INT8, T::INT32, T::UINT8, T::FP8_E4M3, T::FP8_E5M2};
  // Each input type with two output types, rotating, so every type is loaded and stored.
  for (int i = 0; i < 9; ++i)
    for (T out : {outs[i % 8], outs[(i + 3) % 8]}) {
      const T in = ins[i];
      const int seed = 2 * i + (out == outs[i % 8] ? 0 : 1);
      SCOPED_TRACE(std::string(to_string(in)) + " -> " + std::string(to_string(out)));
      expect_matches_ref(
          [&](dg::Graph& g) {
            auto y = pw(g, M::MUL, input(g, "X", {7, 64}, in), input(g, "S", {1, 64}, T::FLOAT));
            y->set_output(true).set_data_type(out);
          },
          *h_, opts(static_cast<uint32_t>(seed)));
    }
}

TEST_F(CudaPointwise, Fp8SaturatesE4m3AndOverflowsE5m2) {
  // Inputs scaled far beyond both formats' range.
  expect_matches_ref(
      [](dg::Graph& g) {
        auto big = pw(g, M::MUL, input(g, "X", {4, 256}, T::FLOAT), scalar(g, "k", 60000.0, 2));
        pw(g, M::IDENTITY, big)->set_output(true).set_data_type(T::FP8_E4M3);
        pw(g, M::IDENTITY, big)->set_output(true).set_data_type(T::FP8_E5M2);
      },
      *h_, opts());
}

TEST_F(CudaPointwise, TransposedStridedAndBroadcastOperands) {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 6; ++trial) {
    const int64_t a = 1 + rng() % 9, b = 1 + rng() % 30, c = 1 + rng() % 40;
    SCOPED_TRACE("dims " + std::to_string(a) + "x" + std::to_string(b) + "x" + std::to_string(c));
    expect_matches_ref(
        [&](dg::Graph& g) {
          auto x = input(g, "X", {a, b, c}, T::BFLOAT16, {1, a, a * b});                       // reversed layout
          auto s = input(g, "S", {1, b, 1}, T::FLOAT);                                          // per-middle-dim
          auto z = input(g, "Z", {a, b, c}, T::HALF, {b * c * 2, c * 2, 2});                    // every other element
          auto y = pw(g, M::SUB, pw(g, M::MUL, x, s), z);
          y->set_output(true).set_stride({1, a * c, a}).set_data_type(T::FLOAT);              // another layout
        },
        *h_, opts(static_cast<uint32_t>(trial)));
  }
}

TEST_F(CudaPointwise, MisalignedPointersRunTheScalarKernel) {
  RunOptions o = opts();
  o.misalign_elements = 1;
  expect_matches_ref(
      [](dg::Graph& g) {
        pw(g, M::ADD, input(g, "A", {16, 128}, T::BFLOAT16), input(g, "B", {16, 128}, T::BFLOAT16))->set_output(true);
      },
      *h_, o);
}

TEST_F(CudaPointwise, EveryReductionOverAllOrPartOfTheDims) {
  const std::vector<std::vector<int64_t>> outs = {{1, 1, 1}, {5, 1, 1}, {1, 1, 70}, {5, 9, 1}, {1, 9, 1}};
  int seed = 0;
  for (R m : {R::ADD, R::MUL, R::MIN, R::MAX, R::AMAX, R::AVG, R::NORM1, R::NORM2})
    for (const auto& od : outs) {
      const T out = (++seed % 2) ? T::FLOAT : T::BFLOAT16;
      SCOPED_TRACE(std::string(to_string(m)) + " to [" + std::to_string(od[0]) + "," + std::to_string(od[1]) + "," +
                   std::to_string(od[2]) + "] " + std::string(to_string(out)));
      expect_matches_ref(
          [&](dg::Graph& g) {
            // Products of thousands of values: keep them near 1 (1 + tanh(x) / 100), as sums stay far from 0.
            auto v = pw(g, M::TANH_FWD, input(g, "X", {5, 9, 70}, T::FLOAT));
            if (m == R::MUL || m == R::ADD || m == R::AVG)
              v = pw(g, M::ADD, pw(g, M::MUL, v, scalar(g, "k", 0.01)), scalar(g, "one", 1.0));
            reduce(g, m, v, od)->set_output(true).set_data_type(out);
          },
          *h_, opts(static_cast<uint32_t>(seed)));
    }
}

TEST_F(CudaPointwise, DeterministicSumsRepeatBitForBit) {
  setenv("DNNGRAPH_DETERMINISTIC", "1", 1);
  const Builder build = [](dg::Graph& g) {
    auto x = pw(g, M::ADD, pw(g, M::SIN, input(g, "X", {2048, 1024}, T::FLOAT)), scalar(g, "two", 2.0, 2));
    reduce(g, R::ADD, x, {1, 1})->set_output(true);
    reduce(g, R::NORM2, x, {1, 1})->set_output(true).set_data_type(T::HALF);
  };
  Outputs a, b;
  const bool ran = run_graph(build, *h_, opts(5), a) && run_graph(build, *h_, opts(5), b);
  expect_matches_ref(build, *h_, opts(5));
  unsetenv("DNNGRAPH_DETERMINISTIC");
  ASSERT_TRUE(ran);
  for (const auto& [uid, bytes] : a) EXPECT_EQ(bytes, b[uid]) << "uid " << uid;
}

TEST_F(CudaPointwise, ChainOfFiveOpsWithAmaxAndFp8Output) {
  // The benchmark graph: scale, bias, GELU, scale, cast to fp8, and the amax of the pre-cast values.
  expect_matches_ref(
      [](dg::Graph& g) {
        g.set_intermediate_data_type(T::FLOAT);
        auto x = input(g, "X", {64, 1024}, T::BFLOAT16);
        auto t = pw(g, M::MUL, x, input(g, "scale", {1, 1}, T::FLOAT));
        t = pw(g, M::ADD, t, input(g, "bias", {1, 1024}, T::BFLOAT16));
        t = pw(g, M::GELU_FWD, t);
        t = pw(g, M::MUL, t, input(g, "s2", {1, 1}, T::FLOAT));
        auto y = pw(g, M::IDENTITY, t);
        y->set_output(true).set_data_type(T::FP8_E4M3);
        reduce(g, R::AMAX, t, {1, 1})->set_output(true).set_data_type(T::FLOAT);
      },
      *h_, opts());
}

TEST_F(CudaPointwise, AChainLongerThanOneKernelRunsAsThreeKernels) {
  // 300 ops: more than kMaxPointwiseNodesOnGpu (128), so the planner cuts the chain into three
  // runs (only this engine is allowed, and it rejects a longer partition), joined in the workspace.
  expect_matches_ref(
      [](dg::Graph& g) {
        auto t = input(g, "X", {64, 256}, T::FLOAT);
        auto b = input(g, "bias", {1, 256}, T::FLOAT);
        for (int i = 0; i < 300; ++i) t = i % 2 == 0 ? pw(g, M::RELU_FWD, t) : pw(g, M::ADD, t, b);
        t->set_output(true);
      },
      *h_, opts());
}

TEST_F(CudaPointwise, DynamicShapesServeEveryBatchFromOneKernel) {
  auto cache = std::make_shared<dg::KernelCache>();
  for (int64_t batch : {3, 17, 64}) {
    RunOptions o = opts(static_cast<uint32_t>(batch));
    o.dynamic = true;
    o.cache = cache;
    SCOPED_TRACE("batch " + std::to_string(batch));
    expect_matches_ref(
        [&](dg::Graph& g) {
          auto y = pw(g, M::GELU_FWD, pw(g, M::ADD, input(g, "X", {batch, 12, 40}, T::HALF), input(g, "B", {1, 12, 40}, T::HALF)));
          y->set_output(true);
          reduce(g, R::MAX, y, {1, 12, 1})->set_output(true).set_data_type(T::FLOAT);
        },
        *h_, o);
  }
  EXPECT_EQ(cache->misses(), 1);
  EXPECT_EQ(cache->hits(), 2);
}

TEST_F(CudaPointwise, PlanPayloadRoundTripsWithoutCompiling) {
  dg::Graph g;
  pw(g, M::SIGMOID_FWD, input(g, "X", {9, 100}, T::FLOAT))->set_output(true);
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(*h_).ok());
  std::vector<Partition> parts;
  ASSERT_TRUE(partition_graph(*impl_of(g).ir, parts).ok());
  const Target t = make_target(impl_of(g), *h_);
  std::unique_ptr<Plan> plan, again;
  ASSERT_TRUE(pointwise_jit_engine().build(parts[0], t, {{"unroll", 2}}, plan).ok());
  ByteWriter w;
  plan->serialize(w);
  ByteReader r(w.bytes().data(), w.bytes().size());
  Status s = pointwise_jit_engine().deserialize(parts[0], t, {{"unroll", 2}}, r, again);
  ASSERT_TRUE(s.ok()) << s.to_string();
  // A payload cut short is refused, not trusted.
  ByteReader cut(w.bytes().data(), w.bytes().size() / 2);
  std::unique_ptr<Plan> bad;
  EXPECT_EQ(pointwise_jit_engine().deserialize(parts[0], t, {{"unroll", 2}}, cut, bad).code(), ErrorCode::SERIALIZATION_FAILED);
}

// execute() asks the driver about every user pointer, except when the call repeats the set the last
// call on the handle checked: a host pointer must be refused every time, a repeated set never.
TEST_F(CudaPointwise, HostPointersAreRefusedEveryTimeAndRepeatedSetsRun) {
  dg::Graph g;
  pw(g, M::RELU_FWD, input(g, "X", {4, 64}, T::FLOAT))->set_output(true);
  g.select_engines({kEngine});
  for (const Status& s : {g.validate(), g.build_operation_graph(*h_), g.create_execution_plans({dg::HeurMode::A}),
                          g.check_support(*h_), g.build_plans(*h_)})
    ASSERT_TRUE(s.ok()) << s.to_string();
  DeviceRig rig(*h_, g), other(*h_, g, 2);
  std::vector<float> host(256, 1.0f);
  dg::UidVariantPack bad = rig.pack;
  bad.begin()->second = host.data();
  for (int round = 0; round < 2; ++round) {
    for (DeviceRig* r : {&rig, &rig, &other, &rig}) {
      r->poison();
      const Status ok = g.execute(*h_, r->pack, nullptr);
      ASSERT_TRUE(ok.ok()) << ok.to_string();
    }
    const Status refused = g.execute(*h_, bad, nullptr);
    EXPECT_EQ(refused.code(), ErrorCode::INVALID_VARIANT_PACK);
    EXPECT_NE(refused.message().find("cannot use"), std::string::npos) << refused.to_string();
  }
  const Outputs want = rig.read();
  rig.poison();
  ASSERT_TRUE(g.execute(*h_, rig.pack, nullptr).ok());
  EXPECT_EQ(rig.read(), want);
}

}  // namespace
}  // namespace dnngraph::cuda

namespace dnngraph::cuda {
namespace {

// The harness itself, on the CPU: ref against ref agrees, and an unwritten output (still poisoned)
// or a wrong value is caught.
TEST(CudaPointwiseHarness, CatchesUnwrittenAndWrongOutputs) {
  dg::Handle cpu(dg::Device::cpu());
  RunOptions o;
  o.engine = "ref";
  const Builder build = [](dg::Graph& g) {
    auto t = pw(g, M::GELU_FWD, pw(g, M::MUL, input(g, "X", {8, 64}, T::BFLOAT16), input(g, "S", {1, 64}, T::FLOAT)));
    t->set_output(true).set_data_type(T::FP8_E4M3);
    reduce(g, R::AMAX, t, {1, 1})->set_output(true);
  };
  expect_matches_ref(build, cpu, o);
  Outputs out;
  std::vector<ir::Tensor> tensors;
  ASSERT_TRUE(run_graph(build, cpu, o, out, &tensors));
  for (const auto& t : tensors) {
    if (!out.count(t.uid)) continue;
    std::string bad;
    EXPECT_EQ(relative_error(t, out[t.uid], out[t.uid], bad), 0.0);
    EXPECT_TRUE(std::isinf(relative_error(t, poison_bytes(t), out[t.uid], bad))) << "poison must not pass";
    std::vector<uint8_t> wrong = out[t.uid];  // every eighth element off by far more than rounding
    for (int64_t i = 0; i < t.volume(); i += 8) dtype::store(wrong.data(), t.dtype, i, dtype::load(wrong.data(), t.dtype, i) * 4 + 1);
    EXPECT_GT(relative_error(t, wrong, out[t.uid], bad), tolerance(t.dtype)) << t.name;
  }
}

}  // namespace
}  // namespace dnngraph::cuda
