// The tour's CUDA-graph step: capture a built graph's plans into a CUDA graph with
// Graph::populate_cuda_graph, replay it, and compare replay time with launching on the stream.
#include "planning/introspect.hpp"
#include "runtime/cuda/context.hpp"
#include "tour_workloads.hpp"

namespace dnngraph::cli {
namespace {

// The uid-keyed pack as a pack keyed by the graph's tensors (what populate_cuda_graph takes).
VariantPack tensor_pack(const Graph& g, const UidVariantPack& by_uid) {
  VariantPack pack;
  auto add = [&](const TensorPtr& t) {
    if (!t || t->get_is_virtual() || !t->has_uid()) return;
    if (auto it = by_uid.find(t->get_uid()); it != by_uid.end()) pack[t] = it->second;
  };
  for (const auto& t : introspect::user_tensors(g)) add(t);
  return pack;
}

// Owns a CUgraph, its executable form, and a stream of ours set on the handle for the capture
// (the default stream cannot be captured); the handle's stream is restored at the end.
struct CaptureState {
  const cuda::DriverApi* d = nullptr;
  const Handle* handle = nullptr;
  void* old_stream = nullptr;
  void* stream = nullptr;
  cuda::CUgraph graph = nullptr;
  cuda::CUgraphExec exec = nullptr;
  ~CaptureState() {
    if (exec) d->cuGraphExecDestroy(exec);
    if (graph) d->cuGraphDestroy(graph);
    if (stream) {
      (void)memory::synchronize(impl_of(*handle));
      (void)const_cast<Handle*>(handle)->set_stream(old_stream);
      cuda::destroy_stream(impl_of(*handle), stream);
    }
  }
};

// Kernel (and other) nodes inside the child graphs that populate_cuda_graph added.
Status count_captured_nodes(const cuda::DriverApi* d, cuda::CUgraph graph, int64_t& count) {
  size_t n = 0;
  if (auto s = cuda::check(d->cuGraphGetNodes(graph, nullptr, &n), "cuGraphGetNodes"); !s.ok()) return s;
  std::vector<cuda::CUgraphNode> nodes(n);
  if (n && !cuda::check(d->cuGraphGetNodes(graph, nodes.data(), &n), "cuGraphGetNodes").ok()) n = 0;
  count = 0;
  for (size_t i = 0; i < n; ++i) {
    int type = -1;
    cuda::CUgraph child = nullptr;
    if (d->cuGraphNodeGetType(nodes[i], &type) == cuda::CUDA_SUCCESS && type == cuda::GRAPH_NODE_TYPE_GRAPH &&
        d->cuGraphChildGraphNodeGetGraph(nodes[i], &child) == cuda::CUDA_SUCCESS) {
      int64_t inner = 0;
      if (auto s = count_captured_nodes(d, child, inner); !s.ok()) return s;
      count += inner;
    } else {
      ++count;
    }
  }
  return {};
}

}  // namespace

Status run_in_cuda_graph(const Handle& h, const Graph& g, DeviceTensors& dev, int iters, CudaGraphRun& out) {
  if (!h.device().is_cuda()) return {ErrorCode::DEVICE_NOT_AVAILABLE, "CUDA graphs need a CUDA handle"};
  const cuda::DriverApi* d = cuda::driver();
  if (!d) return {ErrorCode::DEVICE_NOT_AVAILABLE, cuda::driver_error()};
  HandleImpl& hi = impl_of(h);
  if (auto s = cuda::make_current(hi); !s.ok()) return s;
  CaptureState st{d, &h, h.get_stream()};
  if (auto s = cuda::create_stream(hi, &st.stream); !s.ok()) return s;
  if (auto s = const_cast<Handle&>(h).set_stream(st.stream); !s.ok()) return s;
  if (auto s = cuda::check(d->cuGraphCreate(&st.graph, 0), "cuGraphCreate"); !s.ok()) return s;
  const VariantPack pack = tensor_pack(g, dev.pack());
  if (auto s = g.populate_cuda_graph(h, pack, dev.workspace(), st.graph); !s.ok()) return s;
  if (auto s = count_captured_nodes(d, st.graph, out.nodes); !s.ok()) return s;
  if (auto s = cuda::check(d->cuGraphInstantiateWithFlags(&st.exec, st.graph, 0), "cuGraphInstantiate"); !s.ok())
    return s;
  const auto launch = [&] { return cuda::check(d->cuGraphLaunch(st.exec, cuda::stream_of(hi)), "cuGraphLaunch"); };
  Timing replay, stream;
  if (auto s = time_runs(h, iters, launch, replay); !s.ok()) return s;
  const auto execute = [&] { return g.execute(h, dev.pack(), dev.workspace(), dev.workspace_bytes()); };
  if (auto s = time_runs(h, iters, execute, stream); !s.ok()) return s;
  out.replay_s = replay.median_s;
  out.stream_s = stream.median_s;
  // The outputs left behind come from one replay on poisoned buffers, so the check sees the graph's work.
  if (auto s = dev.poison_outputs(); !s.ok()) return s;
  if (auto s = launch(); !s.ok()) return s;
  return memory::synchronize(hi);
}

}  // namespace dnngraph::cli
