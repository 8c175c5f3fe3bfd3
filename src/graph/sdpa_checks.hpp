// The rules of sdpa's and sdpa_backward's optional inputs (bias, dropout, ragged offsets, paged
// K and V), defined in sdpa_inputs.cpp; src/graph/sdpa.cpp applies them. Every message names the
// node, the tensor and the rule.
#pragma once
#include <cstdint>
#include <optional>

#include "graph/op_traits.hpp"

namespace dnngraph::sdpa_checks {

// The sizes the rules check against: Q's [b, h, sq, d] and the keys per batch (K's dim 2, or
// max_seq_len_kv with paged K and V).
struct Sizes {
  int64_t b = 0, h = 0, sq = 0, skv = 0;
};

// A bias [b or 1, h or 1, sq, skv] of HALF, BFLOAT16 or FLOAT.
Status check_bias(const NodeSpec& n, const TensorAttr* bias, const Sizes& s);
// Dropout: a probability in [0, 1) with seed and offset tensors of one INT64 or INT32 element.
Status check_dropout(const NodeSpec& n, std::optional<double> probability, const TensorAttr* seed,
                     const TensorAttr* offset);
// `owner`'s ragged offset (null: none): [b + 1, 1, 1, 1] INT32 or INT64, only with the padding mask
// (the per-batch lengths say how many rows each batch holds).
Status check_ragged(const NodeSpec& n, const TensorAttr& owner, const TensorAttr* offset, int64_t batch,
                    bool padding_mask);
// Tensors of the node that must not carry a ragged offset: "<tensor>: a ragged offset applies to ...".
Status check_not_ragged(const NodeSpec& n, const TensorAttr* t, const char* applies_to);
// Paged K and V: both tables or neither, max_seq_len_kv, the padding mask; each table
// [b, 1, pages, 1] INT32 with pages * block_size >= max_seq_len_kv (block_size: K's dim 2).
Status check_paged(const NodeSpec& n, const TensorAttr& k, const TensorAttr* k_table, const TensorAttr* v_table,
                   std::optional<int64_t> max_seq_len_kv, bool padding_mask, int64_t batch);

}  // namespace dnngraph::sdpa_checks
