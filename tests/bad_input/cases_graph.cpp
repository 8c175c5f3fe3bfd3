// Graph-level and per-op faults: uids at and past the limits, pass-by-value tensors of more than
// one element, wrong ranks and types, missing inputs, out-of-range enum values, and (as JSON text,
// which the builder cannot express) cycles, duplicated outputs, integers beyond int64 and deep
// nesting. Valid neighbours of each fault (uid 2^63 - 2, a [1,1] scalar, random matmuls, norms and
// reductions in odd layouts) must run and agree with ref.
#include <algorithm>
#include <cmath>
#include <limits>

#include "bad_input/cases.hpp"

namespace bad_input {
namespace {

using dg::DataType;
using dg::ErrorCode;

dg::PointwiseAttr relu_attr() { return dg::PointwiseAttr().set_mode(dg::PointwiseMode::RELU_FWD).set_name("relu"); }

void add_uid_cases(std::vector<Case>& cases) {
  const Dims uids{-1, INT64_MIN, INT64_MAX, INT64_MAX - 1, 0, int64_t{1} << 62, 7};
  for (size_t i = 0; i < uids.size(); ++i) {
    for (int y_kind = 0; y_kind < 3; ++y_kind) {  // Y: no uid, uid 0, X's uid
      const int64_t x_uid = uids[i];
      const bool x_bad = x_uid < 0 || x_uid == INT64_MAX;
      Expect e = runs();
      if (x_bad)
        e = rejected(ErrorCode::INVALID_GRAPH, tensor_named("X"), "uids are in [0, 2^63 - 2]");
      else if (y_kind == 0 && x_uid == INT64_MAX - 1)
        e = rejected(ErrorCode::INVALID_GRAPH, tensor_named("Y"), "needs a uid, but every uid above the largest given");
      else if (y_kind == 2 || (y_kind == 1 && x_uid == 0))
        e = rejected(ErrorCode::INVALID_GRAPH, "tensors 'X' and 'Y' share uid", "uids must be unique");
      auto build = [x_uid, y_kind](dg::Graph& g) {
        auto x = user_tensor(g, "X", {2, 3}, {3, 1});
        x->set_uid(x_uid);
        auto y = g.pointwise(x, relu_attr());
        y->set_output(true).set_name("Y");
        if (y_kind == 1) y->set_uid(0);
        if (y_kind == 2) y->set_uid(x_uid);
      };
      cases.push_back(Case{"uid_" + std::to_string(i) + "_" + std::to_string(y_kind), build, {}, e});
    }
  }
}

void add_pass_by_value_cases(std::vector<Case>& cases) {
  struct Scalar {
    Dims dims, strides;
    bool baked;  // a value baked into the plan, or a host pointer given at execute
  };
  // X is [2, 3]: each scalar broadcasts against it, so only the pass-by-value rule can refuse it.
  const std::vector<Scalar> scalars{{{2, 3}, {3, 1}, true},  {{2, 1}, {1, 1}, true},  {{1, 1}, {1, 1}, true},
                                    {{1, 1}, {0, 0}, true},  {{1, 3}, {3, 1}, false}, {{1, 1}, {5, 5}, false},
                                    {{2, 3}, {0, 0}, false}, {{1, 1}, {1, 1}, false}, {{2, 3}, {0, 0}, true},
                                    {{1, 3}, {0, 1}, true}};
  for (size_t i = 0; i < scalars.size(); ++i) {
    const Scalar s = scalars[i];
    int64_t volume = 1;
    for (int64_t d : s.dims) volume *= d;
    const Expect e = volume == 1 ? runs()
                                 : rejected(ErrorCode::INVALID_VALUE,
                                            node_named("scale", "pointwise") + ", " + tensor_named("alpha"),
                                            "is pass-by-value (one host scalar) but its dims");
    auto build = [s](dg::Graph& g) {
      auto x = user_tensor(g, "X", {2, 3}, {3, 1});
      auto alpha = user_tensor(g, "alpha", s.dims, s.strides);
      if (s.baked)
        alpha->set_value(1.5);
      else
        alpha->set_is_pass_by_value(true);
      g.pointwise(x, alpha, dg::PointwiseAttr().set_mode(dg::PointwiseMode::MUL).set_name("scale"))->set_output(true);
    };
    cases.push_back(Case{"pass_by_value_" + std::to_string(i), build, {}, e});
  }
}

// Matmuls: random valid ones in random layouts (run), and wrong ranks, K, batch dims and types.
void add_matmul_cases(std::vector<Case>& cases) {
  std::mt19937_64 rng(71);
  const std::string where = node_named("mm", "matmul");
  for (int i = 0; i < 30; ++i) {
    const int64_t m = 1 + static_cast<int64_t>(rng() % 9), k = 1 + static_cast<int64_t>(rng() % 9),
                  n = 1 + static_cast<int64_t>(rng() % 9), batch = 1 + static_cast<int64_t>(rng() % 3);
    Dims ad{batch, m, k}, bd{rng() % 2 ? batch : 1, k, n};
    DataType at = DataType::FLOAT, bt = DataType::FLOAT;
    Expect e = runs();
    const std::string b_named = where + ", " + tensor_named("B");
    switch (i % 6) {
      case 1:
        ad = {m, k};
        e = rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, b_named, "differs from A's rank 2");
        break;
      case 2:
        bd[1] = k + 1;
        e = rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, b_named, "differs from A's K=");
        break;
      case 3:
        bt = DataType::BOOLEAN;
        e = rejected(ErrorCode::INVALID_DATA_TYPE, b_named, "BOOLEAN is not allowed");
        break;
      case 4:
        bt = DataType::HALF;
        e = rejected(ErrorCode::INVALID_DATA_TYPE, b_named, "must share a data type");
        break;
      case 5:
        ad = {k};
        e = rejected(ErrorCode::INVALID_VALUE, where + ", " + tensor_named("A"), "is below 2");
        break;
      default:
        if (i % 12 == 6) {  // batch dims that neither match nor broadcast
          ad[0] = batch + 1;
          bd[0] = batch + 2;
          e = rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, b_named, "do not broadcast");
        }
        break;
    }
    const bool col_major = rng() % 2;
    auto build = [ad, bd, at, bt, col_major](dg::Graph& g) {
      Dims as = packed_strides(ad);
      if (col_major && ad.size() == 3) as = {ad[1] * ad[2], 1, ad[1]};
      auto a = user_tensor(g, "A", ad, as, at);
      auto b = user_tensor(g, "B", bd, packed_strides(bd), bt);
      g.matmul(a, b, dg::MatmulAttr().set_name("mm"))->set_output(true).set_name("C");
    };
    cases.push_back(Case{"matmul_" + std::to_string(i), build, {}, e});
  }
  // Huge but valid: stride-0 views of 2^48 elements whose product has 2^48 FP8 outputs (planned,
  // never run: the cost model must not overflow on 2^73 multiply-adds).
  auto huge = [](dg::Graph& g) {
    const int64_t big = int64_t{1} << 24;
    auto a = user_tensor(g, "A", {big, 1, big}, {0, 0, 0}, DataType::FP8_E4M3);
    auto b = user_tensor(g, "B", {1, big, big}, {0, 0, 0}, DataType::FP8_E4M3);
    auto c = g.matmul(a, b, dg::MatmulAttr().set_name("mm"));
    c->set_output(true).set_name("C").set_data_type(DataType::FP8_E4M3);
  };
  cases.push_back(Case{"matmul_2p73_macs", huge, {}, plans_only()});
}

// Missing inputs, one per op family, and nodes with out-of-range enum values.
void add_missing_input_cases(std::vector<Case>& cases) {
  const Dims d{2, 3, 4, 4};
  auto x_of = [d](dg::Graph& g) { return user_tensor(g, "X", d, packed_strides(d)); };
  const std::vector<std::pair<std::string, std::function<void(dg::Graph&)>>> builds{
      {"conv_fprop",
       [=](dg::Graph& g) { g.conv_fprop(x_of(g), nullptr, dg::ConvFpropAttr().set_name("n"))->set_output(true); }},
      {"matmul", [=](dg::Graph& g) { g.matmul(nullptr, x_of(g), dg::MatmulAttr().set_name("n"))->set_output(true); }},
      {"pointwise",
       [=](dg::Graph& g) {
         g.pointwise(x_of(g), nullptr, dg::PointwiseAttr().set_mode(dg::PointwiseMode::ADD).set_name("n"))
             ->set_output(true);
       }},
      {"reduction",
       [=](dg::Graph& g) {
         g.reduction(nullptr, dg::ReductionAttr().set_mode(dg::ReductionMode::ADD).set_name("n"))->set_output(true);
       }},
      {"layernorm",
       [=](dg::Graph& g) {
         g.layernorm(x_of(g), nullptr, nullptr, dg::LayernormAttr().set_epsilon(1e-5).set_name("n"))[0]->set_output(
             true);
       }},
      {"batchnorm_inference",
       [=](dg::Graph& g) {
         g.batchnorm_inference(x_of(g), nullptr, nullptr, nullptr, nullptr, dg::BatchnormInferenceAttr().set_name("n"))
             ->set_output(true);
       }},
      {"resample",
       [=](dg::Graph& g) {
         g.resample(nullptr, dg::ResampleAttr().set_resampling_mode(dg::ResampleMode::MAXPOOL).set_name("n"))
             ->set_output(true);
       }},
      {"sdpa",
       [=](dg::Graph& g) { g.sdpa(x_of(g), x_of(g), nullptr, dg::SdpaAttr().set_name("n"))[0]->set_output(true); }},
      {"reshape",
       [=](dg::Graph& g) { g.reshape(nullptr, dg::ReshapeAttr().set_dim({4}).set_name("n"))->set_output(true); }},
      {"concatenate",
       [=](dg::Graph& g) {
         g.concatenate({x_of(g), nullptr}, dg::ConcatenateAttr().set_axis(1).set_name("n"))->set_output(true);
       }},
  };
  // The JSON writer leaves a null input out, and the reader names the slot it misses; variadic
  // ops lose the slot: a pointwise ADD of one input is refused, a concatenate of one is valid.
  for (const auto& [op, build] : builds) {
    Case c{"missing_input_" + op, build, {}, rejected(ErrorCode::ATTRIBUTE_NOT_SET, node_named("n", op), "is missing")};
    if (op == "concatenate")
      c.json_expect = runs();
    else if (op == "pointwise")
      c.json_expect = rejected(ErrorCode::INVALID_VALUE, node_named("n", op), "ADD takes 2 inputs, got 1");
    else
      c.json_expect = rejected(ErrorCode::ATTRIBUTE_NOT_SET, node_named("n", op), "has no input '");
    cases.push_back(std::move(c));
  }
  auto bad_mode = [](dg::Graph& g) {
    g.pointwise(user_tensor(g, "X", {4}, {1}),
                dg::PointwiseAttr().set_mode(static_cast<dg::PointwiseMode>(999)).set_name("n"))
        ->set_output(true);
  };
  Case mode{"pointwise_mode_999",
            bad_mode,
            {},
            rejected(ErrorCode::INVALID_VALUE, node_named("n", "pointwise"), "unknown pointwise mode 999")};
  mode.json_expect =
      rejected(ErrorCode::INVALID_VALUE, "node 'n' at $.nodes[0].mode", "unknown pointwise mode 'UNKNOWN'");
  cases.push_back(std::move(mode));
  auto bad_type = [](dg::Graph& g) {
    g.pointwise(user_tensor(g, "X", {4}, {1}, static_cast<DataType>(77)), relu_attr())->set_output(true);
  };
  Case type{"data_type_77",
            bad_type,
            {},
            rejected(ErrorCode::INVALID_DATA_TYPE, node_named("relu", "pointwise") + ", " + tensor_named("X"),
                     "data type 77 is not a DataType value")};
  type.json_expect = rejected(ErrorCode::INVALID_DATA_TYPE, "tensor 'X' at $.tensors[0].data_type", "UNKNOWN");
  cases.push_back(std::move(type));
  auto no_type = [](dg::Graph& g) {
    g.pointwise(user_tensor(g, "X", {4}, {1}, DataType::NOT_SET), relu_attr())->set_output(true);
  };
  cases.push_back(
      Case{"data_type_not_set",
           no_type,
           {},
           rejected(ErrorCode::ATTRIBUTE_NOT_SET, node_named("relu", "pointwise") + ", " + tensor_named("X"),
                    "has no data type and the graph has no io_data_type")});
}

// Norms and reductions in odd layouts (run), with parameter ranks and epsilons that are wrong.
void add_norm_reduction_cases(std::vector<Case>& cases) {
  std::mt19937_64 rng(73);
  for (int i = 0; i < 16; ++i) {
    const Dims xd{1 + static_cast<int64_t>(rng() % 3), 1 + static_cast<int64_t>(rng() % 5),
                  1 + static_cast<int64_t>(rng() % 5)};
    Dims xs{1, xd[0], xd[0] * xd[1]};  // column-major
    Dims pd{1, xd[1], xd[2]};
    const int kind = i % 4;
    if (kind == 1) pd = {xd[1], xd[2]};
    Expect e = runs();
    const std::string where = node_named("ln", "layernorm");
    if (kind == 1) e = rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, where + ", " + tensor_named("SCALE"), "SCALE dims");
    if (kind == 2)
      e = rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, where + ", " + tensor_named("epsilon"),
                   "must hold exactly one element");
    auto build = [=](dg::Graph& g) {
      auto x = user_tensor(g, "X", xd, xs);
      auto scale = user_tensor(g, "SCALE", pd, packed_strides(pd));
      auto bias = user_tensor(g, "BIAS", Dims{1, xd[1], xd[2]}, packed_strides({1, xd[1], xd[2]}));
      dg::LayernormAttr attr;
      attr.set_name("ln");
      if (kind == 2) {
        auto eps = user_tensor(g, "epsilon", {2}, {1});
        eps->set_value(1e-5);
        attr.set_epsilon(eps);
      } else {
        attr.set_epsilon(1e-5);
      }
      g.layernorm(x, scale, bias, attr)[0]->set_output(true).set_name("Y");
    };
    cases.push_back(Case{"layernorm_" + std::to_string(i), build, {}, e});
  }
  const dg::ReductionMode modes[] = {dg::ReductionMode::ADD, dg::ReductionMode::MAX,   dg::ReductionMode::AMAX,
                                     dg::ReductionMode::AVG, dg::ReductionMode::NORM2, dg::ReductionMode::MIN};
  for (int i = 0; i < 16; ++i) {
    const Dims xd{2, 1 + static_cast<int64_t>(rng() % 4), 1 + static_cast<int64_t>(rng() % 6)};
    Dims yd{1, xd[1], 1};
    if (i % 4 == 3) yd = {1, xd[1]};
    if (i % 8 == 5) yd[2] = xd[2] + 1;
    Expect e = runs();
    const std::string where = node_named("sum", "reduction") + ", " + tensor_named("Y");
    if (yd.size() != 3)
      e = rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, where, "differs from X's rank 3");
    else if (yd[2] != 1 && yd[2] != xd[2])
      e = rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, where, "(kept) or 1 (reduced)");
    const dg::ReductionMode mode = modes[i % 6];
    auto build = [xd, yd, mode](dg::Graph& g) {
      auto x = user_tensor(g, "X", xd, {1, xd[0] * xd[2], xd[0]});
      g.reduction(x, dg::ReductionAttr().set_mode(mode).set_name("sum"))->set_output(true).set_name("Y").set_dim(yd);
    };
    cases.push_back(Case{"reduction_" + std::to_string(i), build, {}, e});
  }
}

// Attention with band bounds at INT64_MAX and INT64_MIN, non-finite scales, and heads that do
// not group: bounds far past the sequence mask nothing and must run as ref computes them.
void add_sdpa_cases(std::vector<Case>& cases) {
  const Dims bounds{0, 1, 3, INT64_MAX, INT64_MAX - 1, int64_t{1} << 62, -1, INT64_MIN};
  const std::string where = node_named("attn", "sdpa");
  std::mt19937_64 rng(79);
  for (int i = 0; i < 24; ++i) {
    const int64_t left = bounds[rng() % bounds.size()], right = bounds[rng() % bounds.size()];
    const bool bottom_right = rng() % 2, use_left = rng() % 2;
    const double scale = i % 8 == 7 ? std::nan("") : i % 8 == 6 ? std::numeric_limits<double>::infinity() : 0.125;
    const int64_t k_heads = i % 12 == 5 ? 3 : 2;
    Expect e = runs();
    if (use_left && left < 0)
      e = rejected(ErrorCode::INVALID_VALUE, where, "diagonal band left bound");
    else if (right < 0)
      e = rejected(ErrorCode::INVALID_VALUE, where, "diagonal band right bound");
    else if (!std::isfinite(scale))
      e = rejected(ErrorCode::INVALID_VALUE, where, "attn_scale must be finite");
    if (k_heads == 3)
      e = rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, where + ", " + tensor_named("K"), "do not divide Q's heads");
    auto build = [=](dg::Graph& g) {
      auto q = user_tensor(g, "Q", {1, 4, 5, 8}, {160, 8, 32, 1});  // heads inside the sequence
      auto k = user_tensor(g, "K", {1, k_heads, 7, 8}, packed_strides({1, k_heads, 7, 8}));
      auto v = user_tensor(g, "V", {1, k_heads, 7, 8}, packed_strides({1, k_heads, 7, 8}));
      auto attr = dg::SdpaAttr().set_name("attn").set_attn_scale(scale).set_diagonal_band_right_bound(right);
      attr.set_diagonal_alignment(bottom_right ? dg::DiagonalAlignment::BOTTOM_RIGHT : dg::DiagonalAlignment::TOP_LEFT);
      if (use_left) attr.set_diagonal_band_left_bound(left);
      g.sdpa(q, k, v, attr)[0]->set_output(true).set_name("O");
    };
    cases.emplace_back("sdpa_" + std::to_string(i), build, "", e);
  }
}

// JSON text: the frame every graph shares around its tensors and nodes.
std::string graph_json(const std::string& tensors, const std::string& nodes) {
  return R"({"format": "dnngraph-graph", "version": 1, "io_data_type": "FLOAT", "tensors": [)" + tensors +
         R"(], "nodes": [)" + nodes + "]}";
}

std::string relu_node(const std::string& name, const std::string& in, const std::string& out) {
  return R"({"name": ")" + name + R"(", "op": "pointwise", "mode": "RELU_FWD", "inputs": {"IN_0": ")" + in +
         R"("}, "outputs": {"OUT": ")" + out + R"("}})";
}

const char* kX = R"({"name": "X", "dim": [4], "stride": [1]})";

// Graph structure only JSON can express: cycles, a tensor written twice or declared twice, names
// that are not declared, virtual tensors nobody writes, no outputs, no nodes, a missing slot.
void add_json_graph_cases(std::vector<Case>& cases) {
  auto json_case = [&cases](std::string name, std::string text, Expect e) {
    cases.push_back(Case{std::move(name), {}, std::move(text), std::move(e)});
  };
  const std::string t1 = R"({"name": "T1", "virtual": true})", t2 = R"({"name": "T2", "output": true})";
  json_case("json_cycle_of_two",
            graph_json(std::string(kX) + ", " + t1 + ", " + t2,
                       relu_node("a", "T2", "T1") + ", " + relu_node("b", "T1", "T2")),
            rejected(ErrorCode::INVALID_GRAPH, "nodes 'a', 'b'", "the graph has a cycle"));
  json_case("json_self_loop", graph_json(std::string(kX) + ", " + t2, relu_node("a", "T2", "T2")),
            rejected(ErrorCode::INVALID_GRAPH, "'a'", "cycle"));
  std::string chain_tensors = kX, chain_nodes;
  for (int i = 0; i < 50; ++i) {
    chain_tensors += R"(, {"name": "T)" + std::to_string(i) + R"(", "output": true})";
    chain_nodes += (i ? ", " : "") +
                   relu_node("n" + std::to_string(i), "T" + std::to_string((i + 49) % 50), "T" + std::to_string(i));
  }
  json_case("json_cycle_of_fifty", graph_json(chain_tensors, chain_nodes),
            rejected(ErrorCode::INVALID_GRAPH, "'n49'", "cycle"));
  json_case("json_duplicated_output",
            graph_json(std::string(kX) + ", " + t2, relu_node("a", "X", "T2") + ", " + relu_node("b", "X", "T2")),
            rejected(ErrorCode::INVALID_GRAPH, "tensor 'T2'", "is written by node 'a' and by node 'b'"));
  // b writes the X that a reads: a cycle through a graph input.
  json_case("json_node_writes_graph_input",
            graph_json(std::string(kX) + ", " + t2, relu_node("a", "X", "T2") + ", " + relu_node("b", "T2", "X")),
            rejected(ErrorCode::INVALID_GRAPH, "nodes 'a', 'b'", "the graph has a cycle"));
  json_case("json_duplicated_tensor", graph_json(std::string(kX) + ", " + kX + ", " + t2, relu_node("a", "X", "T2")),
            rejected(ErrorCode::INVALID_GRAPH, "tensor 'X'", "is declared twice"));
  json_case("json_undeclared_tensor", graph_json(std::string(kX) + ", " + t2, relu_node("a", "Q", "T2")),
            rejected(ErrorCode::INVALID_GRAPH, "node 'a' reads tensor 'Q'", "which $.tensors does not declare"));
  json_case("json_virtual_without_producer",
            graph_json(std::string(kX) + ", " + t1 + ", " + t2, relu_node("a", "T1", "T2")),
            rejected(ErrorCode::INVALID_GRAPH, "tensor 'T1'", "is used before it is produced"));
  json_case("json_no_output", graph_json(std::string(kX) + ", " + t1, relu_node("a", "X", "T1")),
            rejected(ErrorCode::INVALID_GRAPH, "", "no tensor is marked as an output"));
  json_case("json_no_nodes", graph_json(kX, ""), rejected(ErrorCode::INVALID_GRAPH, "", "the graph has no operations"));
  json_case(
      "json_missing_input_slot",
      graph_json(
          std::string(kX) + ", " + t2,
          R"({"name": "a", "op": "pointwise", "mode": "ADD", "inputs": {"IN_0": "X"}, "outputs": {"OUT": "T2"}})"),
      rejected(ErrorCode::INVALID_VALUE, "node 'a' (pointwise)", "ADD takes 2 inputs, got 1"));
}

// Tensor fields the reader must refuse by JSON path: integers beyond int64, numbers that are no
// integers, wrong types; and texts that are no graph (nested 20000 deep, cut short).
void add_json_field_cases(std::vector<Case>& cases) {
  auto json_case = [&cases](std::string name, std::string text, Expect e) {
    cases.push_back(Case{std::move(name), {}, std::move(text), std::move(e)});
  };
  const std::string t2 = R"({"name": "T2", "output": true})";
  const std::vector<std::pair<std::string, std::string>> numbers{
      {"uid_2p64", R"("uid": 18446744073709551615)"},
      {"uid_2p63", R"("uid": 9223372036854775808)"},
      {"uid_below_int64", R"("uid": -9223372036854775809)"},
      {"uid_float", R"("uid": 1.5)"},
      {"uid_string", R"("uid": "7")"},
      {"dim_1e300", R"("dim": [1e300], "stride": [1])"},
      {"dim_2p63", R"("dim": [9223372036854775808], "stride": [1])"},
      {"stride_below_int64", R"("dim": [4], "stride": [-9223372036854775809])"},
      {"dim_string", R"("dim": "abc", "stride": [1])"},
      {"dim_nested", R"("dim": [[4]], "stride": [1])"},
      {"value_string", R"("dim": [1], "stride": [1], "value": "x")"}};
  for (const auto& [name, field] : numbers) {
    std::string tensor = R"({"name": "X", )" + field + "}";
    if (field.find("\"dim\"") == std::string::npos)
      tensor = R"({"name": "X", "dim": [4], "stride": [1], )" + field + "}";
    json_case("json_" + name, graph_json(tensor + ", " + t2, relu_node("a", "X", "T2")),
              rejected(ErrorCode::INVALID_VALUE, "tensor 'X' at $.tensors[0]", "expected"));
  }
  json_case("json_deep_nesting",
            graph_json(std::string(kX) + ", " + std::string(20000, '[') + std::string(20000, ']'), ""),
            rejected(ErrorCode::INVALID_VALUE, "graph JSON", "nesting deeper than 16 levels"));
  json_case("json_truncated", graph_json(std::string(kX) + ", " + t2, relu_node("a", "X", "T2")).substr(0, 90),
            rejected(ErrorCode::INVALID_VALUE, "graph JSON", "not valid JSON"));
}

}  // namespace

void add_graph_cases(std::vector<Case>& cases) {
  add_uid_cases(cases);
  add_pass_by_value_cases(cases);
  add_matmul_cases(cases);
  add_missing_input_cases(cases);
  add_norm_reduction_cases(cases);
  add_sdpa_cases(cases);
  add_json_graph_cases(cases);
  add_json_field_cases(cases);
}

}  // namespace bad_input
