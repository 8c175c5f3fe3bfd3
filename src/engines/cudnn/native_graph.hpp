// A cuDNN plan replayed as a CUDA graph. cudnnBackendExecute costs 9-15 us of host time per call
// on cuDNN's sm90 engines (measured on an H200, docs/perf.md); a cuGraphLaunch of an instantiated
// graph costs a few. Two ways to the graph, in this order:
//  1. cuDNN's native CUDA-graph API (cuDNN 9.5+: cudnnBackendPopulateCudaGraph, and
//     cudnnBackendUpdateCudaGraph when pointers change), for engines that support it (behavior
//     note SUPPORTS_CUDA_GRAPH_NATIVE_API; cuDNN refuses the others);
//  2. otherwise, one cudnnBackendExecute captured on a private stream (as PyTorch's CUDA graphs
//     capture cuDNN calls), captured again when pointers change and applied with cuGraphExecUpdate.
// The graph holds the pointers (and host scalar values) of one variant pack; a plan keeps one per
// pointer set (graph_cache.hpp). Not thread-safe: the plan holds the cuDNN handle's mutex around
// every call.
#pragma once
#include <string>

#include "dnngraph/status.hpp"
#include "engines/cudnn/cudnn_api.hpp"
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

  // Makes the instantiated graph run `plan` with `variant_pack` (see above; an existing graph is
  // updated in place). `stream` is the handle's stream, set on the cuDNN handle again after a
  // capture on `capture_stream`. A non-empty `native_refused` (cuDNN's refusal for another graph
  // of the same plan) skips the native API. On failure the object is empty and the plan runs
  // cudnnBackendExecute.
  Status prepare(const CudnnApi& api, cudnnHandle_t handle, BackendDescriptor plan, BackendDescriptor variant_pack,
                 cuda::CUstream stream, cuda::CUstream capture_stream, const std::string& native_refused);
  bool ready() const { return exec_ != nullptr; }
  // Why the native API was not used ("" for a native graph).
  const std::string& native_refusal() const { return native_refusal_; }
  Status launch(cuda::CUstream stream) const;
  // "native CUDA graph" or "captured CUDA graph of cudnnBackendExecute (populate: why not)".
  const std::string& how() const { return how_; }

 private:
  enum class Mode { NONE, NATIVE, CAPTURED };
  void reset();
  Status populate(const CudnnApi& api, cudnnHandle_t handle, BackendDescriptor plan, BackendDescriptor variant_pack);
  Status capture(const CudnnApi& api, cudnnHandle_t handle, BackendDescriptor plan, BackendDescriptor variant_pack,
                 cuda::CUstream stream, cuda::CUstream capture_stream);
  Mode mode_ = Mode::NONE;
  std::string how_, native_refusal_;
  cuda::CUgraph graph_ = nullptr;
  cuda::CUgraphExec exec_ = nullptr;
};

// Whether `stream` is being captured into a CUDA graph (then plans run through cudnnBackendExecute,
// which the capture records like any launch).
bool stream_is_capturing(cuda::CUstream stream);

}  // namespace dnngraph::cudnn
