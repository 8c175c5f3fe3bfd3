// Placeholder until the dlopen-based CUDA runtime lands: reports that no GPU support is built in.
#include "runtime/cuda/context.hpp"

#include "runtime/handle_impl.hpp"

namespace dnngraph::cuda {

int device_count() { return 0; }

Status open_device(int index, HandleImpl&) {
  return {ErrorCode::DEVICE_NOT_AVAILABLE,
          "cuda:" + std::to_string(index) + " requested, but this build has no CUDA runtime yet"};
}

std::string describe_runtime() { return "CUDA runtime: not built\n"; }

}  // namespace dnngraph::cuda

namespace dnngraph::cuda {
static Status no_cuda() { return {ErrorCode::DEVICE_NOT_AVAILABLE, "this build has no CUDA runtime yet"}; }
Status allocate(HandleImpl&, size_t, void**) { return no_cuda(); }
void release(HandleImpl&, void*) {}
Status copy_to_host(HandleImpl&, void*, const void*, size_t) { return no_cuda(); }
Status copy_to_device(HandleImpl&, void*, const void*, size_t) { return no_cuda(); }
Status synchronize(HandleImpl&) { return no_cuda(); }
bool is_device_pointer(HandleImpl&, const void*) { return false; }
}  // namespace dnngraph::cuda
