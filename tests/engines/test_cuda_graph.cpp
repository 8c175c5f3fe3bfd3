// CUDA graphs of built plans: populate_cuda_graph captures the plans on the handle's stream into a
// child-graph node; the graph is instantiated, replayed, and checked against the reference engine;
// update_cuda_graph re-targets it to other buffers, applied with cudaGraphExecUpdate. Errors are
// checked too (a CPU handle, no stream, a graph that is not empty).
#include <gtest/gtest.h>

#include "engines/test_cuda_util.hpp"

namespace dnngraph::cuda {
namespace {

using namespace testing;
using M = PointwiseMode;
using T = DataType;

// Y = relu(X * S + B) in bf16 and AMAX(X * S + B): one cuda_pointwise_jit partition with a reduction
// (a memset node and a kernel node in the captured graph).
struct Fixture {
  dg::Graph g;
  dg::TensorPtr x, s, b, y, amax;
  explicit Fixture(int64_t rows) {
    x = input(g, "X", {rows, 256}, T::FLOAT);
    s = input(g, "S", {1, 256}, T::FLOAT);
    b = input(g, "B", {rows, 1}, T::FLOAT);
    auto t = pw(g, M::ADD, pw(g, M::MUL, x, s), b);
    y = pw(g, M::RELU_FWD, t);
    y->set_output(true).set_data_type(T::BFLOAT16);
    amax = reduce(g, ReductionMode::AMAX, t, {1, 1});
    amax->set_output(true).set_data_type(T::FLOAT);
  }
  Status build(dg::Handle& h, const std::string& engine) {
    g.select_engines({engine});
    for (auto s2 : {g.validate(), g.build_operation_graph(h), g.create_execution_plans({dg::HeurMode::A}),
                    g.check_support(h), g.build_plans(h)})
      if (!s2.ok()) return s2;
    return {};
  }
};

// Host values of X, S, B for a seed, and the expected outputs computed here in double.
struct Data {
  std::vector<float> x, s, b;
  std::vector<double> y;
  double amax = 0;
  Data(int64_t rows, uint32_t seed) : x(static_cast<size_t>(rows * 256)), s(256), b(static_cast<size_t>(rows)) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-2, 2);
    for (auto* v : {&x, &s, &b})
      for (auto& e : *v) e = u(rng);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < 256; ++c) {
        const double t = double(x[size_t(r * 256 + c)]) * s[size_t(c)] + b[size_t(r)];
        y.push_back(dtype::round_to(T::BFLOAT16, std::max(0.0, t)));
        amax = std::max(amax, std::fabs(t));
      }
  }
};

class CudaGraph : public ::testing::Test {
 protected:
  void SetUp() override {
    h_ = cuda_handle(skip_);
    DG_SKIP_WITHOUT_GPU(h_, skip_);
    ASSERT_TRUE(create_stream(impl_of(*h_), &stream_).ok());
    ASSERT_TRUE(h_->set_stream(stream_).ok());
  }
  void TearDown() override {
    if (h_) {
      (void)h_->set_stream(nullptr);
      destroy_stream(impl_of(*h_), stream_);
    }
  }

  // Device buffers holding `d`'s inputs, with poisoned outputs.
  struct Buffers {
    memory::Buffer x, s, b, y, amax;
  };
  Buffers upload(const Data& d, int64_t rows) {
    HandleImpl& hi = impl_of(*h_);
    Buffers buf{memory::Buffer(hi, d.x.size() * 4), memory::Buffer(hi, 1024), memory::Buffer(hi, d.b.size() * 4),
                memory::Buffer(hi, static_cast<size_t>(rows * 256 * 2)), memory::Buffer(hi, 4)};
    EXPECT_TRUE(memory::copy_to_device(hi, buf.x.get(), d.x.data(), d.x.size() * 4).ok());
    EXPECT_TRUE(memory::copy_to_device(hi, buf.s.get(), d.s.data(), 1024).ok());
    EXPECT_TRUE(memory::copy_to_device(hi, buf.b.get(), d.b.data(), d.b.size() * 4).ok());
    std::vector<uint16_t> nan_y(static_cast<size_t>(rows * 256), 0x7fc0);
    const float nan_f = std::nanf("");
    EXPECT_TRUE(memory::copy_to_device(hi, buf.y.get(), nan_y.data(), nan_y.size() * 2).ok());
    EXPECT_TRUE(memory::copy_to_device(hi, buf.amax.get(), &nan_f, 4).ok());
    return buf;
  }
  void expect_results(const Data& d, const Buffers& buf) {
    HandleImpl& hi = impl_of(*h_);
    std::vector<uint16_t> y(d.y.size());
    float amax = 0;
    ASSERT_TRUE(memory::copy_to_host(hi, y.data(), buf.y.get(), y.size() * 2).ok());
    ASSERT_TRUE(memory::copy_to_host(hi, &amax, buf.amax.get(), 4).ok());
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_NEAR(dtype::bf16_to_float(y[i]), d.y[i], 1e-2 * std::fabs(d.y[i]) + 1e-6) << "element " << i;
    EXPECT_NEAR(amax, d.amax, 1e-6 * d.amax);
  }

  std::string skip_;
  std::unique_ptr<dg::Handle> h_;
  void* stream_ = nullptr;
};

TEST_F(CudaGraph, CaptureReplayAndUpdate) {
  const int64_t rows = 300;
  Fixture f(rows);
  ASSERT_TRUE(f.build(*h_, "cuda_pointwise_jit").ok());
  int64_t ws = 0;
  ASSERT_TRUE(f.g.get_workspace_size(ws).ok());
  memory::Buffer workspace(impl_of(*h_), static_cast<size_t>(std::max<int64_t>(ws, 1)));
  const DriverApi& d = *driver();

  Data d1(rows, 1);
  Buffers b1 = upload(d1, rows);
  CUgraph graph = nullptr;
  ASSERT_TRUE(check(d.cuGraphCreate(&graph, 0), "cuGraphCreate").ok());
  dg::VariantPack pack1{{f.x, b1.x.get()}, {f.s, b1.s.get()}, {f.b, b1.b.get()}, {f.y, b1.y.get()}, {f.amax, b1.amax.get()}};
  Status s = f.g.populate_cuda_graph(*h_, pack1, workspace.get(), graph);
  ASSERT_TRUE(s.ok()) << s.to_string();
  CUgraphExec exec = nullptr;
  ASSERT_TRUE(check(d.cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiate").ok());
  // Replay twice: the AMAX accumulator is re-initialised inside the graph every time.
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(check(d.cuGraphLaunch(exec, stream_of(impl_of(*h_))), "cuGraphLaunch").ok());
  ASSERT_TRUE(memory::synchronize(impl_of(*h_)).ok());
  expect_results(d1, b1);

  // Other buffers, other data: update the graph, apply it to the instantiated one, replay.
  Data d2(rows, 2);
  Buffers b2 = upload(d2, rows);
  dg::VariantPack pack2{{f.x, b2.x.get()}, {f.s, b2.s.get()}, {f.b, b2.b.get()}, {f.y, b2.y.get()}, {f.amax, b2.amax.get()}};
  s = f.g.update_cuda_graph(*h_, pack2, workspace.get(), graph);
  ASSERT_TRUE(s.ok()) << s.to_string();
  GraphExecUpdateResultInfo info{};
  ASSERT_TRUE(check(d.cuGraphExecUpdate(exec, graph, &info), "cuGraphExecUpdate").ok()) << info.result;
  ASSERT_TRUE(check(d.cuGraphLaunch(exec, stream_of(impl_of(*h_))), "cuGraphLaunch").ok());
  ASSERT_TRUE(memory::synchronize(impl_of(*h_)).ok());
  expect_results(d2, b2);

  // A graph that is not empty is refused by populate.
  s = f.g.populate_cuda_graph(*h_, pack1, workspace.get(), graph);
  EXPECT_EQ(s.code(), ErrorCode::INVALID_VALUE);
  EXPECT_NE(s.message().find("must be empty"), std::string::npos) << s.message();
  d.cuGraphExecDestroy(exec);
  d.cuGraphDestroy(graph);
}

TEST_F(CudaGraph, CaptureNeedsAStreamOfTheCallers) {
  Fixture f(4);
  ASSERT_TRUE(f.build(*h_, "cuda_pointwise_jit").ok());
  ASSERT_TRUE(h_->set_stream(nullptr).ok());
  CUgraph graph = nullptr;
  ASSERT_TRUE(check(driver()->cuGraphCreate(&graph, 0), "cuGraphCreate").ok());
  Data d1(4, 1);
  Buffers b1 = upload(d1, 4);
  Status s = f.g.populate_cuda_graph(*h_, {{f.x, b1.x.get()}, {f.s, b1.s.get()}, {f.b, b1.b.get()}, {f.y, b1.y.get()},
                                          {f.amax, b1.amax.get()}},
                                     nullptr, graph);
  EXPECT_EQ(s.code(), ErrorCode::INVALID_VALUE);
  EXPECT_NE(s.message().find("set_stream"), std::string::npos) << s.message();
  driver()->cuGraphDestroy(graph);
}

TEST(CudaGraphOnCpu, ACpuHandleIsRefused) {
  Fixture f(4);
  dg::Handle cpu(dg::Device::cpu());
  ASSERT_TRUE(f.build(cpu, "ref").ok());
  std::vector<float> x(4 * 256), s(256), b(4), amax(1);
  std::vector<uint16_t> y(4 * 256);
  int dummy_graph = 0;
  Status st = f.g.populate_cuda_graph(cpu, {{f.x, x.data()}, {f.s, s.data()}, {f.b, b.data()}, {f.y, y.data()},
                                           {f.amax, amax.data()}},
                                      nullptr, &dummy_graph);
  EXPECT_EQ(st.code(), ErrorCode::INVALID_VALUE);
  EXPECT_NE(st.message().find("CUDA handle"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace dnngraph::cuda
