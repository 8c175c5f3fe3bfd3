// What cpu_sdpa_flash and cpu_sdpa_backward_flash read of sdpa's optional inputs: rows found per
// batch (ragged offsets, page tables; checked against the tensors' spans at execute, before any
// row is read), and the terms that bias, ALiBi and dropout put on a tile of scores.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/philox.hpp"
#include "dnngraph/status.hpp"
#include "engines/cpu/sdpa/flash_kernels.hpp"
#include "engines/cpu/sdpa/sdpa_tiles.hpp"

namespace dnngraph::cpu::sdpa {

// An operand's rows: the element offset of (b, h, s, 0). Dense and ragged operands add a per-batch
// base; paged K and V look up the block of page s / block_size.
struct RowMap {
  Operand op;
  std::vector<int64_t> base;
  int64_t block_size = 0, pages = 0;  // paged when block_size > 0
  std::vector<int64_t> blocks;        // [b * pages + page]

  int64_t row(int64_t b, int64_t h, int64_t s) const {
    if (block_size > 0) {
      const int64_t blk = blocks[static_cast<size_t>(b * pages + s / block_size)];
      return blk * op.st[0] + h * op.st[1] + (s % block_size) * op.st[2];
    }
    return base[static_cast<size_t>(b)] + h * op.st[1] + s * op.st[2];
  }
};

// Each batch's band of the padding mask (SEQ_LEN_Q / SEQ_LEN_KV values clamped to the tensors'
// lengths; the diagonal's offset for bottom-right alignment; the window bounds) into `bands`, and
// the lengths alone into `q_len` / `kv_len` for map_rows. Problem: either CPU engine's (b, sq, skv,
// seq_q, seq_kv, bottom_right, left, right).
template <class Problem>
void batch_bands(const Problem& pr, const int32_t* seq_q, const int32_t* seq_kv, std::vector<Band>& bands,
                 std::vector<int64_t>& q_len, std::vector<int64_t>& kv_len) {
  for (int64_t b = 0; b < pr.b; ++b) {
    const int64_t q = seq_q ? std::clamp<int64_t>(seq_q[b * pr.seq_q.st[0]], 0, pr.sq) : pr.sq;
    const int64_t kv = seq_kv ? std::clamp<int64_t>(seq_kv[b * pr.seq_kv.st[0]], 0, pr.skv) : pr.skv;
    bands.push_back(Band{q, kv, pr.bottom_right ? kv - q : 0, pr.left, pr.right});
    q_len.push_back(q);
    kv_len.push_back(kv);
  }
}

// One element of an INT32 or INT64 operand.
int64_t read_index(const Operand& op, const void* data, int64_t i);

// `op` (tensor of `g`) with batch b holding rows[b] rows, placed by `ragged` (id < 0: the batch
// stride). A ragged offset that puts rows outside the tensor's span is an execution error.
Status map_rows(const ir::Graph& g, const std::string& node, const Operand& op, const Operand& ragged,
                const void* ragged_ptr, const std::vector<int64_t>& rows, RowMap& out);
// Paged `op` through `table` (and its ragged offset): batch b's first keys[b] keys.
Status map_pages(const ir::Graph& g, const std::string& node, const Operand& op, const Operand& table,
                 const void* table_ptr, const Operand& table_ragged, const void* table_ragged_ptr,
                 const std::vector<int64_t>& keys, RowMap& out);

// Bias, ALiBi and dropout, as src/graph/sdpa.cpp defines them.
struct ScoreTerms {
  Operand bias;
  const void* bias_ptr = nullptr;
  int64_t bias_b = 1, bias_h = 1;  // the bias's dims 0 and 1 (1: broadcast)
  std::vector<float> slopes;       // ALiBi's, per head; empty: none
  std::optional<philox::DropoutMask> dropout;
  float keep_scale = 1.0f;
  int64_t h = 0, sq = 0, skv = 0;  // the dropout mask's index space [b, h, sq, skv]
  // The mask's rows: a Kernels::dropout_row (AVX2 or portable, the same bits).
  void (*dropout_row)(const philox::DropoutMask&, uint64_t, int64_t, float*, float) = nullptr;

  bool adds() const { return bias_ptr != nullptr || !slopes.empty(); }
  // s[r * ld + c] += factor * (bias + slope * (j - i)) at i = i0 + r, j = j0 + c, for r < rows, c < cols.
  void add_tile(int64_t b, int64_t hi, int64_t i0, int64_t rows, int64_t j0, int64_t cols, float* s, int64_t ld,
                float factor, std::vector<float>& tmp) const;
  // z[r * ld + c] = keep_scale where element (b, hi, i0 + r, j0 + c) is kept, else 0.
  void keep_tile(int64_t b, int64_t hi, int64_t i0, int64_t rows, int64_t j0, int64_t cols, float* z,
                 int64_t ld) const;
};

// ALiBi's slopes (Press et al.; the frontend test's compute_ref).
std::vector<float> alibi_slopes(int64_t heads);

// What a node asks for, resolved at build: the terms are made at execute from it and the pointers.
struct TermsSpec {
  Operand bias, seed, offset;
  int64_t bias_b = 1, bias_h = 1;  // the bias's dims 0 and 1
  bool alibi = false;
  std::optional<double> dropout;
  int64_t h = 0, sq = 0, skv = 0;
};
template <class Attr>
TermsSpec terms_spec(const ir::Graph& g, const Attr& attr, int bias_id, int seed_id, int offset_id, int64_t h,
                     int64_t sq, int64_t skv) {
  TermsSpec t;
  t.bias = operand(g, bias_id), t.seed = operand(g, seed_id), t.offset = operand(g, offset_id);
  if (bias_id >= 0) t.bias_b = g.tensor(bias_id).dims[0], t.bias_h = g.tensor(bias_id).dims[1];
  t.alibi = attr.get_alibi_mask();
  t.dropout = attr.get_dropout_probability();
  t.h = h, t.sq = sq, t.skv = skv;
  return t;
}
// `ptr(operand)` gives an operand's pointer (null when absent).
template <class Ptr>
ScoreTerms score_terms(const TermsSpec& spec, Ptr&& ptr, const Kernels& kern) {
  ScoreTerms t;
  t.dropout_row = kern.dropout_row;
  t.bias = spec.bias, t.bias_ptr = ptr(spec.bias), t.bias_b = spec.bias_b, t.bias_h = spec.bias_h;
  if (spec.alibi) t.slopes = alibi_slopes(spec.h);
  if (spec.dropout) {
    t.dropout.emplace(static_cast<uint64_t>(read_index(spec.seed, ptr(spec.seed), 0)),
                      static_cast<uint64_t>(read_index(spec.offset, ptr(spec.offset), 0)), *spec.dropout);
    t.keep_scale = static_cast<float>(1.0 / (1.0 - *spec.dropout));
  }
  t.h = spec.h, t.sq = spec.sq, t.skv = spec.skv;
  return t;
}

}  // namespace dnngraph::cpu::sdpa

