#include "runtime/memory.hpp"

#include <cstdlib>
#include <cstring>

#include "runtime/cuda/context.hpp"

namespace dnngraph::memory {

Status allocate(HandleImpl& h, size_t bytes, void** ptr) {
  if (h.device.is_cuda()) return cuda::allocate(h, bytes, ptr);
  // 64-byte alignment: full cache lines and AVX-512 loads.
  *ptr = std::aligned_alloc(64, ((bytes + 63) / 64) * 64 + 64);
  if (!*ptr) return {ErrorCode::INTERNAL_ERROR, "out of host memory allocating " + std::to_string(bytes) + " bytes"};
  return {};
}

void release(HandleImpl& h, void* ptr) {
  if (h.device.is_cuda()) cuda::release(h, ptr);
  else std::free(ptr);
}

Status copy_to_host(HandleImpl& h, void* dst, const void* src, size_t bytes) {
  if (h.device.is_cuda()) return cuda::copy(h, cuda::CopyDirection::TO_HOST, dst, src, bytes);
  std::memcpy(dst, src, bytes);
  return {};
}

Status copy_to_device(HandleImpl& h, void* dst, const void* src, size_t bytes) {
  if (h.device.is_cuda()) return cuda::copy(h, cuda::CopyDirection::TO_DEVICE, dst, src, bytes);
  std::memcpy(dst, src, bytes);
  return {};
}

Status synchronize(HandleImpl& h) { return h.device.is_cuda() ? cuda::synchronize(h) : Status{}; }

bool is_usable_pointer(HandleImpl& h, const void* ptr) {
  return h.device.is_cuda() ? cuda::is_device_pointer(h, ptr) : true;
}

}  // namespace dnngraph::memory
