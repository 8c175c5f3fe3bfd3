// cpu_norm_rowwise against ref: layernorm, rmsnorm and batchnorm_inference on random shapes, layouts and
// types, with and without pointwise epilogues, statistics outputs, few long rows (the segmented
// path), every ISA plan; the kernels directly; and every rejection reason.
#include <gtest/gtest.h>

#include <random>

#include "cpu_test_util.hpp"
#include "engines/cpu/norm/norm_rowwise.hpp"
#include "engines/cpu/norm/norm_kernels.hpp"

namespace {

namespace dg = dnngraph;
using ref_test::Dims;
using ref_test::HostTensor;
using cpu_test::packed;
constexpr const char* kEngine = "cpu_norm_rowwise";

// Runs the graph `build` makes on ref and on cpu_norm_rowwise (every plan index), and compares.
void check_vs_ref(std::vector<HostTensor> inputs, const std::vector<HostTensor>& outs, const cpu_test::Build& build,
                  double floor = 1.0) {
  cpu_test::check_engine_vs_ref(kEngine, std::move(inputs), outs, build, -1.0, floor);
}

HostTensor input(const Dims& dims, dg::DataType t, std::mt19937& rng, double lo = -2, double hi = 2) {
  return ref_test::random_tensor(dims, t, rng, lo, hi);
}
HostTensor output(const Dims& dims, dg::DataType t, std::mt19937& rng) {
  return ref_test::make_tensor(dims, ref_test::random_strides(dims, rng), t);
}
Dims row_param(Dims d) {
  d[0] = 1;
  return d;
}
Dims channel_param(const Dims& d) {
  Dims p(d.size(), 1);
  p[1] = d[1];
  return p;
}
Dims stat_dims(const Dims& d) {
  Dims p(d.size(), 1);
  p[0] = d[0];
  return p;
}
dg::PointwiseAttr mode(dg::PointwiseMode m) { return dg::PointwiseAttr().set_mode(m); }

// ---- kernels

TEST(CpuNormKernels, MatchPlainLoopsOnEveryIsa) {
  std::mt19937 rng(201);
  std::uniform_real_distribution<float> u(-3, 3);
  cpu_test::for_each_isa([&](dg::cpu::Isa isa) {
    const auto& k = dg::cpu::norm::norm_kernels(isa);
    for (int64_t n : {1, 7, 16, 33, 100}) {
      std::vector<float> x(n), s(n), b(n), m(n), out(n, std::nanf(""));
      for (int64_t i = 0; i < n; ++i) x[i] = u(rng), s[i] = u(rng), b[i] = u(rng), m[i] = u(rng);
      double s1 = 0.5, s2 = 0.25, w1 = 0.5, w2 = 0.25;
      k.moments(x.data(), n, 0.75, s1, s2);
      for (float v : x) w1 += v - 0.75, w2 += (v - 0.75) * (v - 0.75);
      EXPECT_NEAR(s1, w1, 1e-9 * n);
      EXPECT_NEAR(s2, w2, 1e-9 * n);
      k.affine(x.data(), n, 0.5f, 0.0f, 1.5f, s.data(), b.data(), 0.0f, out.data());
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(out[i], (x[i] - 0.5f) * 1.5f * s[i] + b[i], 1e-5);
      k.affine(x.data(), n, 0.5f, 0.0f, 1.5f, nullptr, nullptr, 0.25f, out.data());
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(out[i], (x[i] - 0.5f) * 1.5f + 0.25f, 1e-5);
      k.affine(x.data(), n, 0.0f, 0.0f, 1.5f, s.data(), nullptr, 0.0f, out.data());
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(out[i], x[i] * 1.5f * s[i], 1e-5);
      k.affine(x.data(), n, 0.5f, 0.125f, 1.5f, s.data(), nullptr, 0.0f, out.data());  // the mean's low part
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(out[i], ((x[i] - 0.5f) - 0.125f) * 1.5f * s[i], 1e-5);
      k.channel_affine(x.data(), n, m.data(), s.data(), b.data(), out.data());
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(out[i], (x[i] - m[i]) * s[i] + b[i], 1e-5);
    }
  });
}

// ---- graphs vs ref

TEST(CpuNorm, LayernormRandomShapesLayoutsAndTypesMatchRef) {
  std::mt19937 rng(202);
  for (int trial = 0; trial < 14; ++trial) {
    const size_t rank = 2 + rng() % 3;
    const Dims dims = ref_test::random_dims(rng, rank, trial % 3 == 0 ? (rank == 2 ? 300 : 24) : 9);
    const auto t = ref_test::random_float_type(rng), to = ref_test::random_float_type(rng);
    SCOPED_TRACE("trial " + std::to_string(trial));
    check_vs_ref({input(dims, t, rng), input(row_param(dims), ref_test::random_float_type(rng), rng),
                  input(row_param(dims), dg::DataType::FLOAT, rng)},
                 {output(dims, to, rng)}, [&](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                   return std::vector<dg::TensorPtr>{g.layernorm(in[0], in[1], in[2], dg::LayernormAttr().set_epsilon(1e-5))[0]};
                 });
  }
}

// Packed bf16 and fp16 outputs with no epilogue: the kernels convert into Y themselves.
TEST(CpuNorm, PlainHalfOutputsMatchRef) {
  std::mt19937 rng(209);
  for (auto t : {dg::DataType::BFLOAT16, dg::DataType::HALF}) {
    const Dims dims{7, 3, 37};
    const Dims packed{3 * 37, 37, 1};
    check_vs_ref({input(dims, t, rng), input(row_param(dims), dg::DataType::FLOAT, rng),
                  input(row_param(dims), dg::DataType::FLOAT, rng)},
                 {ref_test::make_tensor(dims, packed, t)}, [&](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                   return std::vector<dg::TensorPtr>{g.layernorm(in[0], in[1], in[2], dg::LayernormAttr().set_epsilon(1e-5))[0]};
                 });
  }
}

TEST(CpuNorm, RmsnormWithAndWithoutBiasMatchesRef) {
  std::mt19937 rng(203);
  for (int trial = 0; trial < 10; ++trial) {
    const Dims dims = ref_test::random_dims(rng, 2 + rng() % 3, 11);
    const bool bias = trial % 2;
    SCOPED_TRACE("trial " + std::to_string(trial));
    std::vector<HostTensor> in{input(dims, ref_test::random_float_type(rng), rng), input(row_param(dims), dg::DataType::FLOAT, rng)};
    if (bias) in.push_back(input(row_param(dims), dg::DataType::BFLOAT16, rng));
    check_vs_ref(in, {output(dims, ref_test::random_float_type(rng), rng)},
                 [&](dg::Graph& g, const std::vector<dg::TensorPtr>& t) {
                   dg::RmsnormAttr a;
                   a.set_epsilon(1e-3);
                   if (bias) a.set_bias(t[2]);
                   return std::vector<dg::TensorPtr>{g.rmsnorm(t[0], t[1], a)[0]};
                 });
  }
}

TEST(CpuNorm, BatchnormNchwNhwcAndRandomLayoutsMatchRef) {
  std::mt19937 rng(204);
  for (int trial = 0; trial < 12; ++trial) {
    const Dims dims = ref_test::random_dims(rng, 2 + rng() % 4, trial % 4 == 0 ? 30 : 8);
    const Dims p = channel_param(dims);
    SCOPED_TRACE("trial " + std::to_string(trial));
    check_vs_ref({input(dims, ref_test::random_float_type(rng), rng), input(p, dg::DataType::FLOAT, rng),
                  input(p, dg::DataType::FLOAT, rng, 0.5, 2.0), input(p, ref_test::random_float_type(rng), rng),
                  input(p, dg::DataType::FLOAT, rng)},
                 {output(dims, ref_test::random_float_type(rng), rng)},
                 [&](dg::Graph& g, const std::vector<dg::TensorPtr>& t) {
                   return std::vector<dg::TensorPtr>{g.batchnorm_inference(t[0], t[1], t[2], t[3], t[4], dg::BatchnormInferenceAttr())};
                 });
  }
}

// Layernorm -> * alpha -> + residual -> GELU -> cast to bf16 (a norm_epilogue partition), the
// normalized Y also stored, and an epilogue op reading the row mean.
TEST(CpuNorm, LayernormEpilogueChainMatchesRef) {
  std::mt19937 rng(205);
  for (int trial = 0; trial < 4; ++trial) {
    const Dims dims{int64_t(1 + rng() % 6), int64_t(1 + rng() % 9), int64_t(1 + rng() % 50)};
    SCOPED_TRACE("trial " + std::to_string(trial));
    check_vs_ref({input(dims, ref_test::random_float_type(rng), rng), input(row_param(dims), dg::DataType::FLOAT, rng),
                  input(row_param(dims), dg::DataType::FLOAT, rng), input(dims, dg::DataType::BFLOAT16, rng)},
                 {output(dims, dg::DataType::BFLOAT16, rng), output(dims, dg::DataType::FLOAT, rng),
                  output(dims, dg::DataType::FLOAT, rng)},
                 [&](dg::Graph& g, const std::vector<dg::TensorPtr>& t) {
                   auto ln = g.layernorm(t[0], t[1], t[2], dg::LayernormAttr().set_epsilon(1e-5));
                   auto y = g.add(g.scale(ln[0], g.tensor(0.75)), t[3]);
                   auto out = g.pointwise(g.gelu(y), mode(dg::PointwiseMode::IDENTITY));
                   auto centred = g.mul(ln[0], ln[1]);  // reads the per-row mean
                   return std::vector<dg::TensorPtr>{out, ln[0], centred};
                 });
  }
}

TEST(CpuNorm, RmsnormAndBatchnormEpiloguesMatchRef) {
  std::mt19937 rng(206);
  const Dims dims{3, 5, 7, 6};
  check_vs_ref({input(dims, dg::DataType::HALF, rng), input(row_param(dims), dg::DataType::FLOAT, rng)},
               {output(dims, dg::DataType::HALF, rng)}, [&](dg::Graph& g, const std::vector<dg::TensorPtr>& t) {
                 auto y = g.rmsnorm(t[0], t[1], dg::RmsnormAttr().set_epsilon(1e-5))[0];
                 return std::vector<dg::TensorPtr>{g.pointwise(y, mode(dg::PointwiseMode::SWISH_FWD))};
               });
  const Dims p = channel_param(dims);
  check_vs_ref({input(dims, dg::DataType::BFLOAT16, rng), input(p, dg::DataType::FLOAT, rng),
                input(p, dg::DataType::FLOAT, rng, 0.5, 2), input(p, dg::DataType::FLOAT, rng),
                input(p, dg::DataType::FLOAT, rng), input(dims, dg::DataType::FLOAT, rng)},
               {output(dims, dg::DataType::BFLOAT16, rng)}, [&](dg::Graph& g, const std::vector<dg::TensorPtr>& t) {
                 auto y = g.batchnorm_inference(t[0], t[1], t[2], t[3], t[4], dg::BatchnormInferenceAttr());
                 return std::vector<dg::TensorPtr>{g.relu(g.add(y, t[5]))};
               });
}

TEST(CpuNorm, TrainingPhaseStatisticsMatchRef) {
  std::mt19937 rng(207);
  const Dims dims{6, 4, 9};
  check_vs_ref({input(dims, dg::DataType::FLOAT, rng, 1, 3), input(row_param(dims), dg::DataType::FLOAT, rng),
                input(row_param(dims), dg::DataType::FLOAT, rng)},
               {output(dims, dg::DataType::FLOAT, rng), output(stat_dims(dims), dg::DataType::FLOAT, rng),
                output(stat_dims(dims), dg::DataType::BFLOAT16, rng), output(dims, dg::DataType::FLOAT, rng)},
               [&](dg::Graph& g, const std::vector<dg::TensorPtr>& t) {
                 auto ln = g.layernorm(t[0], t[1], t[2],
                                       dg::LayernormAttr().set_epsilon(1e-5).set_forward_phase(dg::NormFwdPhase::TRAINING));
                 return std::vector<dg::TensorPtr>{ln[0], ln[1], ln[2], g.mul(ln[0], ln[1])};  // the epilogue reads the mean
               });
  check_vs_ref({input(dims, dg::DataType::FLOAT, rng), input(row_param(dims), dg::DataType::FLOAT, rng)},
               {output(dims, dg::DataType::FLOAT, rng), output(stat_dims(dims), dg::DataType::FLOAT, rng)},
               [&](dg::Graph& g, const std::vector<dg::TensorPtr>& t) {
                 auto r = g.rmsnorm(t[0], t[1], dg::RmsnormAttr().set_epsilon(1e-5).set_forward_phase(dg::NormFwdPhase::TRAINING));
                 return std::vector<dg::TensorPtr>{r[0], r[1]};
               });
}

// Fewer rows than threads and long rows: segments of rows, moments combined across tasks; the
// shift keeps a large mean from cancelling the variance.
TEST(CpuNorm, FewLongRowsMatchRef) {
  std::mt19937 rng(208);
  const Dims dims{1, 5, 9000};
  check_vs_ref({input(dims, dg::DataType::FLOAT, rng, 99, 101), input(row_param(dims), dg::DataType::FLOAT, rng),
                input(row_param(dims), dg::DataType::FLOAT, rng)},
               {output(dims, dg::DataType::FLOAT, rng)}, [&](dg::Graph& g, const std::vector<dg::TensorPtr>& t) {
                 auto y = g.layernorm(t[0], t[1], t[2], dg::LayernormAttr().set_epsilon(1e-5))[0];
                 return std::vector<dg::TensorPtr>{g.relu(y)};
               });
}

// Rows of a large mean and a small deviation (1000 +- 0.005, 2^-14 apart in fp32): the mean
// rounded to fp32 alone is off by up to 3e-5, 1% of the deviation; as two floats it is exact.
TEST(CpuNorm, LargeMeanSmallDeviationRowsMatchRef) {
  std::mt19937 rng(209);
  for (const Dims& dims : {Dims{6, 1000}, Dims{1, 3, 9000}}) {  // by rows, and long rows in segments
    check_vs_ref({input(dims, dg::DataType::FLOAT, rng, 999.995, 1000.005), input(row_param(dims), dg::DataType::FLOAT, rng),
                  input(row_param(dims), dg::DataType::FLOAT, rng)},
                 {output(dims, dg::DataType::FLOAT, rng)}, [&](dg::Graph& g, const std::vector<dg::TensorPtr>& t) {
                   return std::vector<dg::TensorPtr>{
                       g.layernorm(t[0], t[1], t[2], dg::LayernormAttr().set_epsilon(1e-12))[0]};
                 });
  }
}

// ---- rejections

struct Planned {
  dg::Graph g;
  std::string explain() { return cpu_test::explain(g); }
};

void expect_rejected(const std::string& explain, const std::string& reason) {
  cpu_test::expect_rejected(kEngine, explain, reason);
}

std::array<dg::TensorPtr, 3> layernorm(dg::Graph& g, const Dims& dims, dg::DataType t = dg::DataType::FLOAT,
                                       dg::LayernormAttr a = dg::LayernormAttr()) {
  return g.layernorm(packed(g, "X", dims, t), packed(g, "S", row_param(dims)), packed(g, "B", row_param(dims)),
                     a.set_name("ln").set_epsilon(1e-5));
}

TEST(CpuNorm, RejectsPartitionsWithoutANorm) {
  Planned p;
  p.g.relu(packed(p.g, "X", {4, 4}))->set_output(true);
  expect_rejected(p.explain(), "the partition has no anchor");
  Planned q;
  q.g.matmul(packed(q.g, "A", {4, 8}), packed(q.g, "B", {8, 4}), dg::MatmulAttr().set_name("mm"))->set_output(true);
  expect_rejected(q.explain(), "the partition is anchored on node 'mm' (matmul), not on a layernorm");
}

TEST(CpuNorm, RejectsUnsupportedTypes) {
  Planned p;
  layernorm(p.g, {4, 8}, dg::DataType::DOUBLE)[0]->set_output(true).set_data_type(dg::DataType::FLOAT);
  expect_rejected(p.explain(), "node 'ln', tensor 'X': data type DOUBLE is not supported (FLOAT, HALF and BFLOAT16 are)");
  Planned q;
  layernorm(q.g, {4, 8}, dg::DataType::FLOAT, dg::LayernormAttr().set_compute_data_type(dg::DataType::DOUBLE))[0]->set_output(true);
  expect_rejected(q.explain(), "node 'ln': compute type DOUBLE is not supported");
}

TEST(CpuNorm, RejectsEpiloguesItCannotRun) {
  Planned p;  // an epilogue output larger than the norm's
  auto y = layernorm(p.g, {1, 8})[0];
  p.g.pointwise(y, packed(p.g, "W", {4, 8}), mode(dg::PointwiseMode::ADD).set_name("wide"))->set_output(true);
  expect_rejected(p.explain(), "the epilogue does not lower: node 'wide': its output does not broadcast");
  Planned q;  // an epilogue storing a type fp32 cannot hold
  auto z = q.g.relu(layernorm(q.g, {4, 8})[0]);
  z->set_output(true).set_data_type(dg::DataType::INT32).set_name("z");
  expect_rejected(q.explain(), "tensor 'z': data type INT32 is not supported");
  Planned r;  // an epilogue reading a bf16 statistic
  auto ln = layernorm(r.g, {4, 8}, dg::DataType::FLOAT, dg::LayernormAttr().set_forward_phase(dg::NormFwdPhase::TRAINING));
  ln[1]->set_data_type(dg::DataType::BFLOAT16).set_name("mean").set_output(true);
  r.g.mul(ln[0], ln[1])->set_output(true);
  expect_rejected(r.explain(), "tensor 'mean': the epilogue reads this statistic, which is only supported as FLOAT");
}

TEST(CpuNorm, RejectsMoreThanTwelveUnmergeableDims) {
  Planned p;
  const Dims dims(13, 2);
  Dims col(13, 1);  // Y column-major, X row-major: no two dims merge
  for (size_t i = 1; i < 13; ++i) col[i] = col[i - 1] * 2;
  layernorm(p.g, dims)[0]->set_output(true).set_stride(col);
  expect_rejected(p.explain(), "the fused domain has rank 13");
}

TEST(CpuNorm, RejectsNonCpuHandlesAndUnsupportedIsaKnobs) {
  dg::Graph g;
  layernorm(g, {4, 8})[0]->set_output(true);
  cpu_test::expect_cpu_only(dg::cpu::norm_rowwise_engine(), g, true);
}

}  // namespace
