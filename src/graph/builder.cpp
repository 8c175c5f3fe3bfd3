// Graph's building methods: each op appends a NodeSpec and returns its (virtual) outputs.
#include "graph/graph_impl.hpp"
#include "graph/op_traits.hpp"

namespace dnngraph {

GraphImpl::GraphImpl() = default;
GraphImpl::~GraphImpl() = default;

void GraphImpl::invalidate() {
  stage = Stage::BUILDING;
  ir.reset();
  tensor_id.clear();
  uid_id.clear();
  lowered_revisions.clear();
  plans.reset();
}

Graph::Graph() : impl_(std::make_unique<GraphImpl>()) {}
Graph::~Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;

Graph& Graph::set_name(std::string name) { impl_->name = std::move(name); return *this; }
Graph& Graph::set_io_data_type(DataType t) { impl_->defaults.io = t; impl_->invalidate(); return *this; }
Graph& Graph::set_intermediate_data_type(DataType t) { impl_->defaults.intermediate = t; impl_->invalidate(); return *this; }
Graph& Graph::set_compute_data_type(DataType t) { impl_->defaults.compute = t; impl_->invalidate(); return *this; }
Graph& Graph::set_dynamic_shape_enabled(bool e) { impl_->dynamic_shapes = e; impl_->invalidate(); return *this; }
Graph& Graph::set_allow_tf32(bool a) { impl_->allow_tf32 = a; impl_->invalidate(); return *this; }
Graph& Graph::set_kernel_cache(std::shared_ptr<KernelCache> c) { impl_->kernel_cache = std::move(c); return *this; }
Graph& Graph::select_engines(std::vector<std::string> names) { impl_->selected_engines = std::move(names); return *this; }
Graph& Graph::deselect_engines(std::vector<std::string> names) { impl_->deselected_engines = std::move(names); return *this; }

TensorPtr Graph::tensor(const TensorAttr& attr) {
  impl_->invalidate();
  auto t = std::make_shared<TensorAttr>(attr);
  if (t->get_name().empty()) t->set_name("tensor_" + std::to_string(impl_->tensor_counter));
  ++impl_->tensor_counter;
  impl_->tensors.push_back(t);
  return t;
}

TensorPtr Graph::tensor(double scalar) {
  return tensor(TensorAttr().set_data_type(DataType::FLOAT).set_value(scalar));
}

namespace {

// Appends a node with fresh virtual outputs named "<node>::<slot>", one per output slot of its op.
template <class A>
std::vector<TensorPtr> add_node(GraphImpl& g, A attr, std::vector<TensorPtr> inputs) {
  g.invalidate();
  std::string name = attr.get_name();
  OpAttr op = std::move(attr);
  const OpTraits& traits = op_traits(op);
  if (name.empty()) name = std::string(traits.name) + "_" + std::to_string(g.node_counter);
  ++g.node_counter;
  NodeSpec node{name, std::move(op), std::move(inputs), {}};
  for (std::string_view slot : traits.outputs) {
    auto t = std::make_shared<TensorAttr>();
    t->set_name(name + "::" + std::string(slot)).set_is_virtual(true);
    node.outputs.push_back(std::move(t));
  }
  g.nodes.push_back(std::move(node));
  return g.nodes.back().outputs;
}

}  // namespace

TensorPtr Graph::conv_fprop(TensorPtr x, TensorPtr w, ConvFpropAttr a) {
  return add_node(*impl_, std::move(a), {std::move(x), std::move(w)})[0];
}
TensorPtr Graph::conv_dgrad(TensorPtr dy, TensorPtr w, ConvDgradAttr a) {
  return add_node(*impl_, std::move(a), {std::move(dy), std::move(w)})[0];
}
TensorPtr Graph::conv_wgrad(TensorPtr dy, TensorPtr x, ConvWgradAttr a) {
  return add_node(*impl_, std::move(a), {std::move(dy), std::move(x)})[0];
}
TensorPtr Graph::matmul(TensorPtr a, TensorPtr b, MatmulAttr attr) {
  return add_node(*impl_, std::move(attr), {std::move(a), std::move(b)})[0];
}
TensorPtr Graph::pointwise(TensorPtr a, PointwiseAttr attr) {
  return add_node(*impl_, std::move(attr), {std::move(a)})[0];
}
TensorPtr Graph::pointwise(TensorPtr a, TensorPtr b, PointwiseAttr attr) {
  return add_node(*impl_, std::move(attr), {std::move(a), std::move(b)})[0];
}
TensorPtr Graph::pointwise(TensorPtr a, TensorPtr b, TensorPtr c, PointwiseAttr attr) {
  return add_node(*impl_, std::move(attr), {std::move(a), std::move(b), std::move(c)})[0];
}
TensorPtr Graph::reduction(TensorPtr x, ReductionAttr attr) {
  return add_node(*impl_, std::move(attr), {std::move(x)})[0];
}
std::array<TensorPtr, 2> Graph::genstats(TensorPtr x, GenstatsAttr attr) {
  auto outs = add_node(*impl_, std::move(attr), {std::move(x)});
  return {outs[0], outs[1]};
}
TensorPtr Graph::batchnorm_inference(TensorPtr x, TensorPtr mean, TensorPtr inv_variance, TensorPtr scale,
                                     TensorPtr bias, BatchnormInferenceAttr attr) {
  return add_node(*impl_, std::move(attr),
                  {std::move(x), std::move(mean), std::move(inv_variance), std::move(scale), std::move(bias)})[0];
}
std::array<TensorPtr, 3> Graph::layernorm(TensorPtr x, TensorPtr scale, TensorPtr bias, LayernormAttr attr) {
  TensorPtr eps = attr.get_epsilon();
  auto outs = add_node(*impl_, std::move(attr), {std::move(x), std::move(scale), std::move(bias), eps});
  return {outs[0], outs[1], outs[2]};
}
std::array<TensorPtr, 2> Graph::rmsnorm(TensorPtr x, TensorPtr scale, RmsnormAttr attr) {
  TensorPtr eps = attr.get_epsilon();
  TensorPtr bias = attr.get_bias();
  auto outs = add_node(*impl_, std::move(attr), {std::move(x), std::move(scale), bias, eps});
  return {outs[0], outs[1]};
}
std::array<TensorPtr, 3> Graph::layernorm_backward(TensorPtr dy, TensorPtr x, TensorPtr scale, TensorPtr mean,
                                                   TensorPtr inv_variance, LayernormBackwardAttr attr) {
  auto outs = add_node(*impl_, std::move(attr),
                       {std::move(dy), std::move(x), std::move(scale), std::move(mean), std::move(inv_variance)});
  return {outs[0], outs[1], outs[2]};
}
std::array<TensorPtr, 3> Graph::rmsnorm_backward(TensorPtr dy, TensorPtr x, TensorPtr scale, TensorPtr inv_rms,
                                                 RmsnormBackwardAttr attr) {
  auto outs = add_node(*impl_, std::move(attr), {std::move(dy), std::move(x), std::move(scale), std::move(inv_rms)});
  return {outs[0], outs[1], outs[2]};
}
std::array<TensorPtr, 5> Graph::batchnorm(TensorPtr x, TensorPtr scale, TensorPtr bias, BatchnormAttr attr) {
  std::vector<TensorPtr> in{std::move(x), std::move(scale), std::move(bias), attr.get_epsilon(),
                            attr.get_prev_running_mean(), attr.get_prev_running_var(), attr.get_momentum()};
  auto outs = add_node(*impl_, std::move(attr), std::move(in));
  return {outs[0], outs[1], outs[2], outs[3], outs[4]};
}
std::array<TensorPtr, 3> Graph::batchnorm_backward(TensorPtr dy, TensorPtr x, TensorPtr scale, TensorPtr mean,
                                                   TensorPtr inv_variance, BatchnormBackwardAttr attr) {
  auto outs = add_node(*impl_, std::move(attr),
                       {std::move(dy), std::move(x), std::move(scale), std::move(mean), std::move(inv_variance)});
  return {outs[0], outs[1], outs[2]};
}
std::array<TensorPtr, 3> Graph::instancenorm(TensorPtr x, TensorPtr scale, TensorPtr bias, InstancenormAttr attr) {
  TensorPtr eps = attr.get_epsilon();
  auto outs = add_node(*impl_, std::move(attr), {std::move(x), std::move(scale), std::move(bias), eps});
  return {outs[0], outs[1], outs[2]};
}
std::array<TensorPtr, 3> Graph::instancenorm_backward(TensorPtr dy, TensorPtr x, TensorPtr scale, TensorPtr mean,
                                                      TensorPtr inv_variance, InstancenormBackwardAttr attr) {
  auto outs = add_node(*impl_, std::move(attr),
                       {std::move(dy), std::move(x), std::move(scale), std::move(mean), std::move(inv_variance)});
  return {outs[0], outs[1], outs[2]};
}
TensorPtr Graph::resample(TensorPtr x, ResampleAttr attr) {
  return add_node(*impl_, std::move(attr), {std::move(x)})[0];
}
// The attribute's tensors go into their input slots; the ragged offsets join at validation
// (they may be set on O, dQ, dK, dV after this call). A user's rng_dump or dBias tensor replaces
// the fresh output of its slot.
std::array<TensorPtr, 2> Graph::sdpa(TensorPtr q, TensorPtr k, TensorPtr v, SdpaAttr attr) {
  std::vector<TensorPtr> in(slot::SDPA_INPUT_COUNT);
  in[slot::SDPA_Q] = std::move(q), in[slot::SDPA_K] = std::move(k), in[slot::SDPA_V] = std::move(v);
  in[slot::SDPA_SEQ_Q] = attr.get_seq_len_q(), in[slot::SDPA_SEQ_KV] = attr.get_seq_len_kv();
  in[slot::SDPA_BIAS] = attr.get_bias();
  in[slot::SDPA_SEED] = attr.get_dropout_seed(), in[slot::SDPA_OFFSET] = attr.get_dropout_offset();
  in[slot::SDPA_K_TABLE] = attr.get_paged_attention_k_table();
  in[slot::SDPA_V_TABLE] = attr.get_paged_attention_v_table();
  TensorPtr dump = attr.get_rng_dump();
  auto outs = add_node(*impl_, std::move(attr), std::move(in));
  if (dump) impl_->nodes.back().outputs[2] = dump;
  return {outs[0], outs[1]};
}
std::array<TensorPtr, 3> Graph::sdpa_backward(TensorPtr q, TensorPtr k, TensorPtr v, TensorPtr o, TensorPtr d_o,
                                              TensorPtr stats, SdpaBackwardAttr attr) {
  std::vector<TensorPtr> in(slot::SB_INPUT_COUNT);
  in[slot::SB_Q] = std::move(q), in[slot::SB_K] = std::move(k), in[slot::SB_V] = std::move(v);
  in[slot::SB_O] = std::move(o), in[slot::SB_DO] = std::move(d_o), in[slot::SB_STATS] = std::move(stats);
  in[slot::SB_SEQ_Q] = attr.get_seq_len_q(), in[slot::SB_SEQ_KV] = attr.get_seq_len_kv();
  in[slot::SB_BIAS] = attr.get_bias();
  in[slot::SB_SEED] = attr.get_dropout_seed(), in[slot::SB_OFFSET] = attr.get_dropout_offset();
  TensorPtr dbias = attr.get_dbias();
  auto outs = add_node(*impl_, std::move(attr), std::move(in));
  if (dbias) impl_->nodes.back().outputs[3] = dbias;
  return {outs[0], outs[1], outs[2]};
}
TensorPtr Graph::reshape(TensorPtr x, ReshapeAttr attr) {
  return add_node(*impl_, std::move(attr), {std::move(x)})[0];
}
TensorPtr Graph::transpose(TensorPtr x, TransposeAttr attr) {
  return add_node(*impl_, std::move(attr), {std::move(x)})[0];
}
TensorPtr Graph::slice(TensorPtr x, SliceAttr attr) {
  return add_node(*impl_, std::move(attr), {std::move(x)})[0];
}
TensorPtr Graph::concatenate(std::vector<TensorPtr> xs, ConcatenateAttr attr) {
  return add_node(*impl_, std::move(attr), std::move(xs))[0];
}

TensorPtr Graph::add(TensorPtr a, TensorPtr b) { return pointwise(std::move(a), std::move(b), PointwiseAttr().set_mode(PointwiseMode::ADD)); }
TensorPtr Graph::bias(TensorPtr x, TensorPtr b) { return add(std::move(x), std::move(b)); }
TensorPtr Graph::mul(TensorPtr a, TensorPtr b) { return pointwise(std::move(a), std::move(b), PointwiseAttr().set_mode(PointwiseMode::MUL)); }
TensorPtr Graph::scale(TensorPtr x, TensorPtr s) { return mul(std::move(x), std::move(s)); }
TensorPtr Graph::relu(TensorPtr x) { return pointwise(std::move(x), PointwiseAttr().set_mode(PointwiseMode::RELU_FWD)); }
TensorPtr Graph::gelu(TensorPtr x) { return pointwise(std::move(x), PointwiseAttr().set_mode(PointwiseMode::GELU_FWD)); }
TensorPtr Graph::sigmoid(TensorPtr x) { return pointwise(std::move(x), PointwiseAttr().set_mode(PointwiseMode::SIGMOID_FWD)); }
TensorPtr Graph::tanh(TensorPtr x) { return pointwise(std::move(x), PointwiseAttr().set_mode(PointwiseMode::TANH_FWD)); }

}  // namespace dnngraph
