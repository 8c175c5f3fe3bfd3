// cuDNN handles and kernel caches shared by every plan of a CUDA context.
//
// A cuDNN handle is costly to create and must not be used by two threads at once, so each CUDA
// context has a pool of them, made on first use and kept for the process: the first serves
// surveys, reloads and dynamic-shape builds, the others let builds compile cuDNN's runtime-fused
// configs at once (cuDNN is thread-safe across handles). A plan executes on the handle it was
// built on, and every use of a handle (finalizing graphs and plans, cudnnSetStream +
// cudnnBackendExecute) holds its mutex.
#pragma once
#include <cstdint>
#include <mutex>

#include "engines/cudnn/op_graph.hpp"
#include "runtime/cuda/driver_api.hpp"
#include "runtime/handle_impl.hpp"

namespace dnngraph {
struct KernelCacheImpl;
}

namespace dnngraph::cudnn {

struct SharedHandle {
  cudnnHandle_t handle = nullptr;
  std::mutex mutex;
  // The private stream plans capture cudnnBackendExecute on (native_graph.hpp), made on first use.
  cuda::CUstream capture_stream = nullptr;
};

// The first cuDNN handle of the CUDA context `h` stands for (made current first).
Status shared_handle(const CudnnApi& api, HandleImpl& h, SharedHandle*& out);

// A handle of that context for one plan build, held by `lock` (locked) on return: the first of
// the pool that is free, a new one while the pool has fewer than build_threads(), else the first
// handle once it is free (`first_only`: always the first, as builds sharing a kernel cache need).
Status build_handle(const CudnnApi& api, HandleImpl& h, bool first_only, SharedHandle*& out,
                    std::unique_lock<std::mutex>& lock);

// How many handles the pool of `h`'s context holds (0 before its first use).
size_t handle_count(const HandleImpl& h);

// A cuDNN kernel cache (cuDNN 9.5+) shared by the plans built with one dnngraph KernelCache for
// graphs of one topology (`topology`: the graph's fingerprint without its batch dims), so that
// dynamic-shape graphs that differ only in batch size reuse compiled kernels. Null when cuDNN is
// too old for it.
Status kernel_cache(const CudnnApi& api, const KernelCacheImpl* owner, uint64_t topology, const Descriptor& graph,
                    BackendDescriptor& out);

}  // namespace dnngraph::cudnn
