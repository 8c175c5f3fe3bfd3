// Variant packs and workspaces from Python: {tensor or uid: array or int pointer}. Each array is
// checked against the tensor the plans were built for (the IR's: the same for a graph built here,
// read from JSON or deserialized), for device, type, span, layout and writability, before the
// library sees a pointer: a wrong array is a ValueError naming the tensor instead of a crash or a
// wrong result.

#include <chrono>
#include <functional>
#include <unordered_map>

#include "core/log.hpp"
#include "pygraph.hpp"
#include "planning/introspect.hpp"

namespace dnngraph::python {
namespace {

using OptHandle = std::optional<Handle>;
using introspect::TensorView;
// A tensor's name for messages, made only when there is one to write: it costs allocations, and
// execute() checks every array on every call.
using Label = std::function<std::string()>;

std::string describe(const TensorView& t) { return "tensor '" + t.name + "' (uid " + std::to_string(t.uid) + ")"; }

[[noreturn]] void pack_error(const std::string& msg) { fail(ErrorCode::INVALID_VARIANT_PACK, "variant pack: " + msg); }

// Types NumPy has no name for (bfloat16, fp8, bool as bytes) may come as integers of the same width.
bool type_matches(DataType want, const ArrayInfo& a) {
  const auto have = a.data_type();
  if (have && *have == want) return true;
  const auto d = a.dtype;
  const bool integer = d.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Int) ||
                       d.code == static_cast<uint8_t>(nb::dlpack::dtype_code::UInt) ||
                       d.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Bool);
  const bool nameless = want == DataType::BFLOAT16 || want == DataType::FP8_E4M3 || want == DataType::FP8_E5M2 ||
                        want == DataType::BOOLEAN;
  return nameless && integer && d.lanes == 1 && static_cast<int64_t>(d.bits) == size_of(want) * 8;
}

// An array of another type of the same element size and kind (HALF and BFLOAT16, INT8 and UINT8,
// the two FP8s): the frontend hands its bytes to the kernels as they are, and so does dnngraph.
// Floats for integers (or the reverse) are refused: that is a mistake more often than a reinterpretation.
bool same_size_and_kind(DataType want, const ArrayInfo& a) {
  const auto have = a.data_type();
  if (!have || size_of(*have) != size_of(want)) return false;
  return (is_floating(*have) && is_floating(want)) || (is_integral(*have) && is_integral(want));
}

// Its elements fill its extent exactly (no gaps, no repeats): a buffer whatever its dims.
bool is_dense(const ArrayInfo& a) {
  int64_t bytes = (a.dtype.bits * a.dtype.lanes + 7) / 8;
  for (int i = 0; i < a.ndim; ++i)
    if (!checked::mul(bytes, a.shape[i], bytes)) return false;  // repeats (zero strides) past int64
  return bytes == a.extent_bytes();
}

// The tensor's and the array's dims (and strides) agree once the size-1 dims, whose strides
// address nothing, are left out. Walks both in place: execute() checks every array on every call.
bool same_layout(const TensorView& t, const ArrayInfo& a, bool compare_strides) {
  const size_t n = t.dims.size(), m = static_cast<size_t>(a.ndim);
  size_t i = 0, j = 0;
  for (;; ++i, ++j) {
    while (i < n && t.dims[i] == 1) ++i;
    while (j < m && a.shape[j] == 1) ++j;
    if (i == n || j == m) return i == n && j == m;
    if (t.dims[i] != a.shape[j]) return false;
    if (compare_strides && (i < t.strides.size() ? t.strides[i] : 0) != a.stride[j]) return false;
  }
}

// How to get an array of the tensor's layout, or a tensor of the array's, by where its strides came from.
std::string layout_hint(StrideOrigin origin) {
  switch (origin) {
    case StrideOrigin::ROW_MAJOR:
      return "; tensor() made its strides row-major: pass np.ascontiguousarray(array) (torch: "
             "array.contiguous()), give tensor() the array's strides, or declare it with "
             "g.tensor_like(array), which keeps the array's strides";
    case StrideOrigin::ARRAY:
      return "; tensor_like() took its strides from the array it was given: pass an array of that layout, "
             "or declare the tensor with g.tensor_like() of this one";
    case StrideOrigin::INFERRED:
      return "; validate() inferred the strides from the node's inputs: pass an array of that layout, or "
             "set_stride() on the tensor before validate";
    case StrideOrigin::GIVEN: break;
  }
  return "";
}

// Where the strides of the tensor with this uid came from, when this pygraph declared it.
StrideOrigin stride_origin(const PyGraph& g, int64_t uid) {
  const auto tensors = g.tensors_by_uid();
  const auto it = tensors.find(uid);
  return it == tensors.end() ? StrideOrigin::GIVEN : g.stride_origin(*it->second);
}

// The kernels index the tensor by its dims and strides: an array laid out otherwise (Fortran
// order, a slice, a transposed view) would be read or written in the wrong places.
// An array of other dims is taken as the tensor's memory, as the frontend takes any pointer, when
// it is dense (no gaps: the tensor's span lies in the array's own elements; check_array has
// checked that span, and the element size, first). A strided view of other dims is refused.
void check_layout(const PyGraph& g, const TensorView& t, const Label& label, const ArrayInfo& a) {
  if (!same_layout(t, a, false)) {
    if (!is_dense(a))
      pack_error(label() + " has dims " + dims_to_string(t.dims) + " but the array has dims " +
                 dims_to_string(a.dims()) + " (an array of other dims is taken as the tensor's memory only when "
                 "it is dense, without gaps)");
    DG_LOG(DEBUG) << "variant pack: " << label() << " has dims " << dims_to_string(t.dims) << "; the array's dims "
                  << dims_to_string(a.dims()) << " differ: its " << a.extent_bytes()
                  << " dense bytes are taken as the tensor's memory (the frontend's rule)";
    return;
  }
  for (int64_t d : t.dims)
    if (d == 0) return;  // no element is addressed
  if (!same_layout(t, a, true))
    pack_error(label() + " has strides " + dims_to_string(t.strides) + " but the array has strides " +
               dims_to_string(a.strides()) + " (in elements)" + layout_hint(stride_origin(g, t.uid)));
}

// `t` is null for a key the IR does not know: the library names it.
void check_array(const PyGraph& g, const TensorView* t, const Label& label, const ArrayInfo& a,
                 const Device& device) {
  if (t && t->is_pass_by_value) {
    if (!a.on_host())
      pack_error(label() + " is pass-by-value (a host scalar) but the array is on " + a.device_string());
  } else if (!a.usable_on(device)) {
    pack_error(label() + " is a " + a.device_string() + " array but the handle is " + device.to_string());
  }
  if (a.has_negative_stride()) pack_error(label() + ": the array has negative strides");
  const int64_t extent = a.extent_bytes();
  if (!t) return;
  if (t->is_produced && !a.writable) pack_error(label() + " is an output but the array is read-only");
  if (!type_matches(t->dtype, a)) {
    if (!same_size_and_kind(t->dtype, a))
      pack_error(label() + " is " + std::string(to_string(t->dtype)) + " but the array is " + a.dtype_string());
    DG_LOG(DEBUG) << "variant pack: " << label() << " is " << to_string(t->dtype) << " but the array is "
                  << a.dtype_string() << ": its bytes are read as " << to_string(t->dtype) << " (the frontend's rule)";
  }
  if (extent < t->span_bytes)
    pack_error(label() + " spans " + std::to_string(t->span_bytes) + " bytes but the array holds only " +
               std::to_string(extent));
  check_layout(g, *t, label, a);
}

// A tensor whose negative bit is set holds the negation of what its memory holds; DLPack drops
// the bit, so the kernels would read (or write) the values with the wrong sign.
bool torch_negated(nb::handle value) {
  if (!nb::hasattr(value, "is_neg")) return false;
  nb::object neg = value.attr("is_neg")();
  return neg.ptr() == Py_True;
}

// An array for one pack value (or the workspace): read by probe_array when that can judge it
// here, else imported by to_array. False when it is no array. `pass_by_value`: a host scalar,
// for which pinned and plain host memory are alike.
bool read_array(nb::handle value, const Device& device, bool pass_by_value, const Label& label, ArrayRef& out) {
  switch (probe_array(value, out)) {
    case Probe::ARRAY:
      // A torch CPU tensor is judged here where pinned or not makes no difference.
      if (!out.maybe_pinned || device.is_cpu() || pass_by_value) {
        out.owner = nb::borrow(value);
        return true;
      }
      break;
    case Probe::NEGATED:
      pack_error(label() + ": the tensor has its negative bit set (a lazy negation, such as a conj() view's "
                           "imaginary part), which DLPack loses: pass tensor.resolve_neg()");
    case Probe::NONE: break;
  }
  try {
    if (!to_array(value, out)) return false;
  } catch (const StatusError& e) {  // an array no tensor can match (more than kMaxRank dims)
    pack_error(label() + ": " + e.status().message());
  }
  if (torch_negated(value))
    pack_error(label() + ": the tensor has its negative bit set (a lazy negation, such as a conj() view's "
                         "imaginary part), which DLPack loses: pass tensor.resolve_neg()");
  return true;
}

// The pointer for one pack value: an array (checked), an int pointer, or None (null).
void* value_pointer(const PyGraph& g, const TensorView* t, const Label& label, nb::handle value,
                    const Device& device, std::vector<ArrayRef>& keep) {
  if (value.is_none()) return nullptr;
  if (PyLong_Check(value.ptr())) return to_pointer(value);
  ArrayRef& a = keep.emplace_back();
  if (!read_array(value, device, t && t->is_pass_by_value, label, a))
    pack_error(label() + ": expected an array (__dlpack__ or buffer protocol) or an int pointer; got " +
               py_type_name(value));
  check_array(g, t, label, a, device);
  return a.data();
}

// A tensor this graph declared that no node uses (the frontend's instancenorm test packs the
// forward's epsilon into the backward): no plan reads it, so, as in the frontend, it is passed
// over, not checked (a host scalar there is no device-memory mistake).
void pass_over_unused(const Label& label) {
  DG_LOG(DEBUG) << "variant pack: " << label() << " is used by no node of the plans: passed over";
}

int64_t uid_key(nb::handle key) {
  int64_t uid = 0;
  if (!nb::try_cast(key, uid, false))
    pack_error("uid " + nb::cast<std::string>(nb::str(key)) + " is outside int64; uids are in [0, 2^63 - 2]");
  return uid;
}

}  // namespace

ResolvedPack resolve_pack(PyGraph& g, nb::handle pack, const Handle& h) {
  if (!nb::isinstance<nb::dict>(pack)) pack_error("expected a dict {tensor or uid: array}");
  nb::dict d = nb::borrow<nb::dict>(pack);
  ResolvedPack out;
  // A None key is an optional tensor the graph was built without (the frontend's tests pack
  // `bias: ...` with bias None): it names nothing, so it is passed over, as the frontend does.
  for (auto [key, value] : d) {
    if (key.is_none()) continue;
    if (!nb::isinstance<TensorAttr>(key)) {
      if (!PyLong_Check(key.ptr()))
        pack_error("keys must be dnngraph.tensor or int uids; got " + py_type_name(key));
      out.use_uid = true;
    }
  }
  const PackTargets& targets = g.pack_targets();
  out.keep.reserve(d.size());  // value_pointer's references into it stay valid
  for (auto [key, value] : d) {
    if (key.is_none()) continue;
    if (nb::isinstance<TensorAttr>(key)) {
      // Keys are looked up among this graph's tensors: a tensor of another graph is an error here.
      TensorPtr t = g.find(key);
      if (!t) pack_error("tensor '" + nb::inst_ptr<TensorAttr>(key)->get_name() + "' is not a tensor of this graph");
      const Label label = [&] {
        return "tensor '" + t->get_name() + "'" + (t->has_uid() ? " (uid " + std::to_string(t->get_uid()) + ")" : "");
      };
      // validate gives a uid to every tensor a node uses; one without (or unknown to the plans) is
      // used by none. (A graph not yet built is refused by execute itself.)
      const TensorView* view = t->has_uid() ? targets.find(t->get_uid()) : nullptr;
      if (!view) {
        pass_over_unused(label);
        continue;
      }
      void* p = value_pointer(g, view, label, value, h.device(), out.keep);
      if (!out.use_uid) out.by_tensor[t] = p;
      else out.by_uid[t->get_uid()] = p;
    } else {
      const int64_t uid = uid_key(key);
      const TensorView* view = targets.find(uid);
      const Label label = [&] { return view ? describe(*view) : "uid " + std::to_string(uid); };
      if (!view && g.tensors_by_uid().count(uid)) {
        pass_over_unused(label);
        continue;
      }
      out.by_uid[uid] = value_pointer(g, view, label, value, h.device(), out.keep);
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
  // Scratch memory: a negative bit means nothing to it, so only an ARRAY probe is taken.
  if (probe_array(ws, out.keep) == Probe::ARRAY && (!out.keep.maybe_pinned || h.device().is_cpu()))
    out.keep.owner = nb::borrow(ws);
  else if (!to_array(ws, out.keep))
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

// The C++ execute alone, for bench/python_execute_cost.py: the pack is resolved once, then the
// default plan runs `calls` times back to back without the GIL (on a GPU handle, enqueued: the
// caller synchronizes). Microseconds per call.
double time_execute(PyGraph& g, nb::handle pack, nb::handle workspace, int64_t calls, OptHandle given) {
  if (calls < 1) fail(ErrorCode::INVALID_VALUE, "_time_execute: calls must be at least 1, got " + std::to_string(calls));
  const Handle& h = g.handle(given);
  ResolvedPack p = resolve_pack(g, pack, h);
  ResolvedWorkspace w = resolve_workspace(workspace, h);
  Status s;
  std::chrono::steady_clock::duration elapsed{};
  {
    nb::gil_scoped_release release;
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < calls && s.ok(); ++i)
      s = p.use_uid ? g.graph.execute(h, p.by_uid, w.ptr, w.bytes) : g.graph.execute(h, p.by_tensor, w.ptr, w.bytes);
    elapsed = std::chrono::steady_clock::now() - t0;
  }
  check(s);
  return std::chrono::duration<double, std::micro>(elapsed).count() / static_cast<double>(calls);
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
  const auto tensors = g.tensors_by_uid();
  for (const auto& [uid, ptr] : p.by_uid) {
    const auto it = tensors.find(uid);
    if (it == tensors.end()) pack_error("uid " + std::to_string(uid) + " names no tensor of this graph");
    out[it->second] = ptr;
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

// What every pack-taking method says of its arguments and errors.
#define DG_PACK_ARGS                                                                                        \
  "variant_pack: a dict {tensor or uid: array, int pointer or None}; arrays are NumPy, PyTorch, CuPy, JAX " \
  "or anything with __dlpack__ or the buffer protocol, each checked against its tensor (device, dtype, "   \
  "span, dims, strides, writability for outputs). workspace: an array of at least get_workspace_size() "    \
  "bytes (writable, on the handle's device), an int pointer, or None. handle: the graph's own when None. "  \
  "Raises ValueError (code INVALID_VARIANT_PACK) naming the tensor for a wrong array, a key that is "       \
  "neither a tensor of this graph nor an int uid, or a uid outside int64; ValueError for a bad workspace; "  \
  "RuntimeError when the plans are not built or a tensor changed after build_plans, or when the engine fails."

void bind_pygraph_execute(nb::class_<PyGraph>& c) {
  c.def("execute",
        [](PyGraph& g, nb::handle pack, nb::handle ws, OptHandle h) { execute(g, pack, ws, std::move(h), std::nullopt); },
        nb::arg("variant_pack"), nb::arg("workspace").none() = nb::none(), nb::arg("handle").none() = nb::none(),
        "Run the default plan (the first built, or autotune's choice) on the arrays of variant_pack. " DG_PACK_ARGS);
  c.def("execute_plan_at_index",
        [](PyGraph& g, nb::handle pack, nb::handle ws, int64_t index, OptHandle h) {
          execute(g, pack, ws, std::move(h), index);
        },
        nb::arg("variant_pack"), nb::arg("workspace").none(), nb::arg("index"), nb::arg("handle").none() = nb::none(),
        "Run plan `index` (0 <= index < get_execution_plan_count(), built by build_plans or "
        "build_plan_at_index); a workspace of get_workspace_size_plan_at_index(index) bytes. " DG_PACK_ARGS
        " An index out of range is a ValueError; a plan not built, a RuntimeError.");
  c.def("_time_execute", &time_execute, nb::arg("variant_pack"), nb::arg("workspace").none(), nb::arg("calls"),
        nb::arg("handle").none() = nb::none(),
        "Benchmark aid (bench/python_execute_cost.py): resolve the pack once, run the default plan `calls` "
        "times from C++ without the GIL, and return the microseconds per call (enqueue time on a GPU: "
        "synchronize after). Raises ValueError for calls < 1, and what execute() raises. " DG_PACK_ARGS);
  c.def("autotune", &autotune, nb::arg("variant_pack"), nb::arg("workspace").none() = nb::none(),
        nb::arg("handle").none() = nb::none(),
        "Time every built plan on these arrays, make the fastest the default and record it in the tuning DB "
        "(outputs are overwritten). The workspace must fit the largest plan's. " DG_PACK_ARGS);
  c.def("populate_cuda_graph",
        [](PyGraph& g, const Handle& h, nb::handle pack, nb::handle ws, nb::handle cg) {
          cuda_graph_call(g, h, pack, ws, cg, false);
        },
        nb::arg("handle"), nb::arg("variant_pack"), nb::arg("workspace").none(), nb::arg("cuda_graph"),
        "Add the default plan's kernels, on these arrays, to a cudaGraph_t made by the caller. cuda_graph: an "
        "int (cudaGraph_t) or an object with ._as_parameter_; anything else is a ValueError. A uid key that "
        "names no tensor of this graph is a ValueError. " DG_PACK_ARGS);
  c.def("update_cuda_graph",
        [](PyGraph& g, const Handle& h, nb::handle pack, nb::handle ws, nb::handle cg) {
          cuda_graph_call(g, h, pack, ws, cg, true);
        },
        nb::arg("handle"), nb::arg("variant_pack"), nb::arg("workspace").none(), nb::arg("cuda_graph"),
        "Point the kernels that populate_cuda_graph added to cuda_graph at new arrays (same dims, strides and "
        "types). Arguments and errors as populate_cuda_graph's. " DG_PACK_ARGS);
}

#undef DG_PACK_ARGS

}  // namespace dnngraph::python
