// Adaptive layernorm (the cuDNN frontend's adalayernorm and its backward): a layernorm whose scale
// and bias differ per batch (dim 0). Built as a composite of reductions and pointwise nodes named
// "<name>::<step>", so every engine that serves those serves it, and the fusion passes merge what
// they can; its statistics keep the frontend's names ("<name>::MEAN", "<name>::INV_VARIANCE").
#include "dnngraph/graph.hpp"
#include "graph/graph_impl.hpp"
#include "graph/infer_util.hpp"

namespace dnngraph {
namespace {

// The dims of the per-row statistics and of the parameters, from X's and the scale's: the
// normalized axes are the trailing ones where the scale equals X (at least one, none of dim 0);
// the scale is 1 on the axes before them (rows) and 1 or X's on dim 0.
struct AdaShape {
  std::vector<int64_t> stats, params;
};

std::string ada_shape(const TensorPtr& x, const TensorPtr& scale, AdaShape& out) {
  if (!x || !scale) return "needs X and a scale";
  const auto& xd = x->get_dim();
  const auto& sd = scale->get_dim();
  if (xd.empty() || sd.empty())
    return "X's and the scale's dims must be set when adalayernorm is built (its reductions' shapes follow from them)";
  if (xd.size() < 2 || sd.size() != xd.size())
    return "the scale " + dims_to_string(sd) + " must have X's rank (at least 2), X " + dims_to_string(xd);
  size_t first = sd.size();
  while (first > 1 && sd[first - 1] == xd[first - 1] && sd[first - 1] != 1) --first;
  if (first == sd.size())
    return "the scale " + dims_to_string(sd) + " normalizes no axis of X " + dims_to_string(xd) +
           " (it must equal X on the trailing normalized axes)";
  for (size_t j = 1; j < first; ++j)
    if (sd[j] != 1)
      return "the scale " + dims_to_string(sd) + " must be 1 on X's row axes before the normalized ones, X " +
             dims_to_string(xd);
  if (sd[0] != 1 && sd[0] != xd[0])
    return "the scale's dim 0 is " + std::to_string(sd[0]) + ": one per batch (" + std::to_string(xd[0]) + ") or 1";
  out.stats = xd;
  for (size_t j = first; j < xd.size(); ++j) out.stats[j] = 1;
  out.params = sd;
  return "";
}

// Appends the composite's nodes through the public builders, naming each "<name>::<step>" and
// typing every intermediate FLOAT.
class Composite {
 public:
  Composite(Graph& g, std::string name, DataType compute) : g_(g), name_(std::move(name)), compute_(compute) {}

  TensorPtr reduce(TensorPtr x, ReductionMode mode, const std::vector<int64_t>& dims, const char* step) {
    auto y = g_.reduction(std::move(x), ReductionAttr().set_mode(mode).set_name(name_ + "::" + step)
                                            .set_compute_data_type(compute_));
    y->set_dim(dims).set_data_type(DataType::FLOAT);
    return y;
  }
  TensorPtr pw(PointwiseMode mode, TensorPtr a, TensorPtr b, const char* step) {
    auto y = b ? g_.pointwise(std::move(a), std::move(b), attr(mode, step)) : g_.pointwise(std::move(a), attr(mode, step));
    y->set_data_type(DataType::FLOAT);
    return y;
  }

 private:
  PointwiseAttr attr(PointwiseMode mode, const char* step) const {
    return PointwiseAttr().set_mode(mode).set_name(name_ + "::" + step).set_compute_data_type(compute_);
  }
  Graph& g_;
  std::string name_;
  DataType compute_;
};

std::string node_name(GraphImpl& g, const std::string& given, const char* op) {
  return given.empty() ? std::string(op) + "_" + std::to_string(g.node_counter++) : given;
}

// A composite that cannot be built keeps its reason for validate() and returns placeholders named
// as its outputs (attached to no node), so that the caller's next calls on them still work.
std::array<TensorPtr, 3> refused(GraphImpl& g, const std::string& node, const char* op, const std::string& why,
                                 std::array<const char*, 3> slots) {
  if (g.build_error.ok()) g.build_error = {ErrorCode::INVALID_VALUE, "node '" + node + "' (" + op + "): " + why};
  std::array<TensorPtr, 3> out;
  for (size_t i = 0; i < 3; ++i) {
    out[i] = std::make_shared<TensorAttr>();
    out[i]->set_name(node + "::" + slots[i]).set_is_virtual(true);
  }
  return out;
}

// Names a composite's result as the frontend's op would name its output slot, typed as the op's
// output would be (NOT_SET: the graph's default, as for any output).
TensorPtr renamed(TensorPtr t, const std::string& node, const char* slot, DataType type) {
  t->set_name(node + "::" + slot).set_data_type(type);
  return t;
}

}  // namespace

std::array<TensorPtr, 3> Graph::adalayernorm(TensorPtr x, TensorPtr scale, TensorPtr bias, AdaLayernormAttr attr) {
  const std::string name = node_name(*impl_, attr.get_name(), "adalayernorm");
  AdaShape shape;
  std::string why = ada_shape(x, scale, shape);
  if (why.empty() && !bias) why = "needs a bias";
  if (why.empty() && !attr.get_epsilon()) why = "needs an epsilon (set_epsilon)";
  if (!why.empty()) return refused(*impl_, name, "adalayernorm", why, {"Y", "MEAN", "INV_VARIANCE"});
  Composite c(*this, name, attr.get_compute_data_type());
  const DataType y_type = x->get_data_type();
  TensorPtr mean = c.reduce(x, ReductionMode::AVG, shape.stats, "mean");
  TensorPtr centered = c.pw(PointwiseMode::SUB, x, mean, "center");
  TensorPtr var = c.reduce(c.pw(PointwiseMode::MUL, centered, centered, "square"), ReductionMode::AVG, shape.stats,
                           "variance");
  TensorPtr inv = c.pw(PointwiseMode::RSQRT, c.pw(PointwiseMode::ADD, var, attr.get_epsilon(), "add_epsilon"), nullptr,
                       "rsqrt");
  TensorPtr xhat = c.pw(PointwiseMode::MUL, centered, inv, "normalize");
  TensorPtr y = c.pw(PointwiseMode::ADD, c.pw(PointwiseMode::MUL, xhat, std::move(scale), "scale"), std::move(bias),
                     "bias");
  return {renamed(y, name, "Y", y_type), renamed(mean, name, "MEAN", DataType::FLOAT),
          renamed(inv, name, "INV_VARIANCE", DataType::FLOAT)};
}

// With xhat = (x - mean) * inv and g = dy * scale, over a row of n normalized elements:
//   dx = inv * (g - mean(g) - xhat * mean(g * xhat)); dscale = sum(dy * xhat), dbias = sum(dy)
// over the rows (and dim 0 where the scale has 1 there).
std::array<TensorPtr, 3> Graph::adalayernorm_backward(TensorPtr dy, TensorPtr x, TensorPtr scale, TensorPtr mean,
                                                      TensorPtr inv_variance, AdaLayernormBackwardAttr attr) {
  const std::string name = node_name(*impl_, attr.get_name(), "adalayernorm_backward");
  AdaShape shape;
  std::string why = ada_shape(x, scale, shape);
  if (why.empty() && (!dy || !mean || !inv_variance)) why = "needs DY and the forward's mean and inv_variance";
  if (!why.empty()) return refused(*impl_, name, "adalayernorm_backward", why, {"DX", "DSCALE", "DBIAS"});
  Composite c(*this, name, attr.get_compute_data_type());
  const DataType dx_type = x->get_data_type(), param_type = scale->get_data_type();
  TensorPtr xhat = c.pw(PointwiseMode::MUL, c.pw(PointwiseMode::SUB, x, std::move(mean), "center"), inv_variance,
                        "normalize");
  TensorPtr g = c.pw(PointwiseMode::MUL, dy, std::move(scale), "scale_grad");
  TensorPtr g_mean = c.reduce(g, ReductionMode::AVG, shape.stats, "grad_mean");
  TensorPtr gx_mean = c.reduce(c.pw(PointwiseMode::MUL, g, xhat, "grad_xhat"), ReductionMode::AVG, shape.stats,
                               "grad_xhat_mean");
  TensorPtr inner = c.pw(PointwiseMode::SUB, c.pw(PointwiseMode::SUB, g, g_mean, "less_mean"),
                         c.pw(PointwiseMode::MUL, xhat, gx_mean, "xhat_term"), "less_xhat_term");
  TensorPtr dx = c.pw(PointwiseMode::MUL, inner, std::move(inv_variance), "dx");
  TensorPtr dscale = c.reduce(c.pw(PointwiseMode::MUL, dy, xhat, "dy_xhat"), ReductionMode::ADD, shape.params, "dscale");
  TensorPtr dbias = c.reduce(dy, ReductionMode::ADD, shape.params, "dbias");
  return {renamed(dx, name, "DX", dx_type), renamed(dscale, name, "DSCALE", param_type),
          renamed(dbias, name, "DBIAS", param_type)};
}

}  // namespace dnngraph
