// Device memory through the handle: host memory on the CPU, the CUDA driver on GPUs.
#pragma once
#include <cstddef>

#include "dnngraph/status.hpp"
#include "runtime/handle_impl.hpp"

namespace dnngraph::memory {

Status allocate(HandleImpl& h, size_t bytes, void** ptr);
void release(HandleImpl& h, void* ptr);
// Copies on the handle's stream, then waits for it.
Status copy_to_host(HandleImpl& h, void* host_dst, const void* device_src, size_t bytes);
Status copy_to_device(HandleImpl& h, void* device_dst, const void* host_src, size_t bytes);
Status synchronize(HandleImpl& h);
// Whether ptr can be used by kernels on the handle's device (a host pointer on a CUDA handle: no).
bool is_usable_pointer(HandleImpl& h, const void* ptr);

// An owned buffer on the handle's device.
class Buffer {
 public:
  Buffer() = default;
  Buffer(HandleImpl& h, size_t bytes) : h_(&h), bytes_(bytes) { status_ = allocate(h, bytes, &ptr_); }
  ~Buffer() { if (ptr_) release(*h_, ptr_); }
  Buffer(Buffer&& o) noexcept : h_(o.h_), ptr_(o.ptr_), bytes_(o.bytes_), status_(o.status_) { o.ptr_ = nullptr; }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) release(*h_, ptr_);
      h_ = o.h_; ptr_ = o.ptr_; bytes_ = o.bytes_; status_ = o.status_;
      o.ptr_ = nullptr;
    }
    return *this;
  }
  void* get() const { return ptr_; }
  size_t size() const { return bytes_; }
  const Status& status() const { return status_; }

 private:
  HandleImpl* h_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  Status status_;
};

}  // namespace dnngraph::memory
