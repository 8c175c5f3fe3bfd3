// pygraph's training normalizations, with the cuDNN frontend's names, keywords and return
// shapes: batchnorm (training), instancenorm, adalayernorm, and the backward of layernorm, rmsnorm, batchnorm
// and instancenorm. Outputs an op does not produce in the call's configuration come back as None.

#include "pygraph.hpp"

namespace dnngraph::python {
namespace {

using Triple = std::tuple<TensorPtr, TensorPtr, TensorPtr>;

template <class A>
A named(A attr, nb::handle compute, std::string name) {
  attr.set_compute_data_type(optional_data_type(compute)).set_name(std::move(name));
  return attr;
}

// A pass-by-value scalar as the frontend takes it (a tensor) or as a number; null when None.
TensorPtr scalar_tensor(nb::handle v, const char* what, const std::string& node) {
  if (v.is_none()) return nullptr;
  if (nb::isinstance<TensorAttr>(v)) return nb::cast<TensorPtr>(v);
  if (!PyFloat_Check(v.ptr()) && !PyLong_Check(v.ptr()))
    fail(ErrorCode::INVALID_VALUE, "'" + node + "': " + what + " must be a pass-by-value tensor or a number, not " +
                                       py_type_name(v));
  auto t = std::make_shared<TensorAttr>();
  t->set_name(what).set_data_type(DataType::FLOAT).set_value(nb::cast<double>(v));
  return t;
}

// Peer statistics (cross-GPU batchnorm) are not offered: a non-empty list is refused by name.
void refuse_peer_stats(const std::vector<TensorPtr>& peer_stats, const std::string& node) {
  if (!peer_stats.empty())
    fail(ErrorCode::INVALID_VALUE, "'" + node + "': peer_stats (statistics exchanged between devices) are not "
                                   "supported; dnngraph's batchnorm reduces over the tensors of one device");
}

Triple produced(PyGraph& g, const std::array<TensorPtr, 3>& t, bool third = true) {
  return {g.produced(t[0]), g.produced(t[1]), third ? g.produced(t[2]) : nullptr};
}

#define DG_NORM_TAIL nb::arg("compute_data_type").none() = nb::none(), nb::arg("name") = ""

// layernorm_backward, batchnorm_backward and instancenorm_backward: one signature.
template <class A>
void def_backward(nb::class_<PyGraph>& c, const char* name,
                  std::array<TensorPtr, 3> (Graph::*op)(TensorPtr, TensorPtr, TensorPtr, TensorPtr, TensorPtr, A),
                  bool peer, const char* doc) {
  auto body = [op](PyGraph& g, TensorPtr dy, TensorPtr x, TensorPtr scale, TensorPtr mean, TensorPtr inv_var,
                   nb::handle ct, std::string node) {
    return produced(g, (g.graph.*op)(std::move(dy), std::move(x), std::move(scale), std::move(mean),
                                     std::move(inv_var), named(A(), ct, std::move(node))));
  };
  if (!peer) {
    c.def(name, body, nb::arg("grad"), nb::arg("input"), nb::arg("scale"), nb::arg("mean").none() = nb::none(),
          nb::arg("inv_variance").none() = nb::none(), DG_NORM_TAIL, doc);
    return;
  }
  c.def(name,
        [body](PyGraph& g, TensorPtr dy, TensorPtr x, TensorPtr scale, TensorPtr mean, TensorPtr inv_var,
               std::vector<TensorPtr> peer_stats, nb::handle ct, std::string node) {
          refuse_peer_stats(peer_stats, node);
          return body(g, std::move(dy), std::move(x), std::move(scale), std::move(mean), std::move(inv_var), ct,
                      std::move(node));
        },
        nb::arg("grad"), nb::arg("input"), nb::arg("scale"), nb::arg("mean"), nb::arg("inv_variance"),
        nb::arg("peer_stats") = std::vector<TensorPtr>(), DG_NORM_TAIL, doc);
}

// instancenorm and adalayernorm: (Y, mean, inv_variance) from X, scale, bias and epsilon; the
// statistics are None in the INFERENCE phase.
template <class A>
void def_phase_forward(nb::class_<PyGraph>& c, const char* name,
                       std::array<TensorPtr, 3> (Graph::*op)(TensorPtr, TensorPtr, TensorPtr, A), const char* doc) {
  c.def(name,
        [op](PyGraph& g, NormFwdPhase phase, TensorPtr x, TensorPtr scale, TensorPtr bias, nb::handle eps,
             nb::handle ct, std::string node) {
          auto a = named(A(), ct, node).set_forward_phase(phase);
          if (TensorPtr e = scalar_tensor(eps, "epsilon", node)) a.set_epsilon(e);
          auto t = (g.graph.*op)(std::move(x), std::move(scale), std::move(bias), a);
          if (phase == NormFwdPhase::INFERENCE) return Triple{g.produced(t[0]), nullptr, nullptr};
          return produced(g, t);
        },
        nb::arg("norm_forward_phase"), nb::arg("input"), nb::arg("scale"), nb::arg("bias"),
        nb::arg("epsilon").none() = nb::none(), DG_NORM_TAIL, doc);
}

void bind_backward(nb::class_<PyGraph>& c) {
  def_backward<LayernormBackwardAttr>(
      c, "layernorm_backward", &Graph::layernorm_backward, false,
      "(DX, dscale, dbias): the gradient of layernorm from grad (DY), input (X), scale and the forward's "
      "saved mean and inv_variance (dims N, 1, ...). Normalizes over every dim but the first. "
      "Raises ValueError at validate when dims disagree (the message names the node, tensor and rule)." "\n\nArgs:\n    grad: DY.\n    input: X as the forward saw it.\n    scale: the forward's scale.\n    mean, inv_variance: the forward's saved statistics." "\n\nArgs (also):\n    compute_data_type: the op's compute type (None: the graph's).\n    name: the node's name.");
  def_backward<BatchnormBackwardAttr>(
      c, "batchnorm_backward", &Graph::batchnorm_backward, true,
      "(DX, dscale, dbias): the gradient of batchnorm per channel; scale, mean and inv_variance are "
      "(1, C, 1, ...). peer_stats must be empty (not supported: ValueError). Raises ValueError at validate "
      "when dims disagree." "\n\nArgs:\n    grad: DY.\n    input: X as the forward saw it.\n    scale: the forward's scale.\n    mean, inv_variance: the forward's saved statistics."
      "\n    peer_stats: must be empty." "\n\nArgs (also):\n    compute_data_type: the op's compute type (None: the graph's).\n    name: the node's name.");
  def_backward<InstancenormBackwardAttr>(
      c, "instancenorm_backward", &Graph::instancenorm_backward, false,
      "(DX, dscale, dbias): the gradient of instancenorm; scale is (1, C, 1, ...), mean and inv_variance "
      "(N, C, 1, ...) (required, though the frontend's signature defaults them to None). Raises ValueError "
      "at validate when they are missing or their dims disagree." "\n\nArgs:\n    grad: DY.\n    input: X as the forward saw it.\n    scale: the forward's scale.\n    mean, inv_variance: the forward's saved statistics." "\n\nArgs (also):\n    compute_data_type: the op's compute type (None: the graph's).\n    name: the node's name.");
  def_backward<AdaLayernormBackwardAttr>(
      c, "adalayernorm_backward", &Graph::adalayernorm_backward, false,
      "(DX, dscale, dbias): the gradient of adalayernorm from grad (DY), input (X), the per-batch scale and "
      "the forward's saved mean and inv_variance; dscale and dbias have the scale's dims. Raises ValueError at "
      "validate when dims disagree." "\n\nArgs:\n    grad: DY.\n    input: X as the forward saw it.\n    scale: "
      "the forward's scale.\n    mean, inv_variance: the forward's saved statistics." "\n\nArgs (also):\n    "
      "compute_data_type: the op's compute type (None: the graph's).\n    name: the node's name.");
  c.def("rmsnorm_backward",
        [](PyGraph& g, TensorPtr dy, TensorPtr x, TensorPtr scale, TensorPtr inv_var, bool has_dbias, nb::handle ct,
           std::string node) {
          auto a = named(RmsnormBackwardAttr(), ct, std::move(node)).set_has_dbias(has_dbias);
          return produced(g, g.graph.rmsnorm_backward(std::move(dy), std::move(x), std::move(scale), std::move(inv_var), a),
                          has_dbias);
        },
        nb::arg("grad"), nb::arg("input"), nb::arg("scale"), nb::arg("inv_variance"), nb::arg("has_dbias"),
        DG_NORM_TAIL,
        "(DX, dscale, dbias): the gradient of rmsnorm from grad, input, scale and the forward's inv_variance "
        "(its inverse RMS, dims N, 1, ...); dbias is None unless has_dbias. Raises ValueError at validate when "
        "dims disagree." "\n\nArgs (also):\n    compute_data_type: the op's compute type (None: the graph's).\n    name: the node's name.");
}

void bind_forward(nb::class_<PyGraph>& c) {
  c.def("batchnorm",
        [](PyGraph& g, TensorPtr x, TensorPtr scale, TensorPtr bias, TensorPtr running_mean, TensorPtr running_var,
           nb::handle eps, nb::handle momentum, std::vector<TensorPtr> peer_stats, nb::handle ct, std::string node) {
          refuse_peer_stats(peer_stats, node);
          auto a = named(BatchnormAttr(), ct, node);
          if (TensorPtr e = scalar_tensor(eps, "epsilon", node)) a.set_epsilon(e);
          TensorPtr m = scalar_tensor(momentum, "momentum", node);
          const bool running = running_mean || running_var || m;
          if (running) a.set_previous_running_stats(std::move(running_mean), std::move(running_var), std::move(m));
          auto t = g.graph.batchnorm(std::move(x), std::move(scale), std::move(bias), a);
          return std::make_tuple(g.produced(t[0]), g.produced(t[1]), g.produced(t[2]),
                                 running ? g.produced(t[3]) : nullptr, running ? g.produced(t[4]) : nullptr);
        },
        nb::arg("input"), nb::arg("scale"), nb::arg("bias"), nb::arg("in_running_mean").none() = nb::none(),
        nb::arg("in_running_var").none() = nb::none(), nb::arg("epsilon").none() = nb::none(),
        nb::arg("momentum").none() = nb::none(), nb::arg("peer_stats") = std::vector<TensorPtr>(), DG_NORM_TAIL,
        "(Y, mean, inv_variance, next_running_mean, next_running_var): batchnorm in training, statistics per "
        "channel (1, C, 1, ...) over every other dim. With in_running_mean, in_running_var and momentum, the "
        "next running statistics are (1 - momentum) * previous + momentum * batch (the variance unbiased); "
        "without them the last two are None. epsilon and momentum: pass-by-value tensors or numbers; the "
        "next statistics may be given the previous ones' arrays (updated in place). peer_stats must be empty. "
        "Raises ValueError at validate when something is missing or dims disagree.\n\nArgs:\n    input: X.\n    "
        "scale, bias: per channel.\n    in_running_mean, in_running_var: the previous running statistics, or None."
        "\n\nArgs (also):\n    compute_data_type: the op's compute type (None: the graph's).\n    name: the node's name.");
  def_phase_forward<InstancenormAttr>(c, "instancenorm", &Graph::instancenorm,
        "(Y, mean, inv_variance): instancenorm of X (N, C, spatial...), statistics per sample and channel "
        "(N, C, 1, ...), scale and bias per channel (1, C, 1, ...). mean and inv_variance are None in the "
        "INFERENCE phase. Raises ValueError at validate when dims disagree.\n\nArgs:\n    norm_forward_phase: "
        "TRAINING or INFERENCE.\n    input: X.\n    scale, bias: per channel.\n    epsilon: a pass-by-value tensor or "
        "a number." "\n\nArgs (also):\n    compute_data_type: the op's compute type (None: the graph's).\n    name: the node's name.");
  def_phase_forward<AdaLayernormAttr>(c, "adalayernorm", &Graph::adalayernorm,
        "(Y, mean, inv_variance): adaptive layernorm: X (B, rows..., D...) normalized over the trailing dims "
        "where the scale is not 1, scale and bias per batch (B or 1, 1, ..., D...); statistics (B, rows..., 1, "
        "...), FLOAT. mean and inv_variance are None in the INFERENCE phase. Built from reductions and pointwise "
        "nodes named \"<name>::...\"; X's and the scale's dims must be set. Raises ValueError at validate when "
        "they disagree.\n\nArgs:\n    norm_forward_phase: TRAINING or INFERENCE.\n    input: X.\n    scale, bias: "
        "per batch.\n    epsilon: a pass-by-value tensor or a number." "\n\nArgs (also):\n    compute_data_type: the "
        "op's compute type (None: the graph's).\n    name: the node's name.");
}
#undef DG_NORM_TAIL

}  // namespace

// Adds the methods to the pygraph class that init_pygraph registered.
void init_pygraph_norm(nb::module_& m) {
  auto c = nb::borrow<nb::class_<PyGraph>>(m.attr("pygraph"));
  bind_backward(c);
  bind_forward(c);
}

}  // namespace dnngraph::python
