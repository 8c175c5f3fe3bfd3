// One built graph executed from several threads at once: each thread's results equal the results of
// the same inputs run alone.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "common/random_data.hpp"
#include "dnngraph/dnngraph.hpp"
#include "graph/graph_impl.hpp"
#include "planning/plan_set.hpp"

namespace dg = dnngraph;

namespace {

struct Io {
  std::vector<std::vector<float>> inputs;  // by input index
  std::vector<float> output;
};

// A graph with its uids: inputs 1..n (dims given), output uid 100.
struct Case {
  dg::Graph g;
  std::vector<std::vector<int64_t>> input_dims;
  int64_t output_elements = 0;
};

std::vector<int64_t> packed_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

dg::TensorPtr input(Case& c, std::vector<int64_t> dims) {
  c.input_dims.push_back(dims);
  const int64_t uid = static_cast<int64_t>(c.input_dims.size());
  return c.g.tensor(dg::TensorAttr().set_name("in" + std::to_string(uid)).set_uid(uid).set_dim(dims).set_stride(packed_strides(dims)));
}

void finish(Case& c, const dg::TensorPtr& y, const dg::Handle& h) {
  y->set_output(true).set_uid(100);
  ASSERT_TRUE(c.g.validate().ok());
  ASSERT_TRUE(c.g.build_operation_graph(h).ok());
  ASSERT_TRUE(c.g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}).ok());
  ASSERT_TRUE(c.g.check_support(h).ok());
  ASSERT_TRUE(c.g.build_plans(h).ok());
  c.output_elements = y->get_volume();
}

Io make_io(const Case& c, uint32_t seed) {
  Io io;
  test_random::UniformFloats u(seed);
  for (const auto& dims : c.input_dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    io.inputs.push_back(u.take(static_cast<size_t>(n)));
  }
  io.output.assign(static_cast<size_t>(c.output_elements), std::nanf(""));
  return io;
}

dg::Status run(const Case& c, const dg::Handle& h, Io& io) {
  dg::UidVariantPack pack;
  for (size_t i = 0; i < io.inputs.size(); ++i) pack[static_cast<int64_t>(i + 1)] = io.inputs[i].data();
  pack[100] = io.output.data();
  int64_t ws = 0;
  if (auto s = c.g.get_workspace_size(ws); !s.ok()) return s;
  std::vector<char> workspace(static_cast<size_t>(ws) + 64);  // each thread its own workspace
  std::fill(io.output.begin(), io.output.end(), std::nanf(""));
  return c.g.execute(h, pack, workspace.data(), ws);
}

// Runs `c` alone per seed, then from `threads` threads at once, `rounds` times each; compares.
void check_concurrent(const Case& c, const dg::Handle& h, int threads, int rounds) {
  std::vector<Io> expected;
  for (int t = 0; t < threads; ++t) {
    expected.push_back(make_io(c, 1000u + static_cast<uint32_t>(t)));
    ASSERT_TRUE(run(c, h, expected.back()).ok());
  }
  std::vector<int> mismatches(static_cast<size_t>(threads), 0), failures(static_cast<size_t>(threads), 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      Io io = make_io(c, 1000u + static_cast<uint32_t>(t));
      for (int r = 0; r < rounds; ++r) {
        failures[static_cast<size_t>(t)] += !run(c, h, io).ok();
        for (size_t i = 0; i < io.output.size(); ++i)
          mismatches[static_cast<size_t>(t)] += !(io.output[i] == expected[static_cast<size_t>(t)].output[i]);
      }
    });
  }
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) {
    EXPECT_EQ(failures[static_cast<size_t>(t)], 0) << "thread " << t;
    EXPECT_EQ(mismatches[static_cast<size_t>(t)], 0) << "thread " << t;
  }
  // The expected outputs are real numbers: NaN poison was overwritten.
  for (float v : expected[0].output) ASSERT_FALSE(std::isnan(v));
}

}  // namespace

TEST(Threads, ConvBiasReluFromFourThreads) {
  dg::Handle h(dg::Device::cpu());
  Case c;
  c.g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  auto x = input(c, {2, 4, 6, 5});
  auto w = input(c, {8, 4, 3, 3});
  auto b = input(c, {1, 8, 1, 1});
  auto conv = c.g.conv_fprop(x, w, dg::ConvFpropAttr().set_padding({1, 1}).set_stride({1, 1}).set_dilation({1, 1}));
  finish(c, c.g.relu(c.g.bias(conv, b)), h);
  check_concurrent(c, h, 4, 3);
}

// Two partitions (matmul + sigmoid epilogue, then a matmul) with an intermediate in the workspace.
TEST(Threads, MatmulChainFromFourThreads) {
  dg::Handle h(dg::Device::cpu());
  Case c;
  c.g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  auto a = input(c, {3, 9, 16});
  auto b = input(c, {3, 16, 12});
  auto d = input(c, {3, 12, 5});
  auto m = c.g.sigmoid(c.g.matmul(a, b, dg::MatmulAttr()));
  finish(c, c.g.matmul(m, d, dg::MatmulAttr()), h);
  ASSERT_GE(impl_of(c.g).plans->parts.size(), 2u);
  check_concurrent(c, h, 4, 3);
}
