// cpu_sdpa_backward_flash. Pass 1: one task per (batch, KV head, block of kTile keys) walks every
// query block of the group's heads that sees its keys, rebuilds P = exp(scale * Q K^T - STATS) and
// dS = P * (dO V^T - rowsum(dO * O)), and sums dV += P^T dO and dK += dS^T Q in its own tiles
// (when K and V have different head counts, dK and dV take a pass each over their own groups).
// Pass 2: one task per (batch, head, block of kTile query rows) walks the keys it sees and sums
// dQ += dS K; with a bias, a task takes every batch and head that one row block of dBias sums
// over, and adds dS into it. No task writes another's output, so the result is the same on every
// run (no atomics), at the price of computing S and dP twice. Tiles are fp32 and use
// cpu_sdpa_flash's GEMM tile kernel; masks skip whole tiles. Bias and ALiBi join the scores before
// P is formed; dropout's factors scale dP (and P where it meets dO). Rules: src/graph/sdpa.cpp.
#include "engines/cpu/sdpa/sdpa_backward_flash.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engines/cpu/cpu_engine.hpp"
#include "engines/cpu/sdpa/flash_kernels.hpp"
#include "engines/cpu/sdpa/sdpa_inputs.hpp"
#include "engines/cpu/sdpa/sdpa_tiles.hpp"
#include "runtime/cpu/thread_pool.hpp"

namespace dnngraph::cpu {
namespace {

using sdpa::Band;
using sdpa::kMr;
using sdpa::kNr;
using sdpa::Operand;
using sdpa::round_up;
using sdpa::RowMap;

constexpr int64_t kTile = 48;  // query rows and keys per tile: a multiple of both kMr and kNr
constexpr float kLog2e = 1.44269504088896340736f;

// Operands with rows: Q, K, V, O, dO, dQ, dK, dV (index into Problem::rows and Exec's maps).
enum RowOperand { R_Q = 0, R_K, R_V, R_O, R_DO, R_DQ, R_DK, R_DV, R_COUNT };

struct Problem {
  int64_t b = 0, h = 0, hk = 0, hv = 0, sq = 0, skv = 0, d = 0, dv = 0, d_pad = 0, dv_pad = 0;
  std::array<Operand, R_COUNT> rows, ragged;
  Operand stats, seq_q, seq_kv, dbias;
  sdpa::TermsSpec terms;
  float scale = 0, scale_log2 = 0;
  std::optional<int64_t> left, right;
  bool bottom_right = false;
  std::string node;
};

Problem make_problem(const Partition& p) {
  const ir::Graph& g = *p.graph;
  const ir::Node& n = p.node(0);
  const auto& attr = std::get<SdpaBackwardAttr>(n.attr);
  auto id = [&](size_t slot) { return slot < n.inputs.size() ? n.inputs[slot] : -1; };
  auto in = [&](size_t slot) { return sdpa::operand(g, id(slot)); };
  Problem pr;
  const size_t row_slots[] = {slot::SB_Q, slot::SB_K, slot::SB_V, slot::SB_O, slot::SB_DO};
  for (size_t r = 0; r < 5; ++r) pr.rows[r] = in(row_slots[r]), pr.ragged[r] = in(slot::SB_Q_RAGGED + r);
  for (size_t r = 0; r < 3; ++r)
    pr.rows[R_DQ + r] = sdpa::operand(g, n.outputs[r]), pr.ragged[R_DQ + r] = in(slot::SB_DQ_RAGGED + r);
  pr.stats = in(slot::SB_STATS), pr.seq_q = in(slot::SB_SEQ_Q), pr.seq_kv = in(slot::SB_SEQ_KV);
  if (id(slot::SB_BIAS) >= 0) pr.dbias = sdpa::operand(g, n.outputs[3]);
  const auto& qd = g.tensor(pr.rows[R_Q].id).dims;
  const auto& kd = g.tensor(pr.rows[R_K].id).dims;
  const auto& vd = g.tensor(pr.rows[R_V].id).dims;
  pr.b = qd[0], pr.h = qd[1], pr.sq = qd[2], pr.d = qd[3];
  pr.hk = kd[1], pr.skv = kd[2], pr.hv = vd[1], pr.dv = vd[3];
  pr.d_pad = round_up(pr.d, kNr), pr.dv_pad = round_up(pr.dv, kNr);
  pr.scale = static_cast<float>(attr.get_attn_scale().value_or(1.0 / std::sqrt(static_cast<double>(pr.d))));
  pr.scale_log2 = pr.scale * kLog2e;
  pr.left = attr.get_diagonal_band_left_bound();
  pr.right = attr.get_diagonal_band_right_bound();
  pr.bottom_right = attr.get_diagonal_alignment() == DiagonalAlignment::BOTTOM_RIGHT;
  pr.terms = sdpa::terms_spec(g, attr, id(slot::SB_BIAS), id(slot::SB_SEED), id(slot::SB_OFFSET), pr.h, pr.sq, pr.skv);
  pr.node = n.name;
  return pr;
}

// One execute's pointers, rows, bands and terms.
struct Exec {
  std::array<void*, R_COUNT> ptr{};
  std::array<RowMap, R_COUNT> rows;
  std::array<bool, R_COUNT> ragged{};
  const float* stats = nullptr;
  void* dbias = nullptr;
  std::vector<Band> bands;
  sdpa::ScoreTerms terms;
};

// Per-thread fp32 tiles; padding rows and columns stay zero where a GEMM reads them.
struct Scratch {
  explicit Scratch(const Problem& p, bool dbias)
      : q(kTile * p.d_pad), d_o(kTile * p.dv_pad), kt(p.d * kTile), vt(p.dv * kTile), k_rows(kTile * p.d_pad),
        s(kTile * kTile), dp(kTile * kTile), pt(kTile * kTile), dst(kTile * kTile), z(kTile * kTile, 0.0f),
        acc_a(kTile * p.d_pad), acc_b(kTile * p.dv_pad), o_row(p.dv), dbias_acc(dbias ? kTile * p.skv : 0) {}
  std::vector<float> q, d_o, kt, vt, k_rows, s, dp, pt, dst, z, acc_a, acc_b, o_row, dbias_acc, row_tmp;
  std::array<float, kTile> lse_log2{}, delta{};
  std::array<int64_t, kTile> lo{}, hi{};
  int64_t loaded_kh = -1, loaded_vh = -1;  // the heads whose keys are in kt, vt, k_rows
};

class BackwardPlan final : public Plan {
 public:
  BackwardPlan(const Partition& p, bool avx2) : pr_(make_problem(p)), kern_(sdpa::kernels(avx2)), graph_(p.graph) {}

  Status execute(const ExecArgs& args) const override {
    auto ptr = [&](const Operand& o) -> void* { return o.id < 0 ? nullptr : args.ptrs[static_cast<size_t>(o.id)]; };
    Exec ex;
    for (size_t r = 0; r < R_COUNT; ++r) ex.ptr[r] = ptr(pr_.rows[r]), ex.ragged[r] = pr_.ragged[r].id >= 0;
    ex.stats = static_cast<const float*>(ptr(pr_.stats));
    ex.dbias = ptr(pr_.dbias);
    for (size_t r = R_Q; r <= R_DO; ++r)
      if (!ex.ptr[r] || !ex.stats)
        return {ErrorCode::INVALID_VARIANT_PACK, "cpu_sdpa_backward_flash: Q, K, V, O, dO or STATS has no pointer"};
    if (auto s = prepare(ptr, ex); !s.ok()) return s;
    ThreadPool& pool = args.handle.thread_pool();
    const int64_t kv_blocks = (pr_.skv + kTile - 1) / kTile;
    auto key_pass = [&](int64_t heads, bool for_k, bool for_v) {
      pool.parallel_for(pr_.b * heads * kv_blocks, [&](int64_t begin, int64_t end) {
        Scratch sc(pr_, false);
        for (int64_t t = begin; t < end; ++t)
          key_block(ex, t / (heads * kv_blocks), t / kv_blocks % heads, t % kv_blocks * kTile, for_k, for_v, sc);
      });
    };
    const bool dk = ex.ptr[R_DK] != nullptr, dv = ex.ptr[R_DV] != nullptr;
    if (pr_.hk == pr_.hv && (dk || dv)) key_pass(pr_.hk, dk, dv);
    if (pr_.hk != pr_.hv && dk) key_pass(pr_.hk, true, false);
    if (pr_.hk != pr_.hv && dv) key_pass(pr_.hv, false, true);
    if (ex.ptr[R_DQ] || ex.dbias) query_pass(pool, ex);
    return {};
  }

 private:
  template <class Ptr>
  Status prepare(Ptr&& ptr, Exec& ex) const {
    const auto* seq_q = static_cast<const int32_t*>(ptr(pr_.seq_q));
    const auto* seq_kv = static_cast<const int32_t*>(ptr(pr_.seq_kv));
    std::vector<int64_t> lq, lkv;
    sdpa::batch_bands(pr_, seq_q, seq_kv, ex.bands, lq, lkv);
    for (size_t r = 0; r < R_COUNT; ++r) {
      if (!ex.ptr[r]) continue;
      const bool keys = r == R_K || r == R_V || r == R_DK || r == R_DV;
      if (auto s = sdpa::map_rows(*graph_, pr_.node, pr_.rows[r], pr_.ragged[r], ptr(pr_.ragged[r]), keys ? lkv : lq,
                                  ex.rows[r]);
          !s.ok())
        return s;
    }
    ex.terms = sdpa::score_terms(pr_.terms, ptr, kern_);
    return {};
  }

  // Q, dO rows [i0, i0 + rows) of head h (the rest zero), their STATS in log2 units and rowsum(dO * O).
  void load_rows(const Exec& ex, int64_t b, int64_t h, int64_t i0, int64_t rows, Scratch& sc) const {
    std::fill(sc.q.begin(), sc.q.end(), 0.0f);
    std::fill(sc.d_o.begin(), sc.d_o.end(), 0.0f);
    const Operand &q = pr_.rows[R_Q], &o = pr_.rows[R_O], &d_o = pr_.rows[R_DO];
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      sdpa::load_strided(ex.ptr[R_Q], q.dtype, ex.rows[R_Q].row(b, h, i), q.st[3], pr_.d, &sc.q[r * pr_.d_pad], 1, 1.0f);
      float* dor = &sc.d_o[r * pr_.dv_pad];
      sdpa::load_strided(ex.ptr[R_DO], d_o.dtype, ex.rows[R_DO].row(b, h, i), d_o.st[3], pr_.dv, dor, 1, 1.0f);
      sdpa::load_strided(ex.ptr[R_O], o.dtype, ex.rows[R_O].row(b, h, i), o.st[3], pr_.dv, sc.o_row.data(), 1, 1.0f);
      float delta = 0;
      for (int64_t c = 0; c < pr_.dv; ++c) delta += dor[c] * sc.o_row[static_cast<size_t>(c)];
      sc.delta[r] = delta;
      sc.lse_log2[r] = ex.stats[pr_.stats.offset(b, h, i, 0)] * kLog2e;
    }
  }

  // Each loaded row's visible keys relative to j0, clamped to [0, cols); rows past `rows` see none.
  void row_ranges(const Band& band, int64_t i0, int64_t rows, int64_t j0, int64_t cols, Scratch& sc) const {
    for (int64_t r = 0; r < rows; ++r) {
      sc.lo[r] = std::clamp(band.lo(i0 + r) - j0, int64_t{0}, cols);
      sc.hi[r] = std::clamp(band.hi(i0 + r) - j0, int64_t{0}, cols);
    }
    for (int64_t r = rows; r < kTile; ++r) sc.lo[r] = sc.hi[r] = 0;
  }

  // K^T (head kh) and V^T (head vh) of keys [j0, j0 + cols) (columns past cols zero), and K's rows
  // for dQ's GEMM; nothing when those heads are loaded already.
  void load_keys(const Exec& ex, int64_t b, int64_t kh, int64_t vh, int64_t j0, int64_t cols, Scratch& sc) const {
    if (sc.loaded_kh == kh && sc.loaded_vh == vh) return;
    sc.loaded_kh = kh, sc.loaded_vh = vh;
    std::fill(sc.kt.begin(), sc.kt.end(), 0.0f);
    std::fill(sc.vt.begin(), sc.vt.end(), 0.0f);
    std::fill(sc.k_rows.begin(), sc.k_rows.end(), 0.0f);
    const Operand &k = pr_.rows[R_K], &v = pr_.rows[R_V];
    for (int64_t j = 0; j < cols; ++j) {
      sdpa::load_strided(ex.ptr[R_K], k.dtype, ex.rows[R_K].row(b, kh, j0 + j), k.st[3], pr_.d, &sc.kt[j], kTile, 1.0f);
      sdpa::load_strided(ex.ptr[R_V], v.dtype, ex.rows[R_V].row(b, vh, j0 + j), v.st[3], pr_.dv, &sc.vt[j], kTile, 1.0f);
      for (int64_t c = 0; c < pr_.d; ++c) sc.k_rows[j * pr_.d_pad + c] = sc.kt[c * kTile + j];
    }
  }

  // S = Q K^T and dP = dO V^T over the tile, bias and ALiBi on S, dropout's factors (sc.z) on dP,
  // then P and dS in place (s, dp).
  void scores(const Exec& ex, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
              Scratch& sc) const {
    kern_.gemm(kTile, kTile, pr_.d, sc.q.data(), pr_.d_pad, sc.kt.data(), kTile, sc.s.data(), kTile, false, nullptr);
    kern_.gemm(kTile, kTile, pr_.dv, sc.d_o.data(), pr_.dv_pad, sc.vt.data(), kTile, sc.dp.data(), kTile, false,
               nullptr);
    float scale_log2 = pr_.scale_log2;
    if (ex.terms.adds()) {  // S in log2 units first, so the terms add to it
      for (int64_t e = 0; e < rows * kTile; ++e) sc.s[static_cast<size_t>(e)] *= pr_.scale_log2;
      ex.terms.add_tile(b, h, i0, rows, j0, cols, sc.s.data(), kTile, kLog2e, sc.row_tmp);
      scale_log2 = 1.0f;
    }
    if (ex.terms.dropout) {
      ex.terms.keep_tile(b, h, i0, rows, j0, cols, sc.z.data(), kTile);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) sc.dp[r * kTile + c] *= sc.z[r * kTile + c];
    }
    kern_.probs_and_grads(sc.s.data(), sc.dp.data(), kTile, kTile, kTile, sc.lo.data(), sc.hi.data(),
                          sc.lse_log2.data(), sc.delta.data(), scale_log2);
  }

  // Query rows that see some key of [j0, j1): the band's ends grow with the row.
  std::pair<int64_t, int64_t> rows_seeing(const Band& band, int64_t j0, int64_t j1) const {
    int64_t first = 0, last = band.seq_q;
    while (first < band.seq_q && band.hi(first) <= j0) ++first;
    while (last > first && band.lo(last - 1) >= j1) --last;
    return {first, last};
  }

  // dK (for_k) and dV (for_v) of keys [j0, j0 + kTile) of head `head` (of K's heads, or V's when
  // only for_v), summed over the query heads of its group.
  void key_block(const Exec& ex, int64_t b, int64_t head, int64_t j0, bool for_k, bool for_v, Scratch& sc) const {
    const Band& band = ex.bands[static_cast<size_t>(b)];
    const int64_t cols = std::clamp<int64_t>(band.seq_kv - j0, 0, kTile);
    std::fill(sc.acc_a.begin(), sc.acc_a.end(), 0.0f);  // dK
    std::fill(sc.acc_b.begin(), sc.acc_b.end(), 0.0f);  // dV
    sc.loaded_kh = sc.loaded_vh = -1;
    const auto [first, last] = cols > 0 ? rows_seeing(band, j0, j0 + cols) : std::pair<int64_t, int64_t>{0, 0};
    const int64_t group = pr_.h / (for_k ? pr_.hk : pr_.hv);
    for (int64_t h = head * group; h < (head + 1) * group && first < last; ++h) {
      load_keys(ex, b, h / (pr_.h / pr_.hk), h / (pr_.h / pr_.hv), j0, cols, sc);
      for (int64_t i0 = first; i0 < last; i0 += kTile) {
        const int64_t rows = std::min(kTile, last - i0);
        load_rows(ex, b, h, i0, rows, sc);
        row_ranges(band, i0, rows, j0, cols, sc);
        scores(ex, b, h, i0, rows, j0, cols, sc);
        const bool drop = ex.terms.dropout.has_value();
        for (int64_t r = 0; r < kTile; ++r)
          for (int64_t j = 0; j < kTile; ++j) {
            sc.pt[j * kTile + r] = drop ? sc.s[r * kTile + j] * sc.z[r * kTile + j] : sc.s[r * kTile + j];
            sc.dst[j * kTile + r] = sc.dp[r * kTile + j];
          }
        if (for_v)
          kern_.gemm(kTile, pr_.dv_pad, kTile, sc.pt.data(), kTile, sc.d_o.data(), pr_.dv_pad, sc.acc_b.data(),
                     pr_.dv_pad, true, nullptr);
        if (for_k)
          kern_.gemm(kTile, pr_.d_pad, kTile, sc.dst.data(), kTile, sc.q.data(), pr_.d_pad, sc.acc_a.data(),
                     pr_.d_pad, true, nullptr);
      }
    }
    store_keys(ex, b, head, j0, for_k, for_v, sc);
  }

  // Keys past seq_kv store their zeros, except in a ragged gradient, where they are the next batch's.
  void store_keys(const Exec& ex, int64_t b, int64_t head, int64_t j0, bool for_k, bool for_v,
                  const Scratch& sc) const {
    const Band& band = ex.bands[static_cast<size_t>(b)];
    const Operand &dk = pr_.rows[R_DK], &dv = pr_.rows[R_DV];
    for (int64_t j = 0; j < std::min(kTile, pr_.skv - j0); ++j) {
      const bool padded = j0 + j >= band.seq_kv;
      if (for_k && !(padded && ex.ragged[R_DK]))
        sdpa::store_strided(ex.ptr[R_DK], dk.dtype, ex.rows[R_DK].row(b, head, j0 + j), dk.st[3], pr_.d,
                            &sc.acc_a[j * pr_.d_pad], pr_.scale);
      if (for_v && !(padded && ex.ragged[R_DV]))
        sdpa::store_strided(ex.ptr[R_DV], dv.dtype, ex.rows[R_DV].row(b, head, j0 + j), dv.st[3], pr_.dv,
                            &sc.acc_b[j * pr_.dv_pad], 1.0f);
    }
  }

  // Tasks over (batch, head, query block); with dBias, over the dBias rows' (batch, head) groups.
  void query_pass(ThreadPool& pool, const Exec& ex) const {
    const int64_t q_blocks = (pr_.sq + kTile - 1) / kTile;
    const bool db = ex.dbias != nullptr;
    const int64_t nb = db && pr_.terms.bias_b == 1 ? 1 : pr_.b, nh = db && pr_.terms.bias_h == 1 ? 1 : pr_.h;
    pool.parallel_for(nb * nh * q_blocks, [&](int64_t begin, int64_t end) {
      Scratch sc(pr_, db);
      for (int64_t t = begin; t < end; ++t) {
        const int64_t bb = t / (nh * q_blocks), hb = t / q_blocks % nh, i0 = t % q_blocks * kTile;
        std::fill(sc.dbias_acc.begin(), sc.dbias_acc.end(), 0.0f);
        for (int64_t b = (nb == 1 ? 0 : bb); b < (nb == 1 ? pr_.b : bb + 1); ++b)
          for (int64_t h = (nh == 1 ? 0 : hb); h < (nh == 1 ? pr_.h : hb + 1); ++h) query_block(ex, b, h, i0, sc);
        if (db) store_dbias(ex, bb, hb, i0, sc);
      }
    });
  }

  void query_block(const Exec& ex, int64_t b, int64_t h, int64_t i0, Scratch& sc) const {
    const Band& band = ex.bands[static_cast<size_t>(b)];
    const int64_t rows = std::clamp<int64_t>(band.seq_q - i0, 0, kTile);  // the rest are padding
    std::fill(sc.acc_a.begin(), sc.acc_a.end(), 0.0f);                     // dQ
    const int64_t key_begin = rows ? band.lo(i0) : 0, key_end = rows ? band.hi(i0 + rows - 1) : 0;
    const int64_t kh = h / (pr_.h / pr_.hk), vh = h / (pr_.h / pr_.hv);
    if (key_begin < key_end) load_rows(ex, b, h, i0, rows, sc);  // once: only the ranges move with the keys
    for (int64_t j0 = key_begin; j0 < key_end; j0 += kTile) {
      const int64_t cols = std::min(kTile, key_end - j0);
      sc.loaded_kh = sc.loaded_vh = -1;
      load_keys(ex, b, kh, vh, j0, cols, sc);
      row_ranges(band, i0, rows, j0, cols, sc);
      scores(ex, b, h, i0, rows, j0, cols, sc);
      kern_.gemm(kTile, pr_.d_pad, kTile, sc.dp.data(), kTile, sc.k_rows.data(), pr_.d_pad, sc.acc_a.data(),
                 pr_.d_pad, true, nullptr);
      for (int64_t r = 0; r < rows && !sc.dbias_acc.empty(); ++r)
        for (int64_t c = 0; c < cols; ++c) sc.dbias_acc[r * pr_.skv + j0 + c] += sc.dp[r * kTile + c];
    }
    const Operand& dq = pr_.rows[R_DQ];
    const int64_t rows_out = ex.ragged[R_DQ] ? rows : std::min(kTile, pr_.sq - i0);  // ragged: padded rows are the next batch's
    for (int64_t r = 0; r < rows_out && ex.ptr[R_DQ]; ++r)
      sdpa::store_strided(ex.ptr[R_DQ], dq.dtype, ex.rows[R_DQ].row(b, h, i0 + r), dq.st[3], pr_.d,
                          &sc.acc_a[r * pr_.d_pad], pr_.scale);
  }

  void store_dbias(const Exec& ex, int64_t bb, int64_t hb, int64_t i0, const Scratch& sc) const {
    for (int64_t r = 0; r < std::min(kTile, pr_.sq - i0); ++r)
      sdpa::store_strided(ex.dbias, pr_.dbias.dtype, pr_.dbias.offset(bb, hb, i0 + r, 0), pr_.dbias.st[3], pr_.skv,
                          &sc.dbias_acc[r * pr_.skv], 1.0f);
  }

  Problem pr_;
  const sdpa::Kernels& kern_;
  const ir::Graph* graph_;  // the partition's, which the plan's owner keeps (names and spans for errors)
};

class BackwardEngine final : public Engine {
 public:
  std::string_view name() const override { return "cpu_sdpa_backward_flash"; }

  Support check(const Partition& p, const Target& t) const override {
    if (!t.device().is_cpu()) return Support::no("runs on the CPU only, not on " + t.device().to_string());
    if (p.nodes.size() != 1)
      return Support::no("takes a partition of one sdpa_backward node, this one has " +
                         std::to_string(p.nodes.size()) + " nodes");
    const ir::Node& n = p.node(0);
    if (!std::holds_alternative<SdpaBackwardAttr>(n.attr))
      return Support::no("node '" + n.name + "' is " + std::string(op_name(n.attr)) + ", not sdpa_backward");
    const ir::Graph& g = *p.graph;
    std::vector<int> ids(n.inputs.begin(), n.inputs.begin() + slot::SB_STATS);
    ids.insert(ids.end(), n.outputs.begin(), n.outputs.begin() + 3);
    for (int id : ids) {
      const ir::Tensor& x = g.tensor(id);
      if (!sdpa::is_tile_type(x.dtype))
        return Support::no("node '" + n.name + "', tensor '" + x.name + "': data type " +
                           std::string(to_string(x.dtype)) + " is not supported (FLOAT, HALF, BFLOAT16)");
    }
    const Problem pr = make_problem(p);
    if (pr.d_pad > (int64_t{1} << 20) || pr.dv_pad > (int64_t{1} << 20) || pr.skv > (int64_t{1} << 24))
      return Support::no("node '" + n.name + "', tensor '" + g.tensor(pr.rows[R_Q].id).name + "': head dim " +
                         std::to_string(pr.d) + " (V's " + std::to_string(pr.dv) +
                         ") is above 2^20 or seq_kv " + std::to_string(pr.skv) +
                         " above 2^24, past which the per-thread tiles grow too large");
    return Support::yes();
  }

  std::vector<Knobs> knob_space(const Partition&, const Target&) const override {
    if (sdpa::cpu_has_avx2_fma()) return {schema_.print({1}), schema_.print({0})};
    return {schema_.print({0})};
  }
  Status check_knobs(const Knobs& k) const override { return schema_.validate(k); }

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    const Problem pr = make_problem(p);
    // Seven GEMMs over every (query, key) pair (S and dP twice) plus the element step; masks ignored.
    const double pairs = static_cast<double>(pr.b * pr.h) * static_cast<double>(pr.sq) * static_cast<double>(pr.skv);
    const double flops = pairs * (2.0 * static_cast<double>(4 * pr.d + 3 * pr.dv) + 16.0);
    BackwardKnobs knobs;
    const bool avx2 = schema_.parse(k, knobs).ok() && knobs.avx2;
    return roofline_seconds(flops, partition_bytes(p), t.info(), avx2 ? 0.5 : 0.08, 5e-6);
  }

  Status build(const Partition& p, const Target& t, const Knobs& k, std::unique_ptr<Plan>& plan) const override {
    if (Support s = check(p, t); !s.ok) return {ErrorCode::GRAPH_NOT_SUPPORTED, "cpu_sdpa_backward_flash: " + s.reason};
    BackwardKnobs knobs;
    if (auto s = schema_.parse(k, knobs); !s.ok()) return s;
    if (knobs.avx2 && !sdpa::cpu_has_avx2_fma())
      return {ErrorCode::GRAPH_NOT_SUPPORTED, "cpu_sdpa_backward_flash: knob avx2=1 but this CPU lacks AVX2 or FMA"};
    plan = std::make_unique<BackwardPlan>(p, knobs.avx2 != 0);
    return {};
  }

 private:
  // avx2=1: the AVX2 + FMA tile kernels; 0: the portable ones.
  struct BackwardKnobs {
    int64_t avx2 = 0;
  };
  const KnobSchema<BackwardKnobs> schema_{"cpu_sdpa_backward_flash", {{"avx2", &BackwardKnobs::avx2, 0, 1}}};
};

}  // namespace

const Engine& sdpa_backward_flash_engine() { return engine_instance<BackwardEngine>(); }

}  // namespace dnngraph::cpu
