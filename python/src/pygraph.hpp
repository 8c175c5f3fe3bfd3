// dnngraph.pygraph: a Graph plus the handle it runs on (given, or the best device on first use)
// and the tensors the Python side has seen, which let variant packs be checked before execution.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common.hpp"
#include "planning/introspect.hpp"

namespace dnngraph::python {

// Where a tensor's strides came from, for the hint when an array's layout differs from them.
enum class StrideOrigin {
  GIVEN,      // set by the user (stride=, set_stride, a JSON graph, another tensor)
  ROW_MAJOR,  // tensor() without stride=
  ARRAY,      // tensor_like(array): that array's strides
  INFERRED,   // an output's, inferred by validate from the node's inputs
};

// The IR's user-visible tensors by uid; none before build_operation_graph (execute then refuses
// the call). Virtual tensors are not the pack's: the plans keep them in the workspace or in registers.
class PackTargets {
 public:
  explicit PackTargets(const Graph& g) : serial_(introspect::ir_serial(g)) {
    if (!introspect::tensors(g, views_).ok()) views_.clear();
    for (size_t i = 0; i < views_.size(); ++i)
      if (!views_[i].is_virtual && views_[i].uid >= 0) by_uid_[views_[i].uid] = i;
  }
  const introspect::TensorView* find(int64_t uid) const {
    auto it = by_uid_.find(uid);
    return it == by_uid_.end() ? nullptr : &views_[it->second];
  }
  uint64_t serial() const { return serial_; }

 private:
  uint64_t serial_;
  std::vector<introspect::TensorView> views_;
  std::unordered_map<int64_t, size_t> by_uid_;
};

class PyGraph {
 public:
  PyGraph(std::string name, DataType io, DataType intermediate, DataType compute, std::optional<Handle> handle,
          std::shared_ptr<KernelCache> cache, bool dynamic_shapes);

  Graph graph;

  // The handle given for this call, else the graph's own.
  const Handle& handle(const std::optional<Handle>& given = std::nullopt);
  bool has_handle() const { return handle_.has_value(); }
  std::shared_ptr<KernelCache> kernel_cache() const { return cache_; }

  // Records a tensor declared through the Python API (its strides from `origin`) and returns it.
  TensorPtr input(TensorPtr t, StrideOrigin origin = StrideOrigin::GIVEN);
  // Records a tensor produced by a node (an output the user may read) and returns it.
  TensorPtr produced(TensorPtr t);
  // Graph::validate, noting the outputs whose strides it infers.
  Status validate();
  // Where t's strides came from; GIVEN once they were changed after being noted.
  StrideOrigin stride_origin(const TensorAttr& t) const;
  // The graph's user-visible (non-virtual) tensors with uids, by uid; JSON graphs' too.
  std::unordered_map<int64_t, TensorPtr> tensors_by_uid() const;
  // The tensor this Python object wraps, if this pygraph declared or produced it; else null.
  TensorPtr find(nb::handle obj) const;
  // The pack checks' view of the IR, made again only when the IR changes (every execute used to
  // copy every tensor's view: tens of microseconds per call on a small graph).
  const PackTargets& pack_targets();

 private:
  struct NotedStrides {
    StrideOrigin origin;
    std::vector<int64_t> strides;  // as they were when noted
  };
  std::optional<Handle> handle_;
  std::shared_ptr<KernelCache> cache_;
  std::vector<TensorPtr> tensors_;
  std::unordered_map<const TensorAttr*, size_t> index_;  // into tensors_, by the wrapped object
  std::unique_ptr<PackTargets> targets_;
  std::unordered_map<const TensorAttr*, NotedStrides> stride_origins_;
};

// A variant pack resolved to pointers: keyed by tensor, or by uid when any key is a uid.
struct ResolvedPack {
  VariantPack by_tensor;
  UidVariantPack by_uid;
  bool use_uid = false;
  std::vector<ArrayRef> keep;  // the arrays stay alive until execution returns
};
struct ResolvedWorkspace {
  void* ptr = nullptr;
  int64_t bytes = -1;  // -1: unknown (a raw pointer), not checked by the library
  ArrayRef keep;
};
ResolvedPack resolve_pack(PyGraph& g, nb::handle pack, const Handle& h);
ResolvedWorkspace resolve_workspace(nb::handle workspace, const Handle& h);

// sdpa(implementation=): the frontend's choice of cuDNN kernel family; dnngraph takes AUTO.
enum class AttentionImplementation : int { AUTO, COMPOSITE, UNIFIED };

// Binding of pygraph's methods, by area.
void bind_pygraph_build(nb::class_<PyGraph>& c);      // pygraph.cpp: settings, tensors, build steps, persistence
void bind_pygraph_execute(nb::class_<PyGraph>& c);    // pack.cpp: execute, autotune, CUDA graphs
void bind_pygraph_ops(nb::class_<PyGraph>& c);        // pygraph_ops.cpp: conv, matmul, norms, layout
void bind_pygraph_sdpa(nb::class_<PyGraph>& c);       // pygraph_sdpa.cpp: sdpa, sdpa_backward
void bind_pygraph_pointwise(nb::class_<PyGraph>& c);  // pygraph_pointwise.cpp
void bind_pygraph_engines(nb::class_<PyGraph>& c);    // engines.cpp: engines by id, behaviour notes

}  // namespace dnngraph::python
