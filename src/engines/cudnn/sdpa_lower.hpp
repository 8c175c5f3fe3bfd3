// Lowering dnngraph's sdpa node to a cuDNN operation graph. cuDNN's backend has no single
// attention operation: the cuDNN frontend writes attention as the graph below, which cuDNN's
// runtime-fusion flash-attention engines recognise (see the frontend's
// scaled_dot_product_flash_attention.h, softmax.h, diagonal_band_mask.h, attn_score_modifiers.h):
//
//   S = Q . K^T (K read through swapped strides)      matmul, fp32; M/N overrides = seq_len_q/kv
//   S = S * scale                                      pointwise MUL with a by-value FLOAT scalar
//   [padding]  S = select(row < seq_q && col < seq_kv, S, -inf)   GEN_INDEX x2, CMP_LT x2, AND, BINARY_SELECT
//   [causal]   S = select(row >= col, S, -inf)         GEN_INDEX x2, CMP_GE, BINARY_SELECT
//   M = max_row(S); E = exp(S - M); L = sum_row(E)     REDUCTION MAX, SUB, EXP, REDUCTION ADD
//   [training] STATS = M + log(L)                      LOG, ADD
//   P = E / L (Q's type); O = P . V                    DIV, matmul; M/K overrides = seq_len_q/kv
//
// What is offered: HALF/BFLOAT16, no mask or a top-left causal mask, with or without the padding
// mask; the sdpa node alone in its partition. Whether cuDNN runs it (head dims, layouts, the GPU)
// is cuDNN's call: its heuristics' refusal is the engine's reason.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engines/cudnn/lower.hpp"

namespace dnngraph::cudnn {

// The uids of the lowering's own by-value constants (far above any IR tensor's id + 1).
inline constexpr int64_t kSdpaScaleUid = int64_t{1} << 40, kSdpaNegInfUid = kSdpaScaleUid + 1;

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
