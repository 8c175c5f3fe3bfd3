// cpu_conv_implicit_gemm: convolution as GEMM without materialising im2col. Per group,
// M = output pixels, N = output channels, K = taps x input channels (channel fastest). A's rows
// are read in place through one pointer per (pixel, tap) when the input is fp32 with unit channel
// stride (NHWC: the indirect form) or bf16 read as channel pairs by the vdpbf16ps kernels, else
// gathered (AMX: tile halves copied where they cross rows) or converted into the packed-A block; the
// weights are packed into NR-wide B panels once per execute, or once per plan and pointer when
// they are constant (TensorAttr::set_is_constant); the epilogue runs on each C block.
// conv_dgrad (the transposed convolution) runs as one such GEMM per stride phase: the outputs
// i = rho + s*j all read the same taps (those with (rho + pad - r*dil) divisible by s), from
// input j + (rho + pad - r*dil)/s, so no multiply by an inserted zero is ever done.
// Where few pixels share each weight (7x7 and 14x14 layers) and the weights are fp32 KRSC, a
// conv_fprop reads them in place instead, as dot-product tiles (conv_implicit_dot.hpp), when the
// tiles' cost model expects that to beat the packed form.
#include "engines/cpu/conv/conv_implicit_gemm.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

#include "engines/cpu/anchor_check.hpp"
#include "engines/cpu/conv/conv_geometry.hpp"
#include "engines/cpu/conv/conv_implicit_dot.hpp"
#include "engines/cpu/conv/conv_kernel_form.hpp"
#include "engines/cpu/cpu_engine.hpp"
#include "engines/cpu/gemm/gemm_plan.hpp"
#include "engines/cpu/gemm/pack.hpp"
#include "engines/cpu/gemm/pack_bf16.hpp"

namespace dnngraph::cpu {
namespace {

using conv_form::KernelForm;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The largest per-plan table of tap offsets kept (8 MiB); larger convs resolve taps per row.
// Resolving a few-channel conv's taps per row took a third of ResNet-50's 7x7 stem (4.4 -> 2.9 ms
// under load 2), which now reads whole kernel rows instead (kernel_row_segments) and drops it.
constexpr int64_t kMaxOffsets = 1 << 20;
// The most stride phases of a conv_dgrad planned, one GEMM each.
constexpr int64_t kMaxPhases = 1 << 12;

// Whether the chain's output (channels last) has its pixels at one stride ld, as flat_pixels.
bool chain_output_flat(const ConvGeometry& g, const Epilogue& epi, int64_t& ld) {
  ConvGeometry og = g;
  const auto& st = epi.chain_store_strides();
  og.dst_st[0] = st[0];
  og.dst_st[1] = st[1];
  for (int i = 0; i < g.nsp; ++i) og.dst_st[static_cast<size_t>(2 + 3 - g.nsp + i)] = st[static_cast<size_t>(2 + i)];
  return og.dst_st[1] == 1 && flat_pixels(og.dst_st, og.dst_sp, og.n, ld);
}

class ConvProblem final : public gemm::GemmProblem {
 public:
  // `over_operand`: the chain may store over an operand it reads at the same place (conv_form::chain_over_operand).
  ConvProblem(const ConvGeometry& g, const ConvPhase& ph, const Epilogue& epi, const std::vector<void*>* ptrs,
              EpilogueRun* run, int mr, int nr, KernelForm form, bool over_operand = false)
      : g_(g), ph_(ph), run_(run), nr_(nr), amx_(form == KernelForm::BF16_AMX), pairs_(form != KernelForm::FP32) {
    batch = g.groups;
    M = g.n * ph.pixels();
    N = g.dst_cg;
    K = ph.taps() * g.src_cg / (pairs_ ? 2 : 1);  // bf16 pairs along the channels
    if (ptrs) {
      src_ = (*ptrs)[static_cast<size_t>(g.src)];
      wei_ = (*ptrs)[static_cast<size_t>(g.wei)];
      dst_ = (*ptrs)[static_cast<size_t>(g.dst)];
    }
    // Rows read in place: fp32 channels, or bf16 channel pairs for vdpbf16ps (AMX copies halves).
    indirect_ = g.src_st[1] == 1 && (g.src_t == DataType::FLOAT || form == KernelForm::BF16_DOT);
    row_taps_ = kernel_row_segments(g, ph, amx_);
    // Rows that would crowd one L1 set (1x1 C1024 14x14 -> 256, pixels 4 KiB apart: 0.72 ms against
    // C1040's 0.47 on Zen 4) are copied a block at a time, staged_ld apart.
    staged_ = indirect_ && !row_taps_ && cpu_features().rows_crowd_l1(ph.jstride[2] * g.src_st[4] * src_es_, mr);
    int64_t ldc = 0;
    c_direct_ = !g.dgrad && epi.plain_fp32_store() == g.dst && g.dst_st[1] == 1 && flat_pixels(g.dst_st, g.dst_sp, g.n, ldc);
    int64_t chain_ld = 0;
    if (!c_direct_ && !g.dgrad && epi.rows_form() && ptrs && chain_output_flat(g, epi, chain_ld)) {
      if (epi.in_place() && (over_operand || run->in_place_safe())) {
        // An fp32 chain: the tiles go straight to its output, finished block by block.
        c_direct_ = chain_ = true;
        dst_ = (*ptrs)[static_cast<size_t>(epi.chain_store())];
        ldc = chain_ld;
      } else {
        // A chain into a bf16 / fp16 output (or over one): the C block's rows go through it in one
        // call (a strip per row, finding its coordinates, cost more than the chain).
        rows_out_ = true;
        rows_ld_ = chain_ld;
      }
    }
    ldc_ = ldc;
  }

  // Narrow taps (a stem's 3 channels) along a packed fp32 input row: a kernel row's taps are one
  // run of kw x C floats, read as one segment (row_tap_rows) instead of kw short ones.
  static bool kernel_row_segments(const ConvGeometry& g, const ConvPhase& ph, bool amx) {
    return g.src_t == DataType::FLOAT && g.src_st[1] == 1 && !amx && !g.dgrad && g.groups == 1 && g.src_cg < 16 &&
           g.dil[2] == 1 && g.src_st[4] == g.src_cg && ph.off[2].size() > 1;
  }

  // With A read in place (indirect) kc is a floor: each K block costs a pass over the task's C
  // and a kernel call per tile, and nothing is packed per block, so blocks grow until one B panel
  // fills an eighth of L2 (3x3 C256 14x14, 2 MiB L2: 1.16 ms at kc 192, 0.87-0.93 ms at 768-2304).
  std::vector<gemm::KBlock> k_blocks(int64_t kc_knob) const override {
    std::vector<gemm::KBlock> out;
    const int64_t kc = indirect_ ? std::max(kc_knob, cpu_features().l2_bytes / 8 / (nr_ * 4)) : kc_knob;
    const int64_t icg = g_.src_cg / (pairs_ ? 2 : 1), taps = ph_.taps();  // pairs (AMX: a multiple of 16)
    if (row_taps_) {  // whole kernel rows per block, one segment each
      const int64_t kw = static_cast<int64_t>(ph_.off[2].size()), per = std::max<int64_t>(1, kc / (kw * icg));
      for (int64_t r = 0; r < taps / kw; r += per)
        out.push_back({r * kw * icg, static_cast<int>(std::min(per, taps / kw - r)), kw * icg});
      return out;
    }
    if (icg <= kc) {  // whole taps per block, one segment each
      const int64_t per = std::max<int64_t>(1, kc / icg);
      for (int64_t t = 0; t < taps; t += per)
        out.push_back({t * icg, static_cast<int>(std::min(per, taps - t)), icg});
    } else {  // a tap's channels in equal chunks (AMX: of whole 16-pair steps)
      const int64_t chunk = amx_ ? (ceil_div(icg, ceil_div(icg, kc)) + 15) / 16 * 16 : ceil_div(icg, ceil_div(icg, kc));
      for (int64_t t = 0; t < taps; ++t)
        for (int64_t c0 = 0; c0 < icg; c0 += chunk) out.push_back({t * icg + c0, 1, std::min(chunk, icg - c0)});
    }
    return out;
  }

  int64_t a_scratch_floats(int64_t mc, int64_t kc) const override {
    if (row_taps_) return kc + (mc + 32) * kc;  // zeros, then the rows that cut the padding, gathered
    if (staged_) return kc + mc * staged_ld(kc);  // zeros, then the staged rows
    return indirect_ ? kc : amx_ ? (mc + 32) * kc : mc * kc;
  }

  // Staged rows' stride: whole lines, an odd number of them, so up to 64 rows fall in distinct sets.
  static int64_t staged_ld(int64_t kc) {
    const int64_t lines = ceil_div(kc, 16);
    return (lines | 1) * 16;
  }
  // Row i of the block's segment s as the kernel reads it: in place, or staged (a copy of `row`
  // where i < mc; rows past mc repeat the last).
  const float* row_to_read(const float* row, int64_t i, int64_t mc, int s, const gemm::KBlock& kb, float* scratch) const {
    if (!staged_) return row;
    float* dst = scratch + kb.kc() + std::min(i, mc - 1) * staged_ld(kb.kc()) + s * kb.seg_len;
    if (i < mc) std::memcpy(dst, row, static_cast<size_t>(kb.seg_len) * 4);
    return dst;
  }
  bool zero_rows_at_scratch() const override { return indirect_; }  // taps outside read `scratch` (zeros)
  bool a_kmajor() const override { return amx_; }  // AMX reads each segment's rows as one tile block
  // AMX halves that cross output rows or read padding, and staged rows, are copied per task: the
  // threads split the rows, so each copies its own (C1024 14x14 -> 256 staged by both threads in
  // column shares: 0.54-0.57 ms, in row shares 0.46-0.47; Zen 4, 2026-12-07).
  bool a_gathered() const override { return amx_ || staged_; }

  // Row i of segment s of a block lives at rows[((i / mr) * nseg + s) * mr + i % mr]: walked row by
  // row with a lane counter, not a division per row and segment (the divisions were a quarter of
  // a_rows, itself 12% of a 7x7 stem's samples).
  struct RowSlots {
    const float** tile;
    int64_t stride, lane = 0;
    int mr;
    RowSlots(const float** rows, int s, int nseg, int mr_) : tile(rows + s * mr_), stride(int64_t{nseg} * mr_), mr(mr_) {}
    void set(const float* p) const { tile[lane] = p; }
    void next() {
      if (++lane == mr) {
        lane = 0;
        tile += stride;
      }
    }
  };

  // AMX, per segment and 16-row half (one tile load): when its 16 pixels lie inside the input at
  // one stride (a run along an output row, or across rows where the input's rows follow each
  // other), the tile reads the input in place; otherwise its rows are copied as they are into a
  // row-major block of seg_len bf16 pairs (zero where they read padding or lie past mc). The
  // copies were a third of a 3x3 C64 56x56 layer's time.
  void a_rows_amx(int64_t grp, int64_t m0, int64_t mc, const gemm::KBlock& kb, int mr, const float** rows,
                  float* scratch) const {
    const int64_t icg = g_.src_cg, padded = ceil_div(mc, mr) * mr, pix = ph_.pixels();
    const size_t n1 = ph_.off[1].size(), n2 = ph_.off[2].size();
    const auto* src = static_cast<const uint16_t*>(src_);
    for (int s = 0; s < kb.nseg; ++s) {
      const int64_t kk = 2 * (kb.k0 + s * kb.seg_len), t = kk / icg, c0 = kk % icg;
      const size_t ut = static_cast<size_t>(t);
      const int64_t toff[3] = {ph_.off[0][ut / (n1 * n2)], ph_.off[1][(ut / n2) % n1], ph_.off[2][ut % n2]};
      const int64_t chan = grp * icg + c0;
      float* block = scratch + s * padded * kb.seg_len;
      int64_t nn = m0 / pix, p = m0 % pix;
      int64_t j[3] = {p / (ph_.count[1] * ph_.count[2]), (p / ph_.count[2]) % ph_.count[1], p % ph_.count[2]};
      for (int64_t h0 = 0; h0 < padded; h0 += kHalf) {
        if (h0 > 0 && h0 < mc) advance_pixel(nn, j);  // row h0's pixel
        const float** slot = rows + ((h0 / mr) * kb.nseg + s) * mr + h0 % mr;
        int64_t off = 0;
        if (h0 + kHalf <= mc && j[2] + kHalf <= ph_.count[2] && run_inside(nn, j, toff, chan, off)) {
          // 16 pixels along one output row, every tap inside: one stride, read in place.
          const int64_t step = ph_.jstride[2] * g_.src_st[4];
          for (int r = 0; r < kHalf; ++r) slot[r] = reinterpret_cast<const float*>(src + off + r * step);
          j[2] += kHalf - 1;  // the half's last pixel, as the copying path leaves it
          continue;
        }
        int64_t row_off[kHalf];
        bool in[kHalf], all_in = true;
        for (int r = 0; r < kHalf; ++r) {
          const int64_t i = h0 + r;
          if (r > 0 && i < mc) advance_pixel(nn, j);
          row_off[r] = nn * g_.src_st[0] + chan;
          in[r] = i < mc;
          for (size_t d = 0; d < 3; ++d) {
            const int64_t pos = j[d] * ph_.jstride[d] + toff[d];
            in[r] &= pos >= 0 && pos < g_.src_sp[d];
            row_off[r] += pos * g_.src_st[2 + d];
          }
          all_in &= in[r];
        }
        // Pixels across an output row that still read the input at one stride (a 1x1 conv's, or a
        // centre-column tap's, on an input whose rows follow each other): in place too.
        const int64_t step = row_off[1] - row_off[0];
        bool uniform = all_in && step > 0;
        for (int r = 2; r < kHalf && uniform; ++r) uniform = row_off[r] - row_off[r - 1] == step;
        for (int r = 0; r < kHalf; ++r) {
          if (uniform) {
            slot[r] = reinterpret_cast<const float*>(src + row_off[r]);
            continue;
          }
          float* dst = block + (h0 + r) * kb.seg_len;
          slot[r] = dst;
          if (in[r]) std::memcpy(dst, src + row_off[r], static_cast<size_t>(kb.seg_len) * 4);
          else std::fill_n(dst, kb.seg_len, 0.0f);
        }
      }
    }
  }

  static constexpr int kHalf = 16;  // rows per AMX tile load

  // Whether the kHalf pixels from (nn, j) along the output row read inside the input for the tap
  // at `toff`; `off` gets the first one's element offset.
  bool run_inside(int64_t nn, const int64_t* j, const int64_t* toff, int64_t chan, int64_t& off) const {
    off = nn * g_.src_st[0] + chan;
    for (size_t d = 0; d < 3; ++d) {
      const int64_t first = j[d] * ph_.jstride[d] + toff[d];
      const int64_t last = d == 2 ? first + (kHalf - 1) * ph_.jstride[2] : first;
      if (first < 0 || last >= g_.src_sp[d]) return false;
      off += first * g_.src_st[2 + d];
    }
    return true;
  }

  // Segment-major: a segment's tap offsets are resolved once, and the pixel coordinates of
  // consecutive rows advance by one instead of being divided out per row and segment (those
  // divisions were ~4% of the 1x1 layer's samples).
  void a_rows(int64_t grp, int64_t m0, int64_t mc, const gemm::KBlock& kb, int mr, const float** rows,
              float* scratch) const override {
    if (amx_) {
      a_rows_amx(grp, m0, mc, kb, mr, rows, scratch);
      return;
    }
    const int64_t unit = pairs_ ? 2 : 1;  // channels per K element
    const int64_t icg = g_.src_cg / unit, kc = kb.kc(), es = size_of(g_.src_t);
    const int64_t padded = ceil_div(mc, mr) * mr, pix = ph_.pixels();
    const size_t n1 = ph_.off[1].size(), n2 = ph_.off[2].size();
    if (indirect_) std::fill_n(scratch, kb.seg_len, 0.0f);
    if (row_taps_) {
      row_tap_rows(m0, mc, kb, mr, rows, scratch);
      return;
    }
    if (indirect_ && !ph_.src_offset.empty()) {
      indirect_rows_from_table(grp, m0, mc, kb, mr, rows, scratch);
      return;
    }
    for (int s = 0; s < kb.nseg; ++s) {
      const int64_t kk = kb.k0 + s * kb.seg_len, t = kk / icg, c0 = kk % icg * unit;
      const size_t ut = static_cast<size_t>(t);
      const int64_t toff[3] = {ph_.off[0][ut / (n1 * n2)], ph_.off[1][(ut / n2) % n1], ph_.off[2][ut % n2]};
      const int64_t chan = (grp * g_.src_cg + c0) * g_.src_st[1];
      int64_t nn = m0 / pix, p = m0 % pix;
      int64_t j[3] = {p / (ph_.count[1] * ph_.count[2]), (p / ph_.count[2]) % ph_.count[1], p % ph_.count[2]};
      RowSlots slots(rows, s, kb.nseg, mr);
      for (int64_t i = 0; i < padded; ++i, slots.next()) {
        if (i > 0 && i < mc) advance_pixel(nn, j);  // rows past mc repeat the last real row
        int64_t off = nn * g_.src_st[0] + chan;
        bool inside = true;
        for (size_t d = 0; d < 3; ++d) {
          const int64_t pos = j[d] * ph_.jstride[d] + toff[d];
          inside &= pos >= 0 && pos < g_.src_sp[d];
          off += pos * g_.src_st[2 + d];
        }
        if (indirect_) {
          slots.set(inside ? row_to_read(in_place(off), i, mc, s, kb, scratch) : scratch);
          continue;
        }
        float* dst = scratch + std::min(i, mc - 1) * kc + s * kb.seg_len;
        if (i < mc) {  // padding rows reuse the last real row's data
          if (inside) gemm::convert_run(static_cast<const char*>(src_) + off * es, g_.src_t, g_.src_st[1], kb.seg_len, dst);
          else std::fill_n(dst, kb.seg_len, 0.0f);
        }
        slots.set(dst);
      }
    }
  }

  // The indirect rows through the phase's offset table: a lookup per (row, segment) instead of
  // resolving each tap's position and bounds (that was two thirds of a grouped conv with 4
  // channels per group, whose segments are 4 floats long).
  void indirect_rows_from_table(int64_t grp, int64_t m0, int64_t mc, const gemm::KBlock& kb, int mr,
                                const float** rows, float* zeros) const {
    const int64_t unit = pairs_ ? 2 : 1;  // channels per K element
    const int64_t icg = g_.src_cg / unit, padded = ceil_div(mc, mr) * mr, pix = ph_.pixels();
    for (int s = 0; s < kb.nseg; ++s) {
      const int64_t kk = kb.k0 + s * kb.seg_len, t = kk / icg;
      const int64_t chan = (grp * g_.src_cg + kk % icg * unit) * g_.src_st[1];
      const int64_t* tap_offsets = ph_.src_offset.data() + t * pix;
      int64_t nn = m0 / pix, p = m0 % pix;
      RowSlots slots(rows, s, kb.nseg, mr);
      for (int64_t i = 0; i < padded; ++i, slots.next()) {
        if (i > 0 && i < mc && ++p == pix) {  // rows past mc repeat the last real row
          p = 0;
          ++nn;
        }
        const int64_t off = tap_offsets[p];
        slots.set(off == ConvPhase::kOutside ? zeros
                                             : row_to_read(in_place(chan + nn * g_.src_st[0] + off), i, mc, s, kb, zeros));
      }
    }
  }

  // Kernel rows as segments (row_taps_): a pixel's run of kw taps is read in place where it lies
  // inside the input row, gathered into scratch (after its seg_len zeros) with zeros for the taps
  // in the padding where it cuts it, and is the zeros where its input row is outside. Walked a run
  // of output pixels along a row at a time, whose in-row columns are known from the run's bounds
  // (resolving each pixel's position and bounds was 18% of a 7x7 stem's samples).
  void row_tap_rows(int64_t m0, int64_t mc, const gemm::KBlock& kb, int mr, const float** rows, float* scratch) const {
    const int64_t icg = g_.src_cg, seg = kb.seg_len, kw = static_cast<int64_t>(ph_.off[2].size());
    const int64_t padded = ceil_div(mc, mr) * mr, pix = ph_.pixels(), cols = ph_.count[2];
    const size_t n1 = ph_.off[1].size();
    const float* src = static_cast<const float*>(src_);
    float* gathered = scratch + seg;
    // Output columns whose kw taps all lie inside the input row: [in_lo, in_hi).
    const int64_t js = ph_.jstride[2], t2 = ph_.off[2][0], room = g_.src_sp[2] - kw - t2;
    const int64_t in_hi = std::min(cols, room < 0 ? 0 : room / js + 1);
    const int64_t in_lo = std::min(in_hi, t2 >= 0 ? 0 : ceil_div(-t2, js));
    for (int s = 0; s < kb.nseg; ++s) {
      const size_t row = static_cast<size_t>((kb.k0 + s * seg) / (kw * icg));  // (r0, r1) of the kernel
      const int64_t t0 = ph_.off[0][row / n1], t1 = ph_.off[1][row % n1];
      int64_t nn = m0 / pix, p = m0 % pix;
      int64_t j[3] = {p / (ph_.count[1] * cols), (p / cols) % ph_.count[1], p % cols};
      RowSlots slots(rows, s, kb.nseg, mr);
      const float* last = scratch;
      for (int64_t i = 0; i < mc;) {
        const int64_t run = std::min(cols - j[2], mc - i), end = j[2] + run;  // along one output row
        const int64_t y0 = j[0] * ph_.jstride[0] + t0, y1 = j[1] * ph_.jstride[1] + t1;
        if (y0 < 0 || y0 >= g_.src_sp[0] || y1 < 0 || y1 >= g_.src_sp[1]) {
          for (int64_t q = 0; q < run; ++q, slots.next()) slots.set(scratch);
          last = scratch;
        } else {
          const float* line = src + nn * g_.src_st[0] + y0 * g_.src_st[2] + y1 * g_.src_st[3];
          auto gather = [&](int64_t jx) {
            for (int64_t q = 0, x = jx * js + t2; q < kw; ++q, ++x) {
              if (x >= 0 && x < g_.src_sp[2]) std::copy_n(line + x * icg, icg, gathered + q * icg);
              else std::fill_n(gathered + q * icg, icg, 0.0f);
            }
            last = gathered;
            gathered += seg;
            return last;
          };
          int64_t jx = j[2];
          for (; jx < std::min(end, in_lo); ++jx, slots.next()) slots.set(gather(jx));
          for (; jx < std::min(end, in_hi); ++jx, slots.next()) {
            last = line + (jx * js + t2) * icg;
            slots.set(last);
          }
          for (; jx < end; ++jx, slots.next()) slots.set(gather(jx));
        }
        i += run;
        j[2] = end - 1;  // the run's last pixel; the next run starts one past it
        if (i < mc) advance_pixel(nn, j);
      }
      for (int64_t i = mc; i < padded; ++i, slots.next()) slots.set(last);  // rows past mc repeat the last
    }
  }

  // The source element at `off` as a row pointer: an fp32 value or a bf16 pair per 32-bit slot.
  const float* in_place(int64_t off) const {
    return reinterpret_cast<const float*>(static_cast<const char*>(src_) + off * src_es_);
  }

  // The next dst position of the phase, row-major over (n, j0, j1, j2).
  void advance_pixel(int64_t& nn, int64_t* j) const {
    if (++j[2] < ph_.count[2]) return;
    j[2] = 0;
    if (++j[1] < ph_.count[1]) return;
    j[1] = 0;
    if (++j[0] < ph_.count[0]) return;
    j[0] = 0;
    ++nn;
  }

  int64_t b_count() const override { return g_.groups; }
  void pack_b(int64_t grp, int64_t n0, int64_t nc, int nr, float* dst) const override {
    const int64_t icg = g_.src_cg, es = size_of(g_.wei_t);
    const int64_t oc_stride = g_.dgrad ? g_.wei_st[1] : g_.wei_st[0];
    const int64_t ic_stride = g_.dgrad ? g_.wei_st[0] : g_.wei_st[1];
    const size_t n1 = ph_.rtap[1].size(), n2 = ph_.rtap[2].size();
    const int64_t taps = ph_.taps();
    for (int64_t p = 0; p * nr < nc; ++p) {
      const int64_t oc0 = n0 + p * nr, w = std::min<int64_t>(nr, nc - p * nr);
      for (int64_t t = 0; t < taps; ++t) {  // one tap's icg rows: a (channel x out channel) slice
        const size_t ut = static_cast<size_t>(t);
        const int64_t rt = (ph_.rtap[0][ut / (n1 * n2)] * g_.ker[1] + ph_.rtap[1][(ut / n2) % n1]) * g_.ker[2] +
                           ph_.rtap[2][ut % n2];
        const gemm::StridedMatrix slice{static_cast<const char*>(wei_) + g_.wei_offset(grp, 0, oc0, rt) * es, g_.wei_t,
                                        ic_stride, oc_stride};
        if (pairs_) gemm::pack_b_bf16_pairs(slice, icg, 0, w, nr, icg / 2, dst + p * K * nr + t * (icg / 2) * nr);
        else gemm::pack_panels(slice, icg, 0, w, nr, dst + p * K * nr + t * icg * nr);
      }
    }
  }

  float* c_direct(int64_t grp, int64_t m0, int64_t n0, int64_t& ldc) const override {
    if (!c_direct_) return nullptr;
    ldc = ldc_;
    return static_cast<float*>(dst_) + m0 * ldc_ + grp * g_.dst_cg + n0;
  }

  void c_direct_done(int64_t grp, int64_t m0, int64_t mc, int64_t n0, int64_t nc, float* c, int64_t ldc) const override {
    if (chain_) run_->chain_rows(c, ldc, mc, nc, m0 * ldc_ + grp * g_.dst_cg + n0, grp * g_.dst_cg + n0);
  }
  bool chains_tiles() const override { return chain_; }
  void tile_chain(int64_t grp, int64_t m0, int64_t n0, TileChain& tc) const override {
    run_->tile_chain(m0 * ldc_ + grp * g_.dst_cg + n0, grp * g_.dst_cg + n0, ldc_, tc);
  }

  void c_block(int slot, int64_t grp, int64_t m0, int64_t mc, int64_t n0, int64_t nc, const float* c,
               int64_t ldc) const override {
    if (rows_out_) {
      const int64_t chan = grp * g_.dst_cg + n0;
      run_->chain_rows_into(slot, c, ldc, mc, nc, m0 * rows_ld_ + chan, rows_ld_, chan);
      return;
    }
    const int64_t pix = ph_.pixels();
    int64_t coord[5];
    for (int64_t i = 0; i < mc; ++i) {
      const int64_t m = m0 + i, nn = m / pix, p = m % pix;
      const int64_t j[3] = {p / (ph_.count[1] * ph_.count[2]), (p / ph_.count[2]) % ph_.count[1], p % ph_.count[2]};
      int64_t o[3];
      for (size_t d = 0; d < 3; ++d) o[d] = ph_.start[d] + ph_.step[d] * j[d];
      g_.dst_coord(nn, grp * g_.dst_cg + n0, o, coord);
      run_->strip(slot, coord, 1, nc, 1, c + i * ldc);
    }
  }

 private:
  const ConvGeometry& g_;
  const ConvPhase& ph_;
  EpilogueRun* run_;
  const void* src_ = nullptr;
  const void* wei_ = nullptr;
  void* dst_ = nullptr;
  bool indirect_ = false, c_direct_ = false, chain_ = false, row_taps_ = false;
  bool staged_ = false;  // in-place rows that crowd an L1 set, copied per block (CpuFeatures::rows_crowd_l1)
  bool rows_out_ = false;  // c_block hands its rows to the chain (EpilogueRun::chain_rows_into)
  int64_t ldc_ = 0, rows_ld_ = 0;
  int64_t src_es_ = size_of(g_.src_t);
  int nr_;
  bool amx_;    // KernelForm::BF16_AMX: A's rows in 16-row halves (a_rows_amx)
  bool pairs_;  // K counts bf16 channel pairs (BF16_DOT or BF16_AMX)
};

ConvGeometry geometry(const Partition& p) {
  ConvGeometry g;
  g.init(p);
  return g;
}

class ConvImplicitPlan final : public gemm::GemmPlan {
 public:
  // The epilogue runs in place along the channel dim of the output.
  ConvImplicitPlan(const Partition& p, const Epilogue& epi, const GemmSetting& s, int threads)
      : GemmPlan(p, epi, 1, s, threads, &conv_form::tile_shape(geometry(p), s.isa)) {
    geo_.init(p);
    phases_ = conv_phases(geo_, kMaxOffsets);
    form_ = conv_form::form_of(geo_, kernels());
    if (form_ == KernelForm::BF16_AMX) {  // as the matmul's AMX plans: at most 192 rows, K blocks filling half of L2
      gemm::Blocking b = blocking();
      b.mc = std::min<int64_t>(b.mc, 192);
      b.kc = std::max<int64_t>(b.kc, cpu_features().l2_bytes / 2 / (b.mc * 4) / 16 * 16);
      set_blocking(b);
    }
    if (phases_.size() == 1) keep_b_if_constant(geo_.wei);  // a dgrad's phases each pack other taps
    if (conv_form::dot_form(geo_, phases_, kernels(), b_kept())) {
      dot_ = std::make_unique<ConvDotGemm>(geo_, phases_[0], conv_dot::dot_kernels(kernels().isa), threads);
      return;  // no workspace: nothing is packed
    }
    over_operand_ = form_ == KernelForm::FP32 && phases_.size() == 1 && conv_form::chain_over_operand(geo_, kernels());
    for (auto& ph : phases_)  // kernel-row segments resolve their rows directly: the tap table goes unread
      if (ConvProblem::kernel_row_segments(geo_, ph, form_ == KernelForm::BF16_AMX)) std::vector<int64_t>().swap(ph.src_offset);
    for (const auto& ph : phases_) reserve_workspace(ConvProblem(geo_, ph, epilogue(), nullptr, nullptr, kernels().mr, kernels().nr, form_));
  }

  Status execute(const ExecArgs& args) const override {
    ThreadPool& pool = args.handle.thread_pool();
    EpilogueRun run(epilogue(), args.ptrs, pool.size());
    if (dot_) {
      if (auto s = dot_->run(args.ptrs, epilogue(), run, pool); !s.ok()) return s;
      return run.finish();
    }
    for (const auto& ph : phases_)  // every dst position lies in exactly one phase
      if (auto s = run_problem(ConvProblem(geo_, ph, epilogue(), &args.ptrs, &run, kernels().mr, kernels().nr, form_, over_operand_), pool,
                               args.workspace, args.ptrs);
          !s.ok())
        return s;
    return run.finish();
  }

 private:
  ConvGeometry geo_;
  std::vector<ConvPhase> phases_;
  std::unique_ptr<ConvDotGemm> dot_;  // the weights read in place, where that form is chosen
  KernelForm form_ = KernelForm::FP32;
  bool over_operand_ = false;         // conv_form::chain_over_operand
};

class ConvImplicitGemmEngine final : public gemm::GemmEngine<ConvImplicitPlan> {
 public:
  ConvImplicitGemmEngine() : GemmEngine("cpu_conv_implicit_gemm") {}

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    ConvGeometry g;
    g.init(p);
    // Narrow GEMMs (few channels per group) leave the register tile mostly empty, and with fewer
    // than 16 channels per tap each row pointer serves a short segment.
    const double fill_k = std::min(1.0, static_cast<double>(g.src_cg * g.taps()) / 64.0);
    const double fill_n = std::min(1.0, static_cast<double>(g.dst_cg) / 16.0);
    const double segment = std::min(1.0, static_cast<double>(g.src_cg) / 16.0);
    // AMX-BF16 tiles: ~3x the fp32 kernel's rate in place (4x hot in L1); vdpbf16ps pairs ~1.8x
    // (bf16 GEMM 2048 on Zen 4: 342 GFLOP/s against 181 in fp32).
    const double bf16 = conv_form::amx_fit(g, isa_of(k))        ? 3.0
                        : conv_form::dot_pairs_fit(g, isa_of(k)) ? 1.8
                                                                         : 1.0;
    // Weights read in place as dot-product tiles: each ISA level at its tile's measured rate.
    const double dot = conv_form::dot_form_expected(g, isa_of(k), p.tensor(g.wei).is_constant)
                           ? conv_dot_rate(g, conv_dot::dot_kernels(isa_of(k)))
                           : 0.0;
    const double eff = (dot > 0 ? dot : gemm::kernel_efficiency(isa_of(k))) * 0.85 * fill_k * fill_n * segment * bf16;
    return roofline_seconds(partition_flops(p), 2.0 * partition_bytes(p), t.info(), eff, 5e-6);
  }

  // FAST where the plan's chain reads the operand in registers before each tile's store
  // (chain_over_operand); else the plan sees the alias (EpilogueRun::in_place_safe) and its
  // epilogue reads each strip's operands before storing it (SAFE). The conv's own source or
  // weights are never written over: a tile reads them for every panel.
  Alias output_alias(const Partition& p, const Knobs& k, int out, int in) const override {
    if (p.outputs.size() != 1 || p.anchor < 0) return Alias::NO;  // a second output might be stored before `in` is read
    const ir::Node& anchor = p.graph->nodes[static_cast<size_t>(p.anchor)];
    if (std::find(anchor.inputs.begin(), anchor.inputs.end(), in) != anchor.inputs.end()) return Alias::NO;
    ConvGeometry g;
    g.init(p);
    const Isa isa = isa_of(k);
    if (!cpu_features().supports(isa) || conv_form::amx_fit(g, isa) || conv_form::dot_pairs_fit(g, isa))
      return Alias::NO;
    const gemm::KernelSet& ks = conv_form::tile_shape(g, isa);
    const std::vector<ConvPhase> phases = conv_phases(g, kMaxOffsets);
    if (phases.size() != 1 || conv_form::dot_form(g, phases, ks, p.tensor(g.wei).is_constant)) return Alias::NO;
    const bool channels_unit = p.tensor(out).rank() > 1 && p.tensor(out).strides[1] == 1;  // the chain's store in place
    return channels_unit && conv_form::chain_over_operand(g, ks) ? Alias::FAST : Alias::SAFE;
  }

 private:
  bool accepts(const Partition& p, const Target& t, Epilogue& epi, std::string& why) const override {
    std::string_view op = "conv_fprop";
    if (p.anchor >= 0 && ir::is<ConvDgradAttr>(p.graph->nodes[static_cast<size_t>(p.anchor)])) op = "conv_dgrad";
    if (!check_anchor(p, t, op, epi, why)) return false;
    ConvGeometry g;
    g.init(p);
    // One GEMM per stride phase: a huge stride would make the plan itself huge (ref runs it).
    int64_t phases = 1;  // saturates just above the limit: no product of strides overflows
    for (size_t d = 0; d < 3 && g.dgrad; ++d) phases = std::min(phases * std::min(g.stride[d], g.dst_sp[d]), kMaxPhases + 1);
    if (phases <= kMaxPhases) return true;
    why = "conv_dgrad: its strides give more than the " + std::to_string(kMaxPhases) +
          " stride phases this engine plans (one GEMM each)";
    return false;
  }
  // W for every group; a dgrad phase takes a share of the taps, so all taps bound them.
  gemm::PackedB packed_b(const Partition& p) const override {
    ConvGeometry g;
    g.init(p);
    return {g.groups, g.dst_cg, g.taps() * g.src_cg};
  }
};

}  // namespace

const Engine& conv_implicit_gemm_engine() { return engine_instance<ConvImplicitGemmEngine>(); }

}  // namespace dnngraph::cpu
