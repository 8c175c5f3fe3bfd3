// TensorAttr: a tensor's description (dims, strides, type, uid) as the user declares it.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dnngraph/types.hpp"

#include "dnngraph/export.hpp"

DNNGRAPH_API_BEGIN
namespace dnngraph {

class TensorAttr {
 public:
  TensorAttr& set_name(std::string name) { name_ = std::move(name); return *this; }
  TensorAttr& set_dim(std::vector<int64_t> dim) { dim_ = std::move(dim); return changed(); }
  TensorAttr& set_stride(std::vector<int64_t> stride) { stride_ = std::move(stride); return changed(); }
  TensorAttr& set_data_type(DataType t) { data_type_ = t; return changed(); }
  TensorAttr& set_uid(int64_t uid) { uid_ = uid; return changed(); }
  TensorAttr& clear_uid() { uid_.reset(); return changed(); }
  // An output is a graph result the user reads; every other produced tensor is virtual.
  TensorAttr& set_output(bool output) { is_virtual_ = !output; return changed(); }
  TensorAttr& set_is_virtual(bool v) { is_virtual_ = v; return changed(); }
  // A pass-by-value tensor is a host scalar baked into the plan (alpha, epsilon): no pointer needed.
  TensorAttr& set_is_pass_by_value(bool v) { is_pass_by_value_ = v; return changed(); }
  // A constant tensor's data, at the pointer each execute is given, does not change while a plan
  // built from the graph lives: engines may derive forms of it (packed weights) on the first execute
  // and reuse them while the pointer stays the same. New data needs a new pointer or a new plan.
  TensorAttr& set_is_constant(bool c) { is_constant_ = c; return changed(); }
  // Packed variable-length rows (THD layouts): batch b's rows start at element offset[b] of the
  // data, read at run time from `offset`, a [b + 1, 1, 1, 1] INT32 or INT64 tensor; the strides of
  // the other dims hold within a batch and the batch stride is unused. sdpa and sdpa_backward
  // read it on their Q, K, V, O, dO, dQ, dK, dV and page tables.
  TensorAttr& set_ragged_offset(std::shared_ptr<TensorAttr> offset) { ragged_offset_ = std::move(offset); return changed(); }
  TensorAttr& set_value(double v) {
    changed();
    value_ = v;
    is_pass_by_value_ = true;
    if (dim_.empty()) dim_ = {1};
    if (stride_.empty()) stride_ = {1};
    return *this;
  }

  const std::string& get_name() const { return name_; }
  const std::vector<int64_t>& get_dim() const { return dim_; }
  const std::vector<int64_t>& get_stride() const { return stride_; }
  DataType get_data_type() const { return data_type_; }
  bool has_uid() const { return uid_.has_value(); }
  int64_t get_uid() const { return uid_.value_or(-1); }
  bool get_is_virtual() const { return is_virtual_; }
  bool get_is_output() const { return !is_virtual_; }
  bool get_is_pass_by_value() const { return is_pass_by_value_; }
  bool get_is_constant() const { return is_constant_; }
  std::optional<double> get_value() const { return value_; }
  const std::shared_ptr<TensorAttr>& get_ragged_offset() const { return ragged_offset_; }
  int64_t get_volume() const;  // product of dims; INT64_MAX when it overflows
  // Counts the changes to everything but the name: plans built before a change refuse to run.
  uint64_t get_revision() const { return revision_; }

 private:
  std::string name_;
  std::vector<int64_t> dim_;
  std::vector<int64_t> stride_;
  DataType data_type_ = DataType::NOT_SET;
  std::optional<int64_t> uid_;
  bool is_virtual_ = false;
  bool is_pass_by_value_ = false;
  bool is_constant_ = false;
  std::optional<double> value_;
  std::shared_ptr<TensorAttr> ragged_offset_;
  uint64_t revision_ = 0;

  TensorAttr& changed() {
    ++revision_;
    return *this;
  }
};

using TensorPtr = std::shared_ptr<TensorAttr>;

}  // namespace dnngraph
DNNGRAPH_API_END
