#include "engines/cudnn/native_graph.hpp"

#include "engines/cudnn/descriptor.hpp"
#include "runtime/cuda/context.hpp"

namespace dnngraph::cudnn {

NativeGraph::~NativeGraph() { reset(); }

void NativeGraph::reset() {
  if (!exec_ && !graph_) return;
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

Status NativeGraph::capture(const CudnnApi& api, cudnnHandle_t handle, BackendDescriptor plan,
                            BackendDescriptor variant_pack, cuda::CUstream stream, cuda::CUstream capture_stream) {
  const cuda::DriverApi& d = *cuda::driver();
  if (cudnnStatus_t s = api.cudnnSetStream(handle, capture_stream); s != STATUS_SUCCESS)
    return cudnn_error(api, s, "cudnnSetStream", ErrorCode::GRAPH_EXECUTION_FAILED);
  Status st = cuda::check(d.cuStreamBeginCapture(capture_stream, cuda::STREAM_CAPTURE_MODE_THREAD_LOCAL),
                          "cudnn: cuStreamBeginCapture");
  cuda::CUgraph g = nullptr;
  if (st.ok()) {
    const cudnnStatus_t run = api.cudnnBackendExecute(handle, plan, variant_pack);
    const Status end = cuda::check(d.cuStreamEndCapture(capture_stream, &g), "cudnn: cuStreamEndCapture");
    st = run != STATUS_SUCCESS ? cudnn_error(api, run, "cudnnBackendExecute while capturing",
                                             ErrorCode::GRAPH_EXECUTION_FAILED)
                               : end;
  }
  api.cudnnSetStream(handle, stream);
  if (!st.ok()) {
    if (g) d.cuGraphDestroy(g);
    return st;
  }
  cuda::GraphExecUpdateResultInfo info{};
  if (exec_ && d.cuGraphExecUpdate(exec_, g, &info) == cuda::CUDA_SUCCESS) {  // same kernels, new arguments
    d.cuGraphDestroy(graph_);
    graph_ = g;
    return {};
  }
  reset();
  graph_ = g;
  if (auto s = cuda::check(d.cuGraphInstantiateWithFlags(&exec_, graph_, 0), "cudnn: cuGraphInstantiate"); !s.ok()) {
    reset();
    return s;
  }
  return {};
}

Status NativeGraph::prepare(const CudnnApi& api, cudnnHandle_t handle, BackendDescriptor plan,
                            BackendDescriptor variant_pack, cuda::CUstream stream, cuda::CUstream capture_stream,
                            const std::string& native_refused) {
  const cuda::DriverApi& d = *cuda::driver();
  if (mode_ == Mode::NATIVE && exec_) {
    if (api.cudnnBackendUpdateCudaGraph(handle, plan, variant_pack, graph_) == STATUS_SUCCESS) {
      cuda::GraphExecUpdateResultInfo info{};
      if (d.cuGraphExecUpdate(exec_, graph_, &info) == cuda::CUDA_SUCCESS) return {};
    }
    if (populate(api, handle, plan, variant_pack).ok()) return {};  // an update refused: start afresh
  }
  if (mode_ == Mode::CAPTURED) {
    Status s = capture(api, handle, plan, variant_pack, stream, capture_stream);
    if (!s.ok()) mode_ = Mode::NONE;
    return s;
  }
  std::string populate_error = native_refused;
  if (populate_error.empty() && !available(api))
    populate_error = "cuDNN " + std::to_string(library_report().version) + " lacks cudnnBackendPopulateCudaGraph";
  if (populate_error.empty()) {
    Status s = populate(api, handle, plan, variant_pack);
    if (s.ok()) {
      mode_ = Mode::NATIVE;
      how_ = "native CUDA graph";
      native_refusal_.clear();
      return {};
    }
    populate_error = s.message();
  }
  Status s = capture(api, handle, plan, variant_pack, stream, capture_stream);
  if (!s.ok()) {
    mode_ = Mode::NONE;
    return {s.code(), s.message() + "; populate: " + populate_error};
  }
  mode_ = Mode::CAPTURED;
  native_refusal_ = populate_error;
  how_ = "captured CUDA graph of cudnnBackendExecute (populate: " + populate_error + ")";
  return {};
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
