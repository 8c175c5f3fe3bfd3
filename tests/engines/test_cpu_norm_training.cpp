// cpu_norm_grouped against ref: batchnorm (training, with running statistics), instancenorm and
// the four norm backwards, on seeded random shapes, layouts (every tensor its own strides, gaps
// included) and FLOAT/HALF/BFLOAT16 types, outputs NaN-poisoned before each plan (cpu_test_util).
#include <gtest/gtest.h>

#include <random>

#include "cpu_test_util.hpp"

namespace {

namespace dg = dnngraph;
using cpu_test::Dims;
using cpu_test::HostTensor;

constexpr const char* kEngine = "cpu_norm_grouped";
// DX is a difference of terms of order |dy * scale| computed in fp32: values well below 1 are
// compared absolutely (as cpu_norm_rowwise's tests do), at the output type's tolerance.
constexpr double kFloor = 1.0;

HostTensor input(const Dims& dims, dg::DataType t, std::mt19937& rng, double lo = -2, double hi = 2) {
  return ref_test::random_tensor(dims, t, rng, lo, hi);
}
HostTensor output(const Dims& dims, dg::DataType t, std::mt19937& rng) {
  return ref_test::make_tensor(dims, ref_test::random_strides(dims, rng), t);
}
enum class Grouping { ROW, CHANNEL, INSTANCE };
Dims stat_dims(const Dims& x, Grouping g) {
  Dims d(x.size(), 1);
  if (g != Grouping::CHANNEL) d[0] = x[0];
  if (g != Grouping::ROW) d[1] = x[1];
  return d;
}
Dims param_dims(const Dims& x, Grouping g) {
  if (g != Grouping::ROW) return stat_dims(x, Grouping::CHANNEL);
  Dims d = x;
  d[0] = 1;
  return d;
}

// A backward op of `g`'s grouping on random inputs: DY, X, SCALE, [MEAN,] INV_VARIANCE -> DX,
// DSCALE[, DBIAS]. Statistics are random positive values (their consistency with X does not matter
// to the algebra both engines compute).
void check_backward(Grouping grouping, bool rms, bool dbias, int trials, uint32_t seed) {
  std::mt19937 rng(seed);
  for (int trial = 0; trial < trials; ++trial) {
    const size_t rank = (grouping == Grouping::INSTANCE ? 3 : 2) + rng() % 3;
    const Dims dims = ref_test::random_dims(rng, rank, trial % 3 == 0 ? 40 : 9);
    SCOPED_TRACE("trial " + std::to_string(trial) + ", X dims " + ::testing::PrintToString(dims));
    const Dims p = param_dims(dims, grouping), s = stat_dims(dims, grouping);
    std::vector<HostTensor> in{input(dims, ref_test::random_float_type(rng), rng),
                               input(dims, ref_test::random_float_type(rng), rng),
                               input(p, ref_test::random_float_type(rng), rng)};
    if (!rms) in.push_back(input(s, dg::DataType::FLOAT, rng));
    in.push_back(input(s, dg::DataType::FLOAT, rng, 0.25, 2.0));
    std::vector<HostTensor> outs{output(dims, ref_test::random_float_type(rng), rng), output(p, dg::DataType::FLOAT, rng)};
    if (dbias) outs.push_back(output(p, ref_test::random_float_type(rng), rng));
    cpu_test::check_engine_vs_ref(kEngine, std::move(in), outs, [&](dg::Graph& g, const std::vector<dg::TensorPtr>& t) {
      std::array<dg::TensorPtr, 3> o;
      if (rms) o = g.rmsnorm_backward(t[0], t[1], t[2], t[3], dg::RmsnormBackwardAttr().set_has_dbias(dbias));
      else if (grouping == Grouping::ROW) o = g.layernorm_backward(t[0], t[1], t[2], t[3], t[4], {});
      else if (grouping == Grouping::CHANNEL) o = g.batchnorm_backward(t[0], t[1], t[2], t[3], t[4], {});
      else o = g.instancenorm_backward(t[0], t[1], t[2], t[3], t[4], {});
      std::vector<dg::TensorPtr> r{o[0], o[1]};
      if (dbias) r.push_back(o[2]);
      return r;
    }, -1.0, kFloor);
  }
}

TEST(CpuNormGrouped, LayernormBackwardMatchesRef) { check_backward(Grouping::ROW, false, true, 12, 301); }
TEST(CpuNormGrouped, RmsnormBackwardWithAndWithoutDbiasMatchesRef) {
  check_backward(Grouping::ROW, true, true, 6, 302);
  check_backward(Grouping::ROW, true, false, 6, 303);
}
TEST(CpuNormGrouped, BatchnormBackwardMatchesRef) { check_backward(Grouping::CHANNEL, false, true, 12, 304); }
TEST(CpuNormGrouped, InstancenormBackwardMatchesRef) { check_backward(Grouping::INSTANCE, false, true, 12, 305); }

// Forward: Y, MEAN, INV_VARIANCE (and batchnorm's next running statistics).
void check_forward(Grouping grouping, bool running, int trials, uint32_t seed) {
  std::mt19937 rng(seed);
  for (int trial = 0; trial < trials; ++trial) {
    const size_t rank = 3 + rng() % 3;
    const Dims dims = ref_test::random_dims(rng, rank, trial % 3 == 0 ? 30 : 8);
    SCOPED_TRACE("trial " + std::to_string(trial) + ", X dims " + ::testing::PrintToString(dims));
    const Dims p = param_dims(dims, grouping), s = stat_dims(dims, grouping);
    // X off zero, so that the variance pass about the mean matters.
    std::vector<HostTensor> in{input(dims, ref_test::random_float_type(rng), rng, 3.0, 5.0),
                               input(p, ref_test::random_float_type(rng), rng), input(p, dg::DataType::FLOAT, rng)};
    if (running) {
      in.push_back(input(p, dg::DataType::FLOAT, rng));
      in.push_back(input(p, dg::DataType::FLOAT, rng, 0.5, 2.0));
    }
    std::vector<HostTensor> outs{output(dims, ref_test::random_float_type(rng), rng), output(s, dg::DataType::FLOAT, rng),
                                 output(s, dg::DataType::FLOAT, rng)};
    if (running) {
      outs.push_back(output(p, dg::DataType::FLOAT, rng));
      outs.push_back(output(p, dg::DataType::FLOAT, rng));
    }
    cpu_test::check_engine_vs_ref(kEngine, std::move(in), outs, [&](dg::Graph& g, const std::vector<dg::TensorPtr>& t) {
      if (grouping == Grouping::INSTANCE) {
        auto o = g.instancenorm(t[0], t[1], t[2],
                                dg::InstancenormAttr().set_epsilon(1e-3).set_forward_phase(dg::NormFwdPhase::TRAINING));
        return std::vector<dg::TensorPtr>(o.begin(), o.end());
      }
      dg::BatchnormAttr a;
      a.set_epsilon(1e-3);
      if (running) a.set_previous_running_stats(t[3], t[4], 0.125);
      auto o = g.batchnorm(t[0], t[1], t[2], a);
      return std::vector<dg::TensorPtr>(o.begin(), o.begin() + (running ? 5 : 3));
    }, -1.0, kFloor);
  }
}

TEST(CpuNormGrouped, BatchnormTrainingMatchesRef) { check_forward(Grouping::CHANNEL, false, 8, 306); }
TEST(CpuNormGrouped, BatchnormRunningStatisticsMatchRef) { check_forward(Grouping::CHANNEL, true, 8, 307); }
TEST(CpuNormGrouped, InstancenormMatchesRef) { check_forward(Grouping::INSTANCE, false, 10, 308); }

// Fused partitions and double compute are not this engine's: it says why.
TEST(CpuNormGrouped, RefusesADoubleComputeType) {
  std::mt19937 rng(309);
  dg::Graph g;
  std::vector<HostTensor> in{input({4, 6}, dg::DataType::FLOAT, rng), input({4, 6}, dg::DataType::FLOAT, rng),
                             input({1, 6}, dg::DataType::FLOAT, rng), input({4, 1}, dg::DataType::FLOAT, rng),
                             input({4, 1}, dg::DataType::FLOAT, rng)};
  std::vector<dg::TensorPtr> t;
  for (size_t i = 0; i < in.size(); ++i) t.push_back(in[i].declare(g, "in" + std::to_string(i)));
  auto o = g.layernorm_backward(t[0], t[1], t[2], t[3], t[4],
                                dg::LayernormBackwardAttr().set_name("dln").set_compute_data_type(dg::DataType::DOUBLE));
  for (auto& x : o) x->set_output(true).set_data_type(dg::DataType::FLOAT);
  g.select_engines({kEngine});
  dg::Handle h(dg::Device::cpu());
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(h).ok());
  (void)g.create_execution_plans({dg::HeurMode::FALLBACK});
  EXPECT_NE(g.explain().find("node 'dln' (layernorm_backward): compute type DOUBLE (runs FLOAT)"), std::string::npos)
      << g.explain();
}

}  // namespace
