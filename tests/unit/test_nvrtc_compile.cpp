// Every CUDA kernel family compiles through NVRTC. NVRTC needs no GPU, so this runs in CI on the CPU
// machine: a kernel source or emitter change that does not compile fails here. Skips (with the
// reason) only when NVRTC cannot be loaded.
#include <gtest/gtest.h>

#include "engines/cuda/common/nvrtc_compile.hpp"
#include "engines/test_cuda_util.hpp"

namespace dnngraph::cuda {
namespace {

using namespace testing;
using M = PointwiseMode;
using R = ReductionMode;

class NvrtcCompile : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!nvrtc()) GTEST_SKIP() << "NVRTC not available: " << nvrtc_error();
  }

  // Generates every partition of g and compiles it for each architecture.
  void compile_all(dg::Graph& g, codegen::LayoutOptions o = {}, std::vector<std::string> archs = {"sm_90a"}) {
    Generated gen;
    ASSERT_TRUE(generate(g, o, gen));
    ASSERT_FALSE(gen.sources.empty());
    for (size_t i = 0; i < gen.sources.size(); ++i)
      for (const auto& arch : archs) {
        std::vector<uint8_t> cubin;
        Status s = nvrtc_compile(gen.sources[i], "test.cu", arch, cubin);
        ASSERT_TRUE(s.ok()) << s.to_string() << "\n---- source:\n" << gen.sources[i];
        EXPECT_GT(cubin.size(), 100u);
      }
  }
};

TEST_F(NvrtcCompile, ArchitectureNames) {
  EXPECT_EQ(nvrtc_arch(90), "sm_90a");
  EXPECT_EQ(nvrtc_arch(80), "sm_80");
  EXPECT_EQ(nvrtc_arch(100), "sm_100");
}

TEST_F(NvrtcCompile, EveryUnaryMode) {
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT).set_intermediate_data_type(dg::DataType::FLOAT);
  auto t = input(g, "X", {4, 64}, dg::DataType::FLOAT);
  for (M m : {M::ABS, M::CEIL, M::COS, M::EXP, M::FLOOR, M::LOG, M::NEG, M::RSQRT, M::SIN, M::SQRT, M::TAN, M::ERF,
              M::IDENTITY, M::RECIPROCAL, M::RELU_FWD, M::TANH_FWD, M::SIGMOID_FWD, M::ELU_FWD, M::GELU_FWD,
              M::SOFTPLUS_FWD, M::SWISH_FWD, M::GELU_APPROX_TANH_FWD, M::LOGICAL_NOT})
    t = pw(g, m, t);
  t = g.pointwise(t, dg::PointwiseAttr().set_mode(M::RELU_FWD).set_relu_lower_clip(-1).set_relu_upper_clip(6)
                         .set_relu_lower_clip_slope(0.1));
  t->set_output(true).set_data_type(dg::DataType::BFLOAT16);
  compile_all(g);
}

TEST_F(NvrtcCompile, EveryBinaryAndTernaryMode) {
  dg::Graph g;
  auto x = input(g, "X", {4, 64}, dg::DataType::FLOAT);
  auto y = input(g, "Y", {4, 64}, dg::DataType::FLOAT);
  auto t = x;
  for (M m : {M::ADD, M::ADD_SQUARE, M::DIV, M::MAX, M::MIN, M::MOD, M::MUL, M::POW, M::SUB, M::ATAN2, M::RELU_BWD,
              M::TANH_BWD, M::SIGMOID_BWD, M::ELU_BWD, M::GELU_BWD, M::SOFTPLUS_BWD, M::SWISH_BWD,
              M::GELU_APPROX_TANH_BWD, M::CMP_EQ, M::CMP_NEQ, M::CMP_GT, M::CMP_GE, M::CMP_LT, M::CMP_LE,
              M::LOGICAL_AND, M::LOGICAL_OR})
    t = pw(g, m, t, y);
  t = pw(g, M::BINARY_SELECT, t, x, y);
  auto i = g.pointwise(t, dg::PointwiseAttr().set_mode(M::GEN_INDEX).set_axis(1));
  t = pw(g, M::ADD, t, i);
  t->set_output(true);
  compile_all(g);
}

TEST_F(NvrtcCompile, EveryLoadAndStoreType) {
  using T = dg::DataType;
  for (auto types : {std::vector<T>{T::HALF, T::BFLOAT16, T::INT8, T::INT32},
                     std::vector<T>{T::BOOLEAN, T::UINT8, T::FP8_E4M3, T::FP8_E5M2}}) {
    dg::Graph g;
    auto t = input(g, "X", {8, 128}, T::FLOAT);
    int n = 0;
    for (auto dt : types) {
      t = pw(g, M::ADD, t, input(g, "in" + std::to_string(n++), {8, 128}, dt));
      pw(g, M::IDENTITY, t)->set_output(true).set_data_type(dt);
    }
    compile_all(g);
  }
}

TEST_F(NvrtcCompile, IntermediatesRoundedToTheirType) {
  dg::Graph g;
  g.set_intermediate_data_type(dg::DataType::BFLOAT16);
  auto t = pw(g, M::EXP, input(g, "X", {16, 16}, dg::DataType::HALF));
  t = pw(g, M::MUL, t, g.tensor(dg::TensorAttr().set_name("half").set_dim({1, 1}).set_stride({1, 1}).set_data_type(
                              dg::DataType::FLOAT).set_value(0.5)));
  t->set_output(true).set_data_type(dg::DataType::FP8_E4M3);
  compile_all(g);
}

TEST_F(NvrtcCompile, EveryReductionModeFullAndPartial) {
  // Each mode once over everything and once over part of the dims (rows or columns), four a kernel.
  const R modes[] = {R::ADD, R::MUL, R::MIN, R::MAX, R::AMAX, R::AVG, R::NORM1, R::NORM2};
  for (int i = 0; i < 4; ++i) {
    const R a = modes[2 * i], b = modes[2 * i + 1];
    dg::Graph g;
    auto x = pw(g, M::TANH_FWD, input(g, "X", {6, 40}, dg::DataType::BFLOAT16));
    reduce(g, a, x, {1, 1})->set_output(true).set_data_type(dg::DataType::FLOAT);
    reduce(g, a, x, {6, 1})->set_output(true).set_data_type(dg::DataType::HALF);
    reduce(g, b, x, {1, 40})->set_output(true).set_data_type(dg::DataType::FLOAT);
    reduce(g, b, x, {1, 1})->set_output(true).set_data_type(dg::DataType::BFLOAT16);
    SCOPED_TRACE(std::string(to_string(a)) + ", " + std::string(to_string(b)));
    compile_all(g);
  }
}

TEST_F(NvrtcCompile, DeterministicFullReductions) {
  dg::Graph g;
  auto x = pw(g, M::MUL, input(g, "X", {32, 32}, dg::DataType::FLOAT), input(g, "S", {1, 32}, dg::DataType::FLOAT));
  x->set_output(true);
  reduce(g, R::ADD, x, {1, 1})->set_output(true);
  reduce(g, R::AMAX, x, {1, 1})->set_output(true);
  codegen::LayoutOptions o;
  o.deterministic = true;
  o.grid = 64;
  compile_all(g, o);
}

TEST_F(NvrtcCompile, DynamicShapesBroadcastAndStrides) {
  for (bool dynamic : {false, true}) {
    dg::Graph g;
    // A transposed input, a broadcast row and column, and an output in another layout.
    auto x = input(g, "X", {3, 20, 36}, dg::DataType::FLOAT, {1, 3, 60});
    auto b = input(g, "B", {1, 1, 36}, dg::DataType::HALF);
    auto c = input(g, "C", {3, 20, 1}, dg::DataType::FLOAT);
    auto y = pw(g, M::ADD, pw(g, M::MUL, x, b), c);
    y->set_output(true).set_stride({720, 1, 20});
    codegen::LayoutOptions o;
    o.dynamic = dynamic;
    // Ampere too: the pre-Hopper paths of the conversion helpers.
    compile_all(g, o, dynamic ? std::vector<std::string>{"sm_90a"} : std::vector<std::string>{"sm_90a", "sm_80"});
  }
}

TEST_F(NvrtcCompile, SixtyFourBitIndexing) {
  // 2^32 elements: the layout switches to 64-bit index arithmetic (compile only; nothing is allocated).
  dg::Graph g;
  auto y = pw(g, M::RELU_FWD, input(g, "X", {65536, 65536}, dg::DataType::FP8_E4M3));
  y->set_output(true);
  for (bool dynamic : {false, true}) {
    Generated gen;
    codegen::LayoutOptions o;
    o.dynamic = dynamic;
    dg::Graph g2;
    auto x2 = input(g2, "X", {65536, 3, 65536}, dg::DataType::BFLOAT16, {65536, 65536 * 65536LL, 1});
    pw(g2, M::SIGMOID_FWD, x2)->set_output(true);
    ASSERT_TRUE(generate(g2, o, gen));
    EXPECT_TRUE(gen.layouts[0].wide_index);
    std::vector<uint8_t> cubin;
    Status s = nvrtc_compile(gen.sources[0], "wide.cu", "sm_90a", cubin);
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
  compile_all(g);
}

TEST_F(NvrtcCompile, ACompileErrorCarriesTheLog) {
  std::vector<uint8_t> cubin;
  Status s = nvrtc_compile("extern \"C\" __global__ void k() { undefined_thing(); }", "broken.cu", "sm_90a", cubin);
  EXPECT_EQ(s.code(), ErrorCode::COMPILATION_FAILED);
  EXPECT_NE(s.message().find("broken.cu"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("undefined_thing"), std::string::npos) << s.message();
}

// A wgmma whose accumulators an ordinary instruction writes in the middle of the pipeline: ptxas
// serializes every wgmma of the kernel (C7515). nvrtc_compile sees it in ptxas's report, logs it
// and records the program with its KernelConfig, and a clean wgmma kernel is not recorded.
TEST_F(NvrtcCompile, ASerializedWgmmaIsRecorded) {
  auto kernel = [](bool touch) {
    return std::string("struct KernelConfig {\n  enum { kTouch = ") + (touch ? "1" : "0") + " };\n};\n" + R"(
extern "C" __global__ void k(float* out, unsigned long long a, unsigned long long b, int n) {
  float d[4] = {0, 0, 0, 0};
  for (int i = 0; i < n; ++i) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, %4, %5, 1, 1, 1, 0, 0;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(a + i), "l"(b + i));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    if (KernelConfig::kTouch && threadIdx.x == 0 && i == 3) d[0] = out[i];
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  out[threadIdx.x] = d[0] + d[1] + d[2] + d[3];
})";
  };
  const size_t before = serialized_wgmma_compiles().size();
  std::vector<uint8_t> cubin;
  std::string log;
  ASSERT_TRUE(nvrtc_compile(kernel(false), "clean.cu", "sm_90a", {}, cubin, &log).ok());
  EXPECT_FALSE(ptxas_serialized_wgmma(log)) << log;
  EXPECT_EQ(serialized_wgmma_compiles().size(), before);
  ASSERT_TRUE(nvrtc_compile(kernel(true), "serialized.cu", "sm_90a", {}, cubin, &log).ok());
  EXPECT_TRUE(ptxas_serialized_wgmma(log)) << log;
  const auto recorded = serialized_wgmma_compiles();
  ASSERT_EQ(recorded.size(), before + 1);
  EXPECT_EQ(recorded.back(), "serialized.cu\nstruct KernelConfig {\n  enum { kTouch = 1 };\n};");
}

}  // namespace
}  // namespace dnngraph::cuda
