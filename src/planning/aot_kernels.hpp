// Ahead-of-time kernels: cubins compiled when the library was built (tools/aot/aot_gen.cpp runs
// the CUDA engines' code generation for a described H200 and NVRTC on the tutorial and tour
// graphs), embedded in the library. The kernel cache serves them on a miss before compiling, by
// KernelKey::portable_text (source hash with every header, options, arch), so a source that
// drifted from what was generated simply misses. DNNGRAPH_AOT_KERNELS=0 turns them off (to time
// cold compiles); the CMake option DNNGRAPH_AOT_KERNELS=OFF builds the library without them.
#pragma once
#include <cstddef>
#include <cstdint>

#include "planning/kernel_cache.hpp"

namespace dnngraph {

struct AotKernel {
  const char* key;  // KernelKey::portable_text()
  const unsigned char* data;
  size_t size;
};

// Defined by the generated table (build/generated/dnngraph_aot_kernels.cpp) or, without it, by
// tools/aot/aot_none.cpp. Sorted by key.
extern const AotKernel kAotKernels[];
extern const size_t kAotKernelCount;
extern const char* const kAotDescription;  // the target and graphs they were made for

// The embedded kernel for `key`, or null (none, or DNNGRAPH_AOT_KERNELS=0).
const AotKernel* aot_find(const KernelKey& key);
// Whether any is served (the library has some, and DNNGRAPH_AOT_KERNELS is not 0).
bool aot_kernels_available();

}  // namespace dnngraph
