// The ahead-of-time kernel table of a library built without them (DNNGRAPH_AOT_KERNELS=OFF), and
// of the generator itself, which makes the real one.
#include "planning/aot_kernels.hpp"

namespace dnngraph {

// A zero-length array is not C++: one empty entry, counted as none.
const AotKernel kAotKernels[1] = {{"", nullptr, 0}};
const size_t kAotKernelCount = 0;
const char* const kAotDescription = "none (built with DNNGRAPH_AOT_KERNELS=OFF)";

}  // namespace dnngraph
