// Variant packs and workspaces from Python: {tensor or uid: array or int pointer}. Each array is
// checked against its tensor (device, type, size, writability) before the library sees a pointer,
// so a wrong array is a ValueError naming the tensor instead of a crash.

#include "pygraph.hpp"

namespace dnngraph::python {
namespace {

using OptHandle = std::optional<Handle>;

std::string describe(const TensorAttr& t) {
  return "tensor '" + t.get_name() + "'" + (t.has_uid() ? " (uid " + std::to_string(t.get_uid()) + ")" : "");
}

[[noreturn]] void pack_error(const std::string& msg) { fail(ErrorCode::INVALID_VARIANT_PACK, "variant pack: " + msg); }

// Types NumPy has no name for (bfloat16, fp8, bool as bytes) may come as integers of the same width.
bool type_matches(DataType want, const ArrayRef& a) {
  const auto have = a.data_type();
  if (have && *have == want) return true;
  const auto d = a.array.dtype();
  const bool integer = d.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Int) ||
                       d.code == static_cast<uint8_t>(nb::dlpack::dtype_code::UInt) ||
                       d.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Bool);
  const bool nameless = want == DataType::BFLOAT16 || want == DataType::FP8_E4M3 || want == DataType::FP8_E5M2 ||
                        want == DataType::BOOLEAN;
  return nameless && integer && d.lanes == 1 && static_cast<int64_t>(d.bits) == size_of(want) * 8;
}

void check_array(const PyGraph& g, const TensorAttr* t, const std::string& label, const ArrayRef& a,
                 const Device& device) {
  if (t && t->get_is_pass_by_value()) {
    if (!a.on_host())
      pack_error(label + " is pass-by-value (a host scalar) but the array is on " + a.device_string());
  } else if (!a.usable_on(device)) {
    pack_error(label + " is a " + a.device_string() + " array but the handle is " + device.to_string());
  }
  if (a.has_negative_stride()) pack_error(label + ": the array has negative strides");
  if (!t) return;
  if (g.is_produced(t) && !a.writable) pack_error(label + " is an output but the array is read-only");
  const DataType want = t->get_data_type();
  if (want != DataType::NOT_SET && !type_matches(want, a))
    pack_error(label + " is " + std::string(to_string(want)) + " but the array is " + a.dtype_string());
  if (want != DataType::NOT_SET && !t->get_dim().empty()) {
    const int64_t need = span_elements(t->get_dim(), t->get_stride()) * size_of(want);
    if (a.extent_bytes() < need)
      pack_error(label + " spans " + std::to_string(need) + " bytes but the array holds only " +
                 std::to_string(a.extent_bytes()));
  }
}

// The pointer for one pack value: an array (checked), an int pointer, or None (null).
void* value_pointer(const PyGraph& g, const TensorAttr* t, const std::string& label, nb::handle value,
                    const Device& device, std::vector<ArrayRef>& keep) {
  if (value.is_none()) return nullptr;
  if (PyLong_Check(value.ptr())) return to_pointer(value);
  ArrayRef a;
  if (!to_array(value, a))
    pack_error(label + ": expected an array (__dlpack__ or buffer protocol) or an int pointer; got " +
               py_type_name(value));
  check_array(g, t, label, a, device);
  void* p = a.data();
  keep.push_back(std::move(a));
  return p;
}

}  // namespace

ResolvedPack resolve_pack(PyGraph& g, nb::handle pack, const Handle& h) {
  if (!nb::isinstance<nb::dict>(pack)) pack_error("expected a dict {tensor or uid: array}");
  nb::dict d = nb::borrow<nb::dict>(pack);
  ResolvedPack out;
  for (auto [key, value] : d) {
    if (!nb::isinstance<TensorAttr>(key)) {
      if (!PyLong_Check(key.ptr()))
        pack_error("keys must be dnngraph.tensor or int uids; got " + py_type_name(key));
      out.use_uid = true;
    }
  }
  for (auto [key, value] : d) {
    if (nb::isinstance<TensorAttr>(key)) {
      // Keys are looked up among this graph's tensors: a tensor of another graph is an error here.
      TensorPtr t = g.find(key);
      if (!t) pack_error("tensor '" + nb::inst_ptr<TensorAttr>(key)->get_name() + "' is not a tensor of this graph");
      void* p = value_pointer(g, t.get(), describe(*t), value, h.device(), out.keep);
      if (!out.use_uid) {
        out.by_tensor[t] = p;
      } else {
        if (!t->has_uid()) pack_error(describe(*t) + " has no uid yet (call validate first)");
        out.by_uid[t->get_uid()] = p;
      }
    } else {
      const int64_t uid = nb::cast<int64_t>(key);
      TensorPtr known = g.find_uid(uid);
      const std::string label = known ? describe(*known) : "uid " + std::to_string(uid);
      out.by_uid[uid] = value_pointer(g, known.get(), label, value, h.device(), out.keep);
    }
  }
  return out;
}

ResolvedWorkspace resolve_workspace(nb::handle ws, const Handle& h) {
  ResolvedWorkspace out;
  if (ws.is_none()) {
    out.bytes = 0;
    return out;
  }
  if (PyLong_Check(ws.ptr())) {
    out.ptr = to_pointer(ws);
    return out;
  }
  if (!to_array(ws, out.keep))
    fail(ErrorCode::INVALID_VALUE, "workspace: expected an array, an int pointer or None; got " +
                                       py_type_name(ws));
  if (!out.keep.usable_on(h.device()))
    fail(ErrorCode::INVALID_VALUE, "workspace: a " + out.keep.device_string() + " array but the handle is " +
                                       h.device().to_string());
  if (!out.keep.writable) fail(ErrorCode::INVALID_VALUE, "workspace: the array is read-only");
  out.ptr = out.keep.data();
  out.bytes = out.keep.extent_bytes();
  return out;
}

namespace {

void execute(PyGraph& g, nb::handle pack, nb::handle workspace, OptHandle given, std::optional<int64_t> index) {
  const Handle& h = g.handle(given);
  ResolvedPack p = resolve_pack(g, pack, h);
  ResolvedWorkspace w = resolve_workspace(workspace, h);
  Status s;
  {
    nb::gil_scoped_release release;
    if (index) {
      s = p.use_uid ? g.graph.execute_plan_at_index(h, p.by_uid, w.ptr, *index, w.bytes)
                    : g.graph.execute_plan_at_index(h, p.by_tensor, w.ptr, *index, w.bytes);
    } else {
      s = p.use_uid ? g.graph.execute(h, p.by_uid, w.ptr, w.bytes) : g.graph.execute(h, p.by_tensor, w.ptr, w.bytes);
    }
  }
  check(s);
}

void autotune(PyGraph& g, nb::handle pack, nb::handle workspace, OptHandle given) {
  const Handle& h = g.handle(given);
  ResolvedPack p = resolve_pack(g, pack, h);
  ResolvedWorkspace w = resolve_workspace(workspace, h);
  Status s;
  {
    nb::gil_scoped_release release;
    s = p.use_uid ? g.graph.autotune(h, p.by_uid, w.ptr) : g.graph.autotune(h, p.by_tensor, w.ptr);
  }
  check(s);
}

void* to_cuda_graph(nb::handle obj) {
  if (nb::hasattr(obj, "_as_parameter_")) {
    nb::object p = obj.attr("_as_parameter_");
    if (nb::hasattr(p, "value")) p = p.attr("value");
    return to_pointer(p);
  }
  if (!PyLong_Check(obj.ptr()))
    fail(ErrorCode::INVALID_VALUE, "cuda_graph: expected an int (cudaGraph_t) or an object with ._as_parameter_");
  return to_pointer(obj);
}

// CUDA-graph calls take tensor-keyed packs; uids are mapped back to the tensors the graph knows.
VariantPack tensor_pack(const PyGraph& g, const ResolvedPack& p) {
  if (!p.use_uid) return p.by_tensor;
  VariantPack out;
  for (const auto& [uid, ptr] : p.by_uid) {
    TensorPtr t = g.find_uid(uid);
    if (!t) pack_error("uid " + std::to_string(uid) + " names no tensor this pygraph declared; key the pack by tensor");
    out[t] = ptr;
  }
  return out;
}

void cuda_graph_call(PyGraph& g, const Handle& h, nb::handle pack, nb::handle workspace, nb::handle cuda_graph,
                     bool update) {
  ResolvedPack p = resolve_pack(g, pack, h);
  ResolvedWorkspace w = resolve_workspace(workspace, h);
  VariantPack tp = tensor_pack(g, p);
  void* cg = to_cuda_graph(cuda_graph);
  Status s;
  {
    nb::gil_scoped_release release;
    s = update ? g.graph.update_cuda_graph(h, tp, w.ptr, cg) : g.graph.populate_cuda_graph(h, tp, w.ptr, cg);
  }
  check(s);
}

}  // namespace

void bind_pygraph_execute(nb::class_<PyGraph>& c) {
  c.def("execute",
        [](PyGraph& g, nb::handle pack, nb::handle ws, OptHandle h) { execute(g, pack, ws, std::move(h), std::nullopt); },
        nb::arg("variant_pack"), nb::arg("workspace").none() = nb::none(), nb::arg("handle").none() = nb::none(),
        "Run the default plan. variant_pack: {tensor or uid: array or int pointer}; workspace: an array of "
        "at least get_workspace_size() bytes, an int pointer, or None.");
  c.def("execute_plan_at_index",
        [](PyGraph& g, nb::handle pack, nb::handle ws, int64_t index, OptHandle h) {
          execute(g, pack, ws, std::move(h), index);
        },
        nb::arg("variant_pack"), nb::arg("workspace").none(), nb::arg("index"), nb::arg("handle").none() = nb::none());
  c.def("autotune", &autotune, nb::arg("variant_pack"), nb::arg("workspace").none() = nb::none(),
        nb::arg("handle").none() = nb::none(),
        "Time every built plan, make the fastest the default and record it in the tuning DB.");
  c.def("populate_cuda_graph",
        [](PyGraph& g, const Handle& h, nb::handle pack, nb::handle ws, nb::handle cg) {
          cuda_graph_call(g, h, pack, ws, cg, false);
        },
        nb::arg("handle"), nb::arg("variant_pack"), nb::arg("workspace").none(), nb::arg("cuda_graph"),
        "Add the plan's kernels to a cudaGraph_t (an int) made by the caller.");
  c.def("update_cuda_graph",
        [](PyGraph& g, const Handle& h, nb::handle pack, nb::handle ws, nb::handle cg) {
          cuda_graph_call(g, h, pack, ws, cg, true);
        },
        nb::arg("handle"), nb::arg("variant_pack"), nb::arg("workspace").none(), nb::arg("cuda_graph"));
}

}  // namespace dnngraph::python
