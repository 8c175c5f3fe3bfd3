// HandleImpl: the device a handle stands for and the per-device state engines need.
#pragma once
#include <memory>

#include "dnngraph/handle.hpp"
#include "runtime/device_info.hpp"

namespace dnngraph {

class ThreadPool;
namespace cuda { struct Context; }

struct HandleImpl {
  Device device = Device::cpu();
  Status status;                      // not OK when the device could not be had
  void* stream = nullptr;             // cudaStream_t (CUstream) on CUDA handles
  int num_threads = 0;                // CPU engines; 0 = every core
  DeviceInfo info;                    // peaks for heuristics, signature for caches
  std::shared_ptr<ThreadPool> pool;   // CPU worker threads, made on first use
  std::shared_ptr<cuda::Context> cuda;  // set on CUDA handles

  ThreadPool& thread_pool();
};

inline HandleImpl& impl_of(const Handle& h) { return *h.impl_; }

}  // namespace dnngraph
