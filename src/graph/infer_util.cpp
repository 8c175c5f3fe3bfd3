#include "graph/infer_util.hpp"

#include <algorithm>
#include <numeric>

#include "core/checked.hpp"

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

// Needs a span within checked::kMaxSpanBytes, so that no product below overflows.
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

namespace {

// "2^48": how messages name a limit.
std::string power_of_two(int64_t limit) { return "2^" + std::to_string(63 - __builtin_clzll(static_cast<uint64_t>(limit))); }

// Rank, every dim in [1, 2^48] and their product within checked::kMaxElements.
Status check_dims(const NodeSpec& node, const TensorAttr* t) {
  const auto& d = t->get_dim();
  if (d.size() > static_cast<size_t>(checked::kMaxRank))
    return node_error(ErrorCode::INVALID_VALUE, node, t,
                      "rank " + std::to_string(d.size()) + " is above " + std::to_string(checked::kMaxRank) +
                          ", the most a tensor may have");
  for (int64_t v : d) {
    if (v < 1) return node_error(ErrorCode::INVALID_VALUE, node, t, "dims " + dims_to_string(d) + " must all be >= 1");
    if (v > checked::kMaxExtent)
      return node_error(ErrorCode::INVALID_VALUE, node, t,
                        "dims " + dims_to_string(d) + " hold a dim above " + power_of_two(checked::kMaxExtent));
  }
  int64_t elements = 0;
  if (!checked::volume(d, elements) || elements > checked::kMaxElements)
    return node_error(ErrorCode::INVALID_VALUE, node, t,
                      "dims " + dims_to_string(d) + " hold more than " + power_of_two(checked::kMaxElements) +
                          " elements, the most a tensor may have");
  return {};
}

// As many strides as dims, each in [0, 2^48].
Status check_strides(const NodeSpec& node, const TensorAttr* t) {
  const auto& d = t->get_dim();
  const auto& s = t->get_stride();
  if (s.size() != d.size())
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, t,
                      "has " + std::to_string(d.size()) + " dims but " + std::to_string(s.size()) + " strides");
  for (int64_t v : s) {
    if (v < 0)
      return node_error(ErrorCode::INVALID_VALUE, node, t, "strides " + dims_to_string(s) + " must not be negative");
    if (v > checked::kMaxExtent)
      return node_error(ErrorCode::INVALID_VALUE, node, t,
                        "strides " + dims_to_string(s) + " hold a stride above " + power_of_two(checked::kMaxExtent));
  }
  return {};
}

// The bytes from the base pointer to the last element within checked::kMaxSpanBytes.
Status check_span(const NodeSpec& node, const TensorAttr* t) {
  int64_t bytes = 0;
  if (!checked::span_bytes(t->get_dim(), t->get_stride(), std::max<int64_t>(size_of(t->get_data_type()), 1), bytes) ||
      bytes > checked::kMaxSpanBytes)
    return node_error(ErrorCode::INVALID_VALUE, node, t,
                      "dims " + dims_to_string(t->get_dim()) + " with strides " + dims_to_string(t->get_stride()) +
                          " span more than " + power_of_two(checked::kMaxSpanBytes) +
                          " bytes, the most a tensor may address");
  return {};
}

// A type set by a cast from an integer may name no type at all: it has no size to index by.
Status check_known_type(const NodeSpec& node, const TensorAttr* t) {
  if (to_string(t->get_data_type()) != "UNKNOWN") return {};
  return node_error(ErrorCode::INVALID_DATA_TYPE, node, t,
                    "data type " + std::to_string(static_cast<int>(t->get_data_type())) + " is not a DataType value");
}

}  // namespace

Status check_input(const NodeSpec& node, const TensorAttr* t, const char* slot_name) {
  if (!t)
    return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, nullptr, std::string("input ") + slot_name + " is missing");
  if (t->get_dim().empty())
    return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, t, "has no dims");
  if (t->get_stride().empty() && !t->get_is_virtual())
    return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, t, "has no strides");
  if (t->get_data_type() == DataType::NOT_SET)
    return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, t, "has no data type");
  if (auto s = check_known_type(node, t); !s.ok()) return s;
  if (auto s = check_dims(node, t); !s.ok()) return s;
  if (auto s = check_strides(node, t); !s.ok()) return s;
  return check_span(node, t);
}

Status fill_output(const NodeSpec& node, TensorAttr& out, const std::vector<int64_t>& dims,
                   const std::vector<int64_t>& layout_like, const GraphDefaults& defaults, DataType fallback) {
  if (out.get_dim().empty()) {
    out.set_dim(dims);
  } else if (out.get_dim() != dims) {
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, &out,
                      "dims " + dims_to_string(out.get_dim()) + " disagree with the inferred " + dims_to_string(dims));
  }
  if (auto s = check_dims(node, &out); !s.ok()) return s;
  if (out.get_stride().empty()) out.set_stride(strides_like(out.get_dim(), layout_like));
  if (auto s = check_strides(node, &out); !s.ok()) return s;
  if (out.get_data_type() == DataType::NOT_SET) {
    DataType t = out.get_is_virtual() ? defaults.intermediate : defaults.io;
    if (t == DataType::NOT_SET) t = fallback;
    if (t == DataType::NOT_SET)
      return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, &out,
                        "has no data type and the graph sets no io/intermediate data type");
    out.set_data_type(t);
  }
  if (auto s = check_known_type(node, &out); !s.ok()) return s;
  if (auto s = check_span(node, &out); !s.ok()) return s;
  if (!strides_are_non_overlapping(out.get_dim(), out.get_stride()))
    return node_error(ErrorCode::INVALID_VALUE, node, &out,
                      "output strides " + dims_to_string(out.get_stride()) + " overlap for dims " +
                          dims_to_string(out.get_dim()) + " (two elements would share memory)");
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

Status check_one_input(const NodeSpec& node) {
  if (auto s = check_input_count(node, 1, std::string(op_name(node.attr))); !s.ok()) return s;
  return check_input(node, node.inputs[0].get(), "X");
}

DataType resolve_compute_type(DataType attr_type, const GraphDefaults& defaults) {
  if (attr_type != DataType::NOT_SET) return attr_type;
  if (defaults.compute != DataType::NOT_SET) return defaults.compute;
  return DataType::FLOAT;
}

}  // namespace dnngraph
