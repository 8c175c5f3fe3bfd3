// Built against an installed dnngraph: relu(x + b) on the CPU, checked.
#include <cmath>
#include <cstdio>
#include <vector>

#include <dnngraph/dnngraph.hpp>

namespace dg = dnngraph;

int main() {
  dg::Handle handle(dg::Device::cpu());
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  auto X = g.tensor(dg::TensorAttr().set_name("X").set_dim({2, 3}).set_stride({3, 1}));
  auto B = g.tensor(dg::TensorAttr().set_name("B").set_dim({1, 3}).set_stride({3, 1}));
  auto Y = g.relu(g.bias(X, B));
  Y->set_output(true);
  for (const dg::Status& s : {g.validate(), g.build_operation_graph(handle),
                              g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}),
                              g.check_support(handle), g.build_plans(handle)})
    if (!s.ok()) return std::printf("%s\n", s.to_string().c_str()), 1;
  std::vector<float> x{-1, 2, -3, 4, -5, 6}, b{0.5f, 0.5f, 0.5f}, y(6, NAN);
  int64_t ws = 0;
  if (!g.get_workspace_size(ws).ok()) return 1;
  std::vector<char> workspace(static_cast<size_t>(ws) + 1);
  if (auto s = g.execute(handle, {{X, x.data()}, {B, b.data()}, {Y, y.data()}}, workspace.data()); !s.ok())
    return std::printf("%s\n", s.to_string().c_str()), 1;
  for (size_t i = 0; i < y.size(); ++i)
    if (y[i] != std::fmax(0.0f, x[i] + 0.5f)) return std::printf("y[%zu] = %g\n", i, y[i]), 1;
  std::printf("consumer: ok (%s)\n", dg::kVersionString);
  return 0;
}
