// Dot-product tiles of an implicit GEMM whose weights are read in place: NP output pixels x NO
// output channels, each sum a dot product along the input channels, which are contiguous in a
// channels-last source and in KRSC (OHWI) weights alike. Vectors run along that reduction dim, so
// the weights need no packing (with pixels few, as at 14x14 or 7x7, packing them per execute cost
// as much as the FLOPs); each accumulator is summed across its lanes once, at the end of the full
// reduction, which is cheap where the reduction is long (taps x channels in the thousands).
#pragma once
#include <cstdint>

#include "engines/cpu/cpu_features.hpp"

namespace dnngraph::cpu::conv_dot {

// One call: a K block (taps [t0, t1) x input channels [c0, c0 + cn)) of an NP x NO tile.
// Input pointer x[p * ntaps + t] is pixel p's tap t (channel 0), or `zeros` where that tap lies
// outside the image (a tap that is outside for every pixel of the tile is skipped); weights
// w[o] + wtap[t] are output channel o's tap t. The tile's vector sums (NP * NO registers) start
// from zero when `first`, else from `acc`; they go back to `acc` unless `last`, when each is summed
// across its lanes into out[p][o] for p < np, o < no (np <= NP, no <= NO; the caller points the
// unused x and w slots at valid memory). cn is a multiple of the set's width.
struct DotArgs {
  const float* const* x;
  const float* zeros;
  int64_t ntaps, t0, t1, c0, cn;
  const float* const* w;
  const int64_t* wtap;
  float* acc;
  bool first, last;
  float* const* out;
  int np, no;
};
using DotKernel = void (*)(const DotArgs& a);

// The cost model that picks this form or the packed one (conv_dot_preferred), relative to the
// packed form's FMA time of the same conv: this form takes speed_ratio + tile_cost_k / K, the
// packed one 1 + pack_cost_px / M, with K the reduction (taps x channels per group) and M the
// pixels that share each weight. speed_ratio: the packed microkernel's rate over this tile's on
// data in L1 (this tile loads NP + NO full vectors per NP x NO FMAs, the packed one 2 per 2 x MR);
// tile_cost_k: the fixed cost of a tile (lane sums, per-tap pointers) in K steps; pack_cost_px:
// packing the weights, in pixels' worth of FMAs. Fitted to the rates of both forms on 3x3 layers
// with C 64-512 and 7x7-28x28 images (docs/perf.md, CPU section, 2026-12-02).
struct DotCost {
  double speed_ratio, tile_cost_k, pack_cost_px;
};

struct DotKernelSet {
  Isa isa;
  int np, no;  // register tile: pixels x output channels
  int width;   // floats per vector: cin must be a multiple of it
  DotKernel kernel;
  DotCost cost;
};

// The tiles of the highest level at or below `isa` that this build has.
const DotKernelSet& dot_kernels(Isa isa);
const DotKernelSet& portable_dot_kernels();
const DotKernelSet* avx2_dot_kernels();    // null when not compiled in
const DotKernelSet* avx512_dot_kernels();  // null when not compiled in

// The hot rate of dot_kernels(isa)'s tile on this machine over the fastest ISA level's (measured
// once, on L1-resident data, per thread CPU time): 1 for the fastest. A level's tile is not always
// faster than the one below it: Zen 4 runs a 512-bit FMA in two halves, and its AVX2 4 x 3 tile
// ran 1.13x the AVX-512 6 x 4 (2026-12-07).
double relative_rate(Isa isa);

}  // namespace dnngraph::cpu::conv_dot
