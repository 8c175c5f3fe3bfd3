// Layout ops: reshape (row-major element order), transpose, slice, concatenate. They move elements
// and never change their values.
#include <algorithm>
#include <string>
#include <utility>
#include <variant>

#include <nlohmann/json.hpp>

#include "core/checked.hpp"
#include "graph/families.hpp"
#include "graph/infer_util.hpp"
#include "graph/json_fields.hpp"
#include "graph/layout_copies.hpp"

namespace dnngraph {
namespace {

// The product of dims, INT64_MAX when it overflows (no tensor holds that many: an error follows).
int64_t volume(const std::vector<int64_t>& dims) {
  int64_t v = 1;
  return checked::volume(dims, v) ? v : INT64_MAX;
}

// Resolves a single -1 in `dims` against X's volume.
Status resolve_reshape_dims(const NodeSpec& node, const TensorAttr& x, std::vector<int64_t>& dims) {
  int holes = 0;
  int64_t known = 1;
  for (int64_t d : dims) {
    if (d == -1) {
      ++holes;
    } else if (d < 1) {
      return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                        "reshape dims " + dims_to_string(dims) + " must be >= 1, or -1 for one inferred dim");
    } else if (!checked::mul(known, d, known)) {
      known = INT64_MAX;
    }
  }
  if (holes > 1)
    return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                      "reshape dims " + dims_to_string(dims) + " have " + std::to_string(holes) +
                          " entries of -1; at most one dim may be inferred");
  const int64_t have = x.get_volume();
  if (holes == 1) {
    if (have % known != 0)
      return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, &x,
                        "cannot infer the -1 in reshape dims " + dims_to_string(dims) + ": X's " +
                            std::to_string(have) + " elements are not a multiple of " + std::to_string(known));
    for (int64_t& d : dims)
      if (d == -1) d = have / known;
  }
  if (volume(dims) != have)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, &x,
                      "reshape dims " + dims_to_string(dims) + " hold " + std::to_string(volume(dims)) +
                          " elements but X " + dims_to_string(x.get_dim()) + " holds " + std::to_string(have));
  return {};
}

Status infer(const ReshapeAttr& attr, NodeSpec& node, const GraphDefaults& defaults) {
  if (auto s = check_one_input(node); !s.ok()) return s;
  const TensorAttr& x = *node.inputs[0];
  TensorAttr& y = *node.outputs[0];
  // The dims come from the attribute, else from Y's dims as the user set them (cuDNN's way).
  std::vector<int64_t> dims = attr.get_dim().empty() ? y.get_dim() : attr.get_dim();
  if (dims.empty())
    return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, nullptr,
                      "reshape dims are not set (call set_dim, or set the output's dims)");
  if (auto s = resolve_reshape_dims(node, x, dims); !s.ok()) return s;
  return fill_output(node, y, dims, packed_strides(dims), defaults, x.get_data_type());
}

Status infer(const TransposeAttr& attr, NodeSpec& node, const GraphDefaults& defaults) {
  if (auto s = check_one_input(node); !s.ok()) return s;
  const TensorAttr& x = *node.inputs[0];
  const auto& perm = attr.get_permutation();
  const size_t rank = x.get_dim().size();
  if (perm.size() != rank)
    return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                      "permutation " + dims_to_string(perm) + " has " + std::to_string(perm.size()) +
                          " entries but X has rank " + std::to_string(rank));
  std::vector<bool> seen(rank, false);
  std::vector<int64_t> dims(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t p = perm[i];
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)])
      return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                        "permutation " + dims_to_string(perm) + " is not a permutation of 0.." +
                            std::to_string(rank - 1));
    seen[static_cast<size_t>(p)] = true;
    dims[i] = x.get_dim()[static_cast<size_t>(p)];
  }
  return fill_output(node, *node.outputs[0], dims, packed_strides(dims), defaults, x.get_data_type());
}

Status infer(const SliceAttr& attr, NodeSpec& node, const GraphDefaults& defaults) {
  if (auto s = check_one_input(node); !s.ok()) return s;
  const TensorAttr& x = *node.inputs[0];
  const auto& slices = attr.get_slices();
  const auto& xd = x.get_dim();
  if (slices.size() > xd.size())
    return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                      "slice has " + std::to_string(slices.size()) + " ranges but X has rank " +
                          std::to_string(xd.size()));
  std::vector<int64_t> dims = xd;
  for (size_t i = 0; i < slices.size(); ++i) {
    const auto [start, end] = slices[i];
    const std::string range = "range [" + std::to_string(start) + ", " + std::to_string(end) + ") of dim " +
                              std::to_string(i);
    if (start < 0 || end > xd[i])
      return node_error(ErrorCode::INVALID_VALUE, node, &x,
                        range + " is outside [0, " + std::to_string(xd[i]) + ")");
    if (start >= end)
      return node_error(ErrorCode::INVALID_VALUE, node, &x, range + " is empty (start must be below end)");
    dims[i] = end - start;
  }
  return fill_output(node, *node.outputs[0], dims, x.get_stride(), defaults, x.get_data_type());
}

Status infer(const ConcatenateAttr& attr, NodeSpec& node, const GraphDefaults& defaults) {
  if (node.inputs.empty())
    return node_error(ErrorCode::INVALID_VALUE, node, nullptr, "concatenate needs at least one input");
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const std::string slot_name = "IN_" + std::to_string(i);
    if (auto s = check_input(node, node.inputs[i].get(), slot_name.c_str()); !s.ok()) return s;
  }
  const TensorAttr& first = *node.inputs[0];
  const size_t rank = first.get_dim().size();
  const int64_t axis = attr.get_axis();
  if (axis < 0 || axis >= static_cast<int64_t>(rank))
    return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                      "axis " + std::to_string(axis) + " is outside [0, " + std::to_string(rank) + ")");
  std::vector<int64_t> dims = first.get_dim();
  dims[static_cast<size_t>(axis)] = 0;
  for (const auto& in : node.inputs) {
    const auto& d = in->get_dim();
    if (d.size() != rank)
      return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, in.get(),
                        "rank " + std::to_string(d.size()) + " differs from the first input's rank " +
                            std::to_string(rank));
    for (size_t k = 0; k < rank; ++k)
      if (k != static_cast<size_t>(axis) && d[k] != first.get_dim()[k])
        return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, in.get(),
                          "dims " + dims_to_string(d) + " differ from the first input's " +
                              dims_to_string(first.get_dim()) + " outside the axis " + std::to_string(axis));
    int64_t& total = dims[static_cast<size_t>(axis)];
    if (!checked::add(total, d[static_cast<size_t>(axis)], total) || total > checked::kMaxExtent)
      return node_error(ErrorCode::INVALID_VALUE, node, in.get(),
                        "the inputs' sizes along axis " + std::to_string(axis) + " sum to more than 2^48");
  }
  return fill_output(node, *node.outputs[0], dims, first.get_stride(), defaults, first.get_data_type());
}

// ---- JSON fields

void write_reshape(const ReshapeAttr& a, nlohmann::json& j) { j["dim"] = a.get_dim(); }
void read_reshape(JsonFields& f, ReshapeAttr& a) {
  if (auto v = f.integers("dim")) a.set_dim(*v);
}

void write_transpose(const TransposeAttr& a, nlohmann::json& j) { j["permutation"] = a.get_permutation(); }
void read_transpose(JsonFields& f, TransposeAttr& a) {
  if (auto v = f.integers("permutation")) a.set_permutation(*v);
}

void write_slice(const SliceAttr& a, nlohmann::json& j) {
  nlohmann::json s = nlohmann::json::array();
  for (const auto& [b, e] : a.get_slices()) s.push_back({b, e});
  j["slices"] = std::move(s);
}
void read_slice(JsonFields& f, SliceAttr& a) {
  if (auto v = f.pairs("slices")) a.set_slices(*v);
}

void write_concatenate(const ConcatenateAttr& a, nlohmann::json& j) {
  if (a.get_axis() != 0) j["axis"] = a.get_axis();
}
void read_concatenate(JsonFields& f, ConcatenateAttr& a) {
  if (auto v = f.integer("axis")) a.set_axis(*v);
}

}  // namespace

const OpTraits& traits(OpTag<ReshapeAttr>) {
  static const auto t = typed<ReshapeAttr, infer, write_reshape, read_reshape>(x_to_y("reshape"));
  return t;
}

const OpTraits& traits(OpTag<TransposeAttr>) {
  static const auto t = typed<TransposeAttr, infer, write_transpose, read_transpose>(x_to_y("transpose"));
  return t;
}

const OpTraits& traits(OpTag<SliceAttr>) {
  static const auto t = typed<SliceAttr, infer, write_slice, read_slice>(x_to_y("slice"));
  return t;
}

const OpTraits& traits(OpTag<ConcatenateAttr>) {
  static const auto t = typed<ConcatenateAttr, infer, write_concatenate, read_concatenate>(
      {.name = "concatenate", .inputs = {}, .required_inputs = 1, .outputs = {"Y"}, .variadic = true,
       .flops = elementwise_flops});
  return t;
}

}  // namespace dnngraph

// ---- the layout ops as strided copies (graph/layout_copies.hpp)

namespace dnngraph {
namespace {

// Drops size-1 dims and merges dim i into i+1 where element order and memory agree
// (stride[i] == stride[i+1] * dims[i+1]), so a packed tensor becomes one dim.
void merge_dims(std::vector<int64_t>& dims, std::vector<int64_t>& strides) {
  std::vector<int64_t> d, s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!d.empty() && s.back() == strides[i] * dims[i]) {
      d.back() *= dims[i];
      s.back() = strides[i];
    } else {
      d.push_back(dims[i]);
      s.push_back(strides[i]);
    }
  }
  if (d.empty()) d = {1}, s = {1};
  dims = std::move(d);
  strides = std::move(s);
}

// Copies whose two sides walk the same dims may merge a dim only where both sides allow it.
void merge_common_dims(StridedCopy& c) {
  std::vector<int64_t> d, ss, ds;
  for (size_t i = 0; i < c.src_dims.size(); ++i) {
    if (c.src_dims[i] == 1) continue;
    const bool merges = !d.empty() && ss.back() == c.src_strides[i] * c.src_dims[i] &&
                        ds.back() == c.dst_strides[i] * c.src_dims[i];
    if (merges) {
      d.back() *= c.src_dims[i];
      ss.back() = c.src_strides[i];
      ds.back() = c.dst_strides[i];
    } else {
      d.push_back(c.src_dims[i]);
      ss.push_back(c.src_strides[i]);
      ds.push_back(c.dst_strides[i]);
    }
  }
  if (d.empty()) d = {1}, ss = {1}, ds = {1};
  c.src_dims = c.dst_dims = d;
  c.src_strides = std::move(ss);
  c.dst_strides = std::move(ds);
}

// A copy whose element i of one side goes to element i of the other may walk its dims in any
// order: the destination's memory order (then the source's), so that NHWC tensors copy runs of
// channels. Then the dims both sides allow are merged.
StridedCopy same_walk(int input, int64_t src_offset, int64_t dst_offset, const std::vector<int64_t>& dims,
                      const std::vector<int64_t>& src_strides, const std::vector<int64_t>& dst_strides) {
  std::vector<size_t> order(dims.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return dst_strides[a] != dst_strides[b] ? dst_strides[a] > dst_strides[b] : src_strides[a] > src_strides[b];
  });
  StridedCopy c{input, 1, src_offset, dst_offset, {}, {}, {}, {}};
  for (size_t i : order) {
    c.src_dims.push_back(dims[i]);
    c.src_strides.push_back(src_strides[i]);
    c.dst_strides.push_back(dst_strides[i]);
    c.count *= dims[i];  // a validated tensor's volume: below 2^48
  }
  c.dst_dims = c.src_dims;
  merge_common_dims(c);
  return c;
}

int64_t inner_run(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  return strides.back() == 1 ? dims.back() : 1;
}

int64_t gcd(int64_t a, int64_t b) {
  while (b != 0) a = std::exchange(b, a % b);
  return a;
}

}  // namespace

bool layout_as_copies(const ir::Graph& g, const ir::Node& n, std::vector<StridedCopy>& out, std::string& why) {
  out.clear();
  const ir::Tensor& y = g.tensor(n.outputs[0]);
  if (ir::is<ReshapeAttr>(n)) {
    const ir::Tensor& x = g.tensor(n.inputs[0]);
    StridedCopy c{0, x.volume(), 0, 0, x.dims, x.strides, y.dims, y.strides};
    merge_dims(c.src_dims, c.src_strides);
    merge_dims(c.dst_dims, c.dst_strides);
    // Dims that agree once size-1 dims are dropped map element to element, so they may walk in the
    // destination's memory order: a channels-last 5-D image with one frame reshaped to 4-D is one
    // run (walked in logical order, C outermost, it went element by element: 1 ms for 1 MB).
    if (c.src_dims == c.dst_dims) c = same_walk(0, 0, 0, c.src_dims, c.src_strides, c.dst_strides);
    out.push_back(std::move(c));
  } else if (const auto* t = std::get_if<TransposeAttr>(&n.attr)) {
    const ir::Tensor& x = g.tensor(n.inputs[0]);
    std::vector<int64_t> src_strides;  // X's stride of each output dim
    for (int64_t p : t->get_permutation()) src_strides.push_back(x.strides[static_cast<size_t>(p)]);
    out.push_back(same_walk(0, 0, 0, y.dims, std::move(src_strides), y.strides));
  } else if (const auto* s = std::get_if<SliceAttr>(&n.attr)) {
    const ir::Tensor& x = g.tensor(n.inputs[0]);
    int64_t start = 0;  // inside X's span: no overflow
    for (size_t i = 0; i < s->get_slices().size(); ++i) start += s->get_slices()[i].first * x.strides[i];
    out.push_back(same_walk(0, start, 0, y.dims, x.strides, y.strides));
  } else if (const auto* c = std::get_if<ConcatenateAttr>(&n.attr)) {
    const size_t axis = static_cast<size_t>(c->get_axis());
    int64_t along = 0;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const ir::Tensor& x = g.tensor(n.inputs[i]);
      out.push_back(same_walk(static_cast<int>(i), 0, along * y.strides[axis], x.dims, x.strides, y.strides));
      along += x.dims[axis];
    }
  } else {
    why = ir::describe(n) + " is not a layout op (reshape, transpose, slice, concatenate)";
    return false;
  }
  return true;
}

int64_t contiguous_run(const StridedCopy& c) {
  return gcd(inner_run(c.src_dims, c.src_strides), inner_run(c.dst_dims, c.dst_strides));
}

}  // namespace dnngraph
