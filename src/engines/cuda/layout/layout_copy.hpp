// cuda_layout_copy: reshape, transpose, slice and concatenate on the GPU as strided copies
// (graph/layout_copies.hpp; kernels/layout_copy.cuh), in units of up to 16 bytes where both sides
// have runs that long and the pointers are aligned, else element by element. One compiled module
// serves every shape (dims and strides are kernel arguments).
#pragma once
#include "planning/engine.hpp"

#include <string>

namespace dnngraph::cuda {
const Engine& layout_copy_engine();
// The one module the engine compiles (every unit and index type), for compile checks without a GPU.
std::string layout_copy_module_source();
}
