// cuda_norm_rowwise's knobs: the row group's threads, the rows per block of warp groups, whether
// the vector kernel is used where the problem allows it, the backward's blocks per SM (more loads
// in flight against more column-sum slices to write and read back) and whether its resident rows
// load the next row during this one. One schema parses and prints them.
#pragma once
#include <cstdint>

#include "planning/knobs.hpp"

namespace dnngraph::cuda::norm {

struct NormKnobs {
  int64_t threads_per_row = 0;  // 32..1024, a power of two; 0: the fewest that keep the row in registers
  int64_t rows_per_block = 0;   // 1, 2, 4 or 8 rows (warps) per block, with threads_per_row 32; 0: 8
  int64_t vec = 1;              // 1: 16-byte accesses where the row length and pitches allow; 0: scalar
  int64_t blocks_per_sm = 0;    // backward: blocks (workspace slices of column sums) per SM; 0: 32 KB of rows in flight
  int64_t prefetch = 1;         // backward, rows in registers: 1: the next row's X and DY load while this row's sums run
};

const KnobSchema<NormKnobs>& knob_schema();

}  // namespace dnngraph::cuda::norm
