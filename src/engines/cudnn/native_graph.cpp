#include "engines/cudnn/native_graph.hpp"

#include "engines/cudnn/descriptor.hpp"
#include "runtime/cuda/context.hpp"

namespace dnngraph::cudnn {

NativeGraph::~NativeGraph() { reset(); }

void NativeGraph::reset() {
  const cuda::DriverApi* d = cuda::driver();
  if (d && exec_) d->cuGraphExecDestroy(exec_);
  if (d && graph_) d->cuGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
}

Status NativeGraph::populate(const CudnnApi& api, cudnnHandle_t handle, BackendDescriptor plan,
                             BackendDescriptor variant_pack) {
  reset();
  const cuda::DriverApi& d = *cuda::driver();
  // cuDNN fills an empty graph of the caller's.
  if (auto s = cuda::check(d.cuGraphCreate(&graph_, 0), "cudnn: cuGraphCreate"); !s.ok()) return s;
  if (cudnnStatus_t s = api.cudnnBackendPopulateCudaGraph(handle, plan, variant_pack, graph_); s != STATUS_SUCCESS) {
    reset();
    return cudnn_error(api, s, "cudnnBackendPopulateCudaGraph", ErrorCode::GRAPH_EXECUTION_FAILED);
  }
  if (auto s = cuda::check(d.cuGraphInstantiateWithFlags(&exec_, graph_, 0), "cudnn: cuGraphInstantiate"); !s.ok()) {
    reset();
    return s;
  }
  return {};
}

Status NativeGraph::prepare(const CudnnApi& api, cudnnHandle_t handle, BackendDescriptor plan,
                            BackendDescriptor variant_pack) {
  if (!exec_) return populate(api, handle, plan, variant_pack);
  const cuda::DriverApi& d = *cuda::driver();
  if (api.cudnnBackendUpdateCudaGraph(handle, plan, variant_pack, graph_) == STATUS_SUCCESS) {
    cuda::GraphExecUpdateResultInfo info{};
    if (d.cuGraphExecUpdate(exec_, graph_, &info) == cuda::CUDA_SUCCESS) return {};
  }
  return populate(api, handle, plan, variant_pack);  // an update cuDNN or CUDA refuses: start afresh
}

Status NativeGraph::launch(cuda::CUstream stream) const {
  return cuda::check(cuda::driver()->cuGraphLaunch(exec_, stream), "cudnn: cuGraphLaunch");
}

bool stream_is_capturing(cuda::CUstream stream) {
  int status = cuda::STREAM_CAPTURE_STATUS_NONE;
  const cuda::DriverApi* d = cuda::driver();
  // A query that fails (e.g. on the legacy default stream during another thread's capture) counts
  // as capturing: cudnnBackendExecute is right in every case.
  if (!d || d->cuStreamIsCapturing(stream, &status) != cuda::CUDA_SUCCESS) return true;
  return status != cuda::STREAM_CAPTURE_STATUS_NONE;
}

}  // namespace dnngraph::cudnn
