// A cuDNN plan replayed as a CUDA graph through cuDNN's native CUDA-graph API (cuDNN 9.5+:
// cudnnBackendPopulateCudaGraph / cudnnBackendUpdateCudaGraph, for engines with the behavior note
// SUPPORTS_CUDA_GRAPH_NATIVE_API). cudnnBackendExecute costs 9-15 us of host time per call on
// cuDNN's sm90 engines (measured on an H200, docs/perf.md); a cuGraphLaunch of the instantiated
// graph costs a few. The graph holds the pointers of one variant pack: it is updated in place when
// they change. Not thread-safe: the plan holds the cuDNN handle's mutex around every call.
#pragma once
#include "engines/cudnn/cudnn_api.hpp"
#include "dnngraph/status.hpp"
#include "runtime/cuda/driver_api.hpp"

namespace dnngraph::cudnn {

class NativeGraph {
 public:
  NativeGraph() = default;
  ~NativeGraph();
  NativeGraph(const NativeGraph&) = delete;
  NativeGraph& operator=(const NativeGraph&) = delete;

  // Whether the library has the native CUDA-graph entry points.
  static bool available(const CudnnApi& api) {
    return api.cudnnBackendPopulateCudaGraph && api.cudnnBackendUpdateCudaGraph;
  }

  // Makes the instantiated graph run `plan` with `variant_pack`: populated and instantiated the
  // first time, updated (cuDNN's update, then cuGraphExecUpdate) afterwards; when an update is
  // refused, populated and instantiated anew. On failure the object is empty again.
  Status prepare(const CudnnApi& api, cudnnHandle_t handle, BackendDescriptor plan, BackendDescriptor variant_pack);
  bool ready() const { return exec_ != nullptr; }
  Status launch(cuda::CUstream stream) const;
  void reset();

 private:
  Status populate(const CudnnApi& api, cudnnHandle_t handle, BackendDescriptor plan, BackendDescriptor variant_pack);
  cuda::CUgraph graph_ = nullptr;
  cuda::CUgraphExec exec_ = nullptr;
};

// Whether `stream` is being captured into a CUDA graph (then plans run through cudnnBackendExecute,
// which the capture records like any launch).
bool stream_is_capturing(cuda::CUstream stream);

}  // namespace dnngraph::cudnn
