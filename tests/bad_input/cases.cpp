#include "bad_input/cases.hpp"

#include <set>

namespace bad_input {

Dims packed_strides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    if (__builtin_mul_overflow(s[i], std::max<int64_t>(dims[i], 1), &s[i - 1])) s[i - 1] = INT64_MAX;
  return s;
}

dg::TensorPtr user_tensor(dg::Graph& g, const std::string& name, const Dims& dims, const Dims& strides,
                          dg::DataType type) {
  return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(strides).set_data_type(type));
}

std::string node_named(const std::string& name, const std::string& op) { return "node '" + name + "' (" + op + ")"; }

std::string tensor_named(const std::string& name) { return "tensor '" + name + "'"; }

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  add_shape_cases(cases);
  add_geometry_cases(cases);
  add_layout_cases(cases);
  add_graph_cases(cases);
  return cases;
}

}  // namespace bad_input
