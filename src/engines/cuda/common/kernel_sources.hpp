// The CUDA kernel sources (src/engines/cuda/kernels/*.cuh), embedded at build time by
// cmake/embed_kernels.cmake. NVRTC gets them all as headers, so generated code includes them by name.
#pragma once
#include <cstddef>
#include <string_view>

namespace dnngraph::cuda {

struct EmbeddedSource {
  const char* name;  // "dg_pointwise.cuh"
  const char* text;
  size_t size;
};

extern const EmbeddedSource kEmbeddedKernels[];
extern const size_t kEmbeddedKernelCount;

// The source named `name`, or empty when there is none.
inline std::string_view embedded_kernel(std::string_view name) {
  for (size_t i = 0; i < kEmbeddedKernelCount; ++i)
    if (name == kEmbeddedKernels[i].name) return {kEmbeddedKernels[i].text, kEmbeddedKernels[i].size};
  return {};
}

}  // namespace dnngraph::cuda
