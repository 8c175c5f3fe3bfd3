// cpu_sdpa_backward_flash. Pass 1: one task per (batch, KV head, block of kTile keys) walks every
// query block of the group's heads that sees its keys, rebuilds P = exp(scale * Q K^T - STATS) and
// dS = P * (dO V^T - rowsum(dO * O)), and sums dV += P^T dO and dK += dS^T Q in its own tiles.
// Pass 2: one task per (batch, head, block of kTile query rows) walks the keys it sees and sums
// dQ += dS K. No task writes another's output, so the result is the same on every run (no
// atomics), at the price of computing S and dP twice. Tiles are fp32 and use cpu_sdpa_flash's GEMM
// tile kernel; masks skip whole tiles. Rules: src/graph/sdpa.cpp.
#include "engines/cpu/sdpa/sdpa_backward_flash.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engines/cpu/cpu_engine.hpp"
#include "engines/cpu/sdpa/flash_kernels.hpp"
#include "engines/cpu/sdpa/sdpa_tiles.hpp"
#include "runtime/cpu/thread_pool.hpp"

namespace dnngraph::cpu {
namespace {

using sdpa::Band;
using sdpa::kMr;
using sdpa::kNr;
using sdpa::Operand;
using sdpa::round_up;

constexpr int64_t kTile = 48;  // query rows and keys per tile: a multiple of both kMr and kNr
constexpr float kLog2e = 1.44269504088896340736f;

struct Problem {
  int64_t b = 0, h = 0, hk = 0, sq = 0, skv = 0, d = 0, dv = 0, d_pad = 0, dv_pad = 0;
  Operand q, k, v, o, d_o, stats, seq_q, seq_kv, dq, dk, dv_out;
  float scale = 0, scale_log2 = 0;
  std::optional<int64_t> left, right;
  bool bottom_right = false;
};

Problem make_problem(const Partition& p) {
  const ir::Graph& g = *p.graph;
  const ir::Node& n = p.node(0);
  const auto& attr = std::get<SdpaBackwardAttr>(n.attr);
  auto in = [&](size_t slot) { return sdpa::operand(g, slot < n.inputs.size() ? n.inputs[slot] : -1); };
  Problem pr;
  pr.q = in(slot::SB_Q), pr.k = in(slot::SB_K), pr.v = in(slot::SB_V), pr.o = in(slot::SB_O);
  pr.d_o = in(slot::SB_DO), pr.stats = in(slot::SB_STATS), pr.seq_q = in(slot::SB_SEQ_Q);
  pr.seq_kv = in(slot::SB_SEQ_KV);
  pr.dq = sdpa::operand(g, n.outputs[0]), pr.dk = sdpa::operand(g, n.outputs[1]);
  pr.dv_out = sdpa::operand(g, n.outputs[2]);
  const auto& qd = g.tensor(pr.q.id).dims;
  const auto& kd = g.tensor(pr.k.id).dims;
  pr.b = qd[0], pr.h = qd[1], pr.sq = qd[2], pr.d = qd[3];
  pr.hk = kd[1], pr.skv = kd[2], pr.dv = g.tensor(pr.v.id).dims[3];
  pr.d_pad = round_up(pr.d, kNr), pr.dv_pad = round_up(pr.dv, kNr);
  pr.scale = static_cast<float>(attr.get_attn_scale().value_or(1.0 / std::sqrt(static_cast<double>(pr.d))));
  pr.scale_log2 = pr.scale * kLog2e;
  pr.left = attr.get_diagonal_band_left_bound();
  pr.right = attr.get_diagonal_band_right_bound();
  pr.bottom_right = attr.get_diagonal_alignment() == DiagonalAlignment::BOTTOM_RIGHT;
  return pr;
}

struct Pointers {
  const void *q, *k, *v, *o, *d_o;
  const float* stats;
  const int32_t *seq_q, *seq_kv;
  void *dq, *dk, *dv;
};

// Per-thread fp32 tiles; padding rows and columns stay zero where a GEMM reads them.
struct Scratch {
  explicit Scratch(const Problem& p)
      : q(kTile * p.d_pad), d_o(kTile * p.dv_pad), kt(p.d * kTile), vt(p.dv * kTile), k_rows(kTile * p.d_pad),
        s(kTile * kTile), dp(kTile * kTile), pt(kTile * kTile), dst(kTile * kTile), acc_a(kTile * p.d_pad),
        acc_b(kTile * p.dv_pad), o_row(p.dv) {}
  std::vector<float> q, d_o, kt, vt, k_rows, s, dp, pt, dst, acc_a, acc_b, o_row;
  std::array<float, kTile> lse_log2{}, delta{};
  std::array<int64_t, kTile> lo{}, hi{};
};

class BackwardPlan final : public Plan {
 public:
  BackwardPlan(const Partition& p, bool avx2) : pr_(make_problem(p)), kern_(sdpa::kernels(avx2)) {}

  Status execute(const ExecArgs& args) const override {
    auto ptr = [&](const Operand& o) -> void* { return o.id < 0 ? nullptr : args.ptrs[static_cast<size_t>(o.id)]; };
    const Pointers ptrs{ptr(pr_.q), ptr(pr_.k), ptr(pr_.v), ptr(pr_.o), ptr(pr_.d_o),
                        static_cast<const float*>(ptr(pr_.stats)), static_cast<const int32_t*>(ptr(pr_.seq_q)),
                        static_cast<const int32_t*>(ptr(pr_.seq_kv)), ptr(pr_.dq), ptr(pr_.dk), ptr(pr_.dv_out)};
    if (!ptrs.q || !ptrs.k || !ptrs.v || !ptrs.o || !ptrs.d_o || !ptrs.stats)
      return {ErrorCode::INVALID_VARIANT_PACK, "cpu_sdpa_backward_flash: Q, K, V, O, dO or STATS has no pointer"};
    ThreadPool& pool = args.handle.thread_pool();
    const int64_t kv_blocks = (pr_.skv + kTile - 1) / kTile, q_blocks = (pr_.sq + kTile - 1) / kTile;
    if (ptrs.dk || ptrs.dv)
      pool.parallel_for(pr_.b * pr_.hk * kv_blocks, [&](int64_t begin, int64_t end) {
        Scratch sc(pr_);
        for (int64_t t = begin; t < end; ++t)
          key_block(ptrs, t / (pr_.hk * kv_blocks), t / kv_blocks % pr_.hk, t % kv_blocks * kTile, sc);
      });
    if (ptrs.dq)
      pool.parallel_for(pr_.b * pr_.h * q_blocks, [&](int64_t begin, int64_t end) {
        Scratch sc(pr_);
        for (int64_t t = begin; t < end; ++t)
          query_block(ptrs, t / (pr_.h * q_blocks), t / q_blocks % pr_.h, t % q_blocks * kTile, sc);
      });
    return {};
  }

 private:
  Band band_of(const Pointers& ptrs, int64_t b) const {
    int64_t lq = pr_.sq, lkv = pr_.skv;
    if (ptrs.seq_q) lq = std::clamp<int64_t>(ptrs.seq_q[b * pr_.seq_q.st[0]], 0, pr_.sq);
    if (ptrs.seq_kv) lkv = std::clamp<int64_t>(ptrs.seq_kv[b * pr_.seq_kv.st[0]], 0, pr_.skv);
    return Band{lq, lkv, pr_.bottom_right ? lkv - lq : 0, pr_.left, pr_.right};
  }

  // Q, dO rows [i0, i0 + rows) of head h (the rest zero), their STATS in log2 units and rowsum(dO * O).
  void load_rows(const Pointers& p, int64_t b, int64_t h, int64_t i0, int64_t rows, Scratch& sc) const {
    std::fill(sc.q.begin(), sc.q.end(), 0.0f);
    std::fill(sc.d_o.begin(), sc.d_o.end(), 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      sdpa::load_strided(p.q, pr_.q.dtype, pr_.q.offset(b, h, i, 0), pr_.q.st[3], pr_.d, &sc.q[r * pr_.d_pad], 1, 1.0f);
      float* dor = &sc.d_o[r * pr_.dv_pad];
      sdpa::load_strided(p.d_o, pr_.d_o.dtype, pr_.d_o.offset(b, h, i, 0), pr_.d_o.st[3], pr_.dv, dor, 1, 1.0f);
      sdpa::load_strided(p.o, pr_.o.dtype, pr_.o.offset(b, h, i, 0), pr_.o.st[3], pr_.dv, sc.o_row.data(), 1, 1.0f);
      float delta = 0;
      for (int64_t c = 0; c < pr_.dv; ++c) delta += dor[c] * sc.o_row[static_cast<size_t>(c)];
      sc.delta[r] = delta;
      sc.lse_log2[r] = p.stats[pr_.stats.offset(b, h, i, 0)] * kLog2e;
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

  // K^T and V^T of keys [j0, j0 + cols) (columns past cols zero), and K's rows for dQ's GEMM.
  void load_keys(const Pointers& p, int64_t b, int64_t kh, int64_t j0, int64_t cols, Scratch& sc) const {
    std::fill(sc.kt.begin(), sc.kt.end(), 0.0f);
    std::fill(sc.vt.begin(), sc.vt.end(), 0.0f);
    std::fill(sc.k_rows.begin(), sc.k_rows.end(), 0.0f);
    for (int64_t j = 0; j < cols; ++j) {
      sdpa::load_strided(p.k, pr_.k.dtype, pr_.k.offset(b, kh, j0 + j, 0), pr_.k.st[3], pr_.d, &sc.kt[j], kTile, 1.0f);
      sdpa::load_strided(p.v, pr_.v.dtype, pr_.v.offset(b, kh, j0 + j, 0), pr_.v.st[3], pr_.dv, &sc.vt[j], kTile, 1.0f);
      for (int64_t c = 0; c < pr_.d; ++c) sc.k_rows[j * pr_.d_pad + c] = sc.kt[c * kTile + j];
    }
  }

  // S = Q K^T and dP = dO V^T over the tile, then P and dS in place (s, dp).
  void scores(Scratch& sc) const {
    kern_.gemm(kTile, kTile, pr_.d, sc.q.data(), pr_.d_pad, sc.kt.data(), kTile, sc.s.data(), kTile, false, nullptr);
    kern_.gemm(kTile, kTile, pr_.dv, sc.d_o.data(), pr_.dv_pad, sc.vt.data(), kTile, sc.dp.data(), kTile, false,
               nullptr);
    kern_.probs_and_grads(sc.s.data(), sc.dp.data(), kTile, kTile, kTile, sc.lo.data(), sc.hi.data(),
                          sc.lse_log2.data(), sc.delta.data(), pr_.scale_log2);
  }

  // Query rows that see some key of [j0, j1): the band's ends grow with the row.
  std::pair<int64_t, int64_t> rows_seeing(const Band& band, int64_t j0, int64_t j1) const {
    int64_t first = 0, last = band.seq_q;
    while (first < band.seq_q && band.hi(first) <= j0) ++first;
    while (last > first && band.lo(last - 1) >= j1) --last;
    return {first, last};
  }

  void key_block(const Pointers& p, int64_t b, int64_t kh, int64_t j0, Scratch& sc) const {
    const Band band = band_of(p, b);
    const int64_t cols = std::clamp<int64_t>(band.seq_kv - j0, 0, kTile);
    std::fill(sc.acc_a.begin(), sc.acc_a.end(), 0.0f);  // dK
    std::fill(sc.acc_b.begin(), sc.acc_b.end(), 0.0f);  // dV
    const auto [first, last] = cols > 0 ? rows_seeing(band, j0, j0 + cols) : std::pair<int64_t, int64_t>{0, 0};
    if (first < last) load_keys(p, b, kh, j0, cols, sc);
    const int64_t group = pr_.h / pr_.hk;
    for (int64_t h = kh * group; h < (kh + 1) * group && first < last; ++h)
      for (int64_t i0 = first; i0 < last; i0 += kTile) {
        const int64_t rows = std::min(kTile, last - i0);
        load_rows(p, b, h, i0, rows, sc);
        row_ranges(band, i0, rows, j0, cols, sc);
        scores(sc);
        for (int64_t r = 0; r < kTile; ++r)
          for (int64_t j = 0; j < kTile; ++j) {
            sc.pt[j * kTile + r] = sc.s[r * kTile + j];
            sc.dst[j * kTile + r] = sc.dp[r * kTile + j];
          }
        kern_.gemm(kTile, pr_.dv_pad, kTile, sc.pt.data(), kTile, sc.d_o.data(), pr_.dv_pad, sc.acc_b.data(),
                   pr_.dv_pad, true, nullptr);
        kern_.gemm(kTile, pr_.d_pad, kTile, sc.dst.data(), kTile, sc.q.data(), pr_.d_pad, sc.acc_a.data(), pr_.d_pad,
                   true, nullptr);
      }
    const int64_t rows_out = std::min(kTile, pr_.skv - j0);  // keys past seq_kv store their zeros
    for (int64_t j = 0; j < rows_out; ++j) {
      if (p.dk)
        sdpa::store_strided(p.dk, pr_.dk.dtype, pr_.dk.offset(b, kh, j0 + j, 0), pr_.dk.st[3], pr_.d,
                            &sc.acc_a[j * pr_.d_pad], pr_.scale);
      if (p.dv)
        sdpa::store_strided(p.dv, pr_.dv_out.dtype, pr_.dv_out.offset(b, kh, j0 + j, 0), pr_.dv_out.st[3], pr_.dv,
                            &sc.acc_b[j * pr_.dv_pad], 1.0f);
    }
  }

  void query_block(const Pointers& p, int64_t b, int64_t h, int64_t i0, Scratch& sc) const {
    const Band band = band_of(p, b);
    const int64_t rows = std::clamp<int64_t>(band.seq_q - i0, 0, kTile);  // the rest are padding
    std::fill(sc.acc_a.begin(), sc.acc_a.end(), 0.0f);                     // dQ
    const int64_t key_begin = rows ? band.lo(i0) : 0, key_end = rows ? band.hi(i0 + rows - 1) : 0;
    const int64_t kh = h / (pr_.h / pr_.hk);
    if (key_begin < key_end) load_rows(p, b, h, i0, rows, sc);  // once: only the ranges move with the keys
    for (int64_t j0 = key_begin; j0 < key_end; j0 += kTile) {
      const int64_t cols = std::min(kTile, key_end - j0);
      load_keys(p, b, kh, j0, cols, sc);
      row_ranges(band, i0, rows, j0, cols, sc);
      scores(sc);
      kern_.gemm(kTile, pr_.d_pad, kTile, sc.dp.data(), kTile, sc.k_rows.data(), pr_.d_pad, sc.acc_a.data(),
                 pr_.d_pad, true, nullptr);
    }
    const int64_t rows_out = std::min(kTile, pr_.sq - i0);
    for (int64_t r = 0; r < rows_out; ++r)
      sdpa::store_strided(p.dq, pr_.dq.dtype, pr_.dq.offset(b, h, i0 + r, 0), pr_.dq.st[3], pr_.d,
                          &sc.acc_a[r * pr_.d_pad], pr_.scale);
  }

  Problem pr_;
  const sdpa::Kernels& kern_;
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
    ids.insert(ids.end(), n.outputs.begin(), n.outputs.end());
    for (int id : ids) {
      const ir::Tensor& x = g.tensor(id);
      if (!sdpa::is_tile_type(x.dtype))
        return Support::no("node '" + n.name + "', tensor '" + x.name + "': data type " +
                           std::string(to_string(x.dtype)) + " is not supported (FLOAT, HALF, BFLOAT16)");
    }
    const Problem pr = make_problem(p);
    if (pr.d_pad > (int64_t{1} << 20) || pr.dv_pad > (int64_t{1} << 20))
      return Support::no("node '" + n.name + "', tensor '" + g.tensor(pr.q.id).name + "': head dim " +
                         std::to_string(pr.d) + " (V's " + std::to_string(pr.dv) +
                         ") is above 2^20, past which the per-thread tiles grow too large");
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
