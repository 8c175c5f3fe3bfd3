// pygraph's operations other than pointwise, with the cuDNN frontend's keyword names:
// convolutions, matmul, reduction, normalizations, resample and the layout ops (sdpa: pygraph_sdpa.cpp).

#include "core/checked.hpp"
#include "pygraph.hpp"

namespace dnngraph::python {
namespace {

using OptDims = std::optional<std::vector<int64_t>>;
using Pair = std::tuple<TensorPtr, TensorPtr>;
using Triple = std::tuple<TensorPtr, TensorPtr, TensorPtr>;

template <class A>
A named(A attr, nb::handle compute, std::string name) {
  attr.set_compute_data_type(optional_data_type(compute)).set_name(std::move(name));
  return attr;
}

template <class A>
A conv_attr(const OptDims& padding, const OptDims& stride, const OptDims& dilation, const OptDims& pre,
            const OptDims& post, nb::handle compute, std::string name) {
  A a = named(A(), compute, std::move(name));
  if (padding) a.set_padding(*padding);
  if (pre) a.set_pre_padding(*pre);
  if (post) a.set_post_padding(*post);
  if (stride) a.set_stride(*stride);
  if (dilation) a.set_dilation(*dilation);
  return a;
}

// Epsilon as the cuDNN frontend takes it (a pass-by-value tensor) or as a number.
template <class A>
void set_epsilon(A& attr, nb::handle eps) {
  if (nb::isinstance<TensorAttr>(eps)) attr.set_epsilon(nb::cast<TensorPtr>(eps));
  else if (!eps.is_none()) attr.set_epsilon(nb::cast<double>(eps));
}

#define DG_CONV_ARGS                                                                                         \
  nb::arg("padding").none() = nb::none(), nb::arg("stride").none() = nb::none(),                             \
      nb::arg("dilation").none() = nb::none(), nb::arg("compute_data_type").none() = nb::none(),             \
      nb::arg("name") = "", nb::arg("pre_padding").none() = nb::none(), nb::arg("post_padding").none() = nb::none()

// One convolution method: its two tensor keywords in the frontend's order, and the Graph method
// they go to (conv_wgrad takes (image, loss) in Python and (DY, X) in C++: `swap`).
template <class A>
void def_conv(nb::class_<PyGraph>& c, const char* name, const char* first, const char* second,
              TensorPtr (Graph::*op)(TensorPtr, TensorPtr, A), bool swap, const char* doc) {
  c.def(name,
        [op, swap](PyGraph& g, TensorPtr x, TensorPtr y, OptDims pad, OptDims stride, OptDims dil, nb::handle ct,
                   std::string node_name, OptDims pre, OptDims post) {
          auto a = conv_attr<A>(pad, stride, dil, pre, post, ct, std::move(node_name));
          if (swap) std::swap(x, y);
          return g.produced((g.graph.*op)(std::move(x), std::move(y), std::move(a)));
        },
        nb::arg(first), nb::arg(second), DG_CONV_ARGS, doc);
}

// The arguments every convolution shares, and what it returns and raises: one text for the three.
#define DG_CONV_DOC_TAIL \
  "    padding: symmetric padding per spatial dim (or pre_padding and post_padding).\n" \
  "    stride, dilation: per spatial dim (1 when None).\n" \
  "    compute_data_type: the op's compute type (None: the graph's).\n" \
  "    name: the node's name (\"\": \"<op>.<n>\").\n" \
  "    pre_padding, post_padding: padding before and after, per spatial dim.\n" \
  "\n" \
  "Returns:\n" \
  "    The output tensor (virtual until set_output(True)).\n" \
  "\n" \
  "Raises:\n" \
  "    TypeError: an argument has the wrong type. Shape and type errors are raised by validate()\n" \
  "        as ValueError naming the node."

void bind_conv(nb::class_<PyGraph>& c) {
  def_conv<ConvFpropAttr>(c, "conv_fprop", "image", "weight", &Graph::conv_fprop, false,
        "Y = conv(X, W), a forward convolution: dims N, C, spatial...; strides pick the layout (NCHW, "
        "NHWC).\n"
        "\n"
        "Args:\n"
        "    image: X, [N, C, H, W] (or 1-D/3-D spatial).\n"
        "    weight: W, [K, C / groups, R, S].\n"
        DG_CONV_DOC_TAIL);
  def_conv<ConvDgradAttr>(c, "conv_dgrad", "loss", "filter", &Graph::conv_dgrad, false,
        "DX from DY and W (the data gradient: a transposed convolution). DX's dims are inferred, or set "
        "them on the result to pick among the sizes a strided conv maps onto DY's.\n"
        "\n"
        "Args:\n"
        "    loss: DY, [N, K, P, Q].\n"
        "    filter: W, [K, C, R, S].\n"
        DG_CONV_DOC_TAIL);
  def_conv<ConvWgradAttr>(c, "conv_wgrad", "image", "loss", &Graph::conv_wgrad, true,
        "DW from X and DY (the weight gradient); DW's dims are inferred unless set on the result.\n"
        "\n"
        "Args:\n"
        "    image: X, [N, C, H, W].\n"
        "    loss: DY, [N, K, P, Q].\n"
        DG_CONV_DOC_TAIL);
}
#undef DG_CONV_ARGS
#undef DG_CONV_DOC_TAIL

void bind_matmul_reduction(nb::class_<PyGraph>& c) {
  c.def("matmul",
        [](PyGraph& g, TensorPtr a, TensorPtr b, nb::handle ct, double padding, std::string name) {
          if (padding != 0.0)
            fail(ErrorCode::INVALID_VALUE, "matmul: padding values other than 0 are not supported");
          return g.produced(g.graph.matmul(std::move(a), std::move(b), named(MatmulAttr(), ct, std::move(name))));
        },
        nb::arg("A"), nb::arg("B"), nb::arg("compute_data_type").none() = nb::none(), nb::arg("padding") = 0.0,
        nb::arg("name") = "",
        "C[..., M, N] = A[..., M, K] @ B[..., K, N]; batch dims broadcast.\n"
        "\n"
        "Args:\n"
        "    A, B: the operand tensors.\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "    padding: the cuDNN frontend's padding value; only 0 is supported.\n"
        "\n"
        "Returns:\n"
        "    C, the output tensor.\n"
        "\n"
        "Raises:\n"
        "    ValueError: `padding` is not 0 (shape errors come from validate(), naming the node).");
  c.def("reduction",
        [](PyGraph& g, TensorPtr x, ReductionMode mode, nb::handle ct, std::string name) {
          auto a = named(ReductionAttr(), ct, std::move(name)).set_mode(mode);
          return g.produced(g.graph.reduction(std::move(x), a));
        },
        nb::arg("input"), nb::arg("mode"), nb::arg("compute_data_type").none() = nb::none(), nb::arg("name") = "",
        "Reduce the axes where the output's dims are 1 (all of them unless the output's dims are set).\n"
        "\n"
        "Args:\n"
        "    input: the tensor to reduce.\n"
        "    mode: a dnngraph.reduction_mode (ADD, MUL, MIN, MAX, AMAX, AVG, NORM1, NORM2).\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "\n"
        "Returns:\n"
        "    The output tensor; set its dims (set_dim) to keep axes.\n"
        "\n"
        "Raises:\n"
        "    TypeError: an argument has the wrong type. Shape and type errors are raised by validate()\n"
        "        as ValueError naming the node.");
  c.def("genstats",
        [](PyGraph& g, TensorPtr x, nb::handle ct, std::string name) {
          auto t = g.graph.genstats(std::move(x), named(GenstatsAttr(), ct, std::move(name)));
          return std::make_tuple(g.produced(t[0]), g.produced(t[1]));
        },
        nb::arg("input"), nb::arg("compute_data_type").none() = nb::none(), nb::arg("name") = "",
        "Per-channel statistics of X [N, C, ...], as the frontend's genstats: the sum and the sum of\n"
        "squares over every dim but dim 1. After a conv_fprop they are fused into the convolution's\n"
        "epilogue where the engine can.\n"
        "\n"
        "Args:\n"
        "    input: X, floating point, rank 2 or more.\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "\n"
        "Returns:\n"
        "    (SUM, SQ_SUM), each [1, C, 1, ...] in X's layout, FLOAT unless set.\n"
        "\n"
        "Raises:\n"
        "    TypeError: an argument has the wrong type. validate() raises ValueError naming the node\n"
        "        for an X without a channel dim or not floating point, or outputs not floating point.");
}

// Norm axes by the scale's shape, as the frontend decides them: it normalizes over the axes where
// the scale's dims are not 1. dnngraph's norm nodes normalize over every dim but the first, so a
// scale that covers only trailing dims (X [B, S, H] with scale [1, 1, H]) is served by folding X's
// leading dims into one: X [B*S, H] through the node, reshaped back to [B, S, H] (statistics to
// [B, S, 1]). Any other scale goes to the node as it is, whose check names the rule.
struct FoldedNorm {
  TensorPtr x, scale, bias;
  std::vector<int64_t> y_dims, stat_dims;  // empty: not folded
};

// The first normalized axis when folding applies (at least 2), else 0.
size_t folded_axis(const TensorPtr& x, const TensorPtr& scale) {
  if (!x || !scale) return 0;
  const auto& xd = x->get_dim();
  const auto& sd = scale->get_dim();
  if (xd.size() < 3 || sd.size() != xd.size() || sd[0] != 1) return 0;
  size_t k = 1;  // one past the last axis the scale does not span
  for (size_t j = 1; j < sd.size(); ++j)
    if (sd[j] != xd[j]) k = j + 1;
  for (size_t j = 0; j < k; ++j)
    if (sd[j] != 1) return 0;
  return k >= 2 && k < sd.size() ? k : 0;
}

TensorPtr reshaped(PyGraph& g, TensorPtr t, std::vector<int64_t> dims, const std::string& name) {
  if (!t) return t;
  ReshapeAttr a;
  a.set_dim(std::move(dims)).set_name(name);
  return g.graph.reshape(std::move(t), a);
}

FoldedNorm fold_norm(PyGraph& g, TensorPtr x, TensorPtr scale, TensorPtr bias, const std::string& name) {
  const size_t k = folded_axis(x, scale);
  if (!k) return {std::move(x), std::move(scale), std::move(bias), {}, {}};
  const auto& xd = x->get_dim();
  int64_t rows = 1;
  for (size_t j = 0; j < k; ++j)
    if (!checked::mul(rows, xd[j], rows)) fail(ErrorCode::INVALID_VALUE, "'" + name + "': X's dims overflow int64");
  std::vector<int64_t> x2{rows}, p2{1};
  x2.insert(x2.end(), xd.begin() + static_cast<std::ptrdiff_t>(k), xd.end());
  p2.insert(p2.end(), xd.begin() + static_cast<std::ptrdiff_t>(k), xd.end());
  FoldedNorm f{reshaped(g, x, x2, name + "::fold_X"), reshaped(g, scale, p2, name + "::fold_SCALE"),
               reshaped(g, bias, p2, name + "::fold_BIAS"), xd, xd};
  for (size_t j = k; j < f.stat_dims.size(); ++j) f.stat_dims[j] = 1;
  return f;
}

// A norm output, reshaped back when the norm was folded; the user's tensor keeps the node's output
// name ("ln::Y"), and the folded one inside is "ln::Y:folded".
TensorPtr unfolded(PyGraph& g, const FoldedNorm& f, TensorPtr t, bool stat, const std::string& name) {
  if (f.y_dims.empty() || !t) return g.produced(std::move(t));
  const std::string user_name = t->get_name();
  t->set_name(user_name + ":folded");
  TensorPtr out = reshaped(g, std::move(t), stat ? f.stat_dims : f.y_dims, name);
  out->set_name(user_name);
  return g.produced(out);
}

void bind_norms(nb::class_<PyGraph>& c) {
  c.def("batchnorm_inference",
        [](PyGraph& g, TensorPtr x, TensorPtr mean, TensorPtr inv_var, TensorPtr scale, TensorPtr bias, nb::handle ct,
           std::string name) {
          return g.produced(g.graph.batchnorm_inference(std::move(x), std::move(mean), std::move(inv_var),
                                                        std::move(scale), std::move(bias),
                                                        named(BatchnormInferenceAttr(), ct, std::move(name))));
        },
        nb::arg("input"), nb::arg("mean"), nb::arg("inv_variance"), nb::arg("scale"), nb::arg("bias"),
        nb::arg("compute_data_type").none() = nb::none(), nb::arg("name") = "",
        "Y = (X - mean) * inv_variance * scale + bias, per channel (dim 1).\n"
        "\n"
        "Args:\n"
        "    input: X, [N, C, ...].\n"
        "    mean, inv_variance, scale, bias: [1, C, 1, ...] tensors.\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "\n"
        "Returns:\n"
        "    Y, the output tensor.\n"
        "\n"
        "Raises:\n"
        "    TypeError: an argument has the wrong type. Shape and type errors are raised by validate()\n"
        "        as ValueError naming the node.");
  c.def("layernorm",
        [](PyGraph& g, NormFwdPhase phase, TensorPtr x, TensorPtr scale, TensorPtr bias, nb::handle eps,
           nb::handle ct, std::string name) {
          const std::string n = name;
          auto a = named(LayernormAttr(), ct, std::move(name)).set_forward_phase(phase);
          set_epsilon(a, eps);
          FoldedNorm f = fold_norm(g, std::move(x), std::move(scale), std::move(bias), n);
          auto [y, mean, inv_var] = g.graph.layernorm(f.x, f.scale, f.bias, a);
          TensorPtr y_out = unfolded(g, f, y, false, n + "::unfold_Y");
          if (phase == NormFwdPhase::INFERENCE) return Triple{y_out, nullptr, nullptr};
          return Triple{y_out, unfolded(g, f, mean, true, n + "::unfold_MEAN"),
                        unfolded(g, f, inv_var, true, n + "::unfold_INV_VARIANCE")};
        },
        nb::arg("norm_forward_phase"), nb::arg("input"), nb::arg("scale").none() = nb::none(),
        nb::arg("bias").none() = nb::none(), nb::arg("epsilon").none() = nb::none(),
        nb::arg("compute_data_type").none() = nb::none(), nb::arg("name") = "",
        "(Y, mean, inv_variance): layer normalization over the axes where the scale's dims are not 1\n"
        "(every dim but the first, or trailing ones); mean and inv_variance are None in the INFERENCE "
        "phase.\n"
        "\n"
        "Args:\n"
        "    norm_forward_phase: a dnngraph.norm_forward_phase (TRAINING or INFERENCE).\n"
        "    input: X.\n"
        "    scale, bias: tensors shaped like X with 1 on the axes not normalized.\n"
        "    epsilon: a pass-by-value tensor or a number.\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "\n"
        "Raises:\n"
        "    ValueError: X's dims overflow int64 when folded. Other shape and type errors are raised by\n"
        "        validate() as ValueError naming the node.");
  c.def("rmsnorm",
        [](PyGraph& g, NormFwdPhase phase, TensorPtr x, TensorPtr scale, TensorPtr bias, nb::handle eps,
           nb::handle ct, std::string name) {
          const std::string n = name;
          auto a = named(RmsnormAttr(), ct, std::move(name)).set_forward_phase(phase);
          set_epsilon(a, eps);
          FoldedNorm f = fold_norm(g, std::move(x), std::move(scale), std::move(bias), n);
          if (f.bias) a.set_bias(f.bias);
          auto [y, inv_rms] = g.graph.rmsnorm(f.x, f.scale, a);
          TensorPtr y_out = unfolded(g, f, y, false, n + "::unfold_Y");
          if (phase == NormFwdPhase::INFERENCE) return Pair{y_out, nullptr};
          return Pair{y_out, unfolded(g, f, inv_rms, true, n + "::unfold_INV_VARIANCE")};
        },
        nb::arg("norm_forward_phase"), nb::arg("input"), nb::arg("scale").none() = nb::none(),
        nb::arg("bias").none() = nb::none(), nb::arg("epsilon").none() = nb::none(),
        nb::arg("compute_data_type").none() = nb::none(), nb::arg("name") = "",
        "(Y, inv_variance): RMS normalization over the axes where the scale's dims are not 1;\n"
        "inv_variance is None in the INFERENCE phase.\n"
        "\n"
        "Args:\n"
        "    norm_forward_phase: a dnngraph.norm_forward_phase (TRAINING or INFERENCE).\n"
        "    input: X.\n"
        "    scale: a tensor shaped like X with 1 on the axes not normalized.\n"
        "    bias: an optional tensor shaped like scale.\n"
        "    epsilon: a pass-by-value tensor or a number.\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "\n"
        "Raises:\n"
        "    ValueError: X's dims overflow int64 when folded. Other shape and type errors are raised by\n"
        "        validate() as ValueError naming the node.");
}

void bind_resample(nb::class_<PyGraph>& c) {
  c.def("resample",
        [](PyGraph& g, TensorPtr x, ResampleMode mode, nb::handle padding_mode, OptDims pre, OptDims post,
           OptDims stride, OptDims window, std::optional<std::vector<double>> scale, OptDims padding,
           bool generate_index, nb::handle ct, std::string name) {
          if (generate_index) fail(ErrorCode::INVALID_VALUE, "resample: generate_index is not supported");
          if (!padding_mode.is_none()) {
            // dnngraph pads max pooling with -inf and average pooling with zeros; other paddings are not offered.
            const std::string pm = nb::cast<std::string>(nb::str(padding_mode));
            const bool max_pool = mode == ResampleMode::MAXPOOL;
            const bool ok = max_pool ? pm.find("NEG_INF_PAD") != std::string::npos
                                     : pm.find("ZERO_PAD") != std::string::npos;
            if (!ok) fail(ErrorCode::INVALID_VALUE, "resample: padding_mode " + pm + " is not supported for " +
                                                        std::string(to_string(mode)) + " (max pooling pads with "
                                                        "NEG_INF_PAD, the others with ZERO_PAD)");
          }
          auto a = named(ResampleAttr(), ct, std::move(name)).set_resampling_mode(mode);
          if (padding) a.set_padding(*padding);
          if (pre) a.set_pre_padding(*pre);
          if (post) a.set_post_padding(*post);
          if (stride) a.set_stride(*stride);
          if (window) a.set_window(*window);
          if (scale) a.set_scale(*scale);
          return Pair{g.produced(g.graph.resample(std::move(x), a)), nullptr};
        },
        nb::arg("input"), nb::arg("resampling_mode"), nb::arg("padding_mode").none() = nb::none(),
        nb::arg("pre_padding").none() = nb::none(), nb::arg("post_padding").none() = nb::none(),
        nb::arg("stride").none() = nb::none(), nb::arg("window").none() = nb::none(),
        nb::arg("scale").none() = nb::none(), nb::arg("padding").none() = nb::none(),
        nb::arg("generate_index") = false, nb::arg("compute_data_type").none() = nb::none(), nb::arg("name") = "",
        "(Y, None): pooling (MAXPOOL, AVGPOOL*: window, stride, padding) or resizing (NEAREST,\n"
        "BILINEAR: Y's dims or `scale`). The second item mirrors cuDNN's index output, which dnngraph "
        "does\n"
        "not produce.\n"
        "\n"
        "Args:\n"
        "    input: X, [N, C, spatial...].\n"
        "    resampling_mode: a dnngraph.resample_mode.\n"
        "    padding_mode: padding_mode.NEG_INF_PAD (max pooling) or ZERO_PAD (the others), or None.\n"
        "    pre_padding, post_padding, padding: per spatial dim.\n"
        "    stride, window: per spatial dim.\n"
        "    scale: resize factors per spatial dim.\n"
        "    generate_index: must be False.\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "\n"
        "Raises:\n"
        "    ValueError: generate_index is True, or padding_mode is one dnngraph does not pad with.");
}

std::pair<int64_t, int64_t> slice_bounds(nb::handle s, const TensorPtr& x, size_t axis) {
  if (PySlice_Check(s.ptr())) {
    Py_ssize_t start = 0, stop = 0, step = 1;
    if (PySlice_Unpack(s.ptr(), &start, &stop, &step) < 0) throw nb::python_error();
    if (step != 1) fail(ErrorCode::INVALID_VALUE, "slice: steps other than 1 are not supported");
    if (axis < x->get_dim().size()) {
      PySlice_AdjustIndices(static_cast<Py_ssize_t>(x->get_dim()[axis]), &start, &stop, step);
    } else if (start < 0 || stop < 0 || stop == PY_SSIZE_T_MAX) {
      fail(ErrorCode::INVALID_VALUE, "slice: the input's dims are not known yet, so slices need explicit "
                                     "non-negative start and stop");
    }
    return {start, stop};
  }
  auto pair = nb::cast<std::tuple<int64_t, int64_t>>(s);
  return {std::get<0>(pair), std::get<1>(pair)};
}

void bind_layout(nb::class_<PyGraph>& c) {
  c.def("reshape",
        [](PyGraph& g, TensorPtr x, std::string name, OptDims dim) {
          ReshapeAttr a;
          a.set_name(std::move(name));
          if (dim) a.set_dim(*dim);
          return g.produced(g.graph.reshape(std::move(x), a));
        },
        nb::arg("input"), nb::arg("name") = "", nb::arg("dim").none() = nb::none(),
        "Same elements in row-major order with new dims (from `dim`, or the output's dims).\n"
        "\n"
        "Args:\n"
        "    input: the tensor to reshape.\n"
        "    name: the node's name.\n"
        "    dim: the new dims (None: set them on the output).\n"
        "\n"
        "Returns:\n"
        "    The output tensor.\n"
        "\n"
        "Raises:\n"
        "    TypeError: an argument has the wrong type. Shape and type errors are raised by validate()\n"
        "        as ValueError naming the node.");
  c.def("transpose",
        [](PyGraph& g, TensorPtr x, std::vector<int64_t> perm, nb::handle ct, std::string name) {
          auto a = named(TransposeAttr(), ct, std::move(name)).set_permutation(std::move(perm));
          return g.produced(g.graph.transpose(std::move(x), a));
        },
        nb::arg("input"), nb::arg("permutation"), nb::arg("compute_data_type").none() = nb::none(),
        nb::arg("name") = "",
        "Y.dim[i] = X.dim[permutation[i]].\n"
        "\n"
        "Args:\n"
        "    input: X.\n"
        "    permutation: a permutation of range(len(X.dim)).\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "\n"
        "Returns:\n"
        "    Y, the output tensor.\n"
        "\n"
        "Raises:\n"
        "    TypeError: an argument has the wrong type. Shape and type errors are raised by validate()\n"
        "        as ValueError naming the node.");
  c.def("slice",
        [](PyGraph& g, TensorPtr x, nb::list slices, nb::handle ct, std::string name) {
          std::vector<std::pair<int64_t, int64_t>> bounds;
          for (size_t i = 0; i < slices.size(); ++i) bounds.push_back(slice_bounds(slices[i], x, i));
          auto a = named(SliceAttr(), ct, std::move(name)).set_slices(std::move(bounds));
          return g.produced(g.graph.slice(std::move(x), a));
        },
        nb::arg("input"), nb::arg("slices"), nb::arg("compute_data_type").none() = nb::none(), nb::arg("name") = "",
        "A slice of the input: Python slices (or (start, stop) pairs), one per leading dim; dims left\n"
        "out are taken whole.\n"
        "\n"
        "Args:\n"
        "    input: X.\n"
        "    slices: a list of slice objects or (start, stop) pairs.\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "\n"
        "Raises:\n"
        "    ValueError: a step other than 1, or a negative or open bound while X's dims are not known.");
  c.def("concatenate",
        [](PyGraph& g, std::vector<TensorPtr> xs, int64_t axis, std::optional<int64_t> in_place, std::string name) {
          if (in_place) fail(ErrorCode::INVALID_VALUE, "concatenate: in_place_index is not supported");
          ConcatenateAttr a;
          a.set_axis(axis).set_name(std::move(name));
          return g.produced(g.graph.concatenate(std::move(xs), a));
        },
        nb::arg("inputs"), nb::arg("axis"), nb::arg("in_place_index").none() = nb::none(), nb::arg("name") = "",
        "The inputs joined along `axis`.\n"
        "\n"
        "Args:\n"
        "    inputs: a list of tensors, equal in every dim but `axis`.\n"
        "    axis: the axis to join along.\n"
        "    in_place_index: the cuDNN frontend's in-place option; must be None.\n"
        "    name: the node's name.\n"
        "\n"
        "Raises:\n"
        "    ValueError: in_place_index is given. Shape errors are raised by validate() naming the node.");
}

}  // namespace

void bind_pygraph_ops(nb::class_<PyGraph>& c) {
  bind_conv(c);
  bind_matmul_reduction(c);
  bind_norms(c);
  bind_resample(c);
  bind_pygraph_sdpa(c);
  bind_layout(c);
}

}  // namespace dnngraph::python
