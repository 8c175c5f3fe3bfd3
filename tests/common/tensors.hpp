// Tensors the tests declare by dims alone: packed row-major strides, of a type or of the graph's
// defaults (NOT_SET).
#pragma once
#include <string>

#include "common/dims.hpp"
#include "dnngraph/dnngraph.hpp"

namespace test_tensors {

inline dnngraph::TensorPtr packed_tensor(dnngraph::Graph& g, const std::string& name, const test_dims::Dims& dims,
                                         dnngraph::DataType t = dnngraph::DataType::NOT_SET) {
  return g.tensor(
      dnngraph::TensorAttr().set_name(name).set_dim(dims).set_stride(test_dims::packed(dims)).set_data_type(t));
}

}  // namespace test_tensors
