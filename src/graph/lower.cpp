// Lowering: validated NodeSpecs -> the IR (tensors by id, nodes in topological order).
#include <atomic>

#include <nlohmann/json.hpp>

#include "core/hash.hpp"
#include "core/no_throw.hpp"
#include "dnngraph/handle.hpp"
#include "graph/graph_impl.hpp"
#include "graph/json_attr.hpp"

namespace dnngraph {

bool GraphImpl::tensors_changed_since_lowering(std::string& which) const {
  for (const auto& [t, revision] : lowered_revisions)
    if (t->get_revision() != revision) {
      which = t->get_name();
      return true;
    }
  return false;
}

Status lower_to_ir(GraphImpl& g) {
  if (g.stage < Stage::VALIDATED) return {ErrorCode::INVALID_CALL_ORDER, "build_operation_graph: call validate() first"};
  auto ir = std::make_unique<ir::Graph>();
  ir->name = g.name;
  ir->io_type = g.defaults.io;
  ir->intermediate_type = g.defaults.intermediate == DataType::NOT_SET ? DataType::FLOAT : g.defaults.intermediate;
  ir->compute_type = g.defaults.compute == DataType::NOT_SET ? DataType::FLOAT : g.defaults.compute;
  ir->dynamic_shapes = g.dynamic_shapes;
  ir->allow_tf32 = g.allow_tf32;
  g.tensor_id.clear();
  g.uid_id.clear();
  g.lowered_revisions.clear();
  auto id_of = [&](const TensorPtr& t) -> int {
    if (!t) return -1;
    auto [it, inserted] = g.tensor_id.emplace(t.get(), static_cast<int>(ir->tensors.size()));
    if (inserted) {
      g.lowered_revisions.emplace_back(t, t->get_revision());
      if (!t->get_is_virtual()) g.uid_id.emplace(t->get_uid(), it->second);
      ir::Tensor x;
      x.id = it->second;
      x.uid = t->get_is_virtual() ? -1 : t->get_uid();
      x.name = t->get_name();
      x.dtype = t->get_data_type();
      x.dims = t->get_dim();
      x.strides = t->get_stride();
      x.is_virtual = t->get_is_virtual();
      x.is_pass_by_value = t->get_is_pass_by_value();
      x.has_value = t->get_value().has_value();
      x.is_constant = t->get_is_constant();
      x.value = t->get_value().value_or(0.0);
      ir->tensors.push_back(std::move(x));
    }
    return it->second;
  };
  for (int index : g.topo_order) {
    const NodeSpec& spec = g.nodes[static_cast<size_t>(index)];
    ir::Node n;
    n.name = spec.name;
    n.attr = spec.attr;
    n.compute_type = std::visit(
        [&](const auto& a) {
          DataType t = a.get_compute_data_type();
          return t != DataType::NOT_SET ? t : ir->compute_type;
        },
        spec.attr);
    for (const auto& t : spec.inputs) n.inputs.push_back(id_of(t));
    for (const auto& t : spec.outputs) {
      int id = id_of(t);
      ir->tensors[static_cast<size_t>(id)].producer = static_cast<int>(ir->nodes.size());
      n.outputs.push_back(id);
    }
    ir->nodes.push_back(std::move(n));
  }
  ir->index_consumers();
  static std::atomic<uint64_t> serials{0};
  ir->serial = ++serials;
  g.ir = std::move(ir);
  g.stage = Stage::LOWERED;
  return {};
}

Status Graph::build_operation_graph(const Handle& handle) {
  return no_throw(ErrorCode::INVALID_GRAPH, "build_operation_graph", [&]() -> Status {
    if (!handle.status().ok()) return handle.status();
    if (impl_->stage < Stage::VALIDATED) {
      if (auto s = validate(); !s.ok()) return s;
    }
    if (auto s = lower_to_ir(*impl_); !s.ok()) return s;
    impl_->handle = std::make_unique<Handle>(handle);
    return {};
  });
}

namespace ir {

int64_t Tensor::volume() const {
  int64_t v = 1;
  for (int64_t d : dims) v *= d;
  return v;
}

int64_t Tensor::span_bytes() const {
  int64_t max_offset = 0;
  for (size_t i = 0; i < dims.size(); ++i) max_offset += (dims[i] - 1) * strides[i];
  return (max_offset + 1) * size_of(dtype);
}

std::span<const int> Graph::consumers(int id) const {
  const size_t t = static_cast<size_t>(id);
  return {consumer_nodes.data() + consumer_offsets[t], consumer_nodes.data() + consumer_offsets[t + 1]};
}

// Two passes over every node's inputs, counting then filling.
void Graph::index_consumers() {
  // Calls fn(tensor, node) once per tensor a node reads: a node that reads x in two slots (x * x)
  // is one consumer of x.
  auto each_read = [&](auto&& fn) {
    std::vector<int> last_reader(tensors.size(), -1);
    for (size_t i = 0; i < nodes.size(); ++i)
      for (int t : nodes[i].inputs)
        if (t >= 0 && last_reader[static_cast<size_t>(t)] != static_cast<int>(i)) {
          last_reader[static_cast<size_t>(t)] = static_cast<int>(i);
          fn(static_cast<size_t>(t), static_cast<int>(i));
        }
  };
  consumer_offsets.assign(tensors.size() + 1, 0);
  each_read([&](size_t t, int) { ++consumer_offsets[t + 1]; });
  for (size_t t = 0; t < tensors.size(); ++t) consumer_offsets[t + 1] += consumer_offsets[t];
  consumer_nodes.assign(static_cast<size_t>(consumer_offsets.back()), -1);
  std::vector<int> next(consumer_offsets.begin(), consumer_offsets.end() - 1);
  each_read([&](size_t t, int node) { consumer_nodes[static_cast<size_t>(next[t]++)] = node; });
}

uint64_t Graph::fingerprint(bool ignore_batch) const {
  std::lock_guard<std::mutex> lock(fingerprints_.mutex);
  auto& known = fingerprints_.values[ignore_batch ? 1 : 0];
  if (!known) known = compute_fingerprint(ignore_batch);
  return *known;
}

uint64_t Graph::compute_fingerprint(bool ignore_batch) const {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& t : tensors) {
    auto dims = t.dims;
    auto strides = t.strides;
    if (ignore_batch && !dims.empty()) dims[0] = strides[0] = -1;  // batch size and batch stride vary
    j.push_back({t.uid, static_cast<int>(t.dtype), dims, strides,
                 t.is_virtual, t.is_pass_by_value, t.is_pass_by_value ? t.value : 0.0, t.is_constant});
  }
  for (const auto& n : nodes) j.push_back({attr_to_json(n.attr), static_cast<int>(n.compute_type), n.inputs, n.outputs});
  if (allow_tf32) j.push_back("allow_tf32");  // changes the numbers, so plans and tuning records differ
  return hash64(j.dump());
}

}  // namespace ir
}  // namespace dnngraph
