// pygraph's pointwise operations, one method per mode with the cuDNN frontend's names and
// keywords, plus the generic pointwise(mode, input0, input1, input2).

#include "pygraph.hpp"

namespace dnngraph::python {
namespace {

using M = PointwiseMode;
using Opt = std::optional<double>;

PointwiseAttr attr(M mode, nb::handle compute, std::string name) {
  PointwiseAttr a;
  a.set_mode(mode).set_compute_data_type(optional_data_type(compute)).set_name(std::move(name));
  return a;
}

void set_relu(PointwiseAttr& a, Opt negative_slope, Opt lower_clip, Opt upper_clip) {
  if (negative_slope) a.set_relu_lower_clip_slope(*negative_slope);
  if (lower_clip) a.set_relu_lower_clip(*lower_clip);
  if (upper_clip) a.set_relu_upper_clip(*upper_clip);
}

// The helper methods pointwise_modes.def names; parameterized modes are bound by hand below.
struct Helper {
  M mode;
  int inputs;
  const char* name;
  const char* keywords[2];
};
constexpr Helper kHelpers[] = {
#define DG_POINTWISE_MODE(mode, inputs, kind, python, kw0, kw1) {M::mode, inputs, python, {kw0, kw1}},
#include "dnngraph/pointwise_modes.def"
#undef DG_POINTWISE_MODE
};

// Other names the cuDNN frontend gives two of the binary modes.
constexpr Helper kAliases[] = {
    {M::ADD, 2, "bias", {"input", "bias"}},
    {M::MUL, 2, "scale", {"input", "scale"}},
};

// The docstring of a helper bound from the table: what it computes, by its mode's kind.
std::string helper_summary(const Helper& h) {
  const std::string mode = std::string(to_string(h.mode)), a = h.keywords[0], b = h.keywords[1];
  switch (kind_of(h.mode)) {
    case PointwiseKind::ACTIVATION_BACKWARD:
      return "The gradient of an activation: " + a + " (DY) times its derivative at " + b + " (X)";
    case PointwiseKind::COMPARISON:
      return "A BOOLEAN tensor: " + a + " compared with " + b + " elementwise (dims of 1 broadcast)";
    case PointwiseKind::LOGICAL:
      return h.inputs == 1 ? "Logical not of " + a + ", elementwise (a BOOLEAN result)"
                           : "Logical " + mode + " of " + a + " and " + b + ", elementwise (a BOOLEAN result)";
    default:
      return h.inputs == 1 ? "Elementwise " + mode + " of " + a
                           : "Elementwise " + mode + " of " + a + " and " + b + " (dims of 1 broadcast)";
  }
}

constexpr const char* kCommonArgs =
    "    compute_data_type: the op's compute type (None: the graph's).\n"
    "    name: the node's name (\"\": \"<op>.<n>\").\n";
constexpr const char* kDeferredErrors =
    "\nReturns:\n    The output tensor (virtual until set_output(True)).\n\n"
    "Raises:\n    TypeError: an argument has the wrong type. Shape and type errors are raised by validate()\n"
    "        as ValueError naming the node.";

std::string helper_doc(const Helper& h) {
  std::string doc = helper_summary(h) + " (pointwise_mode." + std::string(to_string(h.mode)) + ").\n\nArgs:\n";
  for (int i = 0; i < h.inputs; ++i) doc += "    " + std::string(h.keywords[i]) + ": a tensor.\n";
  return doc + kCommonArgs + kDeferredErrors;
}

void bind_helper(nb::class_<PyGraph>& c, const Helper& h) {
  const M mode = h.mode;
  if (h.inputs == 1) {
    c.def(h.name,
          [mode](PyGraph& g, TensorPtr x, nb::handle ct, std::string name) {
            return g.produced(g.graph.pointwise(std::move(x), attr(mode, ct, std::move(name))));
          },
          nb::arg(h.keywords[0]), nb::arg("compute_data_type").none() = nb::none(), nb::arg("name") = "",
          helper_doc(h).c_str());
  } else {
    c.def(h.name,
          [mode](PyGraph& g, TensorPtr x, TensorPtr y, nb::handle ct, std::string name) {
            return g.produced(g.graph.pointwise(std::move(x), std::move(y), attr(mode, ct, std::move(name))));
          },
          nb::arg(h.keywords[0]), nb::arg(h.keywords[1]), nb::arg("compute_data_type").none() = nb::none(),
          nb::arg("name") = "", helper_doc(h).c_str());
  }
}

void bind_tables(nb::class_<PyGraph>& c) {
  for (const Helper& h : kHelpers)
    if (*h.name) bind_helper(c, h);
  for (const Helper& h : kAliases) bind_helper(c, h);
}

// The activations with one parameter, forward (input) and backward (loss, input): its keyword, and
// the attribute setter it goes to when given.
struct OneParameter {
  const char* name;
  M mode;
  const char* keyword;
  PointwiseAttr& (PointwiseAttr::*set)(double);
};
constexpr OneParameter kOneParameter[] = {
    {"elu", M::ELU_FWD, "alpha", &PointwiseAttr::set_elu_alpha},
    {"elu_backward", M::ELU_BWD, "alpha", &PointwiseAttr::set_elu_alpha},
    {"softplus", M::SOFTPLUS_FWD, "beta", &PointwiseAttr::set_softplus_beta},
    {"softplus_backward", M::SOFTPLUS_BWD, "beta", &PointwiseAttr::set_softplus_beta},
    {"swish", M::SWISH_FWD, "swish_beta", &PointwiseAttr::set_swish_beta},
    {"swish_backward", M::SWISH_BWD, "swish_beta", &PointwiseAttr::set_swish_beta},
};

std::string one_parameter_doc(const OneParameter& p) {
  const bool backward = kind_of(p.mode) == PointwiseKind::ACTIVATION_BACKWARD;
  std::string doc = backward ? "The gradient of an activation: loss (DY) times its derivative at input (X)"
                             : "Elementwise activation of input";
  doc += " (pointwise_mode." + std::string(to_string(p.mode)) + ").\n\nArgs:\n";
  doc += backward ? "    loss: DY, a tensor.\n    input: X, a tensor.\n" : "    input: a tensor.\n";
  doc += "    " + std::string(p.keyword) + ": the activation's parameter (None: its default).\n";
  return doc + kCommonArgs + kDeferredErrors;
}

void bind_one_parameter(nb::class_<PyGraph>& c, const OneParameter& p) {
  const M mode = p.mode;
  const auto set = p.set;
  const std::string doc = one_parameter_doc(p);
  if (kind_of(mode) == PointwiseKind::ACTIVATION_BACKWARD) {
    c.def(p.name,
          [mode, set](PyGraph& g, TensorPtr dy, TensorPtr x, Opt v, nb::handle ct, std::string name) {
            auto a = attr(mode, ct, std::move(name));
            if (v) (a.*set)(*v);
            return g.produced(g.graph.pointwise(std::move(dy), std::move(x), a));
          },
          nb::arg("loss"), nb::arg("input"), nb::arg(p.keyword).none() = nb::none(),
          nb::arg("compute_data_type").none() = nb::none(), nb::arg("name") = "", doc.c_str());
  } else {
    c.def(p.name,
          [mode, set](PyGraph& g, TensorPtr x, Opt v, nb::handle ct, std::string name) {
            auto a = attr(mode, ct, std::move(name));
            if (v) (a.*set)(*v);
            return g.produced(g.graph.pointwise(std::move(x), a));
          },
          nb::arg("input"), nb::arg(p.keyword).none() = nb::none(), nb::arg("compute_data_type").none() = nb::none(),
          nb::arg("name") = "", doc.c_str());
  }
}

void bind_parameterized(nb::class_<PyGraph>& c) {
  for (const OneParameter& p : kOneParameter) bind_one_parameter(c, p);
  c.def("relu",
        [](PyGraph& g, TensorPtr x, Opt slope, Opt lower, Opt upper, nb::handle ct, std::string name) {
          auto a = attr(M::RELU_FWD, ct, std::move(name));
          set_relu(a, slope, lower, upper);
          return g.produced(g.graph.pointwise(std::move(x), a));
        },
        nb::arg("input"), nb::arg("negative_slope").none() = nb::none(), nb::arg("lower_clip").none() = nb::none(),
        nb::arg("upper_clip").none() = nb::none(), nb::arg("compute_data_type").none() = nb::none(),
        nb::arg("name") = "",
        "ReLU of input, elementwise, optionally leaky and clipped (pointwise_mode.RELU_FWD).\n"
        "\n"
        "Args:\n"
        "    input: a tensor.\n"
        "    negative_slope: the slope below lower_clip (None: 0).\n"
        "    lower_clip, upper_clip: clip bounds (None: 0 and unbounded).\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "\n"
        "Returns:\n"
        "    The output tensor (virtual until set_output(True)).\n"
        "\n"
        "Raises:\n"
        "    TypeError: an argument has the wrong type. Shape and type errors are raised by validate()\n"
        "        as ValueError naming the node.");
  c.def("leaky_relu",
        [](PyGraph& g, TensorPtr x, double slope, nb::handle ct, std::string name) {
          auto a = attr(M::RELU_FWD, ct, std::move(name));
          a.set_relu_lower_clip_slope(slope);
          return g.produced(g.graph.pointwise(std::move(x), a));
        },
        nb::arg("input"), nb::arg("negative_slope"), nb::arg("compute_data_type").none() = nb::none(),
        nb::arg("name") = "",
        "Leaky ReLU of input: x for x > 0, negative_slope * x otherwise (pointwise_mode.RELU_FWD).\n"
        "\n"
        "Args:\n"
        "    input: a tensor.\n"
        "    negative_slope: the slope below 0.\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "\n"
        "Returns:\n"
        "    The output tensor (virtual until set_output(True)).\n"
        "\n"
        "Raises:\n"
        "    TypeError: an argument has the wrong type. Shape and type errors are raised by validate()\n"
        "        as ValueError naming the node.");
  c.def("relu_backward",
        [](PyGraph& g, TensorPtr dy, TensorPtr x, Opt slope, Opt lower, Opt upper, nb::handle ct, std::string name) {
          auto a = attr(M::RELU_BWD, ct, std::move(name));
          set_relu(a, slope, lower, upper);
          return g.produced(g.graph.pointwise(std::move(dy), std::move(x), a));
        },
        nb::arg("loss"), nb::arg("input"), nb::arg("negative_slope").none() = nb::none(),
        nb::arg("lower_clip").none() = nb::none(), nb::arg("upper_clip").none() = nb::none(),
        nb::arg("compute_data_type").none() = nb::none(), nb::arg("name") = "",
        "The ReLU gradient: loss (DY) where input (X) is in the active range, scaled by the slope "
        "elsewhere\n"
        "(pointwise_mode.RELU_BWD).\n"
        "\n"
        "Args:\n"
        "    loss: DY, a tensor.\n"
        "    input: X, a tensor.\n"
        "    negative_slope: the slope below lower_clip (None: 0).\n"
        "    lower_clip, upper_clip: clip bounds (None: 0 and unbounded).\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "\n"
        "Returns:\n"
        "    The output tensor (virtual until set_output(True)).\n"
        "\n"
        "Raises:\n"
        "    TypeError: an argument has the wrong type. Shape and type errors are raised by validate()\n"
        "        as ValueError naming the node.");
  c.def("leaky_relu_backward",
        [](PyGraph& g, TensorPtr dy, TensorPtr x, double slope, nb::handle ct, std::string name) {
          auto a = attr(M::RELU_BWD, ct, std::move(name));
          a.set_relu_lower_clip_slope(slope);
          return g.produced(g.graph.pointwise(std::move(dy), std::move(x), a));
        },
        nb::arg("loss"), nb::arg("input"), nb::arg("negative_slope"), nb::arg("compute_data_type").none() = nb::none(),
        nb::arg("name") = "",
        "The leaky ReLU gradient (pointwise_mode.RELU_BWD).\n"
        "\n"
        "Args:\n"
        "    loss: DY, a tensor.\n"
        "    input: X, a tensor.\n"
        "    negative_slope: the slope below 0.\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "\n"
        "Returns:\n"
        "    The output tensor (virtual until set_output(True)).\n"
        "\n"
        "Raises:\n"
        "    TypeError: an argument has the wrong type. Shape and type errors are raised by validate()\n"
        "        as ValueError naming the node.");
  c.def("gen_index",
        [](PyGraph& g, TensorPtr x, int64_t axis, nb::handle ct, std::string name) {
          auto a = attr(M::GEN_INDEX, ct, std::move(name));
          a.set_axis(axis);
          return g.produced(g.graph.pointwise(std::move(x), a));
        },
        nb::arg("input"), nb::arg("axis"), nb::arg("compute_data_type").none() = nb::none(), nb::arg("name") = "",
        "Each element's index along `axis`, shaped like input (pointwise_mode.GEN_INDEX).\n"
        "\n"
        "Args:\n"
        "    input: a tensor (its dims are the output's).\n"
        "    axis: 0 .. rank - 1 (checked by validate()).\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "\n"
        "Returns:\n"
        "    The output tensor (virtual until set_output(True)).\n"
        "\n"
        "Raises:\n"
        "    TypeError: an argument has the wrong type. Shape and type errors are raised by validate()\n"
        "        as ValueError naming the node.");
  c.def("binary_select",
        [](PyGraph& g, TensorPtr x0, TensorPtr x1, TensorPtr mask, nb::handle ct, std::string name) {
          return g.produced(g.graph.pointwise(std::move(x0), std::move(x1), std::move(mask),
                                              attr(M::BINARY_SELECT, ct, std::move(name))));
        },
        nb::arg("input0"), nb::arg("input1"), nb::arg("mask"), nb::arg("compute_data_type").none() = nb::none(),
        nb::arg("name") = "",
        "mask ? input0 : input1, elementwise (pointwise_mode.BINARY_SELECT).\n"
        "\n"
        "Args:\n"
        "    input0, input1: the tensors to choose from.\n"
        "    mask: a BOOLEAN tensor.\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "\n"
        "Returns:\n"
        "    The output tensor (virtual until set_output(True)).\n"
        "\n"
        "Raises:\n"
        "    TypeError: an argument has the wrong type. Shape and type errors are raised by validate()\n"
        "        as ValueError naming the node.");
}

void bind_generic(nb::class_<PyGraph>& c) {
  c.def("pointwise",
        [](PyGraph& g, M mode, TensorPtr x0, TensorPtr x1, TensorPtr x2, nb::handle ct, std::string name) {
          auto a = attr(mode, ct, std::move(name));
          const int given = 1 + (x1 ? 1 : 0) + (x2 ? 1 : 0);
          if (x2 && !x1) fail(ErrorCode::INVALID_VALUE, "pointwise: input2 given without input1");
          if (given != arity(mode))
            fail(ErrorCode::INVALID_VALUE, "pointwise: mode " + std::string(to_string(mode)) + " takes " +
                                               std::to_string(arity(mode)) + " inputs, got " + std::to_string(given));
          if (x2) return g.produced(g.graph.pointwise(std::move(x0), std::move(x1), std::move(x2), a));
          if (x1) return g.produced(g.graph.pointwise(std::move(x0), std::move(x1), a));
          return g.produced(g.graph.pointwise(std::move(x0), a));
        },
        nb::arg("mode"), nb::arg("input0"), nb::arg("input1").none() = nb::none(),
        nb::arg("input2").none() = nb::none(), nb::arg("compute_data_type").none() = nb::none(),
        nb::arg("name") = "",
        "Any pointwise mode by dnngraph.pointwise_mode, with 1, 2 or 3 inputs.\n"
        "\n"
        "Args:\n"
        "    mode: a dnngraph.pointwise_mode.\n"
        "    input0, input1, input2: the mode's inputs, in order (the unused ones None).\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "\n"
        "Returns:\n"
        "    The output tensor (virtual until set_output(True)).\n"
        "\n"
        "Raises:\n"
        "    ValueError: the number of inputs is not the mode's, or input2 is given without input1.");
}

}  // namespace

void bind_pygraph_pointwise(nb::class_<PyGraph>& c) {
  bind_tables(c);
  bind_parameterized(c);
  bind_generic(c);
}

}  // namespace dnngraph::python
