// Normalizations of training: batchnorm (training, with running statistics), instancenorm, and
// the backward ops of layernorm, rmsnorm, batchnorm and instancenorm. Every one is a "grouped
// norm": the statistics' dims say the groups (a dim of 1 is reduced over), the parameters' dims say
// what scale and bias broadcast over. Grouping names the three layouts:
//   ROW       stats (N, 1, ..., 1)  params (1, d1, d2, ...)   layernorm, rmsnorm
//   CHANNEL   stats (1, C, 1, ...)  params (1, C, 1, ...)     batchnorm
//   INSTANCE  stats (N, C, 1, ...)  params (1, C, 1, ...)     instancenorm
#include <nlohmann/json.hpp>

#include "graph/families.hpp"
#include "graph/infer_util.hpp"
#include "graph/json_fields.hpp"
#include "graph/norm_checks.hpp"

namespace dnngraph {
namespace {

using norm_checks::check_epsilon;
using norm_checks::check_param;
using norm_checks::check_scalar;
using norm_checks::check_x;

enum class Grouping { ROW, CHANNEL, INSTANCE };

std::vector<int64_t> stat_dims(const std::vector<int64_t>& x, Grouping g) {
  std::vector<int64_t> d(x.size(), 1);
  if (g != Grouping::CHANNEL) d[0] = x[0];
  if (g != Grouping::ROW) d[1] = x[1];
  return d;
}

std::vector<int64_t> param_dims(const std::vector<int64_t>& x, Grouping g) {
  if (g == Grouping::ROW) {
    std::vector<int64_t> d = x;
    d[0] = 1;
    return d;
  }
  return stat_dims(x, Grouping::CHANNEL);
}

const char* param_rule(Grouping g) {
  return g == Grouping::ROW ? "X's dims with dim 0 = 1: the op normalizes over every dim but the first"
                            : "one value per channel: 1, C, 1, ...";
}

const char* stat_rule(Grouping g) {
  switch (g) {
    case Grouping::ROW: return "one value per row: N, 1, ...";
    case Grouping::CHANNEL: return "one value per channel: 1, C, 1, ...";
    case Grouping::INSTANCE: return "one value per sample and channel: N, C, 1, ...";
  }
  return "";
}

// X of a grouped norm: rank 2 or more (instancenorm: 3, it needs spatial dims to normalize over).
Status check_grouped_x(const NodeSpec& node, const TensorAttr* x, Grouping g) {
  if (auto s = check_x(node, x, g == Grouping::ROW ? "N, normalized dims..." : "N, C, spatial..."); !s.ok()) return s;
  if (g == Grouping::INSTANCE && x->get_dim().size() < 3)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, x,
                      "rank " + std::to_string(x->get_dim().size()) +
                          " is below 3 (instancenorm normalizes over the spatial dims of N, C, spatial...)");
  return {};
}

// An output the op does not produce in this configuration: it must stay virtual; it still gets
// dims so that the IR is complete.
Status fill_unproduced(const NodeSpec& node, TensorAttr& t, const std::vector<int64_t>& dims, const char* why,
                       const GraphDefaults& defaults) {
  if (t.get_is_output())
    return node_error(ErrorCode::INVALID_VALUE, node, &t, std::string("is marked as an output, but ") + why);
  return fill_output(node, t, dims, {}, defaults, DataType::FLOAT);
}

Status check_slot_count(const NodeSpec& node, size_t want, const char* slots) {
  if (node.inputs.size() != want)
    return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                      "takes " + std::to_string(want) + " input slots (" + slots + "), got " +
                          std::to_string(node.inputs.size()));
  return {};
}

// ---- backward ops: (DY, X, SCALE[, MEAN], INV_VARIANCE) -> (DX, DSCALE, DBIAS)

struct BackwardShape {
  Grouping grouping;
  bool has_mean;   // rmsnorm has no mean statistic
  bool has_dbias;  // rmsnorm without a bias in the forward has no dbias
};

Status infer_backward(NodeSpec& node, BackwardShape b, const GraphDefaults& defaults) {
  const size_t n = b.has_mean ? 5 : 4;
  if (auto s = check_slot_count(node, n, b.has_mean ? "DY, X, SCALE, MEAN, INV_VARIANCE" : "DY, X, SCALE, INV_RMS");
      !s.ok())
    return s;
  const TensorAttr* x = node.inputs[slot::NB_X].get();
  if (auto s = check_grouped_x(node, x, b.grouping); !s.ok()) return s;
  const auto& xd = x->get_dim();
  if (auto s = check_param(node, node.inputs[slot::NB_DY].get(), "DY", xd, "the gradient of Y has X's dims"); !s.ok())
    return s;
  const auto pd = param_dims(xd, b.grouping), sd = stat_dims(xd, b.grouping);
  if (auto s = check_param(node, node.inputs[slot::NB_SCALE].get(), "SCALE", pd, param_rule(b.grouping)); !s.ok())
    return s;
  if (b.has_mean) {
    if (auto s = check_param(node, node.inputs[slot::NB_MEAN].get(), "MEAN", sd, stat_rule(b.grouping)); !s.ok())
      return s;
    if (auto s = check_param(node, node.inputs[slot::NB_INV_VAR].get(), "INV_VARIANCE", sd, stat_rule(b.grouping));
        !s.ok())
      return s;
  } else if (auto s = check_param(node, node.inputs[slot::RB_INV_RMS].get(), "INV_RMS", sd, stat_rule(b.grouping));
             !s.ok()) {
    return s;
  }
  const TensorAttr* scale = node.inputs[slot::NB_SCALE].get();
  if (auto s = fill_output(node, *node.outputs[0], xd, x->get_stride(), defaults, x->get_data_type()); !s.ok())
    return s;
  if (auto s = fill_output(node, *node.outputs[1], pd, scale->get_stride(), defaults, scale->get_data_type()); !s.ok())
    return s;
  if (!b.has_dbias)
    return fill_unproduced(node, *node.outputs[2], pd, "has_dbias is false (set_has_dbias(true) to get it)", defaults);
  return fill_output(node, *node.outputs[2], pd, scale->get_stride(), defaults, scale->get_data_type());
}

Status infer(const LayernormBackwardAttr&, NodeSpec& node, const GraphDefaults& d) {
  return infer_backward(node, {Grouping::ROW, true, true}, d);
}
Status infer(const RmsnormBackwardAttr& a, NodeSpec& node, const GraphDefaults& d) {
  return infer_backward(node, {Grouping::ROW, false, a.get_has_dbias()}, d);
}
Status infer(const BatchnormBackwardAttr&, NodeSpec& node, const GraphDefaults& d) {
  return infer_backward(node, {Grouping::CHANNEL, true, true}, d);
}
Status infer(const InstancenormBackwardAttr&, NodeSpec& node, const GraphDefaults& d) {
  return infer_backward(node, {Grouping::INSTANCE, true, true}, d);
}

// ---- forward ops: (X, SCALE, BIAS, EPSILON, ...) -> (Y, MEAN, INV_VARIANCE, ...)

// X, SCALE, BIAS, EPSILON; Y like X; the statistics (virtual unless `stats_produced`).
Status infer_grouped_forward(NodeSpec& node, Grouping g, bool stats_produced, const GraphDefaults& defaults) {
  const TensorAttr* x = node.inputs[slot::BT_X].get();
  if (auto s = check_grouped_x(node, x, g); !s.ok()) return s;
  const auto& xd = x->get_dim();
  const auto pd = param_dims(xd, g), sd = stat_dims(xd, g);
  if (auto s = check_param(node, node.inputs[slot::BT_SCALE].get(), "SCALE", pd, param_rule(g)); !s.ok()) return s;
  if (auto s = check_param(node, node.inputs[slot::BT_BIAS].get(), "BIAS", pd, param_rule(g)); !s.ok()) return s;
  if (auto s = check_epsilon(node, node.inputs[slot::BT_EPS].get()); !s.ok()) return s;
  if (auto s = fill_output(node, *node.outputs[0], xd, x->get_stride(), defaults, x->get_data_type()); !s.ok())
    return s;
  for (size_t i = 1; i <= 2; ++i) {
    Status s = stats_produced ? fill_output(node, *node.outputs[i], sd, {}, defaults, DataType::FLOAT)
                              : fill_unproduced(node, *node.outputs[i], sd,
                                                "the INFERENCE phase does not produce it "
                                                "(set_forward_phase(NormFwdPhase::TRAINING) to get it)",
                                                defaults);
    if (!s.ok()) return s;
  }
  return {};
}

Status infer(const InstancenormAttr& a, NodeSpec& node, const GraphDefaults& d) {
  if (auto s = check_mode(node, a.get_forward_phase(), "forward phase"); !s.ok()) return s;
  if (auto s = check_slot_count(node, 4, "X, SCALE, BIAS, EPSILON"); !s.ok()) return s;
  return infer_grouped_forward(node, Grouping::INSTANCE, a.get_forward_phase() == NormFwdPhase::TRAINING, d);
}

// The running statistics: PREV_RUNNING_MEAN, PREV_RUNNING_VAR and MOMENTUM all given, or none.
Status infer_running_stats(NodeSpec& node, const GraphDefaults& defaults) {
  const auto pd = param_dims(node.inputs[slot::BT_X]->get_dim(), Grouping::CHANNEL);
  const TensorAttr* mean = node.inputs[slot::BT_PREV_MEAN].get();
  const TensorAttr* var = node.inputs[slot::BT_PREV_VAR].get();
  const TensorAttr* momentum = node.inputs[slot::BT_MOMENTUM].get();
  if (!mean && !var && !momentum) {
    for (size_t i = 3; i <= 4; ++i)
      if (auto s = fill_unproduced(node, *node.outputs[i], pd,
                                   "no previous running statistics are given (set_previous_running_stats)", defaults);
          !s.ok())
        return s;
    return {};
  }
  if (!mean || !var || !momentum)
    return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, nullptr,
                      "running statistics need all of PREV_RUNNING_MEAN, PREV_RUNNING_VAR and MOMENTUM "
                      "(set_previous_running_stats), but some are missing");
  const char* rule = "one value per channel: 1, C, 1, ...";
  if (auto s = check_param(node, mean, "PREV_RUNNING_MEAN", pd, rule); !s.ok()) return s;
  if (auto s = check_param(node, var, "PREV_RUNNING_VAR", pd, rule); !s.ok()) return s;
  if (auto s = check_scalar(node, momentum, "momentum", "set_previous_running_stats"); !s.ok()) return s;
  for (size_t i = 3; i <= 4; ++i) {
    const TensorAttr* prev = node.inputs[slot::BT_PREV_MEAN + (i - 3)].get();
    if (auto s = fill_output(node, *node.outputs[i], pd, prev->get_stride(), defaults, prev->get_data_type()); !s.ok())
      return s;
  }
  return {};
}

Status infer(const BatchnormAttr&, NodeSpec& node, const GraphDefaults& d) {
  if (auto s = check_slot_count(node, 7, "X, SCALE, BIAS, EPSILON, PREV_RUNNING_MEAN, PREV_RUNNING_VAR, MOMENTUM");
      !s.ok())
    return s;
  if (auto s = infer_grouped_forward(node, Grouping::CHANNEL, true, d); !s.ok()) return s;
  return infer_running_stats(node, d);
}

// ---- JSON fields: rmsnorm_backward's has_dbias when true, instancenorm's phase when not
// INFERENCE; epsilon, momentum and the running statistics are node inputs.

void write_rms_bwd(const RmsnormBackwardAttr& a, nlohmann::json& j) {
  if (a.get_has_dbias()) j["has_dbias"] = true;
}
void read_rms_bwd(JsonFields& f, RmsnormBackwardAttr& a) {
  if (auto v = f.boolean("has_dbias")) a.set_has_dbias(*v);
}
void write_in(const InstancenormAttr& a, nlohmann::json& j) {
  if (a.get_forward_phase() != NormFwdPhase::INFERENCE) j["forward_phase"] = std::string(to_string(a.get_forward_phase()));
}
void read_in(JsonFields& f, InstancenormAttr& a) {
  if (auto p = f.enumeration("forward_phase", &norm_fwd_phase_from_string, "norm forward phase"))
    a.set_forward_phase(*p);
}

TensorPtr input_at(const NodeSpec& n, size_t k) { return k < n.inputs.size() ? n.inputs[k] : nullptr; }

void attach_instancenorm(NodeSpec& n) {
  if (auto eps = input_at(n, slot::BT_EPS)) std::get<InstancenormAttr>(n.attr).set_epsilon(eps);
}
void attach_batchnorm(NodeSpec& n) {
  auto& a = std::get<BatchnormAttr>(n.attr);
  if (auto eps = input_at(n, slot::BT_EPS)) a.set_epsilon(eps);
  a.set_previous_running_stats(input_at(n, slot::BT_PREV_MEAN), input_at(n, slot::BT_PREV_VAR),
                               input_at(n, slot::BT_MOMENTUM));
}

const std::vector<std::string_view> kBwdInputs{"DY", "X", "SCALE", "MEAN", "INV_VARIANCE"};
const std::vector<std::string_view> kBwdOutputs{"DX", "DSCALE", "DBIAS"};

// One gradient, plus a pass per element to reduce: about twice a forward's operations.
double backward_flops(const ir::Graph& g, const ir::Node& n) { return 2.0 * elementwise_flops(g, n); }

template <class A, Status (*Infer)(const A&, NodeSpec&, const GraphDefaults&)>
OpTraits backward_traits(std::string_view name) {
  return typed<A, Infer>({.name = name, .inputs = kBwdInputs, .required_inputs = 5, .outputs = kBwdOutputs,
                          .flops = backward_flops});
}

}  // namespace

const OpTraits& traits(OpTag<LayernormBackwardAttr>) {
  static const auto t = backward_traits<LayernormBackwardAttr, infer>("layernorm_backward");
  return t;
}

const OpTraits& traits(OpTag<RmsnormBackwardAttr>) {
  static const auto t = typed<RmsnormBackwardAttr, infer, write_rms_bwd, read_rms_bwd>(
      {.name = "rmsnorm_backward", .inputs = {"DY", "X", "SCALE", "INV_RMS"}, .required_inputs = 4,
       .outputs = kBwdOutputs, .flops = backward_flops});
  return t;
}

const OpTraits& traits(OpTag<BatchnormAttr>) {
  static const auto t = typed<BatchnormAttr, infer>(
      {.name = "batchnorm",
       .inputs = {"X", "SCALE", "BIAS", "EPSILON", "PREV_RUNNING_MEAN", "PREV_RUNNING_VAR", "MOMENTUM"},
       .required_inputs = 4,
       .outputs = {"Y", "MEAN", "INV_VARIANCE", "NEXT_RUNNING_MEAN", "NEXT_RUNNING_VAR"},
       .attach_inputs = attach_batchnorm,
       .flops = backward_flops});
  return t;
}

const OpTraits& traits(OpTag<BatchnormBackwardAttr>) {
  static const auto t = backward_traits<BatchnormBackwardAttr, infer>("batchnorm_backward");
  return t;
}

const OpTraits& traits(OpTag<InstancenormAttr>) {
  static const auto t = typed<InstancenormAttr, infer, write_in, read_in>(
      {.name = "instancenorm", .inputs = {"X", "SCALE", "BIAS", "EPSILON"}, .required_inputs = 4,
       .outputs = {"Y", "MEAN", "INV_VARIANCE"}, .attach_inputs = attach_instancenorm,
       .flops = backward_flops});
  return t;
}

const OpTraits& traits(OpTag<InstancenormBackwardAttr>) {
  static const auto t = backward_traits<InstancenormBackwardAttr, infer>("instancenorm_backward");
  return t;
}

}  // namespace dnngraph
