#include "core/checked.hpp"
#include "dnngraph/tensor.hpp"

namespace dnngraph {
int64_t TensorAttr::get_volume() const {
  int64_t v = 1;
  return checked::volume(dim_, v) ? v : INT64_MAX;
}
}  // namespace dnngraph
