// cpu_conv_wgrad_gemm: conv_wgrad on the blocked GEMM driver. Per group, DW (rows: the output
// channels; columns: a filter tap and an input channel, KRSC order) is DY^T x im2col(X), a GEMM
// whose reduction runs over every output pixel (N x P x Q). The driver packs B over its whole
// reduction, so the pixels are cut into chunks (B of a chunk at most ~2 MB), one GEMM each, whose
// sums the next chunk's add to: in DW itself where it is a dense fp32 KRSC plain store, else in an
// fp32 accumulator in the workspace that the epilogue then stores DW from, a strip of input
// channels per (output channel, tap). fp32 channels-last problems whose channels divide a tile
// shape skip the packing: DY and X are read as they lie (InPlaceRuns).
#include "engines/cpu/conv/conv_wgrad_gemm.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "core/checked.hpp"
#include "engines/cpu/anchor_check.hpp"
#include "engines/cpu/conv/conv_geometry.hpp"
#include "engines/cpu/gemm/gemm_plan.hpp"
#include "engines/cpu/gemm/pack.hpp"

namespace dnngraph::cpu {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Floats of B per chunk: im2col(X) of ~2 MB of pixels stays in L2 while the tiles read them.
constexpr int64_t kChunkFloats = int64_t{1} << 19;
// The largest A of a chunk packed once for all tasks (8 MB).
constexpr int64_t kMaxPackedAFloats = int64_t{1} << 21;

int64_t reduction_pixels(const ConvGeometry& g) { return g.n * g.dst_pixels(); }

// Pixels per GEMM: at least 256 (a few K blocks), at most what keeps B (im2col(X) of the chunk:
// taps x input channels a pixel) near kChunkFloats.
int64_t chunk_pixels(const ConvGeometry& g) {
  const int64_t want = std::max<int64_t>(256, kChunkFloats / std::max<int64_t>(g.taps() * g.src_cg, 1));
  return std::max<int64_t>(1, std::min(want, reduction_pixels(g)));
}

// Filter tap t (row-major over the kernel's three dims) as its (r0, r1, r2).
std::array<int64_t, 3> filter_tap(const ConvGeometry& g, int64_t t) {
  return {t / (g.ker[1] * g.ker[2]), (t / g.ker[2]) % g.ker[1], t % g.ker[2]};
}

// conv_wgrad over fp32 DY and X with unit-stride channels, packing nothing: per group and filter
// tap, DW's block (output channels x input channels) = sum over output pixels of DY's row times
// X's row at the tap's input pixel, both rows k-major operands where they lie (KmajorKernel), on
// a tile shape that divides the channels. Along an output line (fixed n, o0, o1) the pixels whose
// tap lies inside X are one run at one stride in each tensor: a kernel call per DW block takes a
// block of lines' runs, the block's sums in registers throughout. A 1x1 stride-1 unpadded conv
// whose pixels sit at one stride in both is one run per block of pixels. The threads share the
// pixels (each its own sums, then added) where each gets kThreadPixels, else DW's blocks (every
// pixel each).
// The packed form spent more time packing DY and X than multiplying (1x1 C256 56x56 -> 64:
// 0.61x oneDNN; MobileNetV2's C16 -> 96 at 112x112: 0.26x).
struct InPlaceRuns {
  const gemm::KernelSet* ks = nullptr;  // null: the packed form runs
  int64_t ldy = 0, ldx = 0;            // 1x1 flat: the pixel strides of DY and X; else 0
  static constexpr int64_t kBlockPixels = 128;   // the tiles' DY and X rows of a block stay in L2
  static constexpr int64_t kThreadPixels = 256;  // the fewest pixels a thread sums alone

  static InPlaceRuns of(const ConvGeometry& g, Isa isa) {
    InPlaceRuns f;
    if (g.src_t != DataType::FLOAT || g.dst_t != DataType::FLOAT || g.src_st[1] != 1 || g.dst_st[1] != 1 ||
        !cpu_features().supports(isa))
      return f;
    for (const gemm::KernelSet* ks : gemm::kernel_shapes(isa))  // the ISA's default tile first
      if (ks->kernel_kmajor && g.dst_cg % ks->mr == 0 && g.src_cg % ks->nr == 0) {
        f.ks = ks;
        break;
      }
    bool pointwise = g.taps() == 1 && g.src_sp == g.dst_sp;
    for (size_t d = 0; d < 3; ++d) pointwise &= g.stride[d] == 1 && g.pad[d] == 0;
    if (!pointwise || !flat_pixels(g.dst_st, g.dst_sp, g.n, f.ldy) || !flat_pixels(g.src_st, g.src_sp, g.n, f.ldx) ||
        f.ldy == 0 || f.ldx == 0)
      f.ldy = f.ldx = 0;  // lines of runs (a broadcast pixel stride of 0 too)
    return f;
  }
  // DW's blocks a thread may take: (tap, group, panel, tile).
  int64_t blocks(const ConvGeometry& g) const {
    return g.taps() * g.groups * (g.src_cg / ks->nr) * (g.dst_cg / ks->mr);
  }
  // Threads that sum a share of the output lines each (the first into DW, the others into partials).
  static int64_t threads(const ConvGeometry& g, int64_t pool) {
    return std::clamp<int64_t>(g.n * g.dst_pixels() / kThreadPixels, 1, pool);
  }
  static int64_t lines(const ConvGeometry& g) { return g.n * g.dst_sp[0] * g.dst_sp[1]; }

  // Share t of `of` of the pixels, every block of DW (or the accumulator) into `out` (set).
  void sum_share(const ConvGeometry& g, const float* dy, const float* x, int64_t t, int64_t of, float* out) const {
    sum_blocks(g, dy, x, 0, blocks(g), t, of, out);
  }
  // Blocks [b0, b1) of DW from share t of `of` of the pixels, into `out` (set).
  void sum_blocks(const ConvGeometry& g, const float* dy, const float* x, int64_t b0, int64_t b1, int64_t t,
                  int64_t of, float* out) const {
    if (ldy != 0) {
      const int64_t pixels = g.n * g.dst_pixels();
      sum_flat(g, dy, x, b0, b1, pixels * t / of, pixels * (t + 1) / of, out);
      return;
    }
    sum_lines(g, dy, x, b0, b1, lines(g) * t / of, lines(g) * (t + 1) / of, out);
  }

 private:
  // Block b of DW: its tap, group, first input channel (column) and first output channel (row).
  struct Block {
    int64_t tap, grp, col, row;
  };
  Block block(const ConvGeometry& g, int64_t b) const {
    const int64_t tiles = g.dst_cg / ks->mr, panels = g.src_cg / ks->nr;
    return {b / (g.groups * panels * tiles), b / (panels * tiles) % g.groups, b / tiles % panels * ks->nr,
            b % tiles * ks->mr};
  }
  // The block after k (rows fastest, then columns, groups, taps): no divisions in the hot loops.
  void next(const ConvGeometry& g, Block& k) const {
    if ((k.row += ks->mr) < g.dst_cg) return;
    k.row = 0;
    if ((k.col += ks->nr) < g.src_cg) return;
    k.col = 0;
    if (++k.grp < g.groups) return;
    k.grp = 0;
    ++k.tap;
  }
  // The MR x NR block's first element in DW (rows of taps x input channels apart).
  float* block_out(const ConvGeometry& g, const Block& k, float* out) const {
    return out + ((k.grp * g.dst_cg + k.row) * g.taps() + k.tap) * g.src_cg + k.col;
  }

  // 1x1 flat: pixels [p0, p1) as runs of kBlockPixels (zeroing the blocks where none).
  void sum_flat(const ConvGeometry& g, const float* dy, const float* x, int64_t b0, int64_t b1, int64_t p0,
                int64_t p1, float* out) const {
    if (p1 <= p0) zero_blocks(g, b0, b1, out);
    for (int64_t k0 = p0; k0 < p1; k0 += kBlockPixels) {
      const int64_t kc = std::min(kBlockPixels, p1 - k0);
      const gemm::KmajorRun run{k0 * ldy, k0 * ldx, kc};
      Block k = block(g, b0);
      for (int64_t b = b0; b < b1; ++b, next(g, k))
        ks->kernel_kmajor(1, &run, dy + k.grp * g.dst_cg + k.row, ldy, x + k.grp * g.src_cg + k.col, ldx,
                          block_out(g, k, out), g.src_cg, k0 > p0);
    }
  }
  void zero_blocks(const ConvGeometry& g, int64_t b0, int64_t b1, float* out) const {
    Block k = block(g, b0);
    for (int64_t b = b0; b < b1; ++b, next(g, k)) {
      float* c = block_out(g, k, out);
      for (int i = 0; i < ks->mr; ++i) std::fill_n(c + i * g.taps() * g.src_cg, ks->nr, 0.0f);
    }
  }

  // One output line's run for a tap: its first DY and X elements and its length (0: none inside).
  using Run = gemm::KmajorRun;
  Run run_of(const ConvGeometry& g, int64_t line, const std::array<int64_t, 3>& r) const {
    const int64_t o1 = line % g.dst_sp[1], o0 = line / g.dst_sp[1] % g.dst_sp[0], nn = line / (g.dst_sp[1] * g.dst_sp[0]);
    const int64_t y0 = o0 * g.stride[0] - g.pad[0] + r[0] * g.dil[0], y1 = o1 * g.stride[1] - g.pad[1] + r[1] * g.dil[1];
    if (y0 < 0 || y0 >= g.src_sp[0] || y1 < 0 || y1 >= g.src_sp[1]) return {};
    // Output columns whose input column o2 * s - pad + r * dil lies in [0, width).
    const int64_t shift = r[2] * g.dil[2] - g.pad[2], s = g.stride[2];
    const int64_t lo = shift >= 0 ? 0 : (-shift + s - 1) / s;
    const int64_t hi = std::min(g.dst_sp[2], g.src_sp[2] - 1 - shift < 0 ? 0 : (g.src_sp[2] - 1 - shift) / s + 1);
    if (hi <= lo) return {};
    return {nn * g.dst_st[0] + o0 * g.dst_st[2] + o1 * g.dst_st[3] + lo * g.dst_st[4],
            nn * g.src_st[0] + y0 * g.src_st[2] + y1 * g.src_st[3] + (lo * s + shift) * g.src_st[4], hi - lo};
  }

  // Output lines [l0, l1) in blocks of about kBlockPixels, each line block's runs per DW block in
  // [b0, b1) (blocks are tap-major: a tap's runs are found once per line block). The first line
  // block stores its sums (a block without runs there is zeroed), the later ones add: zeroing DW
  // first was a fifth of wgrad 3x3 C512 7x7's time (its 9.4 MB written twice).
  void sum_lines(const ConvGeometry& g, const float* dy, const float* x, int64_t b0, int64_t b1, int64_t l0,
                 int64_t l1, float* out) const {
    if (l1 <= l0) zero_blocks(g, b0, b1, out);
    const int64_t per_block = std::max<int64_t>(1, kBlockPixels / g.dst_sp[2]);
    const int64_t lda = g.dst_st[4], ldb = g.stride[2] * g.src_st[4], ldc = g.taps() * g.src_cg;
    std::vector<Run> runs;
    for (int64_t first = l0; first < l1; first += per_block) {
      const int64_t last = std::min(l1, first + per_block);
      int64_t tap = -1;
      Block k = block(g, b0);
      for (int64_t b = b0; b < b1; ++b, next(g, k)) {
        if (k.tap != tap) {
          tap = k.tap;
          runs.clear();
          const std::array<int64_t, 3> r = filter_tap(g, tap);
          for (int64_t line = first; line < last; ++line)
            if (const Run run = run_of(g, line, r); run.len > 0) runs.push_back(run);
        }
        // The block's sums stay in registers across the line block's runs (a call per run loaded
        // and stored C every 14 pixels at 14x14).
        if (!runs.empty())
          ks->kernel_kmajor(static_cast<int>(runs.size()), runs.data(), dy + k.grp * g.dst_cg + k.row, lda,
                            x + k.grp * g.src_cg + k.col, ldb, block_out(g, k, out), ldc, first > l0);
        else if (first == l0)
          zero_blocks(g, b, b + 1, out);
      }
    }
  }
};

// The output pixels (n, o0, o1, o2) in row-major order, one step at a time.
struct PixelWalk {
  const ConvGeometry& g;
  int64_t n = 0;
  int64_t o[3] = {0, 0, 0};
  PixelWalk(const ConvGeometry& geo, int64_t q) : g(geo) {
    o[2] = q % g.dst_sp[2];
    q /= g.dst_sp[2];
    o[1] = q % g.dst_sp[1];
    q /= g.dst_sp[1];
    o[0] = q % g.dst_sp[0];
    n = q / g.dst_sp[0];
  }
  void next() {
    for (int d = 2; d >= 0; --d) {
      if (++o[d] < g.dst_sp[static_cast<size_t>(d)]) return;
      o[d] = 0;
    }
    ++n;
  }
  int64_t dy_offset() const { return n * g.dst_st[0] + o[0] * g.dst_st[2] + o[1] * g.dst_st[3] + o[2] * g.dst_st[4]; }
};

// One chunk's GEMM: M = output channels per group, N = taps x input channels per group (DW's
// KRSC order), K = the chunk's pixels [q0, q0 + K). A (DY^T) is packed k-major per tile and K
// block, a run of output channels per pixel; B (im2col(X)) once per run, a run of one tap's
// channels per pixel and panel. The sums go straight into `sums` ([group][M][N] fp32: DW itself,
// or the accumulator), the first chunk's set, the others' added (c_accumulates). (im2col(X)^T as
// A packed the taps x channels rows again for every K block in runs of a tile's 12 rows: 5 ms
// for a 3x3 C64 56x56 layer, 3.5x this form.)
class WgradProblem final : public gemm::GemmProblem {
 public:
  // `a_packed`: A of the whole chunk packed beforehand (pack_a_tile for every tile, [group][tile][K][mr]),
  // which a_rows then only points at; null: a_rows packs each task's tiles per K block.
  WgradProblem(const ConvGeometry& g, int64_t q0, int64_t len, const std::vector<void*>* ptrs, float* sums, bool first,
               const float* a_packed = nullptr)
      : g_(g), q0_(q0), sums_(sums), a_packed_(a_packed), first_(first) {
    batch = g.groups;
    M = g.dst_cg;
    N = g.taps() * g.src_cg;
    K = len;
    if (ptrs) {
      x_ = static_cast<const char*>((*ptrs)[static_cast<size_t>(g.src)]);
      dy_ = static_cast<const char*>((*ptrs)[static_cast<size_t>(g.dst)]);
    }
  }

  bool a_kmajor() const override { return true; }
  int64_t a_scratch_floats(int64_t mc, int64_t kc) const override { return (mc + 32) * kc; }  // tiles of <= 32 rows
  void a_rows(int64_t grp, int64_t m0, int64_t mc, const gemm::KBlock& kb, int mr, const float** rows,
              float* scratch) const override {
    const int64_t tiles = ceil_div(mc, mr);
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t first = m0 + t * mr;
      float* own = scratch + t * kb.kc() * mr;
      if (!a_packed_) pack_a_tile(grp, first, std::min<int64_t>(mr, m0 + mc - first), mr, kb.k0, kb.kc(), own);
      const float* panel = a_packed_ ? a_packed_ + ((grp * ceil_div(M, mr) + first / mr) * K + kb.k0) * mr : own;
      for (int s = 0; s < kb.nseg; ++s)
        for (int i = 0; i < mr; ++i) rows[(t * kb.nseg + s) * mr + i] = panel + s * kb.seg_len * mr;
    }
  }
  // Output channels [first, first + count) of group grp over pixels [k0, k0 + kc) of the chunk
  // into a k-major panel of mr rows (rows past count: zeros).
  void pack_a_tile(int64_t grp, int64_t first, int64_t count, int mr, int64_t k0, int64_t kc, float* panel) const {
    const int64_t es = size_of(g_.dst_t), cs = g_.dst_st[1];
    const char* chan = dy_ + (grp * g_.dst_cg + first) * cs * es;
    PixelWalk px(g_, q0_ + k0);
    for (int64_t k = 0; k < kc; ++k, px.next()) {
      float* out = panel + k * mr;
      gemm::convert_run(chan + px.dy_offset() * es, g_.dst_t, cs, count, out);
      std::fill(out + count, out + mr, 0.0f);
    }
  }

  int64_t b_count() const override { return g_.groups; }
  // Columns [n0, n0 + nc) (a filter tap and an input channel each) over the chunk's pixels: per
  // panel, runs of one tap's consecutive channels, listed once; then each pixel placed once.
  void pack_b(int64_t grp, int64_t n0, int64_t nc, int nr, float* dst) const override {
    const int64_t cg = g_.src_cg, es = size_of(g_.src_t), cs = g_.src_st[1];
    struct Run {
      int64_t col;  // within the panels: panel * K * nr + column
      size_t tap;   // index into taps
      int64_t chan_off, len;
    };
    std::vector<std::array<int64_t, 3>> taps;  // the distinct filter taps of the columns, in order
    std::vector<Run> runs;
    for (int64_t j = 0; j < nc;) {
      const int64_t n = n0 + j, tap = n / cg, c = n % cg;
      const int64_t len = std::min({cg - c, nc - j, nr - j % nr});  // one tap, one panel
      const std::array<int64_t, 3> r = filter_tap(g_, tap);
      if (taps.empty() || taps.back() != r) taps.push_back(r);
      runs.push_back({(j / nr) * K * nr + j % nr, taps.size() - 1, (grp * cg + c) * cs, len});
      j += len;
    }
    const int64_t panels = ceil_div(nc, nr), pad_from = nc - (panels - 1) * nr;
    std::vector<int64_t> tap_off(taps.size());  // a pixel's element offset of each tap, -1 in the padding
    PixelWalk px(g_, q0_);
    for (int64_t k = 0; k < K; ++k, px.next()) {
      for (size_t t = 0; t < taps.size(); ++t) {  // each tap placed once a pixel, then its runs copied
        int64_t off = px.n * g_.src_st[0];
        bool inside = true;
        for (size_t d = 0; d < 3; ++d) {
          const int64_t pos = px.o[d] * g_.stride[d] - g_.pad[d] + taps[t][d] * g_.dil[d];
          inside &= pos >= 0 && pos < g_.src_sp[d];
          off += pos * g_.src_st[2 + d];
        }
        tap_off[t] = inside ? off : -1;
      }
      for (const Run& run : runs) {
        float* out = dst + run.col + k * nr;
        if (const int64_t off = tap_off[run.tap]; off >= 0)
          gemm::convert_run(x_ + (off + run.chan_off) * es, g_.src_t, cs, run.len, out);
        else
          std::fill_n(out, run.len, 0.0f);
      }
      float* last = dst + (panels - 1) * K * nr + k * nr;  // the last panel's columns past nc
      std::fill(last + pad_from, last + nr, 0.0f);
    }
  }

  float* c_direct(int64_t grp, int64_t m0, int64_t n0, int64_t& ldc) const override {
    ldc = N;
    return sums_ + (grp * M + m0) * N + n0;
  }
  bool c_accumulates() const override { return !first_; }

 private:
  const ConvGeometry& g_;
  int64_t q0_;
  const char* x_ = nullptr;
  const char* dy_ = nullptr;
  float* sums_;
  const float* a_packed_;
  bool first_;
};

// conv_wgrad is planned as a partition of its own (fusion pattern "single_op", no anchor): the
// same partition with its one node as the anchor, so the epilogue (DW's store) lowers from it.
Partition anchored(const Partition& p) {
  Partition q = p;
  if (q.anchor < 0 && q.nodes.size() == 1 && ir::is<ConvWgradAttr>(q.node(0))) q.anchor = q.nodes[0];
  return q;
}

ConvGeometry geometry_of(const Partition& p) {
  ConvGeometry g;
  g.init(anchored(p));
  return g;
}

// The register tile that pads output channels by taps x input channels the least among those at
// least as wide as the ISA's default (the narrower 16 x 16 tile, which pads 64 output channels
// not at all, loads a vector of B per 16 products: 3x3 C64 56x56 ran slower on it).
const gemm::KernelSet& tile_shape(const Partition& p, Isa isa) {
  const ConvGeometry g = geometry_of(p);
  const int64_t n = g.taps() * g.src_cg;  // narrow (16 columns or fewer): any tile
  return gemm::kernel_for_shape(isa, g.dst_cg, n, n <= 16 ? 0 : gemm::kernel_set(isa).nr);
}

// Bytes of the fp32 accumulator, a multiple of 64; false when it overflows.
bool accumulator_bytes(const ConvGeometry& g, int64_t& out) {
  return checked::mul(g.taps(), g.src_cg, out) && checked::mul(out, g.dst_cg, out) &&
         checked::mul(out, g.groups, out) && checked::mul(out, 4, out) && checked::add(out, 63, out) && ((out = out / 64 * 64), true);
}

// Whether the epilogue is DW's plain fp32 store into dense KRSC (rows of taps x input channels):
// then the GEMMs sum into DW itself, with no accumulator and no store pass.
bool sums_into_dw(const ConvGeometry& g, const Epilogue& epi) {
  if (epi.plain_fp32_store() != g.wei || g.wei_st[1] != 1) return false;
  int64_t expect = g.src_cg;
  for (size_t d = 3; d-- > 0;) {
    if (g.ker[d] != 1 && g.wei_st[2 + d] != expect) return false;
    expect *= g.ker[d];
  }
  return g.wei_st[0] == expect || g.dst_c == 1;
}

class ConvWgradPlan final : public gemm::GemmPlan {
 public:
  ConvWgradPlan(const Partition& p, const Epilogue& epi, const GemmSetting& s, int threads)
      : GemmPlan(anchored(p), epi, 1, s, threads, &tile_shape(p, s.isa)), geo_(geometry_of(p)),
        chunk_(chunk_pixels(geo_)), into_dw_(sums_into_dw(geo_, epilogue())),
        in_place_(InPlaceRuns::of(geo_, s.isa)) {
    if (!into_dw_ && !accumulator_bytes(geo_, acc_bytes_)) acc_bytes_ = INT64_MAX;
    if (in_place_.ks) {  // nothing packed: the accumulator (unless DW takes the sums) and the partials
      partials_ = InPlaceRuns::threads(geo_, threads) - 1;
      int64_t bytes = 0;
      if (!accumulator_bytes(geo_, bytes) || !checked::mul(bytes, partials_, partial_bytes_)) partial_bytes_ = INT64_MAX;
      partial_floats_ = bytes / 4;
      return;
    }
    // K blocks whose B panel (kc x the tile's NR) fits L1 as the ISA's default tile's does: the
    // knobs' kc is sized for that tile, and a 48-wide panel of 256 pixels filled all of L1.
    gemm::Blocking b = blocking();
    b.kc = std::min(b.kc, gemm::default_blocking(kernels()).kc);
    set_blocking(b);
    reserve_workspace(WgradProblem(geo_, 0, chunk_, nullptr, nullptr, true));
    // A of a chunk packed once where it is small: else every task of a column range packs its
    // tiles again per K block (M = 64 output channels are 5-6 tiles, so tasks split N).
    int64_t floats = 0;
    const bool fits = checked::mul(geo_.groups, ceil_div(geo_.dst_cg, kernels().mr) * kernels().mr, floats) &&
                      checked::mul(floats, chunk_, floats) && floats <= kMaxPackedAFloats;
    a_bytes_ = fits ? floats * 4 : 0;
  }

  int64_t workspace_size() const override {
    int64_t total = 0;
    if (in_place_.ks) return checked::add(acc_bytes_, partial_bytes_, total) ? total : INT64_MAX;
    return checked::add(acc_bytes_, a_bytes_, total) && checked::add(total, GemmPlan::workspace_size(), total)
               ? total
               : INT64_MAX;
  }

  Status execute(const ExecArgs& args) const override {
    ThreadPool& pool = args.handle.thread_pool();
    float* sums = into_dw_ ? static_cast<float*>(args.ptrs[static_cast<size_t>(geo_.wei)])
                           : static_cast<float*>(args.workspace);
    float* a_packed = a_bytes_ ? reinterpret_cast<float*>(static_cast<char*>(args.workspace) + acc_bytes_) : nullptr;
    void* gemm_ws = static_cast<char*>(args.workspace) + acc_bytes_ + a_bytes_;
    const int64_t pixels = reduction_pixels(geo_), mr = kernels().mr, tiles = ceil_div(geo_.dst_cg, mr);
    if (pixels == 0) std::fill_n(sums, geo_.groups * geo_.dst_cg * geo_.taps() * geo_.src_cg, 0.0f);
    if (in_place_.ks && pixels > 0) {
      sum_in_place(args, sums, pool);
      return into_dw_ ? Status{} : store(sums, args.ptrs, pool);
    }
    for (int64_t q0 = 0; q0 < pixels; q0 += chunk_) {
      const int64_t len = std::min(chunk_, pixels - q0);
      const WgradProblem chunk(geo_, q0, len, &args.ptrs, sums, q0 == 0, a_packed);
      if (a_packed)
        pool.parallel_for(geo_.groups * tiles, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            const int64_t first = (i % tiles) * mr;
            chunk.pack_a_tile(i / tiles, first, std::min(mr, geo_.dst_cg - first), static_cast<int>(mr), 0, len,
                              a_packed + i * len * mr);
          }
        });
      if (auto s = run_problem(chunk, pool, gemm_ws, args.ptrs); !s.ok()) return s;
    }
    return into_dw_ ? Status{} : store(sums, args.ptrs, pool);
  }

 private:
  // InPlaceRuns: each thread sums a range of pixels, the first into `sums`, the others into
  // partials (after the accumulator in the workspace) that are then added, a range of rows each;
  // or, with too few pixels to share, each thread a range of DW's blocks over every pixel.
  void sum_in_place(const ExecArgs& args, float* sums, ThreadPool& pool) const {
    const auto* dy = static_cast<const float*>(args.ptrs[static_cast<size_t>(geo_.dst)]);
    const auto* x = static_cast<const float*>(args.ptrs[static_cast<size_t>(geo_.src)]);
    const int64_t size = geo_.groups * geo_.dst_cg * geo_.taps() * geo_.src_cg, blocks = in_place_.blocks(geo_);
    // At most the plan's ranges (a larger pool than planned sums in fewer).
    const int64_t threads = std::min(InPlaceRuns::threads(geo_, static_cast<int64_t>(pool.size())), partials_ + 1);
    if (threads < static_cast<int64_t>(pool.size()) && blocks >= static_cast<int64_t>(pool.size())) {
      // Too few pixels to share: each thread takes blocks of DW over every pixel.
      pool.parallel_for(blocks, [&](int64_t b, int64_t e) { in_place_.sum_blocks(geo_, dy, x, b, e, 0, 1, sums); });
      return;
    }
    float* partials = reinterpret_cast<float*>(static_cast<char*>(args.workspace) + acc_bytes_);
    auto out_of = [&](int64_t t) { return t == 0 ? sums : partials + (t - 1) * partial_floats_; };
    pool.parallel_for(threads, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) in_place_.sum_share(geo_, dy, x, t, threads, out_of(t));
    });
    if (threads == 1) return;
    pool.parallel_for(size, [&](int64_t b, int64_t e) {
      for (int64_t t = 1; t < threads; ++t) {
        const float* part = out_of(t);
        for (int64_t i = b; i < e; ++i) sums[i] += part[i];
      }
    });
  }

  // DW through the epilogue: per (group, output channel) and tap, the input channels' sums (one
  // run of the accumulator, whose rows are DW's in KRSC order).
  Status store(const float* acc, const std::vector<void*>& ptrs, ThreadPool& pool) const {
    EpilogueRun run(epilogue(), ptrs, pool.size());
    const int64_t cg = geo_.src_cg, n = geo_.taps() * cg;
    gemm::ThreadSlots slots(pool.size());
    pool.parallel_for(geo_.groups * geo_.dst_cg, [&](int64_t b, int64_t e) {
      gemm::SlotGuard guard(slots);
      for (int64_t row = b; row < e; ++row)
        for (int64_t t = 0; t < geo_.taps(); ++t) {
          const std::array<int64_t, 3> r = filter_tap(geo_, t);
          int64_t coord[5] = {row, 0, 0, 0, 0};  // DW's (output channel, input channel, taps...)
          for (int i = 0; i < geo_.nsp; ++i) coord[2 + i] = r[static_cast<size_t>(3 - geo_.nsp + i)];
          run.strip(guard.slot(), coord, 1, cg, 1, acc + row * n + t * cg);
        }
    });
    return run.finish();
  }

  ConvGeometry geo_;
  int64_t chunk_;
  bool into_dw_;           // the sums go straight into DW (sums_into_dw)
  int64_t acc_bytes_ = 0;  // else into an fp32 accumulator at the workspace's start
  int64_t a_bytes_ = 0;    // A of a chunk packed once, after it (0: packed per task)
  InPlaceRuns in_place_;
  int64_t partials_ = 0;       // InPlaceRuns: the other threads' partial sums, after the accumulator
  int64_t partial_bytes_ = 0;
  int64_t partial_floats_ = 0;  // one partial: the accumulator's size, a multiple of 64 bytes
};

class ConvWgradGemmEngine final : public gemm::GemmEngine<ConvWgradPlan> {
 public:
  ConvWgradGemmEngine() : GemmEngine("cpu_conv_wgrad_gemm") {}

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    // The packing of A per tile and K block and the accumulator passes cost ~30% over a GEMM.
    const double eff = gemm::kernel_efficiency(isa_of(k)) * 0.7;
    return roofline_seconds(partition_flops(p), 2.0 * partition_bytes(p), t.info(), eff, 5e-6);
  }

 private:
  bool accepts(const Partition& p, const Target& t, Epilogue& epi, std::string& why) const override {
    const ir::Node* n = check_anchor(anchored(p), t, "conv_wgrad", epi, why);
    if (!n) return false;
    int64_t bytes = 0;
    if (accumulator_bytes(geometry_of(p), bytes) && bytes <= checked::kMaxSpanBytes) return true;
    why = "node '" + n->name + "', tensor '" + p.graph->tensor(n->outputs[0]).name +
          "': its fp32 accumulator needs more than 2^48 bytes of workspace";
    return false;
  }
  // im2col(X) of one chunk of pixels, per group.
  gemm::PackedB packed_b(const Partition& p) const override {
    const ConvGeometry g = geometry_of(p);
    return {g.groups, g.taps() * g.src_cg, chunk_pixels(g)};
  }
};

}  // namespace

const Engine& conv_wgrad_gemm_engine() { return engine_instance<ConvWgradGemmEngine>(); }

}  // namespace dnngraph::cpu
