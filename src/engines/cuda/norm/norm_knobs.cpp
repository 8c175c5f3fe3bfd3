#include "engines/cuda/norm/norm_knobs.hpp"

#include <string>

namespace dnngraph::cuda::norm {
namespace {

// Only warp groups share a block: a block-wide group's reductions synchronize the whole block.
std::string rows_need_warp_groups(const NormKnobs& k) {
  if (k.rows_per_block > 1 && k.threads_per_row != 32)
    return "rows_per_block above 1 needs threads_per_row=32 (larger row groups take the whole block)";
  return "";
}

}  // namespace

const KnobSchema<NormKnobs>& knob_schema() {
  static const KnobSchema<NormKnobs> kSchema{
      "cuda_norm_rowwise",
      {{"threads_per_row", &NormKnobs::threads_per_row, 0, 1024, {0, 32, 64, 128, 256, 512, 1024}, false},
       {"rows_per_block", &NormKnobs::rows_per_block, 0, 8, {0, 1, 2, 4, 8}, false},
       {"vec", &NormKnobs::vec, 0, 1, {}, false},
       {"blocks_per_sm", &NormKnobs::blocks_per_sm, 0, 8, {}, false},
       {"prefetch", &NormKnobs::prefetch, 0, 1, {}, false}},
      rows_need_warp_groups};
  return kSchema;
}

}  // namespace dnngraph::cuda::norm
