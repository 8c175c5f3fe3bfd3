// Helpers shared by the op families' shape inference and validation.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "dnngraph/status.hpp"
#include "graph/op_traits.hpp"

namespace dnngraph {

// "node 'conv0' (conv_fprop), tensor 'W': <rule>" : every validation message has this shape.
std::string where(const NodeSpec& node, const TensorAttr* tensor = nullptr);
Status node_error(ErrorCode code, const NodeSpec& node, const TensorAttr* tensor, const std::string& rule);

std::string dims_to_string(const std::vector<int64_t>& dims);

// Row-major packed strides for dims.
std::vector<int64_t> packed_strides(const std::vector<int64_t>& dims);
// Packed strides for dims that keep the dim order of `like` (sorted by stride, largest outermost);
// e.g. an NHWC input gives an NHWC output. Falls back to row-major when ranks differ.
std::vector<int64_t> strides_like(const std::vector<int64_t>& dims, const std::vector<int64_t>& like);

// An input must have dims set (all >= 1), strides of the same rank (all >= 0), a known data type.
Status check_input(const NodeSpec& node, const TensorAttr* t, const char* slot_name);
// Fill an output's dims (checking them if the user set them), strides (like `layout_like`, or
// checked for rank and sign and non-overlap) and type (io type for outputs, intermediate for
// virtual tensors, unless set).
Status fill_output(const NodeSpec& node, TensorAttr& out, const std::vector<int64_t>& dims,
                   const std::vector<int64_t>& layout_like, const GraphDefaults& defaults,
                   DataType fallback_type);
// True when no two in-bounds indices map to the same offset.
bool strides_are_non_overlapping(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides);

// Numpy-style broadcast of equal-rank dims (a dim of 1 stretches); false if incompatible.
bool broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>& out);

// A mode attribute (pointwise, reduction, resampling, norm phase) set and one of its enum's:
// "<what> is not set", "unknown <what> 42".
template <class E>
Status check_mode(const NodeSpec& node, E mode, const char* what) {
  if (mode == E::NOT_SET) return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, nullptr, std::string(what) + " is not set");
  if (to_string(mode) == "UNKNOWN")
    return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                      "unknown " + std::string(what) + " " + std::to_string(static_cast<int>(mode)));
  return {};
}
// Exactly `want` input slots: "<who> takes 1 input, got 3".
Status check_input_count(const NodeSpec& node, size_t want, const std::string& who);
// The one input X of an X -> Y op: exactly one slot, holding a well formed X (check_input).
Status check_one_input(const NodeSpec& node);

// The compute type of a node: its attribute's, else the graph's, else FLOAT.
DataType resolve_compute_type(DataType attr_type, const GraphDefaults& defaults);

}  // namespace dnngraph
