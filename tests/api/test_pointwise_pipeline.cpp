#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/build_steps.hpp"
#include "dnngraph/dnngraph.hpp"

namespace dg = dnngraph;

TEST(Pipeline, PointwiseAddReluRunsOnRef) {
  dg::Handle handle(dg::Device::cpu());
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  auto x = g.tensor(dg::TensorAttr().set_name("X").set_dim({2, 3, 4}).set_stride({12, 4, 1}));
  auto b = g.tensor(dg::TensorAttr().set_name("B").set_dim({1, 3, 1}).set_stride({3, 1, 1}));
  auto y = g.relu(g.bias(x, b));
  y->set_output(true);
  const auto built = test_build::run_build_steps(g, handle);
  ASSERT_TRUE(built.ok()) << built.to_string();
  std::vector<float> xs(24), bs(3), ys(24, std::nanf(""));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : xs) v = u(rng);
  for (auto& v : bs) v = u(rng);
  int64_t ws = 0;
  ASSERT_TRUE(g.get_workspace_size(ws).ok());
  std::vector<char> workspace(static_cast<size_t>(ws) + 1);
  auto s = g.execute(handle, {{x, xs.data()}, {b, bs.data()}, {y, ys.data()}}, workspace.data());
  ASSERT_TRUE(s.ok()) << s.to_string();
  for (int i = 0; i < 24; ++i) EXPECT_FLOAT_EQ(ys[i], std::max(0.0f, xs[i] + bs[(i / 4) % 3]));
}
