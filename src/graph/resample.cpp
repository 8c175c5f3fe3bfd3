// Resample: pooling (window, stride, padding per spatial dim) and resizing (NEAREST, BILINEAR) of
// X (N, C, spatial...). Pooling: out = floor((in + pre + post - window) / stride) + 1. Resizing:
// the output's spatial dims are Y's if the user set them, else floor(in * scale).
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/checked.hpp"
#include "graph/families.hpp"
#include "graph/infer_util.hpp"
#include "graph/json_fields.hpp"

namespace dnngraph {
namespace {

bool is_pooling(ResampleMode m) {
  return m == ResampleMode::MAXPOOL || m == ResampleMode::AVGPOOL_INCLUDE_PADDING ||
         m == ResampleMode::AVGPOOL_EXCLUDE_PADDING;
}

// A per-spatial-dim attribute must have one value per spatial dim, each in [min, 2^48].
Status check_per_dim(const NodeSpec& node, const std::vector<int64_t>& v, size_t spatial, const char* name,
                     int64_t min) {
  if (v.size() != spatial)
    return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                      std::string(name) + " " + dims_to_string(v) + " has " + std::to_string(v.size()) +
                          " values but X has " + std::to_string(spatial) + " spatial dims");
  for (int64_t x : v) {
    if (x < min)
      return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                        std::string(name) + " " + dims_to_string(v) + " must all be >= " + std::to_string(min));
    // As for convolutions: below 2^48, sums of a dim and two paddings cannot overflow.
    if (x > checked::kMaxExtent)
      return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                        std::string(name) + " " + dims_to_string(v) + " must all be at most 2^48");
  }
  return {};
}

Status pooled_dims(const ResampleAttr& attr, const NodeSpec& node, const TensorAttr& x, std::vector<int64_t>& dims) {
  const size_t spatial = x.get_dim().size() - 2;
  const auto& window = attr.get_window();
  const auto& stride = attr.get_stride();
  if (window.empty()) return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, nullptr, "pooling window is not set");
  if (stride.empty()) return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, nullptr, "pooling stride is not set");
  const std::vector<int64_t> zeros(spatial, 0);
  const auto& pre = attr.get_pre_padding().empty() ? zeros : attr.get_pre_padding();
  const auto& post = attr.get_post_padding().empty() ? zeros : attr.get_post_padding();
  if (auto s = check_per_dim(node, window, spatial, "window", 1); !s.ok()) return s;
  if (auto s = check_per_dim(node, stride, spatial, "stride", 1); !s.ok()) return s;
  if (auto s = check_per_dim(node, pre, spatial, "pre-padding", 0); !s.ok()) return s;
  if (auto s = check_per_dim(node, post, spatial, "post-padding", 0); !s.ok()) return s;
  dims = x.get_dim();
  for (size_t i = 0; i < spatial; ++i) {
    // Padding below the window keeps at least one real element in every window.
    if (pre[i] >= window[i] || post[i] >= window[i])
      return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                        "padding " + dims_to_string(pre) + " / " + dims_to_string(post) +
                            " must be smaller than the window " + dims_to_string(window) + " in spatial dim " +
                            std::to_string(i));
    const int64_t padded = x.get_dim()[i + 2] + pre[i] + post[i];
    if (padded < window[i])
      return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, &x,
                        "spatial dim " + std::to_string(i) + " padded to " + std::to_string(padded) +
                            " is smaller than the window " + std::to_string(window[i]));
    dims[i + 2] = (padded - window[i]) / stride[i] + 1;
  }
  return {};
}

Status resized_dims(const ResampleAttr& attr, const NodeSpec& node, const TensorAttr& x, const TensorAttr& y,
                    std::vector<int64_t>& dims) {
  const auto& xd = x.get_dim();
  const size_t spatial = xd.size() - 2;
  if (!y.get_dim().empty()) {
    const auto& yd = y.get_dim();
    if (yd.size() != xd.size() || yd[0] != xd[0] || yd[1] != xd[1])
      return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, &y,
                        "dims " + dims_to_string(yd) + " must keep X's rank and N, C " + dims_to_string(xd) +
                            " (resizing changes only the spatial dims)");
    dims = yd;
    return {};
  }
  const auto& scale = attr.get_scale();
  if (scale.empty())
    return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, &y,
                      "resizing needs the output's dims or a scale (set Y's dims or call set_scale)");
  if (scale.size() != spatial)
    return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                      "scale has " + std::to_string(scale.size()) + " values but X has " + std::to_string(spatial) +
                          " spatial dims");
  dims = xd;
  for (size_t i = 0; i < spatial; ++i) {
    const double out = std::isfinite(scale[i]) ? std::floor(static_cast<double>(xd[i + 2]) * scale[i]) : 0.0;
    if (!(out >= 1.0))
      return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                        "scale " + std::to_string(scale[i]) + " of spatial dim " + std::to_string(i) +
                            " gives an output size below 1 from " + std::to_string(xd[i + 2]));
    if (out > static_cast<double>(checked::kMaxExtent))
      return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                        "scale " + std::to_string(scale[i]) + " of spatial dim " + std::to_string(i) +
                            " gives an output size above 2^48 from " + std::to_string(xd[i + 2]));
    dims[i + 2] = static_cast<int64_t>(out);
  }
  return {};
}

Status infer(const ResampleAttr& attr, NodeSpec& node, const GraphDefaults& defaults) {
  const ResampleMode mode = attr.get_resampling_mode();
  if (auto s = check_mode(node, mode, "resampling mode"); !s.ok()) return s;
  if (auto s = check_one_input(node); !s.ok()) return s;
  const TensorAttr* x = node.inputs[0].get();
  if (x->get_dim().size() < 3)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, x,
                      "rank " + std::to_string(x->get_dim().size()) +
                          " is below 3 (resample needs dims N, C and at least one spatial dim)");
  TensorAttr& y = *node.outputs[0];
  std::vector<int64_t> dims;
  Status s = is_pooling(mode) ? pooled_dims(attr, node, *x, dims) : resized_dims(attr, node, *x, y, dims);
  if (!s.ok()) return s;
  return fill_output(node, y, dims, x->get_stride(), defaults, x->get_data_type());
}

// The mode and every per-dim array, always written.
void write_resample(const ResampleAttr& a, nlohmann::json& j) {
  j["resampling_mode"] = std::string(to_string(a.get_resampling_mode()));
  j["window"] = a.get_window();
  j["stride"] = a.get_stride();
  j["pre_padding"] = a.get_pre_padding();
  j["post_padding"] = a.get_post_padding();
  nlohmann::json scale = nlohmann::json::array();
  for (double s : a.get_scale()) scale.push_back(json_number(s));
  j["scale"] = std::move(scale);
}

void read_resample(JsonFields& f, ResampleAttr& a) {
  if (auto m = f.enumeration("resampling_mode", &resample_mode_from_string, "resampling mode")) a.set_resampling_mode(*m);
  if (auto v = f.integers("window")) a.set_window(*v);
  if (auto v = f.integers("stride")) a.set_stride(*v);
  if (auto v = f.integers("padding")) a.set_padding(*v);
  if (auto v = f.integers("pre_padding")) a.set_pre_padding(*v);
  if (auto v = f.integers("post_padding")) a.set_post_padding(*v);
  if (auto v = f.numbers("scale")) a.set_scale(*v);
}

}  // namespace

const OpTraits& traits(OpTag<ResampleAttr>) {
  static const auto t = typed<ResampleAttr, infer, write_resample, read_resample>(x_to_y("resample"));
  return t;
}

}  // namespace dnngraph
