// The CPU sdpa engines' reading of ragged offsets, page tables, bias, ALiBi and dropout.
#include "engines/cpu/sdpa/sdpa_inputs.hpp"

#include <cmath>

#include "core/checked.hpp"

namespace dnngraph::cpu::sdpa {
namespace {

Status bad_offset(const std::string& node, const std::string& tensor, const std::string& what) {
  return {ErrorCode::GRAPH_EXECUTION_FAILED, "node '" + node + "', tensor '" + tensor + "': " + what};
}

int64_t span_elements(const ir::Tensor& t) { return t.span_bytes() / static_cast<int64_t>(size_of(t.dtype)); }

}  // namespace

int64_t read_index(const Operand& op, const void* data, int64_t i) {
  const int64_t at = i * op.st[0];
  if (op.dtype == DataType::INT64) return static_cast<const int64_t*>(data)[at];
  return static_cast<const int32_t*>(data)[at];
}

Status map_rows(const ir::Graph& g, const std::string& node, const Operand& op, const Operand& ragged,
                const void* ragged_ptr, const std::vector<int64_t>& rows, RowMap& out) {
  out = RowMap{};
  out.op = op;
  out.base.resize(rows.size());
  const ir::Tensor& t = g.tensor(op.id);
  const int64_t span = span_elements(t);
  for (size_t b = 0; b < rows.size(); ++b) {
    if (!ragged_ptr) {
      out.base[b] = static_cast<int64_t>(b) * op.st[0];
      continue;
    }
    const int64_t base = read_index(ragged, ragged_ptr, static_cast<int64_t>(b));
    int64_t end = 0;
    const bool fits = rows[b] <= 0 ||
                      (base >= 0 && checked::max_offset({t.dims[1], rows[b], t.dims[3]}, {op.st[1], op.st[2], op.st[3]}, end) &&
                       checked::add(end, base, end) && end < span);
    if (!fits)
      return bad_offset(node, t.name, "ragged offset " + std::to_string(base) + " of batch " + std::to_string(b) +
                                          " with " + std::to_string(rows[b]) + " rows reaches outside its " +
                                          std::to_string(span) + " elements");
    out.base[b] = base;
  }
  return {};
}

Status map_pages(const ir::Graph& g, const std::string& node, const Operand& op, const Operand& table,
                 const void* table_ptr, const Operand& table_ragged, const void* table_ragged_ptr,
                 const std::vector<int64_t>& keys, RowMap& out) {
  out = RowMap{};
  out.op = op;
  const ir::Tensor& container = g.tensor(op.id);
  const ir::Tensor& tt = g.tensor(table.id);
  out.block_size = container.dims[2];
  out.pages = tt.dims[2];
  out.blocks.assign(keys.size() * static_cast<size_t>(out.pages), 0);
  const int64_t table_span = span_elements(tt);
  for (size_t b = 0; b < keys.size(); ++b) {
    const int64_t used = (keys[b] + out.block_size - 1) / out.block_size;  // keys[b] <= pages * block_size
    int64_t base = static_cast<int64_t>(b) * table.st[0];
    if (table_ragged_ptr) {
      base = read_index(table_ragged, table_ragged_ptr, static_cast<int64_t>(b));
      int64_t end = 0;
      if (used > 0 && (base < 0 || !checked::mul_add(used - 1, table.st[2], base, end) || end >= table_span))
        return bad_offset(node, tt.name, "ragged offset " + std::to_string(base) + " of batch " + std::to_string(b) +
                                             " with " + std::to_string(used) + " pages reaches outside its " +
                                             std::to_string(table_span) + " elements");
    }
    for (int64_t p = 0; p < used; ++p) {
      const int64_t blk = static_cast<const int32_t*>(table_ptr)[base + p * table.st[2]];
      if (blk < 0 || blk >= container.dims[0])
        return bad_offset(node, tt.name, "page " + std::to_string(p) + " of batch " + std::to_string(b) +
                                             " names block " + std::to_string(blk) + " of a container of " +
                                             std::to_string(container.dims[0]) + " blocks");
      out.blocks[b * static_cast<size_t>(out.pages) + static_cast<size_t>(p)] = blk;
    }
  }
  return {};
}

void ScoreTerms::add_tile(int64_t b, int64_t hi, int64_t i0, int64_t rows, int64_t j0, int64_t cols, float* s,
                          int64_t ld, float factor, std::vector<float>& tmp) const {
  tmp.resize(static_cast<size_t>(cols));
  const float slope = slopes.empty() ? 0.0f : slopes[static_cast<size_t>(hi)];
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = i0 + r;
    float* row = s + r * ld;
    if (bias_ptr) {
      const int64_t off = bias.offset(bias_b == 1 ? 0 : b, bias_h == 1 ? 0 : hi, i, j0);
      load_strided(bias_ptr, bias.dtype, off, bias.st[3], cols, tmp.data(), 1, factor);
      for (int64_t c = 0; c < cols; ++c) row[c] += tmp[static_cast<size_t>(c)];
    }
    if (slope != 0.0f) {
      const float step = factor * slope;
      for (int64_t c = 0; c < cols; ++c) row[c] += step * static_cast<float>(j0 + c - i);
    }
  }
}

void ScoreTerms::keep_tile(int64_t b, int64_t hi, int64_t i0, int64_t rows, int64_t j0, int64_t cols, float* z,
                           int64_t ld) const {
  for (int64_t r = 0; r < rows; ++r) {
    const uint64_t first = static_cast<uint64_t>(((b * h + hi) * sq + i0 + r) * skv + j0);
    dropout_row(*dropout, first, cols, z + r * ld, keep_scale);
  }
}

std::vector<float> alibi_slopes(int64_t heads) {
  int64_t n = 1;
  while (n * 2 <= heads) n *= 2;
  std::vector<float> m(static_cast<size_t>(heads));
  const double m0 = std::pow(2.0, -8.0 / static_cast<double>(n)), m_hat0 = std::pow(2.0, -4.0 / static_cast<double>(n));
  for (int64_t h = 0; h < heads; ++h)
    m[static_cast<size_t>(h)] = static_cast<float>(h < n ? std::pow(m0, static_cast<double>(h + 1))
                                                         : std::pow(m_hat0, static_cast<double>(2 * (h - n) + 1)));
  return m;
}

}  // namespace dnngraph::cpu::sdpa
