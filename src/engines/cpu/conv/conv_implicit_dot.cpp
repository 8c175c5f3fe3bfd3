#include "engines/cpu/conv/conv_implicit_dot.hpp"

#include <algorithm>
#include <atomic>

#include "engines/cpu/gemm/driver.hpp"

namespace dnngraph::cpu {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

}  // namespace

void ConvDotGemm::WeightBlock::prefetch(int64_t part, int64_t parts) const {
  const int64_t lines = ceil_div(bytes, 64), per = ceil_div(lines, parts);
  for (int o = 0; o < rows; ++o)
    for (int64_t tap = t0; tap < t1; ++tap) {
      const char* base = reinterpret_cast<const char*>(w[o] + wtap[tap]);
      for (int64_t l = part * per; l < std::min(lines, (part + 1) * per); ++l) __builtin_prefetch(base + l * 64);
    }
}

ConvDotGemm::WeightBlock ConvDotGemm::weight_block(const Task& t, int64_t step, const float* wei) const {
  const int64_t nblocks = static_cast<int64_t>(kblocks_.size()), og = step / nblocks * ks_.no;
  const KBlock& k = kblocks_[static_cast<size_t>(step % nblocks)];
  WeightBlock b;
  b.rows = static_cast<int>(std::min<int64_t>(ks_.no, t.ocn - og));
  for (int o = 0; o < b.rows; ++o) b.w[o] = wei + g_.wei_offset(t.grp, 0, t.oc0 + og + o, 0) + k.c0;
  b.wtap = wtap_.data();
  b.t0 = k.t0;
  b.t1 = k.t1;
  b.bytes = k.cn * 4;
  return b;
}

std::string conv_dot_unfit(const ConvGeometry& g, const std::vector<ConvPhase>& phases,
                           const conv_dot::DotKernelSet& ks) {
  if (phases.size() != 1) return "the in-place weight form runs conv_fprop only";
  if (std::string why = conv_dot_unfit_geometry(g, ks); !why.empty()) return why;
  if (phases[0].src_offset.empty()) return "its tap offset table would be too large";
  return {};
}

std::string conv_dot_unfit_geometry(const ConvGeometry& g, const conv_dot::DotKernelSet& ks) {
  if (g.dgrad) return "the in-place weight form runs conv_fprop only";
  if (g.src_t != DataType::FLOAT || g.wei_t != DataType::FLOAT) return "it needs fp32 source and weights";
  if (g.src_st[1] != 1 || g.wei_st[1] != 1) return "it needs unit-stride input channels in source and weights";
  if (g.src_cg % ks.width != 0)
    return "it needs input channels per group (" + std::to_string(g.src_cg) + ") a multiple of " +
           std::to_string(ks.width);
  return {};
}

bool conv_dot_preferred(const ConvGeometry& g, const conv_dot::DotKernelSet& ks, int packed_mr, int packed_nr,
                        bool weights_kept) {
  const int64_t pixels = std::max<int64_t>(1, g.n * g.dst_pixels()), chans = std::max<int64_t>(1, g.dst_cg);
  const double k = static_cast<double>(std::max<int64_t>(1, g.taps() * g.src_cg));
  const double m = static_cast<double>(pixels);
  const double padded = static_cast<double>(round_up(pixels, std::max(packed_mr, 1))) / m *
                        static_cast<double>(round_up(chans, std::max(packed_nr, 1))) / static_cast<double>(chans);
  const double packed = padded * (1.0 + (weights_kept ? 0.0 : ks.cost.pack_cost_px / m));
  return ks.cost.speed_ratio + ks.cost.tile_cost_k / k < packed;
}

double conv_dot_rate(const ConvGeometry& g, const conv_dot::DotKernelSet& ks) {
  const int64_t pixels = std::max<int64_t>(1, g.n * g.dst_pixels());
  return conv_dot::relative_rate(ks.isa) * static_cast<double>(pixels) / static_cast<double>(round_up(pixels, ks.np));
}

ConvDotGemm::ConvDotGemm(const ConvGeometry& g, const ConvPhase& ph, const conv_dot::DotKernelSet& ks, int threads)
    : g_(g), ph_(ph), ks_(ks) {
  const int64_t taps = ph.taps();
  wtap_.resize(static_cast<size_t>(taps));
  for (int64_t t = 0; t < taps; ++t) wtap_[static_cast<size_t>(t)] = g.wei_offset(0, 0, 0, t) - g.wei_offset(0, 0, 0, 0);
  // A pixel range whose input pixels fill half of L2, read again for every group of NO output
  // channels; the weights of one such group (NO x K floats) stay in L1 across its tiles.
  const int64_t M = g.n * ph.pixels(), row_bytes = g.src_cg * 4;
  const int64_t fit = std::max<int64_t>(ks.np, cpu_features().l2_bytes / 2 / row_bytes / ks.np * ks.np);
  const int64_t pchunks = ceil_div(M, fit), px = round_up(ceil_div(M, pchunks), ks.np);
  // Tasks a few per thread, so that a thread slowed by other processes holds up little; the
  // output channels are split first, as each task re-reads its pixels' input but not its weights.
  const int64_t ogroups = ceil_div(g.dst_cg, ks.no);
  const int64_t want = 4 * std::max(threads, 1);
  const int64_t ochunks = std::clamp<int64_t>(ceil_div(want, g.groups * pchunks), 1, ogroups);
  const int64_t oc = ceil_div(ogroups, ochunks) * ks.no;
  for (int64_t grp = 0; grp < g.groups; ++grp)
    for (int64_t m0 = 0; m0 < M; m0 += px)
      for (int64_t oc0 = 0; oc0 < g.dst_cg; oc0 += oc)
        tasks_.push_back({grp, oc0, std::min(oc, g.dst_cg - oc0), m0, std::min(px, M - m0)});
  max_px_ = px;
  max_oc_ = oc;
  // K blocks of whole kernel rows where one fits L1 with the input a tile reads over it (NO
  // weight rows, NP + S - 1 input pixels per row): the weights stay in L1 across the tiles and
  // each input pixel is read from L2 once per row, not once per tap (7x7 C512: 1.37x against
  // blocks of single taps). Where a row does not fit, a row's taps over a chunk of its channels (at
  // most 4 chunks): AVX-512's 6 x 4 tile at C512 needs 40 KB a row, and on Zen 4's 32 KB L1 ran
  // 5-10% faster than in single taps (2026-12-07). Else whole taps in a quarter of L1, else a
  // tap's channels in chunks.
  const int64_t l1 = cpu_features().l1d_bytes, row_taps = g.ker[2], chan_bytes = g.src_cg * 4;
  const int64_t row_bytes_l1 = (ks.no * row_taps + ks.np + row_taps - 1) * chan_bytes;
  const int64_t row_chunks = ceil_div(row_bytes_l1, l1);
  const int64_t budget = std::max<int64_t>(l1 / 4, ks.no * ks.width * 4);
  const int64_t tap_bytes = ks.no * chan_bytes;
  if (row_bytes_l1 <= l1) {
    const int64_t per = std::min<int64_t>(l1 / row_bytes_l1, taps / row_taps) * row_taps;
    for (int64_t t0 = 0; t0 < taps; t0 += per) kblocks_.push_back({t0, std::min(taps, t0 + per), 0, g.src_cg});
  } else if (row_taps > 1 && row_chunks <= 4 && g.src_cg / ks.width >= 4 * row_chunks) {
    const int64_t cn = ceil_div(g.src_cg / ks.width, row_chunks) * ks.width;
    for (int64_t t0 = 0; t0 < taps; t0 += row_taps)
      for (int64_t c0 = 0; c0 < g.src_cg; c0 += cn)
        kblocks_.push_back({t0, std::min(taps, t0 + row_taps), c0, std::min(cn, g.src_cg - c0)});
  } else if (tap_bytes <= budget) {
    const int64_t per = budget / tap_bytes;
    for (int64_t t0 = 0; t0 < taps; t0 += per) kblocks_.push_back({t0, std::min(taps, t0 + per), 0, g.src_cg});
  } else {
    const int64_t vecs = g.src_cg / ks.width, chunks = ceil_div(tap_bytes, budget);
    const int64_t cn = ceil_div(vecs, chunks) * ks.width;
    for (int64_t t0 = 0; t0 < taps; ++t0)
      for (int64_t c0 = 0; c0 < g.src_cg; c0 += cn) kblocks_.push_back({t0, t0 + 1, c0, std::min(cn, g.src_cg - c0)});
  }
}

Status ConvDotGemm::run(const std::vector<void*>& ptrs, const Epilogue& epi, EpilogueRun& er, ThreadPool& pool) const {
  const DirectOutput out = direct_output(g_, epi, er, ptrs);
  const std::vector<float> zeros(static_cast<size_t>(g_.src_cg), 0.0f);  // the taps outside the image
  gemm::ThreadSlots slots(pool.size());
  std::atomic<int64_t> next{0};
  const int64_t tasks = static_cast<int64_t>(tasks_.size());
  pool.parallel_for(std::min<int64_t>(tasks, pool.size()), [&](int64_t, int64_t) {
    gemm::SlotGuard guard(slots);
    Scratch s;
    s.xs.resize(static_cast<size_t>(round_up(max_px_, ks_.np) * ph_.taps()));
    s.buf.resize(out.base ? 0 : static_cast<size_t>(max_px_ * max_oc_));
    if (kblocks_.size() > 1) s.acc.resize(static_cast<size_t>(round_up(max_px_, ks_.np) * ks_.no * ks_.width));
    for (int64_t i = next.fetch_add(1); i < tasks; i = next.fetch_add(1))
      run_task(tasks_[static_cast<size_t>(i)], ptrs, out, er, guard.slot(), zeros.data(), s);
  });
  return {};
}

void ConvDotGemm::run_task(const Task& t, const std::vector<void*>& ptrs, const DirectOutput& out, EpilogueRun& er,
                           int slot, const float* zeros, Scratch& s) const {
  const int NP = ks_.np, NO = ks_.no;
  const int64_t taps = ph_.taps(), pix = ph_.pixels(), icg = g_.src_cg;
  const float* src = static_cast<const float*>(ptrs[static_cast<size_t>(g_.src)]);
  const float* wei = static_cast<const float*>(ptrs[static_cast<size_t>(g_.wei)]);
  const int64_t c0 = t.grp * g_.dst_cg + t.oc0;  // the task's first output channel
  // Each pixel's row of sums (at output channel c0) and its input pointer per tap; the rows past
  // the range repeat its last pixel, so that every tile reads valid memory.
  std::vector<float*> rows(static_cast<size_t>(round_up(t.mn, NP)));
  std::vector<int64_t> offs(rows.size());
  std::vector<std::array<int64_t, 3>> pos(rows.size());
  for (int64_t i = 0; i < static_cast<int64_t>(rows.size()); ++i) {
    const int64_t m = t.m0 + std::min(i, t.mn - 1), nn = m / pix, p = m % pix;
    const int64_t j[3] = {p / (ph_.count[1] * ph_.count[2]), (p / ph_.count[2]) % ph_.count[1], p % ph_.count[2]};
    auto& o = pos[static_cast<size_t>(i)];
    for (size_t d = 0; d < 3; ++d) o[d] = ph_.start[d] + ph_.step[d] * j[d];
    const float* base = src + nn * g_.src_st[0] + t.grp * icg;
    for (int64_t tap = 0; tap < taps; ++tap) {
      const int64_t off = ph_.src_offset[static_cast<size_t>(tap * pix + p)];
      s.xs[static_cast<size_t>(i * taps + tap)] = off == ConvPhase::kOutside ? zeros : base + off;
    }
    offs[static_cast<size_t>(i)] = out.base ? out.offset(nn, o.data()) + c0 : 0;
    rows[static_cast<size_t>(i)] = out.base ? out.base + offs[static_cast<size_t>(i)] : s.buf.data() + std::min(i, t.mn - 1) * t.ocn;
  }
  const float* w[8];  // NP, NO <= 8
  float* tile_out[8];
  conv_dot::DotArgs a{};
  a.zeros = zeros;
  a.ntaps = taps;
  a.w = w;
  a.wtap = wtap_.data();
  a.out = tile_out;
  const int64_t tile_acc = NP * NO * ks_.width, tiles = ceil_div(t.mn, NP);
  const int64_t nblocks = static_cast<int64_t>(kblocks_.size()), steps = ceil_div(t.ocn, NO) * nblocks;
  for (int64_t step = 0; step < steps; ++step) {  // (output channel group, K block), the former outer
    const int64_t og = step / nblocks * NO;
    const KBlock& k = kblocks_[static_cast<size_t>(step % nblocks)];
    a.no = static_cast<int>(std::min<int64_t>(NO, t.ocn - og));
    for (int o = 0; o < NO; ++o) w[o] = wei + g_.wei_offset(t.grp, 0, t.oc0 + og + std::min(o, a.no - 1), 0);
    a.t0 = k.t0, a.t1 = k.t1, a.c0 = k.c0, a.cn = k.cn;
    a.first = step % nblocks == 0;
    a.last = step % nblocks == nblocks - 1;
    const WeightBlock next = step + 1 < steps ? weight_block(t, step + 1, wei) : WeightBlock{};
    for (int64_t i = 0; i < t.mn; i += NP) {
      // The next step's weights come from L3 or memory (each is read once per pixel range):
      // fetch a slice of them per tile, so that its first tile does not wait on them.
      next.prefetch(i / NP, tiles);
      a.np = static_cast<int>(std::min<int64_t>(NP, t.mn - i));
      for (int p = 0; p < a.np; ++p) tile_out[p] = rows[static_cast<size_t>(i + p)] + og;
      a.x = s.xs.data() + i * taps;
      a.acc = s.acc.empty() ? nullptr : s.acc.data() + i / NP * tile_acc;  // one K block: no partial sums kept
      ks_.kernel(a);
    }
  }
  if (out.base && !out.chain) return;
  int64_t coord[5];
  for (int64_t i = 0; i < t.mn; ++i) {
    const size_t ui = static_cast<size_t>(i);
    if (out.chain) {
      er.chain_rows(rows[ui], 0, 1, t.ocn, offs[ui], c0);
      continue;
    }
    const int64_t nn = (t.m0 + i) / pix;
    g_.dst_coord(nn, c0, pos[ui].data(), coord);
    er.strip(slot, coord, 1, t.ocn, 1, rows[ui]);
  }
}

}  // namespace dnngraph::cpu
