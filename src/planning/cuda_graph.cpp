// CUDA graphs of built plans, by stream capture on the handle's stream.
//
// populate_cuda_graph captures one execute() (every partition's chosen plan) into a graph of its
// own and adds that graph to the caller's cudaGraph_t as a child-graph node. The caller's graph
// must be empty, so that it holds exactly that node; embed it in a larger graph as a child graph.
// update_cuda_graph captures again with the new variant pack and replaces that node with one of the
// same shape: the caller then applies it to an instantiated graph with cudaGraphExecUpdate.
//
// Engines must only enqueue work on the handle's stream while capturing (no synchronization, no
// allocation, no host copies): the CUDA engines do; plans that stage through host memory (ref on a
// GPU) cannot be captured, and CUDA's own error says so.
#include "core/log.hpp"
#include "planning/plan_set.hpp"
#include "runtime/cuda/context.hpp"

namespace dnngraph {
namespace {

Status bad(const char* fn, const std::string& msg) { return {ErrorCode::INVALID_VALUE, std::string(fn) + ": " + msg}; }

// Captures one run of the chosen plans on the handle's stream into a new graph.
Status capture(const GraphImpl& g, const Handle& handle, const VariantPack& pack, void* workspace, const char* fn,
               cuda::CUgraph& out) {
  out = nullptr;
  HandleImpl& h = impl_of(handle);
  if (!handle.status().ok()) return handle.status();
  if (!h.device.is_cuda()) return bad(fn, "CUDA graphs need a CUDA handle; this one is " + h.device.to_string());
  if (h.stream == nullptr)
    return bad(fn, "stream capture needs a stream of the caller's: call handle.set_stream() with a created "
                   "stream (the default stream cannot be captured)");
  std::vector<void*> ptrs;
  std::vector<double> scalars;
  if (auto s = resolve_pack(g, handle, &pack, nullptr, workspace, -1, g.plans ? g.plans->workspace_bytes() : 0, ptrs, scalars); !s.ok()) return s;
  std::vector<size_t> choice;
  for (const auto& pp : g.plans->parts) choice.push_back(static_cast<size_t>(pp.chosen));
  if (auto s = cuda::make_current(h); !s.ok()) return s;
  const cuda::DriverApi& d = *cuda::driver();
  const auto stream = cuda::stream_of(h);
  if (auto s = cuda::check(d.cuStreamBeginCapture(stream, cuda::STREAM_CAPTURE_MODE_THREAD_LOCAL),
                           std::string(fn) + ": cuStreamBeginCapture");
      !s.ok())
    return s;
  const Status run = run_partitions(g, handle, ptrs, workspace, choice);
  cuda::CUgraph graph = nullptr;
  const Status end = cuda::check(d.cuStreamEndCapture(stream, &graph), std::string(fn) + ": cuStreamEndCapture");
  if (!run.ok() || !end.ok()) {
    if (graph) d.cuGraphDestroy(graph);
    const Status& s = run.ok() ? end : run;
    return {s.code(), s.message() + " (while capturing; every plan must be a CUDA engine's: plans that stage "
                                    "through host memory cannot be captured)"};
  }
  out = graph;
  return {};
}

Status graph_nodes(cuda::CUgraph graph, std::vector<cuda::CUgraphNode>& nodes) {
  const cuda::DriverApi& d = *cuda::driver();
  size_t n = 0;
  if (auto s = cuda::check(d.cuGraphGetNodes(graph, nullptr, &n), "cuGraphGetNodes"); !s.ok()) return s;
  nodes.resize(n);
  if (n == 0) return {};
  return cuda::check(d.cuGraphGetNodes(graph, nodes.data(), &n), "cuGraphGetNodes");
}

Status add_child(cuda::CUgraph parent, cuda::CUgraph child) {
  const cuda::DriverApi& d = *cuda::driver();
  cuda::CUgraphNode node = nullptr;
  // The node holds a clone of the child; ours is not needed afterwards.
  Status s = cuda::check(d.cuGraphAddChildGraphNode(&node, parent, nullptr, 0, child), "cuGraphAddChildGraphNode");
  d.cuGraphDestroy(child);
  return s;
}

Status check_call(const GraphImpl& g, const char* fn, void* cuda_graph) {
  if (g.stage < Stage::PLANS_BUILT || !g.plans) return {ErrorCode::INVALID_CALL_ORDER, std::string(fn) + ": call build_plans first"};
  if (!cuda_graph) return bad(fn, "cuda_graph is null; pass a cudaGraph_t made with cudaGraphCreate");
  return {};
}

}  // namespace

Status Graph::populate_cuda_graph(const Handle& handle, const VariantPack& pack, void* workspace, void* cuda_graph) const {
  const char* fn = "populate_cuda_graph";
  if (auto s = check_call(*impl_, fn, cuda_graph); !s.ok()) return s;
  if (!handle.device().is_cuda() || !cuda::driver()) return bad(fn, "CUDA graphs need a CUDA handle");
  if (auto s = cuda::make_current(impl_of(handle)); !s.ok()) return s;
  auto parent = static_cast<cuda::CUgraph>(cuda_graph);
  std::vector<cuda::CUgraphNode> nodes;
  if (auto s = graph_nodes(parent, nodes); !s.ok()) return s;
  if (!nodes.empty())
    return bad(fn, "the cudaGraph_t must be empty (it has " + std::to_string(nodes.size()) +
                       " nodes); populate an empty graph and add it to a larger one as a child graph");
  cuda::CUgraph captured = nullptr;
  if (auto s = capture(*impl_, handle, pack, workspace, fn, captured); !s.ok()) return s;
  return add_child(parent, captured);
}

Status Graph::update_cuda_graph(const Handle& handle, const VariantPack& pack, void* workspace, void* cuda_graph) const {
  const char* fn = "update_cuda_graph";
  if (auto s = check_call(*impl_, fn, cuda_graph); !s.ok()) return s;
  if (!handle.device().is_cuda() || !cuda::driver()) return bad(fn, "CUDA graphs need a CUDA handle");
  if (auto s = cuda::make_current(impl_of(handle)); !s.ok()) return s;
  const cuda::DriverApi& d = *cuda::driver();
  auto parent = static_cast<cuda::CUgraph>(cuda_graph);
  std::vector<cuda::CUgraphNode> nodes;
  if (auto s = graph_nodes(parent, nodes); !s.ok()) return s;
  int type = -1;
  if (nodes.size() != 1 || d.cuGraphNodeGetType(nodes[0], &type) != cuda::CUDA_SUCCESS ||
      type != cuda::GRAPH_NODE_TYPE_GRAPH)
    return bad(fn, "the cudaGraph_t was not made by populate_cuda_graph (it must hold exactly the one child-graph node "
                   "that populate added)");
  cuda::CUgraph captured = nullptr;
  if (auto s = capture(*impl_, handle, pack, workspace, fn, captured); !s.ok()) return s;
  if (auto s = cuda::check(d.cuGraphDestroyNode(nodes[0]), "cuGraphDestroyNode"); !s.ok()) {
    d.cuGraphDestroy(captured);
    return s;
  }
  return add_child(parent, captured);
}

}  // namespace dnngraph
