// ref's reading of sdpa's optional inputs: ragged offsets and page tables (checked against the
// tensors' spans before any row is read), bias, ALiBi slopes, the dropout mask.
#include <cmath>
#include <string>

#include "core/checked.hpp"
#include "engines/ref/ref_sdpa_util.hpp"

namespace dnngraph::ref::sdpa {
namespace {

Status bad_offset(const std::string& tensor, const std::string& what) {
  return {ErrorCode::GRAPH_EXECUTION_FAILED, "tensor '" + tensor + "': " + what};
}

// Elements from the base pointer to the end of the tensor's last element.
int64_t span_elements(const View& v) {
  int64_t last = 0;
  checked::max_offset(v.dims, v.strides, last);  // validated tensors cannot overflow it
  return last + 1;
}

// Offset `base` plus `rows` rows of [h, rows, c] stays within `span`.
bool rows_fit(const View& v, int64_t base, int64_t rows, int64_t span) {
  if (rows <= 0) return true;
  int64_t end = 0;
  return base >= 0 && checked::max_offset({v.dims[1], rows, v.dims[3]}, {v.strides[1], v.strides[2], v.strides[3]}, end) &&
         checked::add(end, base, end) && end < span;
}

}  // namespace

int64_t read_index(const View& v, int64_t i) {
  const int64_t at = i * v.strides[0];
  if (v.dtype == DataType::INT64) return static_cast<const int64_t*>(v.data)[at];
  return static_cast<const int32_t*>(v.data)[at];
}

Status rows_of(const NodeArgs& a, bool is_output, size_t slot, const View& ragged, const std::vector<int64_t>& rows,
               Rows& out) {
  out = Rows{};
  out.view = is_output ? a.out[slot] : a.in[slot];
  const int64_t batches = static_cast<int64_t>(rows.size());
  out.base.resize(rows.size());
  const std::string& name = a.graph.tensor(is_output ? a.node.outputs[slot] : a.node.inputs[slot]).name;
  const int64_t span = span_elements(out.view);
  for (int64_t b = 0; b < batches; ++b) {
    if (!ragged.present()) {
      out.base[static_cast<size_t>(b)] = b * out.view.strides[0];
      continue;
    }
    const int64_t base = read_index(ragged, b);
    if (!rows_fit(out.view, base, rows[static_cast<size_t>(b)], span))
      return bad_offset(name, "ragged offset " + std::to_string(base) + " of batch " + std::to_string(b) + " with " +
                                  std::to_string(rows[static_cast<size_t>(b)]) + " rows reaches outside its " +
                                  std::to_string(span) + " elements");
    out.base[static_cast<size_t>(b)] = base;
  }
  return {};
}

Status paged_rows_of(const NodeArgs& a, size_t slot, size_t table_slot, const View& table_ragged,
                     const std::vector<int64_t>& keys, Rows& out) {
  out = Rows{};
  out.view = a.in[slot];
  const View& table = a.in[table_slot];
  const std::string& table_name = a.graph.tensor(a.node.inputs[table_slot]).name;
  out.block_size = out.view.dims[2];
  out.pages = table.dims[2];
  out.blocks.assign(keys.size() * static_cast<size_t>(out.pages), 0);
  const int64_t table_span = span_elements(table);
  for (size_t b = 0; b < keys.size(); ++b) {
    const int64_t used = (keys[b] + out.block_size - 1) / out.block_size;  // keys[b] <= pages * block_size
    int64_t base = static_cast<int64_t>(b) * table.strides[0];
    if (table_ragged.present()) {
      base = read_index(table_ragged, static_cast<int64_t>(b));
      int64_t end = 0;
      if (used > 0 && (base < 0 || !checked::mul_add(used - 1, table.strides[2], base, end) || end >= table_span))
        return bad_offset(table_name, "ragged offset " + std::to_string(base) + " of batch " + std::to_string(b) +
                                          " with " + std::to_string(used) + " pages reaches outside its " +
                                          std::to_string(table_span) + " elements");
    }
    for (int64_t p = 0; p < used; ++p) {
      const int64_t blk = static_cast<const int32_t*>(table.data)[base + p * table.strides[2]];
      if (blk < 0 || blk >= out.view.dims[0])
        return bad_offset(table_name, "page " + std::to_string(p) + " of batch " + std::to_string(b) +
                                          " names block " + std::to_string(blk) + " of a container of " +
                                          std::to_string(out.view.dims[0]) + " blocks");
      out.blocks[b * static_cast<size_t>(out.pages) + static_cast<size_t>(p)] = blk;
    }
  }
  return {};
}

std::vector<double> alibi_slopes(int64_t heads) {
  int64_t n = 1;
  while (n * 2 <= heads) n *= 2;  // the largest power of two not above heads
  std::vector<double> m(static_cast<size_t>(heads));
  const double m0 = std::pow(2.0, -8.0 / static_cast<double>(n)), m_hat0 = std::pow(2.0, -4.0 / static_cast<double>(n));
  for (int64_t h = 0; h < heads; ++h)
    m[static_cast<size_t>(h)] = h < n ? std::pow(m0, static_cast<double>(h + 1))
                                      : std::pow(m_hat0, static_cast<double>(2 * (h - n) + 1));
  return m;
}

template <class Attr>
ScoreTerms score_terms(const Attr& attr, const NodeArgs& a, size_t bias_slot, size_t seed_slot, int64_t h, int64_t sq,
                       int64_t skv) {
  ScoreTerms t;
  t.bias = a.in[bias_slot];
  if (attr.get_alibi_mask()) t.slopes = alibi_slopes(h);
  if (auto p = attr.get_dropout_probability()) {
    t.dropout.emplace(static_cast<uint64_t>(read_index(a.in[seed_slot], 0)),
                      static_cast<uint64_t>(read_index(a.in[seed_slot + 1], 0)), *p);
    t.keep_scale = 1.0 / (1.0 - *p);
  }
  t.h = h, t.sq = sq, t.skv = skv;
  return t;
}

template ScoreTerms score_terms(const SdpaAttr&, const NodeArgs&, size_t, size_t, int64_t, int64_t, int64_t);
template ScoreTerms score_terms(const SdpaBackwardAttr&, const NodeArgs&, size_t, size_t, int64_t, int64_t, int64_t);

}  // namespace dnngraph::ref::sdpa
