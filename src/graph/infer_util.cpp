#include "graph/infer_util.hpp"

#include <algorithm>
#include <numeric>

namespace dnngraph {

std::string where(const NodeSpec& node, const TensorAttr* tensor) {
  std::string s = "node '" + node.name + "' (" + std::string(op_name(node.attr)) + ")";
  if (tensor) s += ", tensor '" + tensor->get_name() + "'";
  return s;
}

Status node_error(ErrorCode code, const NodeSpec& node, const TensorAttr* tensor, const std::string& rule) {
  return {code, where(node, tensor) + ": " + rule};
}

std::string dims_to_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

std::vector<int64_t> packed_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * std::max<int64_t>(dims[i], 1);
  return s;
}

std::vector<int64_t> strides_like(const std::vector<int64_t>& dims, const std::vector<int64_t>& like) {
  if (like.size() != dims.size()) return packed_strides(dims);
  // Order dims from innermost (smallest stride) outwards; ties keep the later dim inner.
  std::vector<size_t> order(dims.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (like[a] != like[b]) return like[a] < like[b];
    return a > b;
  });
  std::vector<int64_t> s(dims.size());
  int64_t running = 1;
  for (size_t idx : order) {
    s[idx] = running;
    running *= std::max<int64_t>(dims[idx], 1);
  }
  return s;
}

bool strides_are_non_overlapping(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  std::vector<size_t> order;
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] > 1) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t extent = 1;  // elements spanned by the inner dims
  for (size_t idx : order) {
    if (strides[idx] < extent) return false;
    extent = strides[idx] * dims[idx];
  }
  return true;
}

static Status check_dims_strides(const NodeSpec& node, const TensorAttr* t) {
  const auto& d = t->get_dim();
  const auto& s = t->get_stride();
  for (int64_t v : d)
    if (v < 1)
      return node_error(ErrorCode::INVALID_VALUE, node, t, "dims " + dims_to_string(d) + " must all be >= 1");
  if (s.size() != d.size())
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, t,
                      "has " + std::to_string(d.size()) + " dims but " + std::to_string(s.size()) + " strides");
  for (int64_t v : s)
    if (v < 0)
      return node_error(ErrorCode::INVALID_VALUE, node, t,
                        "strides " + dims_to_string(s) + " must not be negative");
  return {};
}

Status check_input(const NodeSpec& node, const TensorAttr* t, const char* slot_name) {
  if (!t)
    return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, nullptr, std::string("input ") + slot_name + " is missing");
  if (t->get_dim().empty())
    return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, t, "has no dims");
  if (t->get_stride().empty() && !t->get_is_virtual())
    return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, t, "has no strides");
  if (t->get_data_type() == DataType::NOT_SET)
    return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, t, "has no data type");
  return check_dims_strides(node, t);
}

Status fill_output(const NodeSpec& node, TensorAttr& out, const std::vector<int64_t>& dims,
                   const std::vector<int64_t>& layout_like, const GraphDefaults& defaults, DataType fallback) {
  if (out.get_dim().empty()) {
    out.set_dim(dims);
  } else if (out.get_dim() != dims) {
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, &out,
                      "dims " + dims_to_string(out.get_dim()) + " disagree with the inferred " + dims_to_string(dims));
  }
  if (out.get_stride().empty()) out.set_stride(strides_like(dims, layout_like));
  if (auto s = check_dims_strides(node, &out); !s.ok()) return s;
  if (!strides_are_non_overlapping(out.get_dim(), out.get_stride()))
    return node_error(ErrorCode::INVALID_VALUE, node, &out,
                      "output strides " + dims_to_string(out.get_stride()) + " overlap for dims " +
                          dims_to_string(out.get_dim()) + " (two elements would share memory)");
  if (out.get_data_type() == DataType::NOT_SET) {
    DataType t = out.get_is_virtual() ? defaults.intermediate : defaults.io;
    if (t == DataType::NOT_SET) t = fallback;
    if (t == DataType::NOT_SET)
      return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, &out,
                        "has no data type and the graph sets no io/intermediate data type");
    out.set_data_type(t);
  }
  return {};
}

bool broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>& out) {
  if (a.size() != b.size()) return false;
  out.resize(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i] || b[i] == 1) out[i] = a[i];
    else if (a[i] == 1) out[i] = b[i];
    else return false;
  }
  return true;
}

Status check_input_count(const NodeSpec& node, size_t want, const std::string& who) {
  if (node.inputs.size() == want) return {};
  return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                    who + " takes " + std::to_string(want) + (want == 1 ? " input" : " inputs") + ", got " +
                        std::to_string(node.inputs.size()));
}

DataType resolve_compute_type(DataType attr_type, const GraphDefaults& defaults) {
  if (attr_type != DataType::NOT_SET) return attr_type;
  if (defaults.compute != DataType::NOT_SET) return defaults.compute;
  return DataType::FLOAT;
}

}  // namespace dnngraph
