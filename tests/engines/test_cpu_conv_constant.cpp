// Constant weights (TensorAttr::set_is_constant): the CPU conv and GEMM engines pack them once per
// plan and pointer instead of into the workspace on every execute. Checked against a naive sum on
// every ISA: the first execute, a second one on the kept form, and a new pointer (packed again);
// the workspace no longer holds the packed weights; a produced tensor marked constant is refused;
// the flag survives the JSON round trip. And bf16 convs (AMX where the CPU has it) against a sum.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "cpu_test_util.hpp"
#include "planning/engine.hpp"

namespace {

namespace dg = dnngraph;

// A stride-1 conv with padding `pad`, NHWC source and output, KRSC weights, N = 1, in `groups`
// groups (C == K == groups: depthwise).
struct Conv {
  int64_t c, h, w, k, r, pad, groups = 1;
  int64_t cg() const { return c / groups; }
  int64_t oh() const { return h + 2 * pad - r + 1; }
  int64_t ow() const { return w + 2 * pad - r + 1; }
};

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

std::vector<double> naive_conv(const Conv& s, const std::vector<float>& x, const std::vector<float>& w) {
  std::vector<double> y(static_cast<size_t>(s.oh() * s.ow() * s.k), 0.0);
  for (int64_t oy = 0; oy < s.oh(); ++oy)
    for (int64_t ox = 0; ox < s.ow(); ++ox)
      for (int64_t o = 0; o < s.k; ++o) {
        const int64_t c0 = o / (s.k / s.groups) * s.cg();  // the group's first input channel
        double acc = 0;
        for (int64_t ry = 0; ry < s.r; ++ry)
          for (int64_t rx = 0; rx < s.r; ++rx) {
            const int64_t iy = oy + ry - s.pad, ix = ox + rx - s.pad;
            if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
            for (int64_t c = 0; c < s.cg(); ++c)
              acc += static_cast<double>(x[static_cast<size_t>((iy * s.w + ix) * s.c + c0 + c)]) *
                     w[static_cast<size_t>(((o * s.r + ry) * s.r + rx) * s.cg() + c)];
          }
        y[static_cast<size_t>((oy * s.ow() + ox) * s.k + o)] = acc;
      }
  return y;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1.0 + std::fabs(want[i]))) << what << " at " << i;
}

// The conv graph on `engine`, its weights constant or not, planned with one plan per ISA (no
// ISA: the engine's mode A plans, for engines without an "isa" knob); `in`: the type of X and W
// (Y is FLOAT).
struct ConvGraph {
  dg::Handle handle{dg::Device::cpu()};
  dg::Graph g;
  dg::TensorPtr X, W, Y;
  ConvGraph(const Conv& s, bool constant, const std::string& engine, std::optional<dg::cpu::Isa> isa,
            dg::DataType in = dg::DataType::FLOAT) {
    const int64_t cg = s.cg();
    X = g.tensor(dg::TensorAttr().set_name("X").set_dim({1, s.c, s.h, s.w}).set_stride({s.h * s.w * s.c, 1, s.w * s.c, s.c})
                     .set_data_type(in));
    W = g.tensor(dg::TensorAttr().set_name("W").set_dim({s.k, cg, s.r, s.r}).set_stride({cg * s.r * s.r, 1, s.r * cg, cg})
                     .set_data_type(in).set_is_constant(constant));
    Y = g.conv_fprop(X, W, dg::ConvFpropAttr().set_padding({s.pad, s.pad}).set_stride({1, 1}).set_dilation({1, 1}));
    Y->set_output(true).set_data_type(dg::DataType::FLOAT).set_stride({s.oh() * s.ow() * s.k, 1, s.ow() * s.k, s.k});
    EXPECT_TRUE(g.validate().ok());
    EXPECT_TRUE(g.build_operation_graph(handle).ok());
    dg::Status st;
    if (isa) {
      st = g.create_execution_plan(dg::engine_id_by_name(engine), {{"isa", static_cast<int64_t>(*isa)}});
    } else {
      g.select_engines({engine});
      st = g.create_execution_plans({dg::HeurMode::A});
    }
    EXPECT_TRUE(st.ok()) << st.to_string();
    EXPECT_TRUE(g.check_support(handle).ok());
    EXPECT_TRUE(g.build_plans(handle).ok());
  }
  int64_t workspace() {
    int64_t ws = 0;
    EXPECT_TRUE(g.get_workspace_size(ws).ok());
    return ws;
  }
  std::vector<float> run(const void* x, const void* w, size_t out_size) {
    std::vector<float> y(out_size, std::nanf(""));
    std::vector<unsigned char> ws(static_cast<size_t>(workspace()) + 1);
    const auto st = g.execute(handle, {{X, const_cast<void*>(x)}, {W, const_cast<void*>(w)}, {Y, y.data()}}, ws.data());
    EXPECT_TRUE(st.ok()) << st.to_string();
    return y;
  }
};

// First execute, the kept form again, then other weights at another pointer: each against the sum.
void check_constant_conv(const std::string& engine, const Conv& s) {
  const auto x = random_floats(static_cast<size_t>(s.h * s.w * s.c), 1);
  const auto w1 = random_floats(static_cast<size_t>(s.k * s.r * s.r * s.c), 2);
  const auto w2 = random_floats(w1.size(), 3);
  const auto want1 = naive_conv(s, x, w1), want2 = naive_conv(s, x, w2);
  cpu_test::for_each_isa([&](dg::cpu::Isa isa) {
    ConvGraph constant(s, true, engine, isa), plain(s, false, engine, isa);
    expect_close(constant.run(x.data(), w1.data(), want1.size()), want1, "first execute");
    expect_close(constant.run(x.data(), w1.data(), want1.size()), want1, "second execute, same pointer");
    expect_close(constant.run(x.data(), w2.data(), want2.size()), want2, "a new weight pointer");
    expect_close(plain.run(x.data(), w2.data(), want2.size()), want2, "weights not constant");
  });
}

TEST(CpuConstantWeights, ImplicitGemmPacksOncePerPointer) {
  check_constant_conv("cpu_conv_implicit_gemm", {32, 6, 7, 40, 3, 1});   // the packed form
  check_constant_conv("cpu_conv_implicit_gemm", {64, 3, 3, 24, 3, 1});   // few pixels: the in-place form
  check_constant_conv("cpu_conv_implicit_gemm", {48, 5, 5, 70, 1, 0});   // 1x1
}

TEST(CpuConstantWeights, WinogradTransformsOncePerPointer) {
  check_constant_conv("cpu_conv_winograd_f4x3", {16, 9, 10, 24, 3, 1});
}

// bf16 source and weights (on AMX-BF16 the implicit GEMM runs on the tile kernel where the
// channels fill whole 16-pair steps), constant weights or not, against a sum of the bf16 values.
// Rows of 40 and 37 pixels: most 16-pixel tile halves read the input in place, those that cross
// an output row or touch the padding are copied, unless the input's rows follow each other under
// them at one stride (1x1, and centre-column taps; not an unpadded 3x3, whose output rows are
// shorter than the input's). 16 channels: the 8-pair tile steps.
TEST(CpuConstantWeights, Bf16ConvMatchesNaive) {
  for (const Conv& s : {Conv{64, 6, 7, 40, 3, 1}, Conv{32, 5, 5, 70, 1, 0}, Conv{96, 4, 3, 33, 3, 1}, Conv{36, 3, 4, 20, 3, 1},
                        Conv{64, 5, 40, 24, 3, 1}, Conv{32, 3, 37, 40, 1, 0}, Conv{16, 5, 37, 24, 1, 0},
                        Conv{16, 6, 7, 40, 3, 1}, Conv{32, 6, 9, 24, 3, 0},
                        // 196 rows (one AMX row block is 192) and twice as many output channels:
                        // one column share a thread, each with every row, in two row blocks.
                        Conv{32, 14, 14, 400, 3, 1}}) {
    SCOPED_TRACE("C" + std::to_string(s.c) + " K" + std::to_string(s.k) + " r" + std::to_string(s.r));
    auto xf = random_floats(static_cast<size_t>(s.h * s.w * s.c), 7), wf = random_floats(static_cast<size_t>(s.k * s.r * s.r * s.c), 8);
    std::vector<uint16_t> x(xf.size()), w(wf.size());
    for (size_t i = 0; i < x.size(); ++i) xf[i] = dg::dtype::bf16_to_float(x[i] = dg::dtype::float_to_bf16(xf[i]));
    for (size_t i = 0; i < w.size(); ++i) wf[i] = dg::dtype::bf16_to_float(w[i] = dg::dtype::float_to_bf16(wf[i]));
    const auto want = naive_conv(s, xf, wf);
    cpu_test::for_each_isa([&](dg::cpu::Isa isa) {
      for (bool constant : {true, false}) {
        ConvGraph cg(s, constant, "cpu_conv_implicit_gemm", isa, dg::DataType::BFLOAT16);
        expect_close(cg.run(x.data(), w.data(), want.size()), want, constant ? "constant" : "not constant");
        expect_close(cg.run(x.data(), w.data(), want.size()), want, "again");
      }
    });
  }
}

// Depthwise (groups == C == K): constant weights converted to [tap][channel] once per pointer and
// kept by the plan (no workspace), others into the workspace on every execute.
TEST(CpuConstantWeights, DepthwiseConvertsOncePerPointer) {
  const Conv s{37, 6, 9, 37, 3, 1, 37};
  const auto x = random_floats(static_cast<size_t>(s.h * s.w * s.c), 11);
  const auto w1 = random_floats(static_cast<size_t>(s.k * s.r * s.r), 12), w2 = random_floats(w1.size(), 13);
  const auto want1 = naive_conv(s, x, w1), want2 = naive_conv(s, x, w2);
  for (const bool constant : {true, false}) {
    SCOPED_TRACE(constant ? "constant" : "not constant");
    ConvGraph cg(s, constant, "cpu_conv_depthwise_direct", std::nullopt);
    EXPECT_EQ(cg.workspace() == 0, constant) << cg.workspace();
    expect_close(cg.run(x.data(), w1.data(), want1.size()), want1, "first execute");
    expect_close(cg.run(x.data(), w1.data(), want1.size()), want1, "second execute, same pointer");
    expect_close(cg.run(x.data(), w2.data(), want2.size()), want2, "a new weight pointer");
  }
}

TEST(CpuConstantWeights, WorkspaceLeavesOutThePackedWeights) {
  const Conv s{64, 8, 8, 96, 3, 1};
  for (const char* engine : {"cpu_conv_implicit_gemm", "cpu_conv_winograd_f4x3"}) {
    SCOPED_TRACE(engine);
    ConvGraph constant(s, true, engine, dg::cpu::cpu_features().best()), plain(s, false, engine, dg::cpu::cpu_features().best());
    // The packed weights (at least K x C x 9 floats) moved from the workspace into the plan.
    EXPECT_LE(constant.workspace() + s.k * s.c * 9 * 4, plain.workspace());
  }
}

TEST(CpuConstantWeights, MatmulPacksBOncePerPointer) {
  const int64_t m = 37, k = 50, n = 45;
  const auto a = random_floats(static_cast<size_t>(m * k), 4);
  const auto b1 = random_floats(static_cast<size_t>(k * n), 5), b2 = random_floats(b1.size(), 6);
  auto want = [&](const std::vector<float>& b) {
    std::vector<double> c(static_cast<size_t>(m * n), 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t q = 0; q < k; ++q)
          c[static_cast<size_t>(i * n + j)] += static_cast<double>(a[static_cast<size_t>(i * k + q)]) * b[static_cast<size_t>(q * n + j)];
    return c;
  };
  cpu_test::for_each_isa([&](dg::cpu::Isa isa) {
    dg::Handle handle(dg::Device::cpu());
    dg::Graph g;
    auto A = cpu_test::packed(g, "A", {m, k});
    auto B = cpu_test::packed(g, "B", {k, n});
    B->set_is_constant(true);
    auto C = g.matmul(A, B, dg::MatmulAttr());
    C->set_output(true).set_data_type(dg::DataType::FLOAT);
    ASSERT_TRUE(g.validate().ok());
    ASSERT_TRUE(g.build_operation_graph(handle).ok());
    ASSERT_TRUE(g.create_execution_plan(dg::engine_id_by_name("cpu_gemm_packed"), {{"isa", static_cast<int64_t>(isa)}}).ok());
    ASSERT_TRUE(g.build_plans(handle).ok());
    int64_t ws = 0;
    ASSERT_TRUE(g.get_workspace_size(ws).ok());
    std::vector<unsigned char> workspace(static_cast<size_t>(ws) + 1);
    for (const auto* b : {&b1, &b1, &b2}) {
      std::vector<float> c(static_cast<size_t>(m * n), std::nanf(""));
      ASSERT_TRUE(g.execute(handle, {{A, const_cast<float*>(a.data())}, {B, const_cast<float*>(b->data())}, {C, c.data()}},
                            workspace.data()).ok());
      expect_close(c, want(*b), b == &b1 ? "B1" : "B2");
    }
  });
}

TEST(CpuConstantWeights, ProducedTensorCannotBeConstant) {
  dg::Graph g;
  auto A = cpu_test::packed(g, "A", {4, 4});
  auto B = cpu_test::packed(g, "B", {4, 4});
  auto C = g.matmul(A, B, dg::MatmulAttr().set_name("mm"));
  C->set_name("C").set_output(true).set_data_type(dg::DataType::FLOAT).set_is_constant(true);
  const auto s = g.validate();
  EXPECT_EQ(s.code(), dg::ErrorCode::INVALID_VALUE);
  EXPECT_NE(s.message().find("'mm'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'C'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("is marked constant but this node produces it"), std::string::npos) << s.message();
}

TEST(CpuConstantWeights, ConstantSurvivesJson) {
  dg::Graph g;
  auto A = cpu_test::packed(g, "A", {4, 4});
  auto B = cpu_test::packed(g, "B", {4, 4});
  B->set_is_constant(true);
  g.matmul(A, B, dg::MatmulAttr())->set_output(true).set_data_type(dg::DataType::FLOAT);
  ASSERT_TRUE(g.validate().ok());
  const std::string json = g.to_json();
  EXPECT_NE(json.find("\"constant\": true"), std::string::npos) << json;
  dg::Graph back;
  ASSERT_TRUE(dg::Graph::from_json(json, back).ok());
  EXPECT_EQ(back.to_json(), json);
}

}  // namespace
