// The implicit GEMM of a conv_fprop with its weights read in place, as dot-product tiles
// (conv_dot_kernels.hpp): M = output pixels, N = output channels, K = taps x input channels, A
// read through one pointer per (pixel, tap), B straight from the KRSC weights. The engine
// cpu_conv_implicit_gemm takes this form where packing the weights on every execute would cost a
// large share of the FLOPs (few pixels per weight) and the reduction is long enough that summing
// each accumulator's lanes once is cheap.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "dnngraph/status.hpp"
#include "engines/cpu/conv/conv_dot_kernels.hpp"
#include "engines/cpu/conv/conv_geometry.hpp"
#include "engines/cpu/epilogue/epilogue.hpp"
#include "runtime/cpu/thread_pool.hpp"

namespace dnngraph::cpu {

// Empty when the conv `g` (with its phases, as conv_phases gives them) runs in this form on the
// tiles `ks`, else the rule it breaks.
std::string conv_dot_unfit(const ConvGeometry& g, const std::vector<ConvPhase>& phases,
                           const conv_dot::DotKernelSet& ks);
// The same rules that the geometry alone decides (a one-phase fprop; not the offset table's size).
std::string conv_dot_unfit_geometry(const ConvGeometry& g, const conv_dot::DotKernelSet& ks);

// Whether this form is expected to beat the packed one (the tiles' DotCost): packing costs a
// fixed amount per weight, shared by the pixels that use it, and nothing per execute when the
// plan keeps the packed weights (`weights_kept`); the packed kernel's packed_mr x packed_nr tiles
// pad pixels and output channels up to multiples of them; this form's tiles cost a fixed amount
// each (lane sums, tap pointers), shared by the K steps, and its FMAs run at its own rate.
bool conv_dot_preferred(const ConvGeometry& g, const conv_dot::DotKernelSet& ks, int packed_mr, int packed_nr,
                        bool weights_kept);

// This form's rate relative to the fastest ISA level's tile: the tile's hot rate on this machine
// (conv_dot::relative_rate; Zen 4, C512 7x7 with weights not constant: AVX2's tiles 1.19 ms,
// AVX-512's 1.39) times the pixels it computes that are real: AVX-512's 6-pixel tiles compute 54
// of a 7x7 image's 49, AVX2's 4-pixel ones 52, which decides where the hot rates tie.
double conv_dot_rate(const ConvGeometry& g, const conv_dot::DotKernelSet& ks);

// One plan's run of that form: tasks of (group, output-channel range, pixel range), each pixel
// range's (pixel, tap) pointers resolved once per task and its input kept in L2.
class ConvDotGemm {
 public:
  ConvDotGemm(const ConvGeometry& g, const ConvPhase& ph, const conv_dot::DotKernelSet& ks, int threads);
  // The conv's sums for every output, written straight to the output (finished there by an in-place
  // chain) where the epilogue allows, else handed to its strips.
  Status run(const std::vector<void*>& ptrs, const Epilogue& epi, EpilogueRun& er, ThreadPool& pool) const;

 private:
  struct Task {
    int64_t grp, oc0, ocn, m0, mn;
  };
  struct KBlock {
    int64_t t0, t1, c0, cn;  // taps [t0, t1), input channels [c0, c0 + cn)
  };
  // Per thread: the task's (pixel, tap) pointers, its sums when not written in place, and its
  // tiles' vector sums between K blocks.
  struct Scratch {
    std::vector<const float*> xs;
    std::vector<float> buf, acc;
  };
  // The weights one (output channel group, K block) step reads: `rows` runs of `bytes` per tap.
  struct WeightBlock {
    const float* w[8] = {};
    const int64_t* wtap = nullptr;
    int rows = 0;
    int64_t t0 = 0, t1 = 0, bytes = 0;
    void prefetch(int64_t part, int64_t parts) const;  // slice `part` of `parts`
  };
  WeightBlock weight_block(const Task& t, int64_t step, const float* wei) const;
  void run_task(const Task& t, const std::vector<void*>& ptrs, const DirectOutput& out, EpilogueRun& er,
                int slot, const float* zeros, Scratch& s) const;

  ConvGeometry g_;
  ConvPhase ph_;
  const conv_dot::DotKernelSet& ks_;  // static tables
  std::vector<int64_t> wtap_;  // weight element offset of each tap from tap 0
  std::vector<Task> tasks_;
  std::vector<KBlock> kblocks_;
  int64_t max_px_ = 0, max_oc_ = 0;  // the largest task
};

}  // namespace dnngraph::cpu
