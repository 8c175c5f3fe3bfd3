// OpAttr: the closed set of operations, as one variant; each op's traits (graph/op_traits.hpp)
// say the rest.
#pragma once
#include <string_view>
#include <variant>

#include "dnngraph/attributes.hpp"

namespace dnngraph {

using OpAttr = std::variant<ConvFpropAttr, ConvDgradAttr, ConvWgradAttr, MatmulAttr, PointwiseAttr,
                            ReductionAttr, BatchnormInferenceAttr, LayernormAttr, RmsnormAttr,
                            ResampleAttr, SdpaAttr, ReshapeAttr, TransposeAttr, SliceAttr,
                            ConcatenateAttr, LayernormBackwardAttr, RmsnormBackwardAttr, BatchnormAttr,
                            BatchnormBackwardAttr, InstancenormAttr, InstancenormBackwardAttr, GenstatsAttr,
                            SdpaBackwardAttr>;

// Input slots, in the order the builder stores them. Optional inputs are null when absent.
namespace slot {
enum Conv { CONV_X = 0, CONV_W = 1 };               // fprop: X, W; dgrad: DY, W; wgrad: DY, X
enum Matmul { MM_A = 0, MM_B = 1 };
enum Bn { BN_X = 0, BN_MEAN, BN_INV_VAR, BN_SCALE, BN_BIAS };
enum Ln { LN_X = 0, LN_SCALE, LN_BIAS, LN_EPS };     // rmsnorm: X, SCALE, BIAS (optional), EPS
// The training norms (norm_training.cpp). Backward: DY, X, SCALE, MEAN, INV_VARIANCE (rmsnorm: no
// MEAN slot); batchnorm: X, SCALE, BIAS, EPSILON, then the optional running statistics.
enum NormBwd { NB_DY = 0, NB_X, NB_SCALE, NB_MEAN, NB_INV_VAR };
enum RmsBwd { RB_DY = 0, RB_X, RB_SCALE, RB_INV_RMS };
enum BnTrain { BT_X = 0, BT_SCALE, BT_BIAS, BT_EPS, BT_PREV_MEAN, BT_PREV_VAR, BT_MOMENTUM };
// sdpa's optional inputs after the padding mask's lengths: bias, dropout's seed and offset, page
// tables, then the ragged offsets of Q, K, V, O and the page tables (TensorAttr::set_ragged_offset
// holds them; validation copies them into these slots). Outputs: O, STATS, RNG_DUMP.
enum Sdpa {
  SDPA_Q = 0, SDPA_K, SDPA_V, SDPA_SEQ_Q, SDPA_SEQ_KV, SDPA_BIAS, SDPA_SEED, SDPA_OFFSET, SDPA_K_TABLE,
  SDPA_V_TABLE, SDPA_Q_RAGGED, SDPA_K_RAGGED, SDPA_V_RAGGED, SDPA_O_RAGGED, SDPA_K_TABLE_RAGGED,
  SDPA_V_TABLE_RAGGED, SDPA_INPUT_COUNT
};
// Outputs: dQ, dK, dV, DBIAS; the ragged offsets of the inputs, then of dQ, dK and dV.
enum SdpaBwd {
  SB_Q = 0, SB_K, SB_V, SB_O, SB_DO, SB_STATS, SB_SEQ_Q, SB_SEQ_KV, SB_BIAS, SB_SEED, SB_OFFSET, SB_Q_RAGGED,
  SB_K_RAGGED, SB_V_RAGGED, SB_O_RAGGED, SB_DO_RAGGED, SB_DQ_RAGGED, SB_DK_RAGGED, SB_DV_RAGGED, SB_INPUT_COUNT
};
}  // namespace slot

}  // namespace dnngraph
