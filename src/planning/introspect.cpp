#include "planning/introspect.hpp"

#include <array>
#include <unordered_map>

#include "planning/plan_set.hpp"

namespace dnngraph::introspect {

std::vector<TensorPtr> user_tensors(const Graph& g) {
  std::vector<TensorPtr> out = impl_of(g).tensors;
  for (const auto& n : impl_of(g).nodes) {
    out.insert(out.end(), n.inputs.begin(), n.inputs.end());
    out.insert(out.end(), n.outputs.begin(), n.outputs.end());
  }
  return out;
}

std::string graph_name(const Graph& g) { return impl_of(g).name; }
size_t node_count(const Graph& g) { return impl_of(g).nodes.size(); }

uint64_t ir_serial(const Graph& g) { return impl_of(g).ir ? impl_of(g).ir->serial : 0; }

Status tensors(const Graph& g, std::vector<TensorView>& out) {
  const auto& ir = impl_of(g).ir;
  if (!ir) return {ErrorCode::INVALID_CALL_ORDER, "introspect::tensors: call build_operation_graph first"};
  std::unordered_map<int, int64_t> seq_len_bound;  // SEQ_LEN inputs of sdpa(_backward): Q's or K's sequence length
  for (const auto& n : ir->nodes) {
    using Slots = std::array<std::pair<int, int>, 2>;
    Slots slots{};
    if (ir::is<SdpaAttr>(n)) slots = Slots{{{slot::SDPA_SEQ_Q, slot::SDPA_Q}, {slot::SDPA_SEQ_KV, slot::SDPA_K}}};
    else if (ir::is<SdpaBackwardAttr>(n)) slots = Slots{{{slot::SB_SEQ_Q, slot::SB_Q}, {slot::SB_SEQ_KV, slot::SB_K}}};
    else continue;
    for (auto [slot_index, like] : slots)
      if (static_cast<size_t>(slot_index) < n.inputs.size() && n.inputs[slot_index] >= 0 && n.inputs[like] >= 0) {
        const auto& dims = ir->tensor(n.inputs[like]).dims;
        if (dims.size() > 2) seq_len_bound[n.inputs[slot_index]] = dims[2];
      }
  }
  out.clear();
  for (const auto& t : ir->tensors) {
    const auto bound = seq_len_bound.find(t.id);
    out.push_back({.uid = t.uid, .name = t.name, .dtype = t.dtype, .dims = t.dims, .strides = t.strides,
                   .is_virtual = t.is_virtual, .is_produced = t.producer >= 0, .is_pass_by_value = t.is_pass_by_value,
                   .has_value = t.has_value, .span_bytes = t.span_bytes(),
                   .seq_len_bound = bound == seq_len_bound.end() ? 0 : bound->second});
  }
  return {};
}

std::vector<DataType> compute_types(const Graph& g) {
  std::vector<DataType> out;
  if (const auto& ir = impl_of(g).ir)
    for (const auto& n : ir->nodes) out.push_back(n.compute_type);
  return out;
}

bool has_attention(const Graph& g) {
  if (const auto& ir = impl_of(g).ir)
    for (const auto& n : ir->nodes)
      if (ir::is<SdpaAttr>(n) || ir::is<SdpaBackwardAttr>(n)) return true;
  return false;
}

std::vector<PartitionView> partitions(const Graph& g) {
  std::vector<PartitionView> out;
  const auto& plans = impl_of(g).plans;
  if (!plans) return out;
  for (const auto& pp : plans->parts) {
    PartitionView v;
    v.pattern = pp.partition.pattern;
    for (size_t k = 0; k < pp.partition.nodes.size(); ++k) v.nodes.push_back(pp.partition.node(k).name);
    v.verdicts = pp.verdicts;
    for (const auto& c : pp.candidates) v.candidates.push_back({c.engine_id, c.label(), c.estimate_s, c.measured_s, c.from_tuning_db, c.ready_first});
    v.chosen = static_cast<size_t>(pp.chosen);
    out.push_back(std::move(v));
  }
  return out;
}

double graph_flops(const Graph& g) {
  double flops = 0;
  if (const auto& plans = impl_of(g).plans)
    for (const auto& pp : plans->parts) flops += partition_flops(pp.partition);
  return flops;
}

const DeviceInfo& device_info(const Handle& h) { return impl_of(h).info; }

Status autotune(Graph& g, const Handle& h, const UidVariantPack& pack, void* workspace,
                const AutotuneOptions& options, std::vector<CandidateTiming>* timings) {
  return autotune_graph(impl_of(g), h, nullptr, &pack, workspace, options, timings);
}

}  // namespace dnngraph::introspect
