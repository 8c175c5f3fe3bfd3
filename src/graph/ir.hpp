// The IR: a validated, shape-inferred, topologically ordered graph. Engines read only this.
#pragma once
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dnngraph/types.hpp"
#include "graph/op_traits.hpp"

namespace dnngraph::ir {

struct Tensor {
  int id = -1;            // index in Graph::tensors
  int64_t uid = -1;       // user-visible id (every non-virtual tensor has one)
  std::string name;
  DataType dtype = DataType::NOT_SET;
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
  bool is_virtual = false;        // produced and consumed inside the graph
  bool is_pass_by_value = false;  // a host scalar; `value` holds it
  bool has_value = false;         // pass-by-value with a value baked in (else given at execute)
  bool is_constant = false;       // data fixed per pointer while a plan lives (TensorAttr::set_is_constant)
  double value = 0.0;
  int producer = -1;              // node index, -1 for graph inputs

  int64_t volume() const;
  int rank() const { return static_cast<int>(dims.size()); }
  // Bytes spanned from the base pointer: (max offset + 1) * element size.
  int64_t span_bytes() const;
};

struct Node {
  std::string name;
  OpAttr attr;
  DataType compute_type = DataType::FLOAT;
  std::vector<int> inputs;   // tensor ids by slot, -1 for an absent optional input
  std::vector<int> outputs;  // tensor ids by slot
};

// Whether a node is the op of attribute type A.
template <class A>
bool is(const Node& n) {
  return std::holds_alternative<A>(n.attr);
}
// "node 'conv0' (conv_fprop)": how messages name a node.
inline std::string describe(const Node& n) { return "node '" + n.name + "' (" + std::string(op_name(n.attr)) + ")"; }

struct Graph {
  std::string name;
  std::vector<Tensor> tensors;
  std::vector<Node> nodes;  // topological order
  DataType io_type = DataType::FLOAT;
  DataType intermediate_type = DataType::FLOAT;
  DataType compute_type = DataType::FLOAT;
  bool dynamic_shapes = false;
  bool allow_tf32 = false;  // FLOAT matmul/conv inputs may be rounded to TF32 on tensor cores
  // Distinct for every graph lower_to_ir makes in this process (never reused, unlike an address):
  // what lets a caller keep something derived from one IR and know when it is stale.
  uint64_t serial = 0;
  // The consumer index: consumer_nodes[consumer_offsets[t] .. consumer_offsets[t + 1]) read tensor t.
  std::vector<int> consumer_offsets, consumer_nodes;

  const Tensor& tensor(int id) const { return tensors[static_cast<size_t>(id)]; }
  // Nodes reading tensor `id`, each once, in node order. Read from the index that
  // index_consumers() builds (lower_to_ir calls it once the nodes are final), so that a pass over
  // every tensor's consumers costs the graph's size, not its square.
  std::span<const int> consumers(int id) const;
  void index_consumers();
  // A stable hash of everything that decides how the graph runs (ops, attrs, shapes, strides,
  // types; not names). With `ignore_batch`, dim 0 of every tensor is left out (dynamic shapes).
  // Engines key their caches by it per partition, so each is computed on first use and kept:
  // planning stays linear in the graph's size, and a graph nobody asks pays nothing.
  uint64_t fingerprint(bool ignore_batch = false) const;

 private:
  uint64_t compute_fingerprint(bool ignore_batch) const;
  // Thread-safe; a copy starts empty (the copy may be changed before it is asked).
  struct Memo {
    Memo() = default;
    Memo(const Memo&) {}
    Memo& operator=(const Memo&) {
      std::lock_guard<std::mutex> lock(mutex);
      values = {};
      return *this;
    }
    std::mutex mutex;
    std::array<std::optional<uint64_t>, 2> values;  // [ignore_batch]
  };
  mutable Memo fingerprints_;
};

}  // namespace dnngraph::ir
