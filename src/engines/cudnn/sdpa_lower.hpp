// Lowering dnngraph's sdpa node to a cuDNN operation graph. cuDNN's backend has no single
// attention operation: the cuDNN frontend writes attention as the graph below, which cuDNN's
// runtime-fusion flash-attention engines recognise (see the frontend's
// scaled_dot_product_flash_attention.h, softmax.h, diagonal_band_mask.h, attn_score_modifiers.h):
//
//   S = Q . K^T (K read through swapped strides)      matmul, fp32; M/N overrides = seq_len_q/kv
//   S = S * scale                                      pointwise MUL with a by-value FLOAT scalar
//   [padding]  S = select(row < seq_q && col < seq_kv, S, -inf)   GEN_INDEX x2, CMP_LT x2, AND, BINARY_SELECT
//   [right bound r, causal when 0]
//              S = select(row [+ s_kv - s_q] [+ r] >= col, S, -inf)
//                                                      GEN_INDEX x2, [ADD, SUB], [ADD], CMP_GE, BINARY_SELECT
//   [left bound l, sliding window]
//              S = select(col + l [- s_kv + s_q] > row, S, -inf)
//                                                      GEN_INDEX x2, ADD, [SUB, ADD], CMP_GT, BINARY_SELECT
//     (bracketed terms: bottom-right alignment; s_q/s_kv are the padding mask's per-batch lengths,
//     else the dims as INT32 constants, and a left bound without padding folds them into l)
//   M = max_row(S); E = exp(S - M); L = sum_row(E)     REDUCTION MAX, SUB, EXP, REDUCTION ADD
//   [training] STATS = M + log(L)                      LOG, ADD
//   P = E / L (Q's type); O = P . V                    DIV, matmul; M/K overrides = seq_len_q/kv
//
// What is offered: HALF/BFLOAT16, no mask, a causal mask aligned top-left or bottom-right, a
// diagonal band (right bound >= 0, left bound >= 1) in either alignment, each with or without the
// padding mask; the sdpa node alone in its partition. Held back, with the rule as the reason: the
// stats output with the padding mask (padded rows' stats come back infinite), a left bound of 0, bands that leave the first rows without a key (bottom-right or a left bound
// with seq_q > seq_kv, the frontend's rules), and cuDNN 9.14.0's known sliding-window bug. Whether
// cuDNN runs it (head dims, layouts, the GPU) is cuDNN's call: its heuristics' refusal is the
// engine's reason.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engines/cudnn/lower.hpp"

namespace dnngraph::cudnn {

// The uids of the lowering's own by-value constants (far above any IR tensor's id + 1).
inline constexpr int64_t kSdpaScaleUid = int64_t{1} << 40, kSdpaNegInfUid = kSdpaScaleUid + 1;
// The band masks' constants: s_kv and s_q (INT32, bottom-right without padding), the right bound
// (INT32, when not 0) and the left bound (FLOAT, or INT32 with padding and bottom-right).
inline constexpr int64_t kSdpaSeqKvUid = kSdpaScaleUid + 2, kSdpaSeqQUid = kSdpaScaleUid + 3,
                         kSdpaRightUid = kSdpaScaleUid + 4, kSdpaLeftUid = kSdpaScaleUid + 5;

// The partition's sdpa node, or null.
const ir::Node* sdpa_node(const Partition& p);
// "" when the engine offers the sdpa partition to cuDNN, else why not (naming node and rule).
std::string sdpa_unsupported_reason(const Partition& p, const ir::Node& n);
// Adjusts the tensor plans of an sdpa partition: K as K^T [b,hk,d,skv] (swapped dims and strides,
// the same memory), and appends the by-value constants (scale; -inf when a mask is on).
void sdpa_tensor_plans(const Partition& p, const ir::Node& n, std::vector<TensorPlan>& tensors);
// Creates the operations (and their virtual tensors) of the graph above. `by_uid` holds the
// finalized tensor descriptors of every tensor plan.
Status lower_sdpa(const CudnnApi& api, const Partition& p, const ir::Node& n,
                  const std::map<int64_t, BackendDescriptor>& by_uid, Lowered& out);

}  // namespace dnngraph::cudnn
