#include <gtest/gtest.h>

#include <cmath>

#include "common/build_steps.hpp"
#include "common/random_data.hpp"
#include "common/tensors.hpp"
#include "dnngraph/dnngraph.hpp"

namespace dg = dnngraph;

TEST(Pipeline, PointwiseAddReluRunsOnRef) {
  dg::Handle handle(dg::Device::cpu());
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  auto x = test_tensors::packed_tensor(g, "X", {2, 3, 4});
  auto b = test_tensors::packed_tensor(g, "B", {1, 3, 1});
  auto y = g.relu(g.bias(x, b));
  y->set_output(true);
  const auto built = test_build::run_build_steps(g, handle);
  ASSERT_TRUE(built.ok()) << built.to_string();
  test_random::UniformFloats u(1);
  std::vector<float> xs = u.take(24), bs = u.take(3);
  std::vector<float> ys(24, std::nanf(""));
  int64_t ws = 0;
  ASSERT_TRUE(g.get_workspace_size(ws).ok());
  std::vector<char> workspace(static_cast<size_t>(ws) + 1);
  auto s = g.execute(handle, {{x, xs.data()}, {b, bs.data()}, {y, ys.data()}}, workspace.data());
  ASSERT_TRUE(s.ok()) << s.to_string();
  for (int i = 0; i < 24; ++i) EXPECT_FLOAT_EQ(ys[i], std::max(0.0f, xs[i] + bs[(i / 4) % 3]));
}
