// The layout ops (reshape, transpose, slice, concatenate) as strided element copies, the form
// the layout-copy engines run: copy k moves `count` elements; element l (0 <= l < count, in
// row-major order) is read at src_offset + sum(unravel(l, src_dims) * src_strides) of the node's
// input `input` and written at dst_offset + sum(unravel(l, dst_dims) * dst_strides) of its output
// (offsets and strides in elements). Only a reshape has src_dims != dst_dims.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph/ir.hpp"

namespace dnngraph {

struct StridedCopy {
  int input = 0;
  int64_t count = 0;
  int64_t src_offset = 0, dst_offset = 0;
  std::vector<int64_t> src_dims, src_strides, dst_dims, dst_strides;
};

// `n`'s copies, each side's dims merged where its memory order allows (rank 1 for a copy between
// two packed tensors) and size-1 dims dropped; false with `why` for a node that is not a layout op.
bool layout_as_copies(const ir::Graph& g, const ir::Node& n, std::vector<StridedCopy>& out, std::string& why);

// The largest run of consecutive elements l that is contiguous on both sides of every copy: a
// divisor of each copy's count (1 when an innermost stride is not 1).
int64_t contiguous_run(const StridedCopy& c);

}  // namespace dnngraph
