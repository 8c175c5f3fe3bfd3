// Matmul: A[..., M, K] x B[..., K, N] -> C[..., M, N]. Equal ranks >= 2; the batch dims broadcast
// (a 1 stretches). C's strides are row-major unless the user set them.
#include <string>

#include "core/dtype.hpp"
#include "graph/families.hpp"
#include "graph/infer_util.hpp"
#include "graph/ir.hpp"

namespace dnngraph {
namespace {

using dtype::is_fp8;

std::string type_name(DataType t) { return std::string(to_string(t)); }

// A and B share a type, or mix the two FP8 formats; BOOLEAN is no number to multiply.
Status check_input_types(const NodeSpec& node, const TensorAttr* a, const TensorAttr* b) {
  const DataType ta = a->get_data_type(), tb = b->get_data_type();
  for (const TensorAttr* t : {a, b})
    if (t->get_data_type() == DataType::BOOLEAN)
      return node_error(ErrorCode::INVALID_DATA_TYPE, node, t, "data type BOOLEAN is not allowed for matmul");
  if (ta != tb && !(is_fp8(ta) && is_fp8(tb)))
    return node_error(ErrorCode::INVALID_DATA_TYPE, node, b,
                      "data type " + type_name(tb) + " differs from the " + type_name(ta) + " of '" + a->get_name() +
                          "' (matmul inputs must share a data type, or mix FP8_E4M3 with FP8_E5M2)");
  return {};
}

Status infer(const MatmulAttr&, NodeSpec& node, const GraphDefaults& defaults) {
  const TensorAttr* a = node.inputs.size() > 0 ? node.inputs[0].get() : nullptr;
  const TensorAttr* b = node.inputs.size() > 1 ? node.inputs[1].get() : nullptr;
  if (auto s = check_input(node, a, "A"); !s.ok()) return s;
  if (auto s = check_input(node, b, "B"); !s.ok()) return s;
  const auto& ad = a->get_dim();
  const auto& bd = b->get_dim();
  const size_t rank = ad.size();
  if (rank < 2)
    return node_error(ErrorCode::INVALID_VALUE, node, a,
                      "rank " + std::to_string(rank) + " is below 2 (matmul operands are [..., M, K] and [..., K, N])");
  if (bd.size() != rank)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, b,
                      "rank " + std::to_string(bd.size()) + " differs from A's rank " + std::to_string(rank) +
                          " (matmul operands must have equal rank)");
  if (ad[rank - 1] != bd[rank - 2])
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, b,
                      "K=" + std::to_string(bd[rank - 2]) + " (dim " + std::to_string(rank - 2) +
                          ") differs from A's K=" + std::to_string(ad[rank - 1]) + " (its last dim)");
  std::vector<int64_t> batch;
  if (!broadcast_dims({ad.begin(), ad.end() - 2}, {bd.begin(), bd.end() - 2}, batch))
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, b,
                      "batch dims " + dims_to_string({bd.begin(), bd.end() - 2}) + " do not broadcast with A's " +
                          dims_to_string({ad.begin(), ad.end() - 2}));
  if (auto s = check_input_types(node, a, b); !s.ok()) return s;
  std::vector<int64_t> cd = batch;
  cd.push_back(ad[rank - 2]);
  cd.push_back(bd[rank - 1]);
  const DataType ta = a->get_data_type();
  const DataType fallback = is_fp8(ta) ? DataType::FLOAT : ta == DataType::INT8 ? DataType::INT32 : ta;
  TensorAttr& c = *node.outputs[0];
  if (auto s = fill_output(node, c, cd, {}, defaults, fallback); !s.ok()) return s;
  if (c.get_data_type() == DataType::BOOLEAN)
    return node_error(ErrorCode::INVALID_DATA_TYPE, node, &c, "data type BOOLEAN is not allowed for matmul");
  return {};
}

// 2 per multiply-add: C's elements times K.
double matmul_flops(const ir::Graph& g, const ir::Node& n) {
  return 2.0 * static_cast<double>(g.tensor(n.outputs[0]).volume()) * static_cast<double>(g.tensor(n.inputs[0]).dims.back());
}

}  // namespace

const OpTraits& traits(OpTag<MatmulAttr>) {
  static const auto t = typed<MatmulAttr, infer>({.name = "matmul", .inputs = {"A", "B"}, .required_inputs = 2,
                                                  .outputs = {"C"}, .fusion_pattern = "matmul_epilogue",
                                                  .flops = matmul_flops});
  return t;
}

}  // namespace dnngraph
