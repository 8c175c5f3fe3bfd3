// cpu_sdpa_flash: one task per (batch, head, block of kBlockQ query rows). A task walks only the key
// blocks its rows can see (causal and sliding-window masks end the walk early) and, inside a tile,
// only the part each block of kMr rows can see. It computes scores with the GEMM tile kernel, folds
// them into a running max/sum (online softmax) and accumulates P·V in fp32. Inputs of any layout
// and of type FLOAT, HALF or BFLOAT16 are converted while tiles load. Bias and ALiBi are added to
// the score tile before the softmax step, dropout scales its P after it (the row sums stay those
// before dropout); ragged and paged rows are found per batch (sdpa_inputs.hpp). Rules: src/graph/sdpa.cpp.
#include "engines/cpu/sdpa/sdpa_flash.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/checked.hpp"
#include "core/dtype.hpp"
#include "engines/cpu/cpu_engine.hpp"
#include "engines/cpu/sdpa/flash_kernels.hpp"
#include "engines/cpu/sdpa/sdpa_inputs.hpp"
#include "engines/cpu/sdpa/sdpa_tiles.hpp"
#include "engines/cpu/simd/transpose_words.hpp"
#include "runtime/cpu/thread_pool.hpp"

namespace dnngraph::cpu {
namespace {

using sdpa::kMr;
using sdpa::kNr;
using sdpa::Band;
using sdpa::is_tile_type;
using sdpa::load_strided;
using sdpa::Operand;
using sdpa::operand;
using sdpa::round_up;
using sdpa::RowMap;
using sdpa::store_strided;

constexpr int64_t kBlockQ = 16 * kMr;  // query rows per task
constexpr int64_t kBlockKv = 4 * kNr;  // keys per tile
constexpr float kLog2e = 1.44269504088896340736f;
constexpr float kLn2 = 0.69314718055994530942f;

// Everything execute() needs, resolved once at build.
struct Problem {
  int64_t b = 0, h = 0, hk = 0, hv = 0, sq = 0, skv = 0, d = 0, dv = 0;
  Operand q, k, v, seq_q, seq_kv, o, stats, dump, k_table, v_table;
  Operand q_ragged, k_ragged, v_ragged, o_ragged, k_table_ragged, v_table_ragged;
  sdpa::TermsSpec terms;
  float scale_log2 = 0;  // attn_scale * log2(e): scores come out in log2 units
  std::optional<int64_t> left, right;
  bool bottom_right = false, paged = false;
  std::string node;
};

Problem make_problem(const Partition& p) {
  const ir::Graph& g = *p.graph;
  const ir::Node& n = p.node(0);
  const auto& attr = std::get<SdpaAttr>(n.attr);
  auto in = [&](size_t k) { return operand(g, k < n.inputs.size() ? n.inputs[k] : -1); };
  Problem pr;
  pr.q = in(slot::SDPA_Q), pr.k = in(slot::SDPA_K), pr.v = in(slot::SDPA_V);
  pr.seq_q = in(slot::SDPA_SEQ_Q), pr.seq_kv = in(slot::SDPA_SEQ_KV);
  pr.k_table = in(slot::SDPA_K_TABLE), pr.v_table = in(slot::SDPA_V_TABLE);
  pr.q_ragged = in(slot::SDPA_Q_RAGGED), pr.k_ragged = in(slot::SDPA_K_RAGGED), pr.v_ragged = in(slot::SDPA_V_RAGGED);
  pr.o_ragged = in(slot::SDPA_O_RAGGED), pr.k_table_ragged = in(slot::SDPA_K_TABLE_RAGGED);
  pr.v_table_ragged = in(slot::SDPA_V_TABLE_RAGGED);
  pr.o = operand(g, n.outputs[0]);
  pr.stats = operand(g, n.outputs[1]);
  if (attr.get_dropout_probability() && !g.tensor(n.outputs[2]).is_virtual) pr.dump = operand(g, n.outputs[2]);
  const auto& qd = g.tensor(pr.q.id).dims;
  const auto& kd = g.tensor(pr.k.id).dims;
  pr.b = qd[0], pr.h = qd[1], pr.sq = qd[2], pr.d = qd[3];
  pr.paged = pr.k_table.id >= 0;
  pr.hk = kd[1], pr.skv = pr.paged ? *attr.get_paged_attention_max_seq_len_kv() : kd[2];
  pr.hv = g.tensor(pr.v.id).dims[1], pr.dv = g.tensor(pr.v.id).dims[3];
  pr.node = n.name;
  auto id = [&](size_t k) { return k < n.inputs.size() ? n.inputs[k] : -1; };
  pr.terms = sdpa::terms_spec(g, attr, id(slot::SDPA_BIAS), id(slot::SDPA_SEED), id(slot::SDPA_OFFSET), pr.h, pr.sq,
                              pr.skv);
  const double scale = attr.get_attn_scale().value_or(1.0 / std::sqrt(static_cast<double>(pr.d)));
  pr.scale_log2 = static_cast<float>(scale) * kLog2e;
  pr.left = attr.get_diagonal_band_left_bound();
  pr.right = attr.get_diagonal_band_right_bound();
  pr.bottom_right = attr.get_diagonal_alignment() == DiagonalAlignment::BOTTOM_RIGHT;
  return pr;
}

// Per-thread fp32 tiles, 64-byte aligned.
class Scratch {
 public:
  // The tiles' floats: Q, K^T, S, V, the accumulators, m and l.
  static std::array<int64_t, 7> sizes(const Problem& p) {
    const int64_t d = p.d, dv_pad = round_up(p.dv, kNr);
    return {kBlockQ * d, d * kBlockKv, kBlockQ * kBlockKv, kBlockKv * dv_pad, kBlockQ * dv_pad, kBlockQ, kBlockQ};
  }
  // Every tile, 64-byte aligned, and the alignment slack: false when that exceeds checked::kMaxSpanBytes.
  static bool total_floats(const Problem& p, int64_t& total) {
    total = 16;
    for (int64_t s : sizes(p))
      if (!checked::add(total, round_up(s, 16), total)) return false;
    return total <= checked::kMaxSpanBytes / 4;
  }

  explicit Scratch(const Problem& p) {
    const std::array<int64_t, 7> tile = sizes(p);
    int64_t total = 0;
    total_floats(p, total);  // check() refused problems where it fails
    buf_.assign(static_cast<size_t>(total), 0.0f);
    float* at = buf_.data();
    at += (16 - (reinterpret_cast<uintptr_t>(at) / sizeof(float)) % 16) % 16;
    float** slots[] = {&q, &kt, &s, &v, &acc, &m, &l};
    for (size_t i = 0; i < 7; ++i) {
      *slots[i] = at;
      at += round_up(tile[i], 16);
    }
  }
  float *q = nullptr, *kt = nullptr, *s = nullptr, *v = nullptr, *acc = nullptr, *m = nullptr, *l = nullptr;
  std::array<int64_t, kBlockQ> row_lo{}, row_hi{}, tile_lo{}, tile_hi{};
  std::array<sdpa::RowBlock, kBlockQ / kMr> qk_blocks{}, pv_blocks{};
  const float* v_tile = nullptr;  // sc.v, or V itself when it can be read in place
  int64_t ldv = 0;
  std::vector<float> row_tmp;  // a row of bias or dropout factors

 private:
  std::vector<float> buf_;
};

// One execute's pointers and per-batch rows, bands and terms.
struct Exec {
  const void *q, *k, *v;
  void *o, *stats, *dump;
  RowMap q_rows, k_rows, v_rows, o_rows;
  std::vector<Band> bands;
  sdpa::ScoreTerms terms;
  bool o_ragged = false;
};

class FlashPlan final : public Plan {
 public:
  FlashPlan(const Partition& p, bool avx2) : pr_(make_problem(p)), kern_(sdpa::kernels(avx2)), graph_(p.graph) {}

  Status execute(const ExecArgs& args) const override {
    auto ptr = [&](const Operand& o) -> void* { return o.id < 0 ? nullptr : args.ptrs[static_cast<size_t>(o.id)]; };
    Exec ex{ptr(pr_.q), ptr(pr_.k), ptr(pr_.v), ptr(pr_.o), ptr(pr_.stats), ptr(pr_.dump), {}, {}, {}, {}, {}, {},
            pr_.o_ragged.id >= 0};
    if (!ex.q || !ex.k || !ex.v)
      return {ErrorCode::INVALID_VARIANT_PACK, "cpu_sdpa_flash: Q, K or V has no pointer"};
    if (auto s = prepare(ptr, ex); !s.ok()) return s;
    ThreadPool& pool = args.handle.thread_pool();
    if (ex.dump) dump_mask(pool, ex);
    const int64_t q_blocks = (pr_.sq + kBlockQ - 1) / kBlockQ;
    const int64_t heads = pr_.b * pr_.h;
    // Later query blocks see more keys under causal masks: hand them out first.
    pool.parallel_for(heads * q_blocks, [&](int64_t begin, int64_t end) {
      Scratch scratch(pr_);
      for (int64_t t = begin; t < end; ++t) {
        const int64_t qb = q_blocks - 1 - t / heads, bh = t % heads;
        run_block(ex, bh / pr_.h, bh % pr_.h, qb * kBlockQ, scratch);
      }
    });
    return {};
  }

 private:
  // Bands per batch, then the rows of Q, O, K, V (ragged offsets and page tables checked here).
  template <class Ptr>
  Status prepare(Ptr&& ptr, Exec& ex) const {
    const auto* seq_q = static_cast<const int32_t*>(ptr(pr_.seq_q));
    const auto* seq_kv = static_cast<const int32_t*>(ptr(pr_.seq_kv));
    std::vector<int64_t> lq, lkv;
    sdpa::batch_bands(pr_, seq_q, seq_kv, ex.bands, lq, lkv);
    const ir::Graph& g = *graph_;
    if (auto s = sdpa::map_rows(g, pr_.node, pr_.q, pr_.q_ragged, ptr(pr_.q_ragged), lq, ex.q_rows); !s.ok()) return s;
    if (auto s = sdpa::map_rows(g, pr_.node, pr_.o, pr_.o_ragged, ptr(pr_.o_ragged), lq, ex.o_rows); !s.ok()) return s;
    if (pr_.paged) {
      if (auto s = sdpa::map_pages(g, pr_.node, pr_.k, pr_.k_table, ptr(pr_.k_table), pr_.k_table_ragged,
                                   ptr(pr_.k_table_ragged), lkv, ex.k_rows);
          !s.ok())
        return s;
      if (auto s = sdpa::map_pages(g, pr_.node, pr_.v, pr_.v_table, ptr(pr_.v_table), pr_.v_table_ragged,
                                   ptr(pr_.v_table_ragged), lkv, ex.v_rows);
          !s.ok())
        return s;
    } else {
      if (auto s = sdpa::map_rows(g, pr_.node, pr_.k, pr_.k_ragged, ptr(pr_.k_ragged), lkv, ex.k_rows); !s.ok())
        return s;
      if (auto s = sdpa::map_rows(g, pr_.node, pr_.v, pr_.v_ragged, ptr(pr_.v_ragged), lkv, ex.v_rows); !s.ok())
        return s;
    }
    ex.terms = sdpa::score_terms(pr_.terms, ptr, kern_);
    return {};
  }

  // The dropout mask of every element of [b, h, sq, skv], masked or not.
  void dump_mask(ThreadPool& pool, const Exec& ex) const {
    pool.parallel_for(pr_.b * pr_.h * pr_.sq, [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(pr_.skv));
      for (int64_t t = begin; t < end; ++t) {
        ex.terms.dropout_row(*ex.terms.dropout, static_cast<uint64_t>(t * pr_.skv), pr_.skv, row.data(), 1.0f);
        const int64_t b = t / (pr_.h * pr_.sq), h = t / pr_.sq % pr_.h, i = t % pr_.sq;
        store_strided(ex.dump, DataType::FLOAT, pr_.dump.offset(b, h, i, 0), pr_.dump.st[3], pr_.skv, row.data(), 1.0f);
      }
    });
  }

  void load_q(const Exec& ex, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t rows_pad, float* q) const {
    for (int64_t r = 0; r < rows; ++r)
      load_strided(ex.q, pr_.q.dtype, ex.q_rows.row(b, h, i0 + r), pr_.q.st[3], pr_.d, q + r * pr_.d, 1,
                   pr_.scale_log2);
    std::fill(q + rows * pr_.d, q + rows_pad * pr_.d, 0.0f);
  }

  // K^T tile [d x kBlockKv] (columns past `cols` zero) and V tile [cols x dv_pad] (pad columns
  // zero); dense fp32 V rows whose width is a multiple of kNr are read in place.
  void load_kv(const Exec& ex, int64_t b, int64_t kh, int64_t vh, int64_t j0, int64_t cols, int64_t n_pad,
               Scratch& sc) const {
    int64_t j = 0;
    // Dense fp32 keys, 8 evenly spaced rows at a time: K^T in 8 x 8 register blocks (key by key,
    // the scattered stores were a fifth of the encoder's attention).
    if (!pr_.paged && pr_.k.dtype == DataType::FLOAT && pr_.k.st[3] == 1 && simd::words_transpose_available()) {
      const auto* k = static_cast<const uint32_t*>(ex.k);
      auto* kt = reinterpret_cast<uint32_t*>(sc.kt);
      const int64_t ld = pr_.k.st[2];
      for (; j + 8 <= cols; j += 8) {
        const int64_t r0 = ex.k_rows.row(b, kh, j0 + j);
        if (ex.k_rows.row(b, kh, j0 + j + 7) - r0 != 7 * ld) break;
        int64_t c = 0;
        for (; c + 8 <= pr_.d; c += 8) simd::transpose_8x8_words(k + r0 + c, ld, kt + c * kBlockKv + j, kBlockKv);
        for (; c < pr_.d; ++c)
          for (int64_t q = 0; q < 8; ++q) kt[c * kBlockKv + j + q] = k[r0 + q * ld + c];
      }
    }
    for (; j < cols; ++j)
      load_strided(ex.k, pr_.k.dtype, ex.k_rows.row(b, kh, j0 + j), pr_.k.st[3], pr_.d, sc.kt + j, kBlockKv, 1.0f);
    for (int64_t c = 0; c < pr_.d && cols < n_pad; ++c)
      std::fill(sc.kt + c * kBlockKv + cols, sc.kt + c * kBlockKv + n_pad, 0.0f);
    const int64_t dv_pad = round_up(pr_.dv, kNr);
    if (!pr_.paged && pr_.v.dtype == DataType::FLOAT && pr_.v.st[3] == 1 && pr_.dv == dv_pad) {
      sc.v_tile = static_cast<const float*>(ex.v) + ex.v_rows.row(b, vh, j0);
      sc.ldv = pr_.v.st[2];
      return;
    }
    for (int64_t j = 0; j < cols; ++j) {
      float* row = sc.v + j * dv_pad;
      load_strided(ex.v, pr_.v.dtype, ex.v_rows.row(b, vh, j0 + j), pr_.v.st[3], pr_.dv, row, 1, 1.0f);
      std::fill(row + pr_.dv, row + dv_pad, 0.0f);
    }
    sc.v_tile = sc.v;
    sc.ldv = dv_pad;
  }

  // P *= the dropout factors of its elements (tile rows [0, rows), columns [0, cols)).
  void drop_tile(const Exec& ex, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
                 Scratch& sc) const {
    sc.row_tmp.resize(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      ex.terms.keep_tile(b, h, i0 + r, 1, j0, cols, sc.row_tmp.data(), cols);
      float* p = sc.s + r * kBlockKv;
      for (int64_t c = 0; c < cols; ++c) p[c] *= sc.row_tmp[static_cast<size_t>(c)];
    }
  }

  // Each row's visible columns in the tile [j0, j0 + cols), and per block of kMr rows the columns
  // the score GEMM must produce and the keys the P·V GEMM must sum: the masked rest is skipped.
  void tile_ranges(int64_t j0, int64_t cols, int64_t n_pad, int64_t rows, int64_t rows_pad, Scratch& sc) const {
    const int64_t dv_pad = round_up(pr_.dv, kNr);
    for (int64_t r = 0; r < rows_pad; ++r) {
      const bool live = r < rows;
      sc.tile_lo[r] = live ? std::clamp(sc.row_lo[r] - j0, int64_t{0}, cols) : 0;
      sc.tile_hi[r] = live ? std::clamp(sc.row_hi[r] - j0, int64_t{0}, cols) : 0;
    }
    for (int64_t blk = 0; blk < rows_pad / kMr; ++blk) {
      // Bands move right with the row: the block spans [first row's lo, last live row's hi).
      const int64_t r0 = blk * kMr, r1 = std::min(r0 + kMr, rows) - 1;
      const int64_t lo = r1 >= r0 ? sc.tile_lo[r0] : 0, hi = r1 >= r0 ? sc.tile_hi[r1] : 0;
      if (lo >= hi) {
        sc.qk_blocks[blk] = {0, 0, 0, 0};
        sc.pv_blocks[blk] = {0, 0, 0, 0};
        continue;
      }
      sc.qk_blocks[blk] = {lo / kNr * kNr, std::min(round_up(hi, kNr), n_pad), 0, pr_.d};
      sc.pv_blocks[blk] = {0, dv_pad, lo, hi};
    }
  }

  // One task: query rows [i0, i0 + kBlockQ) of head (b, h).
  void run_block(const Exec& ex, int64_t b, int64_t h, int64_t i0, Scratch& sc) const {
    const Band& band = ex.bands[static_cast<size_t>(b)];
    const int64_t rows_all = std::min(kBlockQ, pr_.sq - i0);
    const int64_t rows = std::clamp<int64_t>(band.seq_q - i0, 0, rows_all);  // the rest are padding
    const int64_t rows_pad = round_up(std::max<int64_t>(rows, 1), kMr);
    const int64_t dv_pad = round_up(pr_.dv, kNr);
    std::fill(sc.acc, sc.acc + std::max(rows_pad, rows_all) * dv_pad, 0.0f);  // rows that see nothing store it
    std::fill(sc.m, sc.m + kBlockQ, -std::numeric_limits<float>::infinity());
    std::fill(sc.l, sc.l + kBlockQ, 0.0f);
    for (int64_t r = 0; r < rows; ++r) sc.row_lo[r] = band.lo(i0 + r), sc.row_hi[r] = band.hi(i0 + r);
    // Rows' bands only move right, so the tile walk spans [first row's lo, last row's hi).
    const int64_t key_begin = rows ? sc.row_lo[0] : 0;
    const int64_t key_end = rows ? sc.row_hi[rows - 1] : 0;
    if (key_begin < key_end) load_q(ex, b, h, i0, rows, rows_pad, sc.q);
    const int64_t kh = h / (pr_.h / pr_.hk), vh = h / (pr_.h / pr_.hv);
    for (int64_t j0 = key_begin; j0 < key_end; j0 += kBlockKv) {
      const int64_t cols = std::min(kBlockKv, key_end - j0);
      const int64_t n_pad = round_up(cols, kNr);
      load_kv(ex, b, kh, vh, j0, cols, n_pad, sc);
      tile_ranges(j0, cols, n_pad, rows, rows_pad, sc);
      kern_.gemm(rows_pad, n_pad, pr_.d, sc.q, pr_.d, sc.kt, kBlockKv, sc.s, kBlockKv, false, sc.qk_blocks.data());
      if (ex.terms.adds()) ex.terms.add_tile(b, h, i0, rows, j0, cols, sc.s, kBlockKv, kLog2e, sc.row_tmp);
      kern_.softmax(sc.s, kBlockKv, rows_pad, n_pad, sc.tile_lo.data(), sc.tile_hi.data(), sc.m, sc.l, sc.acc, dv_pad,
                    dv_pad);
      if (ex.terms.dropout) drop_tile(ex, b, h, i0, rows, j0, cols, sc);
      kern_.gemm(rows_pad, dv_pad, cols, sc.s, kBlockKv, sc.v_tile, sc.ldv, sc.acc, dv_pad, true, sc.pv_blocks.data());
    }
    store_rows(ex, b, h, i0, rows, rows_all, sc);
  }

  // O = acc / l and STATS = ln(sum exp) for live rows; rows that saw no key and padded rows get 0
  // (their accumulators are still zero), except padded rows of a ragged O, which are the next batch's.
  void store_rows(const Exec& ex, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t rows_all,
                  const Scratch& sc) const {
    const int64_t dv_pad = round_up(pr_.dv, kNr);
    for (int64_t r = 0; r < rows_all; ++r) {
      const bool seen = r < rows && sc.l[r] > 0.0f;
      if (ex.o && (r < rows || !ex.o_ragged))
        store_strided(ex.o, pr_.o.dtype, ex.o_rows.row(b, h, i0 + r), pr_.o.st[3], pr_.dv, sc.acc + r * dv_pad,
                      seen ? 1.0f / sc.l[r] : 0.0f);
      if (ex.stats)
        static_cast<float*>(ex.stats)[pr_.stats.offset(b, h, i0 + r, 0)] =
            seen ? (sc.m[r] + std::log2(sc.l[r])) * kLn2 : 0.0f;
    }
  }

  Problem pr_;
  const sdpa::Kernels& kern_;
  const ir::Graph* graph_;  // the partition's, which the plan's owner keeps (names and spans for errors)
};

// Pairs (query, key) that some row sees, ignoring the padding mask (unknown until execution).
double visible_pairs(const Problem& p) {
  const Band band{p.sq, p.skv, p.bottom_right ? p.skv - p.sq : 0, p.left, p.right};
  double pairs = 0;
  for (int64_t i = 0; i < p.sq; ++i) pairs += static_cast<double>(std::max<int64_t>(band.hi(i) - band.lo(i), 0));
  return pairs;
}

class FlashEngine final : public Engine {
 public:
  std::string_view name() const override { return "cpu_sdpa_flash"; }

  Support check(const Partition& p, const Target& t) const override {
    if (!t.device().is_cpu()) return Support::no("runs on the CPU only, not on " + t.device().to_string());
    if (p.nodes.size() != 1)
      return Support::no("takes a partition of one sdpa node, this one has " + std::to_string(p.nodes.size()) +
                         " nodes");
    const ir::Node& n = p.node(0);
    if (!std::holds_alternative<SdpaAttr>(n.attr))
      return Support::no("node '" + n.name + "' is " + std::string(op_name(n.attr)) + ", not sdpa");
    const ir::Graph& g = *p.graph;
    for (int slot : {slot::SDPA_Q, slot::SDPA_K, slot::SDPA_V}) {
      const ir::Tensor& x = g.tensor(n.inputs[static_cast<size_t>(slot)]);
      if (!is_tile_type(x.dtype))
        return Support::no("node '" + n.name + "', tensor '" + x.name + "': data type " +
                           std::string(to_string(x.dtype)) + " is not supported (FLOAT, HALF, BFLOAT16)");
    }
    const ir::Tensor& o = g.tensor(n.outputs[0]);
    if (!is_tile_type(o.dtype))
      return Support::no("node '" + n.name + "', tensor '" + o.name + "': output data type " +
                         std::string(to_string(o.dtype)) + " is not supported (FLOAT, HALF, BFLOAT16)");
    const Problem pr = make_problem(p);
    if (int64_t floats = 0; !Scratch::total_floats(pr, floats))
      return Support::no("node '" + n.name + "', tensor '" + g.tensor(n.inputs[slot::SDPA_Q]).name + "': head dim " +
                         std::to_string(pr.d) + " (V's " + std::to_string(pr.dv) +
                         ") needs more than 2^48 bytes of tiles per thread");
    return Support::yes();
  }

  std::vector<Knobs> knob_space(const Partition&, const Target&) const override {
    if (sdpa::cpu_has_avx2_fma()) return {schema_.print({1}), schema_.print({0})};
    return {schema_.print({0})};
  }
  Status check_knobs(const Knobs& k) const override { return schema_.validate(k); }

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    const Problem pr = make_problem(p);
    const double heads = static_cast<double>(pr.b * pr.h);
    // Two GEMMs over the visible pairs plus about 16 FLOP-equivalents of softmax per pair.
    const double flops = heads * visible_pairs(pr) * (2.0 * static_cast<double>(pr.d + pr.dv) + 16.0);
    FlashKnobs knobs;
    const bool avx2 = schema_.parse(k, knobs).ok() && knobs.avx2;
    return roofline_seconds(flops, partition_bytes(p), t.info(), avx2 ? 0.6 : 0.1, 5e-6);
  }

  Status build(const Partition& p, const Target& t, const Knobs& k, std::unique_ptr<Plan>& plan) const override {
    if (Support s = check(p, t); !s.ok) return {ErrorCode::GRAPH_NOT_SUPPORTED, "cpu_sdpa_flash: " + s.reason};
    FlashKnobs knobs;
    if (auto s = schema_.parse(k, knobs); !s.ok()) return s;
    if (knobs.avx2 && !sdpa::cpu_has_avx2_fma())
      return {ErrorCode::GRAPH_NOT_SUPPORTED, "cpu_sdpa_flash: knob avx2=1 but this CPU lacks AVX2 or FMA"};
    plan = std::make_unique<FlashPlan>(p, knobs.avx2 != 0);
    return {};
  }

 private:
  // avx2=1: the AVX2 + FMA tile kernels; 0: the portable ones.
  struct FlashKnobs {
    int64_t avx2 = 0;
  };
  const KnobSchema<FlashKnobs> schema_{"cpu_sdpa_flash", {{"avx2", &FlashKnobs::avx2, 0, 1}}};
};

}  // namespace

const Engine& sdpa_flash_engine() { return engine_instance<FlashEngine>(); }

}  // namespace dnngraph::cpu
