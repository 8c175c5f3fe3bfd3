// cpu_pointwise_fused against ref: random pointwise chains with broadcasting, strides and types,
// fusion chains with AMAX, terminal and lone reductions, GEN_INDEX, large tensors split over
// threads; the canonical layout directly; and every rejection reason.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>

#include "core/dtype.hpp"
#include "common/build_steps.hpp"
#include "common/pointwise_modes.hpp"
#include "cpu_test_util.hpp"
#include "engines/cpu/pointwise/canonical_layout.hpp"
#include "engines/cpu/simd/convert_kernels.hpp"
#include "engines/cpu/pointwise/pointwise_fused.hpp"

namespace {

namespace dg = dnngraph;
using ref_test::Dims;
using ref_test::HostTensor;
constexpr const char* kEngine = "cpu_pointwise_fused";

// Runs the graph `build` makes on ref and on cpu_pointwise_fused (every plan index), and compares.
void check_vs_ref(std::vector<HostTensor> inputs, const std::vector<HostTensor>& outs, const cpu_test::Build& build,
                  double tol = -1.0, double floor = 1e-3) {
  cpu_test::check_engine_vs_ref(kEngine, std::move(inputs), outs, build, tol, floor);
}

HostTensor random_input(const Dims& dims, dg::DataType t, std::mt19937& rng, double lo = -2, double hi = 2) {
  return ref_test::random_tensor(dims, t, rng, lo, hi);
}
HostTensor random_output(const Dims& dims, dg::DataType t, std::mt19937& rng) {
  return ref_test::make_tensor(dims, ref_test::random_strides(dims, rng), t);
}

dg::PointwiseAttr mode(dg::PointwiseMode m) { return dg::PointwiseAttr().set_mode(m); }

// ---- canonical layout

TEST(CpuPointwiseLayout, MergesContiguousDimsAndOrdersByStride) {
  namespace expr = dg::expr;
  dg::ir::Graph g;
  auto add_tensor = [&](Dims dims, Dims strides) {
    dg::ir::Tensor t;
    t.id = static_cast<int>(g.tensors.size());
    t.dtype = dg::DataType::FLOAT;
    t.dims = std::move(dims);
    t.strides = std::move(strides);
    g.tensors.push_back(t);
    return t.id;
  };
  // NCHW dims over NHWC memory, a per-channel operand, an output of the same layout.
  const int x = add_tensor({2, 3, 4, 5}, {60, 1, 15, 3});
  const int b = add_tensor({1, 3, 1, 1}, {3, 1, 1, 1});
  const int y = add_tensor({2, 3, 4, 5}, {60, 1, 15, 3});
  expr::Program prog;
  prog.domain = {2, 3, 4, 5};
  auto instr = [](expr::InstrKind k, int dst, int src0, int src1, int tensor) {
    expr::Instr in{};
    in.kind = k;
    in.dst = dst;
    in.src[0] = src0;
    in.src[1] = src1;
    in.tensor = tensor;
    return in;
  };
  prog.code.push_back(instr(expr::InstrKind::LOAD, 0, -1, -1, x));
  prog.code.push_back(instr(expr::InstrKind::LOAD, 1, -1, -1, b));
  prog.code.push_back(instr(expr::InstrKind::APPLY, 2, 0, 1, -1));
  prog.code.back().op = mode(dg::PointwiseMode::ADD);
  prog.code.push_back(instr(expr::InstrKind::STORE, -1, 2, -1, y));
  prog.num_regs = 3;
  prog.stores = {y};
  dg::cpu::ProgramTensors tensors(g);
  dg::cpu::canonicalize_domain(prog, tensors, y, 0);
  // N, H, W merge into one dim of 40 (C stays apart: the bias broadcasts along the others).
  EXPECT_EQ(prog.domain, (Dims{40, 3}));
  EXPECT_EQ(tensors.tensor(x).dims, (Dims{40, 3}));
  EXPECT_EQ(tensors.tensor(x).strides, (Dims{3, 1}));
  EXPECT_EQ(tensors.tensor(b).dims, (Dims{1, 3}));
  EXPECT_EQ(tensors.tensor(y).strides, (Dims{3, 1}));
  EXPECT_EQ(g.tensor(x).dims, (Dims{2, 3, 4, 5}));  // the IR keeps its own
}

// ---- conversion kernels

TEST(CpuConvertKernels, MatchTheScalarConversionsOnEveryIsa) {
  namespace cpu = dg::cpu;
  std::mt19937 rng(107);
  std::vector<float> src;
  for (float v : {0.0f, -0.0f, 1.0f, 65504.0f, 65520.0f, 1e-7f, 6e-8f, 3e-41f, INFINITY, -INFINITY, std::nanf("")})
    src.push_back(v);
  for (uint32_t bits : {0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x7f7fffffu})  // bf16 ties, max
    src.push_back(dg::dtype::bits_float(bits));
  std::uniform_real_distribution<float> u(-70000.0f, 70000.0f);
  while (src.size() < 77) src.push_back(u(rng) * (rng() % 2 ? 1.0f : 1e-4f));
  const int64_t n = static_cast<int64_t>(src.size());
  cpu_test::for_each_isa([&](cpu::Isa isa) {
    const auto& k = cpu::convert_kernels(isa);
    for (auto t : {dg::DataType::BFLOAT16, dg::DataType::HALF}) {
      std::vector<uint16_t> half(static_cast<size_t>(n));
      k.from_fp32(src.data(), n, t, half.data());
      std::vector<float> back(static_cast<size_t>(n), -1.0f);
      k.to_fp32(half.data(), t, n, back.data());
      for (int64_t i = 0; i < n; ++i) {
        const float v = src[static_cast<size_t>(i)];
        const uint16_t want = t == dg::DataType::BFLOAT16 ? dg::dtype::float_to_bf16(v) : dg::dtype::float_to_half(v);
        const uint16_t got = half[static_cast<size_t>(i)];
        if (std::isnan(v)) {
          EXPECT_TRUE(std::isnan(back[static_cast<size_t>(i)])) << i;
          continue;
        }
        EXPECT_EQ(got, want) << "element " << i << " = " << v << " to " << dg::to_string(t);
        const float decoded = t == dg::DataType::BFLOAT16 ? dg::dtype::bf16_to_float(got) : dg::dtype::half_to_float(got);
        EXPECT_EQ(dg::dtype::float_bits(back[static_cast<size_t>(i)]), dg::dtype::float_bits(decoded)) << i;
      }
    }
  });
}

// ---- graphs vs ref

TEST(CpuPointwiseFused, RandomChainsMatchRef) {
  std::mt19937 rng(101);
  const dg::PointwiseMode binary[] = {dg::PointwiseMode::ADD, dg::PointwiseMode::SUB, dg::PointwiseMode::MUL,
                                      dg::PointwiseMode::MAX, dg::PointwiseMode::MIN, dg::PointwiseMode::CMP_GT};
  const dg::PointwiseMode unary[] = {dg::PointwiseMode::RELU_FWD, dg::PointwiseMode::TANH_FWD,
                                     dg::PointwiseMode::SIGMOID_FWD, dg::PointwiseMode::EXP, dg::PointwiseMode::ABS,
                                     dg::PointwiseMode::GELU_FWD, dg::PointwiseMode::NEG};
  for (int trial = 0; trial < 24; ++trial) {
    const size_t rank = 1 + rng() % 4;
    const Dims dims = ref_test::random_dims(rng, rank, 7);
    Dims bdims = dims;  // a broadcast operand: some dims 1
    for (auto& d : bdims)
      if (rng() % 2) d = 1;
    const auto ta = ref_test::random_float_type(rng), tb = ref_test::random_float_type(rng);
    const auto to = ref_test::random_float_type(rng);
    const auto op1 = binary[rng() % 6], op2 = binary[rng() % 5];
    const auto act = unary[rng() % 7];
    const bool second_output = rng() % 2;
    SCOPED_TRACE("trial " + std::to_string(trial));
    std::vector<HostTensor> outs{random_output(dims, to, rng)};
    if (second_output) outs.push_back(random_output(dims, dg::DataType::FLOAT, rng));
    check_vs_ref({random_input(dims, ta, rng), random_input(bdims, tb, rng)}, outs,
                 [&](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                   auto t = g.pointwise(in[0], in[1], mode(op1));
                   auto u = g.pointwise(t, mode(act));
                   auto v = g.pointwise(u, in[0], mode(op2));
                   std::vector<dg::TensorPtr> r{v};
                   if (second_output) r.push_back(u);
                   return r;
                 });
  }
}

// A value typed bf16 or fp16 is rounded once, to nearest even: where it is only stored into a
// tensor of its type the store rounds it (the rounding pass is skipped); where another op reads it
// too, the op sees the rounded value (t - x is the rounding error, which a skipped or wrong
// rounding, ties included, would change). Unit-stride and strided outputs, every type.
TEST(CpuPointwiseFused, HalfWidthValuesRoundOnceToNearestEven) {
  std::mt19937 rng(111);
  const Dims dims{3, 40};
  HostTensor x = ref_test::make_tensor(dims, {40, 1}, dg::DataType::FLOAT);
  std::uniform_real_distribution<float> u(-300.0f, 300.0f);
  const uint32_t ties[] = {0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0xc0008000u, 0x3c00a000u, 0x3f801000u};
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 40; ++j)
      x.set({i, j}, j < 6 ? dg::dtype::bits_float(ties[j]) * (i + 1.0f) : u(rng));
  for (auto t : {dg::DataType::BFLOAT16, dg::DataType::HALF})
    for (bool also_read : {false, true}) {
      SCOPED_TRACE(std::string(dg::to_string(t)) + (also_read ? ", also read" : ", only stored"));
      std::vector<HostTensor> outs{ref_test::make_tensor(dims, also_read ? Dims{1, 3} : Dims{40, 1}, t)};
      if (also_read) outs.push_back(random_output(dims, dg::DataType::FLOAT, rng));
      check_vs_ref({x}, outs, [&](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
        auto r = g.pointwise(in[0], mode(dg::PointwiseMode::IDENTITY));
        r->set_data_type(t);
        std::vector<dg::TensorPtr> o{r};
        if (also_read) o.push_back(g.pointwise(r, in[0], mode(dg::PointwiseMode::SUB)));
        return o;
      }, 1e-6, 1e-30);
    }
}

// Every mode of the list, with non-default parameters, on inputs inside its domain: the engine's
// formulas are its own, so each is held against ref's here.
TEST(CpuPointwiseFused, EveryModeMatchesRef) {
  using M = dg::PointwiseMode;
  std::mt19937 rng(7);
  for (const M pm : test_modes::all_pointwise_modes()) {
    if (pm == M::GEN_INDEX) continue;  // an index, GenIndexKeepsItsAxis covers it
    SCOPED_TRACE(std::string(dg::to_string(pm)));
    const bool positive = pm == M::LOG || pm == M::SQRT || pm == M::RSQRT || pm == M::POW;
    const Dims dims{3, 17};
    std::vector<HostTensor> in;
    for (int i = 0; i < dg::arity(pm); ++i)
      in.push_back(random_input(dims, dg::DataType::FLOAT, rng, positive && i == 0 ? 0.25 : -2.0, 2.0));
    dg::PointwiseAttr attr = mode(pm);
    attr.set_relu_lower_clip(-0.5).set_relu_lower_clip_slope(0.1).set_relu_upper_clip(1.5);
    attr.set_elu_alpha(0.7).set_softplus_beta(1.5).set_swish_beta(0.8);
    check_vs_ref(std::move(in), {random_output(dims, dg::DataType::FLOAT, rng)},
                 [&](dg::Graph& g, const std::vector<dg::TensorPtr>& x) -> std::vector<dg::TensorPtr> {
                   if (x.size() == 1) return {g.pointwise(x[0], attr)};
                   if (x.size() == 2) return {g.pointwise(x[0], x[1], attr)};
                   return {g.pointwise(x[0], x[1], x[2], attr)};
                 });
  }
}

// hardswish at its kinks and beyond, against hand-computed values (EveryModeMatchesRef holds the
// engine to ref on random inputs; this holds both to the definition x * relu6(x + 3) / 6), and
// NaN propagates. Python's g.hardswish comes from the same row.
TEST(CpuPointwiseFused, HardswishMatchesItsDefinition) {
  std::vector<float> x{-4.0f, -3.0f, -1.5f, 0.0f, 1.5f, 3.0f, 4.0f, std::nanf("")};
  const std::vector<double> want{0.0, 0.0, -0.375, 0.0, 1.125, 3.0, 4.0, std::nan("")};
  for (const char* engine : {kEngine, "ref"}) {
    SCOPED_TRACE(engine);
    dg::Handle cpu(dg::Device::cpu());
    dg::Graph g;
    auto X = g.tensor(dg::TensorAttr().set_name("X").set_dim({8}).set_stride({1}).set_data_type(dg::DataType::FLOAT));
    auto Y = g.pointwise(X, mode(dg::PointwiseMode::HARDSWISH_FWD).set_name("hardswish"));
    Y->set_output(true).set_data_type(dg::DataType::FLOAT);
    g.select_engines({engine});
    const auto built = test_build::run_build_steps(g, cpu);
    ASSERT_TRUE(built.ok()) << built.to_string() << "\n" << g.explain();
    std::vector<float> y(8, std::nanf(""));
    const auto s = g.execute(cpu, {{X, x.data()}, {Y, y.data()}}, nullptr);
    ASSERT_TRUE(s.ok()) << s.to_string();
    for (size_t i = 0; i < want.size(); ++i) {
      if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(y[i])) << "at " << x[i];
      else EXPECT_NEAR(y[i], want[i], 1e-6) << "at " << x[i];
    }
  }
}

// MIN and MAX keep std::fmin / std::fmax's NaN rule (a NaN operand yields the other one) on the
// vectorized compare-and-select path, as on ref. ReLU keeps NaN through its lower and upper clips
// (PyTorch's relu / relu6 rule) and takes -inf to 0, on both engines.
TEST(CpuPointwiseFused, MinMaxFollowFminAndFmaxReluKeepsNan) {
  const float nan = std::nanf("");
  const float inf = INFINITY;
  const std::vector<float> a{-1.0f, 2.0f, nan, 3.0f, nan, 7.5f, -8.0f, 0.5f, -0.0f, 6.0f, 100.0f, 0.0f, -inf, inf};
  const std::vector<float> b{1.0f, -2.0f, 4.0f, nan, nan, 6.0f, 9.0f, 0.5f, 1.0f, -1.0f, 2.0f, nan, 1.0f, -inf};
  const int64_t n = static_cast<int64_t>(a.size());
  using M = dg::PointwiseMode;
  struct Case {
    M mode;
    std::optional<double> upper;
  };
  auto relu_of = [](float x, std::optional<double> upper) {
    if (std::isnan(x)) return x;
    const float y = x > 0.0f ? x : 0.0f;
    return upper && y > *upper ? static_cast<float>(*upper) : y;
  };
  for (const Case c : {Case{M::MIN, {}}, Case{M::MAX, {}}, Case{M::RELU_FWD, {}}, Case{M::RELU_FWD, 6.0}})
    for (const char* engine : {kEngine, "ref"}) {
      SCOPED_TRACE(std::string(engine) + " " + std::string(dg::to_string(c.mode)) + (c.upper ? " upper 6" : ""));
      dg::Handle cpu(dg::Device::cpu());
      dg::Graph g;
      auto A = g.tensor(dg::TensorAttr().set_name("A").set_dim({n}).set_stride({1}).set_data_type(dg::DataType::FLOAT));
      auto B = g.tensor(dg::TensorAttr().set_name("B").set_dim({n}).set_stride({1}).set_data_type(dg::DataType::FLOAT));
      dg::PointwiseAttr attr = mode(c.mode).set_name("op");
      if (c.upper) attr.set_relu_upper_clip(*c.upper);
      auto Y = c.mode == M::RELU_FWD ? g.pointwise(A, attr) : g.pointwise(A, B, attr);
      Y->set_output(true).set_data_type(dg::DataType::FLOAT);
      g.select_engines({engine});
      const auto built = test_build::run_build_steps(g, cpu);
      ASSERT_TRUE(built.ok()) << built.to_string() << "\n" << g.explain();
      std::vector<float> y(a.size(), -123.0f);
      dg::VariantPack pack{{A, const_cast<float*>(a.data())}, {Y, y.data()}};
      if (c.mode != M::RELU_FWD) pack[B] = const_cast<float*>(b.data());
      ASSERT_TRUE(g.execute(cpu, pack, nullptr).ok());
      for (size_t i = 0; i < a.size(); ++i) {
        const float want = c.mode == M::MIN   ? std::fmin(a[i], b[i])
                           : c.mode == M::MAX ? std::fmax(a[i], b[i])
                                              : relu_of(a[i], c.upper);
        if (std::isnan(want)) EXPECT_TRUE(std::isnan(y[i])) << i;
        else EXPECT_EQ(y[i], want) << i;
      }
    }
}

// x * alpha + bias -> GELU -> cast to bf16, with the AMAX of the GELU output.
TEST(CpuPointwiseFused, ScaleBiasGeluCastWithAmaxMatchesRef) {
  std::mt19937 rng(102);
  for (int trial = 0; trial < 4; ++trial) {
    const Dims dims{int64_t(1 + rng() % 5), int64_t(1 + rng() % 40), int64_t(1 + rng() % 70)};
    const Dims bias_dims{1, 1, dims[2]};
    SCOPED_TRACE("trial " + std::to_string(trial));
    check_vs_ref({random_input(dims, ref_test::random_float_type(rng), rng), random_input(bias_dims, dg::DataType::FLOAT, rng)},
                 {random_output(dims, dg::DataType::BFLOAT16, rng), random_output({1, 1, 1}, dg::DataType::FLOAT, rng)},
                 [&](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                   auto alpha = g.tensor(0.625);
                   auto y = g.bias(g.scale(in[0], alpha), in[1]);
                   auto act = g.gelu(y);
                   auto cast = g.pointwise(act, mode(dg::PointwiseMode::IDENTITY));
                   auto amax = g.reduction(act, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX));
                   return std::vector<dg::TensorPtr>{cast, amax};
                 });
  }
}

TEST(CpuPointwiseFused, TerminalReductionsMatchRef) {
  std::mt19937 rng(103);
  const dg::ReductionMode modes[] = {dg::ReductionMode::ADD, dg::ReductionMode::MAX, dg::ReductionMode::MIN,
                                     dg::ReductionMode::AMAX, dg::ReductionMode::AVG, dg::ReductionMode::NORM1,
                                     dg::ReductionMode::NORM2, dg::ReductionMode::MUL};
  for (int trial = 0; trial < 16; ++trial) {
    const size_t rank = 1 + rng() % 4;
    const Dims dims = ref_test::random_dims(rng, rank, 9);
    Dims rdims = dims;  // reduce a random subset of the dims (all of them sometimes)
    for (auto& d : rdims)
      if (rng() % 2 || trial % 4 == 0) d = 1;
    const auto m = modes[trial % 8];
    SCOPED_TRACE("trial " + std::to_string(trial) + " " + std::string(dg::to_string(m)));
    const double lo = m == dg::ReductionMode::MUL ? 0.9 : -2.0, hi = m == dg::ReductionMode::MUL ? 1.1 : 2.0;
    check_vs_ref({random_input(dims, ref_test::random_float_type(rng), rng, lo, hi), random_input(dims, dg::DataType::FLOAT, rng, lo, hi)},
                 {random_output(rdims, dg::DataType::FLOAT, rng)},
                 [&](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                   auto t = g.pointwise(in[0], in[1], mode(dg::PointwiseMode::MUL));
                   return std::vector<dg::TensorPtr>{g.reduction(t, dg::ReductionAttr().set_mode(m))};
                 }, 1e-5, 1.0);
  }
}

TEST(CpuPointwiseFused, LoneReductionMatchesRef) {
  std::mt19937 rng(104);
  for (int trial = 0; trial < 6; ++trial) {
    const Dims dims = ref_test::random_dims(rng, 3, 12);
    Dims rdims = dims;
    rdims[trial % 3] = 1;
    const auto m = trial % 2 ? dg::ReductionMode::ADD : dg::ReductionMode::MAX;
    check_vs_ref({random_input(dims, ref_test::random_float_type(rng), rng)}, {random_output(rdims, dg::DataType::FLOAT, rng)},
                 [&](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                   return std::vector<dg::TensorPtr>{g.reduction(in[0], dg::ReductionAttr().set_mode(m))};
                 }, 1e-5, 1.0);
  }
}

TEST(CpuPointwiseFused, GenIndexKeepsItsAxis) {
  std::mt19937 rng(105);
  const Dims dims{3, 4, 5};
  for (int axis = 0; axis < 3; ++axis)
    check_vs_ref({random_input(dims, dg::DataType::FLOAT, rng)}, {random_output(dims, dg::DataType::FLOAT, rng)},
                 [&](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                   auto idx = g.pointwise(in[0], mode(dg::PointwiseMode::GEN_INDEX).set_axis(axis));
                   return std::vector<dg::TensorPtr>{g.add(idx, in[0])};
                 });
}

// Large enough for several threads' ranges; NCHW dims over NHWC memory with a per-channel
// operand, and a partial (per-channel) sum.
TEST(CpuPointwiseFused, LargeTensorsSplitOverThreadsMatchRef) {
  std::mt19937 rng(106);
  const Dims dims{2, 24, 33, 31};
  auto nhwc = [&](const Dims& d, dg::DataType t) {
    HostTensor h = ref_test::make_tensor(d, test_dims::channels_last(d), t);
    h.randomize(rng, -2, 2);
    return h;
  };
  check_vs_ref({nhwc(dims, dg::DataType::BFLOAT16), random_input({1, 24, 1, 1}, dg::DataType::FLOAT, rng)},
               {ref_test::make_tensor(dims, test_dims::channels_last(dims), dg::DataType::HALF),
                random_output({1, 24, 1, 1}, dg::DataType::FLOAT, rng)},
               [&](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                 auto y = g.relu(g.bias(in[0], in[1]));
                 return std::vector<dg::TensorPtr>{y, g.reduction(y, dg::ReductionAttr().set_mode(dg::ReductionMode::ADD))};
               }, 1e-5, 30.0);
}

// ---- rejections

struct Planned {
  dg::Graph g;
  std::string explain() { return cpu_test::explain(g); }
};

dg::TensorPtr f32(dg::Graph& g, const std::string& name, const Dims& dims, dg::DataType t = dg::DataType::FLOAT) {
  return cpu_test::packed(g, name, dims, t);
}

void expect_rejected(const std::string& explain, const std::string& reason) {
  cpu_test::expect_rejected(kEngine, explain, reason);
}

TEST(CpuPointwiseFused, RejectsAnchoredPartitions) {
  Planned p;
  auto y = p.g.relu(p.g.matmul(f32(p.g, "A", {4, 8}), f32(p.g, "B", {8, 4}), dg::MatmulAttr().set_name("mm")));
  y->set_output(true);
  expect_rejected(p.explain(), "the partition is anchored on node 'mm' (matmul)");
}

TEST(CpuPointwiseFused, RejectsOtherOps) {
  Planned p;
  auto y = p.g.resample(f32(p.g, "X", {1, 2, 4, 4}), dg::ResampleAttr()
                                                        .set_name("pool")
                                                        .set_resampling_mode(dg::ResampleMode::MAXPOOL)
                                                        .set_window({2, 2})
                                                        .set_stride({2, 2}));
  y->set_output(true);
  expect_rejected(p.explain(), "node 'pool' (resample) is not a pointwise op, a reduction or genstats");
}

TEST(CpuPointwiseFused, RejectsAStoredResultSmallerThanTheDomain) {
  Planned p;
  auto small = p.g.relu(f32(p.g, "X", {4, 1}));
  small->set_output(true).set_name("small");
  auto big = p.g.add(small, f32(p.g, "W", {4, 5}));
  big->set_output(true);
  expect_rejected(p.explain(), "the partition does not lower to one fused loop: tensor 'small': a stored result must span");
}

TEST(CpuPointwiseFused, RejectsTypesFp32CannotHold) {
  Planned p;
  auto y = p.g.add(f32(p.g, "I", {4, 4}, dg::DataType::INT32), f32(p.g, "X", {4, 4}));
  y->set_output(true);
  expect_rejected(p.explain(), "tensor 'I': data type INT32 is not supported (fp32 arithmetic");
}

TEST(CpuPointwiseFused, RejectsIntermediatesFp32CannotHold) {
  Planned p;
  auto t = p.g.relu(f32(p.g, "X", {4, 4}));
  t->set_data_type(dg::DataType::INT64).set_name("wide");
  p.g.add(t, f32(p.g, "W", {4, 4}))->set_output(true);
  expect_rejected(p.explain(), "tensor 'wide' (intermediate): data type INT64 is not supported");
}

TEST(CpuPointwiseFused, RejectsADoubleComputeType) {
  Planned p;
  auto y = p.g.pointwise(f32(p.g, "X", {4, 4}), mode(dg::PointwiseMode::EXP).set_name("e").set_compute_data_type(dg::DataType::DOUBLE));
  y->set_output(true);
  expect_rejected(p.explain(), "node 'e': compute type DOUBLE is not supported");
}

TEST(CpuPointwiseFused, RejectsMoreThanTwelveUnmergeableDims) {
  Planned p;
  const Dims dims(13, 2);
  Dims col(13, 1);  // column-major: the transpose of the input's layout, so no two dims merge
  for (size_t i = 1; i < 13; ++i) col[i] = col[i - 1] * 2;
  auto y = p.g.relu(f32(p.g, "X", dims));
  y->set_output(true).set_dim(dims).set_stride(col);
  expect_rejected(p.explain(), "the fused domain has rank 13");
}

TEST(CpuPointwiseFused, RejectsNonCpuHandles) {
  dg::Graph g;
  g.relu(f32(g, "X", {4, 4}))->set_output(true);
  cpu_test::expect_cpu_only(dg::cpu::pointwise_fused_engine(), g, false);
}

}  // namespace
