// A convolution node resolved for the CPU engines: sizes, groups, padding, strides, dilation and
// tensor strides, with 1D and 2D convolutions padded to three spatial dims by leading dims of
// size 1 and stride 0 (so the last spatial dim is always the row: W).
// fprop reads X and writes Y; dgrad (the transposed convolution) reads DY and writes DX, and is
// described here as src -> dst with the weights' channel roles swapped; wgrad reads DY and X and
// writes DW, and is described as the fprop it differentiates (src X, dst DY, wei DW).
#pragma once
#include <array>
#include <climits>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engines/cpu/epilogue/epilogue.hpp"
#include "planning/engine.hpp"

namespace dnngraph::cpu {

struct ConvGeometry {
  bool dgrad = false;
  bool wgrad = false;
  int nsp = 0;                 // real spatial dims (1..3); they are the last nsp of the three
  int src = -1, wei = -1, dst = -1;  // tensor ids
  int64_t n = 0;
  int64_t src_c = 0, dst_c = 0;   // channels of src and dst
  int64_t groups = 1;
  int64_t src_cg = 0, dst_cg = 0; // channels per group
  std::array<int64_t, 3> src_sp{1, 1, 1}, dst_sp{1, 1, 1}, ker{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1}, pad{0, 0, 0}, dil{1, 1, 1};
  // Element strides: [n, c, d0, d1, d2]; weights [k, c, r0, r1, r2] as the IR has them.
  std::array<int64_t, 5> src_st{}, wei_st{}, dst_st{};
  DataType src_t = DataType::FLOAT, wei_t = DataType::FLOAT, dst_t = DataType::FLOAT;

  // Fills from a conv_fprop, conv_dgrad or conv_wgrad node, or from a partition anchored on one.
  void init(const ir::Graph& g, const ir::Node& node);
  void init(const Partition& p) { init(*p.graph, p.graph->nodes[static_cast<size_t>(p.anchor)]); }
  int64_t taps() const { return ker[0] * ker[1] * ker[2]; }
  int64_t dst_pixels() const { return dst_sp[0] * dst_sp[1] * dst_sp[2]; }
  // Weight element offset of (src channel ic, dst channel oc) in group g at tap index t (row-major
  // over ker): fprop W[g*Kg + oc, ic, t], dgrad W[g*Kg + ic, oc, t].
  int64_t wei_offset(int64_t g, int64_t ic, int64_t oc, int64_t t) const;
  // The domain index of a dst element (rank 2 + nsp).
  void dst_coord(int64_t n, int64_t c, const int64_t* o, int64_t* coord) const;
};

// What a direct conv engine needs of a geometry: empty when it runs g, else the rule g breaks.
using ConvRule = std::function<std::string(const ConvGeometry& g)>;

// check_anchor for a partition anchored on a conv_fprop, then `rule` on the conv's geometry; a
// broken rule becomes "node '<name>': <rule>" in `why`.
bool check_conv_fprop(const Partition& p, const Target& t, Epilogue& epi, std::string& why, const ConvRule& rule);

// Where a conv may write its fp32 sums itself instead of handing them to the epilogue's strips:
// the plain store's tensor, or the in-place chain's output (which the conv then finishes with
// EpilogueRun::chain_rows), when that tensor's channels are unit-stride. The plan must have called
// Epilogue::prepare_in_place(1).
struct DirectOutput {
  float* base = nullptr;        // null: through the strips
  std::array<int64_t, 5> st{};  // element strides [n, c, d0, d1, d2]
  bool chain = false;
  int64_t offset(int64_t n, const int64_t* o) const { return n * st[0] + o[0] * st[2] + o[1] * st[3] + o[2] * st[4]; }
};
DirectOutput direct_output(const ConvGeometry& g, const Epilogue& epi, const EpilogueRun& run,
                           const std::vector<void*>& ptrs);

// One input row read by the output row (n, o0, o1) of a direct conv: the (r0, r1) kernel row's
// source row, when inside the image, as fp32 pixels.
struct TapRow {
  const float* x;   // the row's first pixel
  int64_t px;       // floats between pixels
  int64_t w_index;  // the weight tap of its first column (r2 = 0)
};
// Fills `rows` for output row (n, o[0], o[1]) of a channels-last src; a src that is not FLOAT is
// converted into `converted` (resized here), channels contiguous.
void output_row_inputs(const ConvGeometry& g, const char* src, int64_t n, const int64_t* o, std::vector<TapRow>& rows,
                       std::vector<float>& converted);

// One output row (n, o[0], o[1], all of o[2]) of a channels-last direct conv, and where its fp32
// sums go: straight into the output where `out` allows (acc + ow * ldo is pixel ow), else into
// `scratch`, which finish() hands to the epilogue's strips.
struct OutputRow {
  int64_t n = 0;
  int64_t o[3] = {0, 0, 0};  // o[2] = 0: the row's first pixel
  int64_t out_off = 0;       // that pixel's offset in `out`
  float* acc = nullptr;
  int64_t ldo = 0;
  OutputRow(const ConvGeometry& g, int64_t row, const DirectOutput& out, std::vector<float>& scratch);
  // The rest of the epilogue once the row's sums are final: the in-place chain (unless the conv
  // applied it already, chain_done) or the strips.
  void finish(const ConvGeometry& g, const DirectOutput& out, EpilogueRun& run, int slot, bool chain_done = false) const;
};

// One implicit GEMM over a set of dst positions that share a tap list. Per spatial dim d: dst
// positions start[d] + step[d] * j for j < count[d]; tap i reads src at j * jstride[d] + off[d][i]
// through weight tap index rtap[d][i]. fprop has one such sub-problem; dgrad has one per phase.
struct ConvPhase {
  std::array<int64_t, 3> start{0, 0, 0}, step{1, 1, 1}, count{1, 1, 1}, jstride{1, 1, 1};
  std::array<std::vector<int64_t>, 3> off, rtap;
  // Where tap t of position p (row-major over count) reads src, relative to its image:
  // src_offset[t * pixels() + p] elements, or kOutside. Empty when conv_phases found it too large.
  static constexpr int64_t kOutside = INT64_MIN;
  std::vector<int64_t> src_offset;
  int64_t taps() const { return static_cast<int64_t>(off[0].size() * off[1].size() * off[2].size()); }
  int64_t pixels() const { return count[0] * count[1] * count[2]; }
};
// The phases of g, each with its src_offset table when it has at most max_offsets entries.
std::vector<ConvPhase> conv_phases(const ConvGeometry& g, int64_t max_offsets = 0);

// Whether the pixels (n, d0, d1, d2) of n images with element strides st ([n, c, d0, d1, d2])
// over spatial dims sp sit at one stride, ld = st[4], in row-major order (dense channels-last,
// or channels padded).
bool flat_pixels(const std::array<int64_t, 5>& st, const std::array<int64_t, 3>& sp, int64_t n, int64_t& ld);

}  // namespace dnngraph::cpu
