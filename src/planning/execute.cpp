// execute(): variant pack -> pointers by tensor id -> each partition's plan, in order.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/dtype.hpp"
#include "core/log.hpp"
#include "core/no_throw.hpp"
#include "planning/plan_set.hpp"
#include "runtime/memory.hpp"

namespace dnngraph {
namespace {

Status pack_error(const std::string& msg) { return {ErrorCode::INVALID_VARIANT_PACK, msg}; }

std::string describe(const ir::Tensor& t) {
  return "tensor '" + t.name + "' (uid " + std::to_string(t.uid) + ")";
}

// Every user tensor's pointer must be memory the device can use; the set the last call checked on
// this handle is not asked about again.
Status check_device_pointers(const ir::Graph& ir, const PlanSet& ps, HandleImpl& h, const std::vector<void*>& ptrs) {
  if (!h.device.is_cuda()) return {};
  std::vector<void*> user;
  for (const auto& t : ir.tensors)
    if (!t.is_virtual && !t.is_pass_by_value) user.push_back(ptrs[static_cast<size_t>(t.id)]);
  CheckedPointers& memo = ps.checked;
  {
    std::lock_guard<std::mutex> lock(memo.mutex);
    if (memo.handle == &h && memo.ptrs == user) return {};
  }
  for (const auto& t : ir.tensors) {
    if (t.is_virtual || t.is_pass_by_value) continue;
    if (!memory::is_usable_pointer(h, ptrs[static_cast<size_t>(t.id)]))
      return pack_error("execute: " + describe(t) + " points to memory the " + h.device.to_string() +
                        " device cannot use (a host pointer for a GPU plan?)");
  }
  std::lock_guard<std::mutex> lock(memo.mutex);
  memo.handle = &h;
  memo.ptrs = std::move(user);
  return {};
}

}  // namespace

Status resolve_pack(const GraphImpl& g, const Handle& handle, const VariantPack* by_tensor, const UidVariantPack* by_uid,
                    void* workspace, int64_t workspace_bytes, int64_t need, std::vector<void*>& ptrs,
                    std::vector<double>& scalars) {
  if (!handle.status().ok()) return handle.status();
  if (g.stage < Stage::PLANS_BUILT || !g.plans) return {ErrorCode::INVALID_CALL_ORDER, "execute: call build_plans first"};
  if (std::string which; g.tensors_changed_since_lowering(which))
    return {ErrorCode::INVALID_CALL_ORDER, "execute: tensor '" + which +
                                               "' was changed after the plans were built (its dims, strides, type, "
                                               "uid or value); build the plans again"};
  const ir::Graph& ir = *g.ir;
  const PlanSet& ps = *g.plans;
  HandleImpl& h = impl_of(handle);
  if (h.device != g.handle->device())
    return {ErrorCode::INVALID_VALUE, "execute: the graph was built for " + g.handle->device().to_string() +
                                          " but the handle is " + h.device.to_string()};
  if (need > 0 && workspace == nullptr)
    return {ErrorCode::WORKSPACE_TOO_SMALL, "execute: the plans need " + std::to_string(need) + " bytes of workspace but it is null"};
  if (workspace_bytes >= 0 && workspace_bytes < need)
    return {ErrorCode::WORKSPACE_TOO_SMALL, "execute: workspace of " + std::to_string(workspace_bytes) +
                                                " bytes is smaller than the " + std::to_string(need) + " bytes asked for"};
  ptrs.assign(ir.tensors.size(), nullptr);
  scalars.assign(ir.tensors.size(), 0.0);
  // Pointers given by the user, keyed by tensor or by uid.
  if (by_tensor) {
    for (const auto& [t, p] : *by_tensor) {
      auto it = t ? g.tensor_id.find(t.get()) : g.tensor_id.end();
      if (it == g.tensor_id.end())
        return pack_error("execute: the variant pack holds tensor '" + (t ? t->get_name() : std::string("null")) +
                          "', which is not part of this graph");
      ptrs[static_cast<size_t>(it->second)] = p;
    }
  }
  if (by_uid) {
    for (const auto& [uid, p] : *by_uid) {
      auto it = g.uid_id.find(uid);
      if (it == g.uid_id.end())
        return pack_error("execute: the variant pack holds uid " + std::to_string(uid) + ", which no tensor of this graph has");
      ptrs[static_cast<size_t>(it->second)] = p;
    }
  }
  for (const auto& t : ir.tensors) {
    const size_t id = static_cast<size_t>(t.id);
    if (t.is_pass_by_value) {
      if (ptrs[id] == nullptr && t.has_value) {
        // A value baked into the graph: engines read it through a host pointer like any scalar.
        scalars[id] = t.value;
        ptrs[id] = &scalars[id];
        if (t.dtype != DataType::DOUBLE) dtype::store(&scalars[id], t.dtype, 0, t.value);
      } else if (ptrs[id] == nullptr) {
        return pack_error("execute: pass-by-value " + describe(t) +
                          " has no value set and no host pointer in the variant pack");
      }
      continue;
    }
    if (t.is_virtual) {
      if (ps.workspace_offset[id] >= 0) ptrs[id] = static_cast<char*>(workspace) + ps.workspace_offset[id];
      continue;
    }
    if (ptrs[id] == nullptr) {
      const bool given = (by_tensor && [&] {
        for (const auto& [tp, p] : *by_tensor)
          if (tp && g.tensor_id.at(tp.get()) == t.id) return true;
        return false;
      }()) || (by_uid && by_uid->count(t.uid));
      return pack_error(given ? "execute: " + describe(t) + " has a null pointer in the variant pack"
                              : "execute: " + describe(t) + " is missing from the variant pack");
    }
  }
  return check_device_pointers(ir, ps, h, ptrs);
}

Status run_partitions(const GraphImpl& g, const Handle& handle, const std::vector<void*>& ptrs, void* workspace,
                      const std::vector<size_t>& choice) {
  const PlanSet& ps = *g.plans;
  void* engine_ws = workspace ? static_cast<char*>(workspace) + ps.intermediates_bytes : nullptr;
  // DNNGRAPH_LOG_LEVEL=3 times each partition on the host (where a session's time goes, by
  // partition and engine; on CUDA it is the launch's host time only).
  const bool timed = log::level() >= log::DEBUG;
  for (size_t i = 0; i < ps.parts.size(); ++i) {
    const auto& plan = ps.parts[i].built[choice[i]];
    if (!plan)
      return {ErrorCode::INVALID_CALL_ORDER,
              "execute: plan " + std::to_string(choice[i]) + " of partition " + std::to_string(i) + " is not built"};
    ExecArgs args{impl_of(handle), ptrs, engine_ws};
    const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (auto s = plan->execute(args); !s.ok()) return s;
    if (timed) {
      DG_LOG(DEBUG) << "execute: partition " << i << " " << ps.parts[i].candidates[choice[i]].label() << " host ms "
                    << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
  }
  return {};
}

namespace {
Status execute_checked(const GraphImpl& g, const Handle& handle, const VariantPack* bt, const UidVariantPack* bu,
                       void* workspace, int64_t ws_bytes, int64_t index) {
  if (g.stage < Stage::PLANS_BUILT || !g.plans) return {ErrorCode::INVALID_CALL_ORDER, "execute: call build_plans first"};
  if (std::string which; g.tensors_changed_since_lowering(which))
    return {ErrorCode::INVALID_CALL_ORDER, "execute: tensor '" + which +
                                               "' was changed after the plans were built (its dims, strides, type, "
                                               "uid or value); build the plans again"};
  if (index >= g.plans->plan_count())
    return {ErrorCode::INVALID_VALUE, "execute_plan_at_index: index " + std::to_string(index) + " is out of range"};
  // The plans that will run decide the workspace needed: the chosen ones, or plan `index`'s.
  std::vector<size_t> choice;
  int64_t engine_ws = 0;
  for (const auto& pp : g.plans->parts) {
    choice.push_back(index < 0 ? static_cast<size_t>(pp.chosen) : pp.index_for(index));
    if (const auto& plan = pp.built[choice.back()]) engine_ws = std::max(engine_ws, plan->workspace_size());
  }
  std::vector<void*> ptrs;
  std::vector<double> scalars;
  if (auto s = resolve_pack(g, handle, bt, bu, workspace, ws_bytes, g.plans->intermediates_bytes + engine_ws, ptrs, scalars);
      !s.ok())
    return s;
  return run_partitions(g, handle, ptrs, workspace, choice);
}

Status execute_impl(const GraphImpl& g, const Handle& handle, const VariantPack* bt, const UidVariantPack* bu,
                    void* workspace, int64_t ws_bytes, int64_t index) {
  return no_throw(ErrorCode::GRAPH_EXECUTION_FAILED, "execute",
                  [&] { return execute_checked(g, handle, bt, bu, workspace, ws_bytes, index); });
}
}  // namespace

Status Graph::execute(const Handle& h, const VariantPack& pack, void* ws, int64_t ws_bytes) const {
  return execute_impl(*impl_, h, &pack, nullptr, ws, ws_bytes, -1);
}
Status Graph::execute(const Handle& h, const UidVariantPack& pack, void* ws, int64_t ws_bytes) const {
  return execute_impl(*impl_, h, nullptr, &pack, ws, ws_bytes, -1);
}
Status Graph::execute_plan_at_index(const Handle& h, const VariantPack& pack, void* ws, int64_t index,
                                    int64_t ws_bytes) const {
  if (index < 0) return {ErrorCode::INVALID_VALUE, "execute_plan_at_index: negative index"};
  return execute_impl(*impl_, h, &pack, nullptr, ws, ws_bytes, index);
}
Status Graph::execute_plan_at_index(const Handle& h, const UidVariantPack& pack, void* ws, int64_t index,
                                    int64_t ws_bytes) const {
  if (index < 0) return {ErrorCode::INVALID_VALUE, "execute_plan_at_index: negative index"};
  return execute_impl(*impl_, h, nullptr, &pack, ws, ws_bytes, index);
}

}  // namespace dnngraph
