// cpu_layout_copy: reshape, transpose, slice and concatenate as strided copies
// (graph/layout_copies.hpp), on every core. Runs of elements contiguous on both sides move with
// memcpy; a plane whose innermost dim differs between the sides (NHWC -> NCHW) moves in 32 x 32
// tiles; otherwise one element at a time, the two sides' offsets advanced by odometers.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cpu {
const Engine& layout_copy_engine();
}
