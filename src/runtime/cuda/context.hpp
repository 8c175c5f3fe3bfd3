// The CUDA side of a handle. Implemented over the driver API loaded with dlopen (no CUDA library is
// linked); see src/runtime/cuda/.
#pragma once
#include <string>

#include "dnngraph/status.hpp"

namespace dnngraph {
struct HandleImpl;
}

namespace dnngraph::cuda {

struct Context;  // defined in the CUDA runtime sources

// Number of usable CUDA devices; 0 when the driver is missing or reports none.
int device_count();
// Opens device `index` for the handle: loads the driver, makes the context current, fills
// handle.info and handle.cuda. On failure returns why (what was searched, CUDA's own error string).
Status open_device(int index, HandleImpl& handle);
// For `dnngraph info`: what was searched for libcuda, NVRTC, cuDNN and cuBLASLt, and what was found.
std::string describe_runtime();

}  // namespace dnngraph::cuda

// Device memory and copies on the handle's stream (used by runtime/memory.cpp).
namespace dnngraph::cuda {
Status allocate(HandleImpl& h, size_t bytes, void** ptr);
void release(HandleImpl& h, void* ptr);
Status copy_to_host(HandleImpl& h, void* dst, const void* src, size_t bytes);
Status copy_to_device(HandleImpl& h, void* dst, const void* src, size_t bytes);
Status synchronize(HandleImpl& h);
bool is_device_pointer(HandleImpl& h, const void* ptr);
}  // namespace dnngraph::cuda
