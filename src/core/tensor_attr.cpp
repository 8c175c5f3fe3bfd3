#include "dnngraph/tensor.hpp"

namespace dnngraph {
int64_t TensorAttr::get_volume() const {
  int64_t v = 1;
  for (int64_t d : dim_) v *= d;
  return v;
}
}  // namespace dnngraph
