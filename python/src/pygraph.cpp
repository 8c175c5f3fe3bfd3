// pygraph: construction, tensors, the five build steps, plan queries and persistence.

#include "pygraph.hpp"

#include "graph/graph_impl.hpp"
#include "planning/introspect.hpp"
#include "runtime/handle_impl.hpp"

namespace dnngraph::python {

PyGraph::PyGraph(std::string name, DataType io, DataType intermediate, DataType compute,
                 std::optional<Handle> handle, std::shared_ptr<KernelCache> cache, bool dynamic_shapes)
    : handle_(std::move(handle)), cache_(std::move(cache)) {
  if (!name.empty()) graph.set_name(std::move(name));
  graph.set_io_data_type(io).set_intermediate_data_type(intermediate).set_compute_data_type(compute);
  graph.set_dynamic_shape_enabled(dynamic_shapes);
  if (cache_) graph.set_kernel_cache(cache_);
}

const Handle& PyGraph::handle(const std::optional<Handle>& given) {
  if (given) return *given;
  if (!handle_) {
    Handle best;
    check(best.status());
    handle_ = best;
  }
  return *handle_;
}

TensorPtr PyGraph::input(TensorPtr t, StrideOrigin origin) {
  if (origin != StrideOrigin::GIVEN) stride_origins_[t.get()] = {origin, t->get_stride()};
  index_.emplace(t.get(), tensors_.size());
  tensors_.push_back(t);
  return t;
}

TensorPtr PyGraph::produced(TensorPtr t) {
  if (!t) return t;
  index_.emplace(t.get(), tensors_.size());
  tensors_.push_back(t);
  return t;
}

const PackTargets& PyGraph::pack_targets() {
  if (!targets_ || targets_->serial() != introspect::ir_serial(graph) || targets_->serial() == 0)
    targets_ = std::make_unique<PackTargets>(graph);
  return *targets_;
}

Status PyGraph::validate() {
  std::vector<TensorPtr> unstrided;
  for (const auto& t : tensors_)
    if (t->get_stride().empty()) unstrided.push_back(t);
  Status s = graph.validate();
  for (const auto& t : unstrided)
    if (!t->get_stride().empty()) stride_origins_[t.get()] = {StrideOrigin::INFERRED, t->get_stride()};
  return s;
}

StrideOrigin PyGraph::stride_origin(const TensorAttr& t) const {
  auto it = stride_origins_.find(&t);
  return it != stride_origins_.end() && it->second.strides == t.get_stride() ? it->second.origin : StrideOrigin::GIVEN;
}

std::unordered_map<int64_t, TensorPtr> PyGraph::tensors_by_uid() const {
  std::unordered_map<int64_t, TensorPtr> out;
  for (const auto& t : introspect::user_tensors(graph))
    if (t && !t->get_is_virtual() && t->has_uid()) out.emplace(t->get_uid(), t);
  return out;
}

TensorPtr PyGraph::find(nb::handle obj) const {
  const auto it = index_.find(nb::inst_ptr<TensorAttr>(obj));
  return it == index_.end() ? nullptr : tensors_[it->second];
}

namespace {

using OptHandle = std::optional<Handle>;

std::unique_ptr<PyGraph> make_graph(std::string name, nb::handle io, nb::handle intermediate, nb::handle compute,
                                    OptHandle handle, std::shared_ptr<KernelCache> cache, bool dynamic,
                                    std::optional<int> sm_version) {
  if (handle) check(handle->status());
  auto g = std::make_unique<PyGraph>(std::move(name), optional_data_type(io), optional_data_type(intermediate),
                                     optional_data_type(compute), std::move(handle), std::move(cache), dynamic);
  // The frontend's sm_version names the GPU to build for; dnngraph builds for the handle's device,
  // so a CUDA device of another architecture is an error rather than a silent mismatch.
  if (sm_version) {
    const Handle& h = g->handle();
    const int device_sm = impl_of(h).info.sm_version;
    if (h.device().is_cuda() && device_sm != *sm_version)
      fail(ErrorCode::INVALID_VALUE, "pygraph: sm_version " + std::to_string(*sm_version) + " differs from " +
                                         h.device().to_string() + "'s sm_" + std::to_string(device_sm) +
                                         " (dnngraph builds for the handle's device)");
  }
  return g;
}

TensorPtr make_tensor(PyGraph& g, std::vector<int64_t> dim, std::optional<std::vector<int64_t>> stride,
                      nb::handle data_type, bool is_virtual, bool is_pass_by_value, std::string name,
                      std::optional<int64_t> uid, std::optional<double> value) {
  TensorAttr a;
  a.set_name(std::move(name)).set_stride(stride ? *stride : packed_strides(dim)).set_dim(std::move(dim));
  a.set_data_type(optional_data_type(data_type)).set_is_virtual(is_virtual).set_is_pass_by_value(is_pass_by_value);
  if (uid && *uid >= 0) a.set_uid(*uid);
  if (value) a.set_value(*value);
  return g.input(g.graph.tensor(a), stride ? StrideOrigin::GIVEN : StrideOrigin::ROW_MAJOR);
}

// tensor_like(array): dims, strides (in elements) and type of a DLPack array. On a GPU graph a
// host array becomes a pass-by-value tensor, as in the cuDNN frontend (scalars such as a scale).
TensorPtr tensor_like_array(PyGraph& g, nb::handle obj, std::string name) {
  ArrayRef a;
  if (!to_array(obj, a))
    fail(ErrorCode::INVALID_VALUE, "tensor_like: expected a dnngraph.tensor or an array with __dlpack__ or the "
                                   "buffer protocol; got " + py_type_name(obj));
  auto type = a.data_type();
  if (!type) fail(ErrorCode::INVALID_DATA_TYPE, "tensor_like: the array's dtype, " + a.dtype_string() +
                                                    ", has no dnngraph data type");
  if (a.has_negative_stride()) fail(ErrorCode::INVALID_VALUE, "tensor_like: the array has negative strides");
  std::vector<int64_t> dims = a.dims(), strides = a.strides();
  if (dims.empty()) dims = strides = {1};  // a 0-d array is a scalar tensor of one element
  TensorAttr t;
  t.set_name(std::move(name)).set_dim(std::move(dims)).set_stride(std::move(strides)).set_data_type(*type);
  if (g.handle().device().is_cuda() && a.on_host() && a.array.device_type() == 1) t.set_is_pass_by_value(true);
  return g.input(g.graph.tensor(t), StrideOrigin::ARRAY);
}

TensorPtr tensor_like(PyGraph& g, nb::handle obj, std::string name) {
  if (nb::isinstance<TensorAttr>(obj)) {
    TensorAttr t = *nb::cast<TensorPtr>(obj);
    t.clear_uid().set_is_virtual(false).set_name(std::move(name));
    return g.input(g.graph.tensor(t));
  }
  return tensor_like_array(g, obj, std::move(name));
}

std::vector<HeurMode> heur_modes(nb::handle obj) {
  if (nb::isinstance<HeurMode>(obj)) return {nb::cast<HeurMode>(obj)};
  return nb::cast<std::vector<HeurMode>>(obj);
}

std::vector<uint8_t> to_bytes(nb::handle data) {
  nb::bytes b = nb::borrow<nb::bytes>(nb::module_::import_("builtins").attr("bytes")(data));
  const auto* p = static_cast<const uint8_t*>(b.data());
  return std::vector<uint8_t>(p, p + b.size());
}

// JSON text from a str, or from bytes as a file holds them (the reader checks that they are UTF-8).
std::string json_text(nb::handle json) {
  if (nb::isinstance<nb::str>(json)) return nb::cast<std::string>(json);
  if (!PyBytes_Check(json.ptr()) && !PyByteArray_Check(json.ptr()))
    fail(ErrorCode::INVALID_VALUE, "from_json: expected a str or bytes; got " + py_type_name(json));
  const std::vector<uint8_t> bytes = to_bytes(json);
  return std::string(bytes.begin(), bytes.end());
}

void build_all(PyGraph& g, nb::handle modes, BuildPlanPolicy policy) {
  const Handle& h = g.handle();
  check(g.validate());
  check(g.graph.build_operation_graph(h));
  check(g.graph.create_execution_plans(heur_modes(modes)));
  check(g.graph.check_support(h));
  nb::gil_scoped_release release;
  check(g.graph.build_plans(h, policy));
}

}  // namespace

void bind_pygraph_build(nb::class_<PyGraph>& c) {
  c.def(nb::new_(&make_graph), nb::arg("name") = "", nb::arg("io_data_type").none() = nb::none(),
        nb::arg("intermediate_data_type").none() = nb::none(), nb::arg("compute_data_type").none() = nb::none(),
        nb::arg("handle").none() = nb::none(), nb::arg("kernel_cache").none() = nb::none(),
        nb::arg("is_dynamic_shape_enabled") = false, nb::arg("sm_version").none() = nb::none(),
        "A graph (cudnn.pygraph). Data types default the graph's tensors and ops; without a handle the\n"
        "graph runs on the best device (CUDA device 0 when usable, else the CPU).\n"
        "\n"
        "Args:\n"
        "    name: the graph's name (logs, explain()).\n"
        "    io_data_type, intermediate_data_type, compute_data_type: a dnngraph.data_type, a NumPy or "
        "PyTorch dtype, or a name (\"float16\"), or None.\n"
        "    handle: a dnngraph.Handle, or None.\n"
        "    kernel_cache: a KernelCache shared with other graphs, or None.\n"
        "    is_dynamic_shape_enabled: kernels take sizes at run time, so graphs that differ only in\n"
        "        batch size share compiled kernels.\n"
        "    sm_version: the GPU architecture the code is for (90: sm_90), as in the frontend; dnngraph\n"
        "        builds for the handle's device, so on CUDA it must match it; unused on the CPU.\n"
        "\n"
        "Raises:\n"
        "    ValueError: a data type names no type dnngraph knows, or sm_version differs from the CUDA\n"
        "        device's.\n"
        "    RuntimeError: `handle` is a handle whose device could not be had.");
  c.def_prop_ro("handle", [](PyGraph& g) { return g.handle(); },
        "The handle the graph runs on (made for the best device on first use).");
  c.def_prop_ro("kernel_cache", &PyGraph::kernel_cache,
        "The KernelCache given to the constructor, or None.");
  c.def("set_io_data_type", [](PyGraph& g, nb::handle t) { g.graph.set_io_data_type(to_data_type(t)); }, nb::arg("data_type"),
        "Default element type of the graph's input and output tensors.\n"
        "\n"
        "Args:\n"
        "    data_type: a dnngraph.data_type, a NumPy or PyTorch dtype, or a name (\"float16\").\n"
        "\n"
        "Raises:\n"
        "    ValueError: `data_type` names no type dnngraph knows.");
  c.def("set_intermediate_data_type", [](PyGraph& g, nb::handle t) { g.graph.set_intermediate_data_type(to_data_type(t)); },
        nb::arg("data_type"),
        "Default element type of virtual (intermediate) tensors.\n"
        "\n"
        "Args:\n"
        "    data_type: a dnngraph.data_type, a NumPy or PyTorch dtype, or a name (\"float16\").\n"
        "\n"
        "Raises:\n"
        "    ValueError: `data_type` names no type dnngraph knows.");
  c.def("set_compute_data_type", [](PyGraph& g, nb::handle t) { g.graph.set_compute_data_type(to_data_type(t)); },
        nb::arg("data_type"),
        "Default compute (accumulation) type of the graph's ops.\n"
        "\n"
        "Args:\n"
        "    data_type: a dnngraph.data_type, a NumPy or PyTorch dtype, or a name (\"float16\").\n"
        "\n"
        "Raises:\n"
        "    ValueError: `data_type` names no type dnngraph knows.");
  c.def("set_dynamic_shape_enabled", [](PyGraph& g, bool e) { g.graph.set_dynamic_shape_enabled(e); }, nb::arg("enabled"),
        "Compile kernels that take sizes at run time (one binary serves every batch size).\n"
        "\n"
        "Args:\n"
        "    enabled: a bool.");
  c.def("set_allow_tf32", [](PyGraph& g, bool a) { g.graph.set_allow_tf32(a); }, nb::arg("allowed"),
        "FLOAT matmuls and convolutions may run on tensor cores as TF32 (off by default).\n"
        "\n"
        "Args:\n"
        "    allowed: a bool.");
  c.def("select_engines", [](PyGraph& g, std::vector<std::string> n) { g.graph.select_engines(std::move(n)); },
        nb::arg("names"),
        "Only these engines are considered by create_execution_plans.\n"
        "\n"
        "Args:\n"
        "    names: engine names (\"ref\", \"cpu_gemm_packed\", ...; `dnngraph info` lists them).\n"
        "\n"
        "Raises:\n"
        "    ValueError: from create_execution_plans, when a name is no engine's (the message lists "
        "them).");
  c.def("deselect_engines", [](PyGraph& g, std::vector<std::string> n) { g.graph.deselect_engines(std::move(n)); },
        nb::arg("names"),
        "These engines are never considered by create_execution_plans.\n"
        "\n"
        "Args:\n"
        "    names: engine names, as for select_engines.\n"
        "\n"
        "Raises:\n"
        "    ValueError: from create_execution_plans, when a name is no engine's.");

  c.def("tensor", &make_tensor, nb::arg("dim"), nb::arg("stride").none() = nb::none(),
        nb::arg("data_type").none() = nb::none(), nb::arg("is_virtual") = false, nb::arg("is_pass_by_value") = false,
        nb::arg("name") = "", nb::arg("uid").none() = nb::none(), nb::arg("value").none() = nb::none(),
        "Declare an input tensor of the graph.\n"
        "\n"
        "Args:\n"
        "    dim: the dims, outermost first.\n"
        "    stride: strides in elements (row-major when None); they pick the layout.\n"
        "    data_type: a dnngraph.data_type, a NumPy or PyTorch dtype, or a name (\"float16\"), or None "
        "(the graph's io type).\n"
        "    is_virtual: an intermediate with no pointer in the variant pack.\n"
        "    is_pass_by_value: a host scalar baked into the plan.\n"
        "    name: the tensor's name (\"\" lets validate name it).\n"
        "    uid: the uid variant packs may key it by (None: assigned by validate).\n"
        "    value: makes a pass-by-value scalar holding this value.\n"
        "\n"
        "Returns:\n"
        "    The dnngraph.tensor.\n"
        "\n"
        "Raises:\n"
        "    ValueError: the data type is unknown, or the dims have no row-major strides within int64.");
  c.def("tensor_like", &tensor_like, nb::arg("input"), nb::arg("name") = "",
        "A tensor shaped like an array (dims, strides in elements, dtype, through DLPack or the\n"
        "buffer protocol; ml_dtypes bf16/fp8 NumPy arrays too) or like another tensor (its uid\n"
        "and virtual flag dropped). On a CUDA graph a host array becomes a pass-by-value scalar.\n"
        "\n"
        "Args:\n"
        "    input: an array (NumPy, PyTorch, CuPy, JAX) or a dnngraph.tensor.\n"
        "    name: the new tensor's name.\n"
        "\n"
        "Raises:\n"
        "    ValueError: `input` is not an array, its dtype has no dnngraph type, or it has negative "
        "strides.");
  c.def("tensor_scalar", [](PyGraph& g, double v, nb::handle t) {
          TensorPtr s = g.graph.tensor(v);
          if (!t.is_none()) s->set_data_type(to_data_type(t));
          return g.input(s);
        }, nb::arg("value"), nb::arg("data_type").none() = nb::none(),
        "A pass-by-value scalar tensor holding `value`, baked into the plan.\n"
        "\n"
        "Args:\n"
        "    value: a float.\n"
        "    data_type: a dnngraph.data_type, a NumPy or PyTorch dtype, or a name (\"float16\") (FLOAT "
        "when None).\n"
        "\n"
        "Raises:\n"
        "    ValueError: `data_type` names no type dnngraph knows.");

  c.def("validate", [](PyGraph& g) { check(g.validate()); },
        "Check the graph and infer every shape, stride and type not given (step 1 of 5).\n"
        "\n"
        "Raises:\n"
        "    ValueError: the graph is invalid; the message names the node, the tensor and the rule.");
  c.def("build_operation_graph", [](PyGraph& g, OptHandle h) { check(g.graph.build_operation_graph(g.handle(h))); },
        nb::arg("handle").none() = nb::none(),
        "Lower the validated graph to the IR and partition it for the engines (step 2 of 5).\n"
        "\n"
        "Args:\n"
        "    handle: the handle to use for this call (None: the graph's own).\n"
        "\n"
        "Raises:\n"
        "    ValueError: the graph is invalid (validate's errors).\n"
        "    RuntimeError: called before validate, or the handle's device could not be had.");
  c.def("create_execution_plans", [](PyGraph& g, nb::handle modes) { check(g.graph.create_execution_plans(heur_modes(modes))); },
        nb::arg("heur_modes"),
        "List, per partition, the engines that can run it, ordered by the heuristics (step 3 of 5).\n"
        "\n"
        "Args:\n"
        "    heur_modes: a dnngraph.heur_mode or a list of them (A: the cost model; B: also the\n"
        "        tuning DB; FALLBACK: every engine that supports the graph, ref last).\n"
        "\n"
        "Raises:\n"
        "    ValueError: select_engines/deselect_engines named an engine that does not exist.\n"
        "    RuntimeError: called before build_operation_graph.");
  c.def("check_support", [](PyGraph& g, OptHandle h) { check(g.graph.check_support(g.handle(h))); },
        nb::arg("handle").none() = nb::none(),
        "Check that every partition has at least one engine (step 4 of 5).\n"
        "\n"
        "Args:\n"
        "    handle: the handle to use for this call (None: the graph's own).\n"
        "\n"
        "Raises:\n"
        "    GraphNotSupportedError: no engine supports a partition; the message lists every engine's "
        "reason.\n"
        "    RuntimeError: called before create_execution_plans.");
  c.def("build_plans", [](PyGraph& g, BuildPlanPolicy p, OptHandle h) {
          const Handle& hd = g.handle(h);
          nb::gil_scoped_release release;
          check(g.graph.build_plans(hd, p));
        }, nb::arg("policy") = BuildPlanPolicy::HEURISTICS_CHOICE, nb::arg("handle").none() = nb::none(),
        "Build the plans (compile or load kernels) (step 5 of 5). Releases the GIL.\n"
        "\n"
        "Args:\n"
        "    policy: build_plan_policy.HEURISTICS_CHOICE (the first plan that builds, per partition) or "
        "ALL.\n"
        "    handle: the handle to use for this call (None: the graph's own).\n"
        "\n"
        "Raises:\n"
        "    GraphNotSupportedError: no candidate of a partition could be built (the reasons are listed).\n"
        "    RuntimeError: called before check_support.");
  c.def("build", &build_all, nb::arg("heur_modes") = std::vector<HeurMode>{HeurMode::A, HeurMode::FALLBACK},
        nb::arg("policy") = BuildPlanPolicy::HEURISTICS_CHOICE,
        "validate, build_operation_graph, create_execution_plans, check_support and build_plans in one "
        "call.\n"
        "\n"
        "Args:\n"
        "    heur_modes: a dnngraph.heur_mode or a list of them.\n"
        "    policy: which plans to build (build_plan_policy).\n"
        "\n"
        "Raises:\n"
        "    ValueError, GraphNotSupportedError, RuntimeError: as the five steps do.");

  c.def("query_tensor_attributes_of_uid", [](const PyGraph& g, int64_t uid) {
    TensorAttr copy;
    check(g.graph.query_tensor_attributes_of_uid(uid, copy));  // the error names the uid
    return tensor_with_uid(impl_of(g.graph), uid);
  }, nb::arg("uid"),
        "The graph's tensor with this uid (the object itself, so it may key a variant pack; the frontend\n"
        "returns a copy of its attributes).\n"
        "\n"
        "Args:\n"
        "    uid: set by set_uid or assigned by validate.\n"
        "\n"
        "Raises:\n"
        "    ValueError: no tensor of this graph has the uid.");
  c.def("get_workspace_size", [](const PyGraph& g) {
    int64_t bytes = 0;
    check(g.graph.get_workspace_size(bytes));
    return bytes;
  },
        "The workspace in bytes that execute needs with the default plans.\n"
        "\n"
        "Raises:\n"
        "    RuntimeError: the plans are not built yet.");
  c.def("get_execution_plan_count", [](const PyGraph& g) { return g.graph.get_execution_plan_count(); },
        "How many candidate plans create_execution_plans listed (0 before it).");
  c.def("get_plan_name_at_index", [](const PyGraph& g, int64_t i) {
    std::string name;
    check(g.graph.get_plan_name_at_index(i, name));
    return name;
  }, nb::arg("index"),
        "The name of candidate plan `index` (its engine and knobs).\n"
        "\n"
        "Args:\n"
        "    index: 0 .. get_execution_plan_count() - 1.\n"
        "\n"
        "Raises:\n"
        "    ValueError: `index` is out of range.\n"
        "    RuntimeError: called before create_execution_plans.");
  c.def("get_workspace_size_plan_at_index", [](const PyGraph& g, int64_t i) {
    int64_t bytes = 0;
    check(g.graph.get_workspace_size_plan_at_index(i, bytes));
    return bytes;
  }, nb::arg("index"),
        "The workspace in bytes that plan `index` needs.\n"
        "\n"
        "Args:\n"
        "    index: 0 .. get_execution_plan_count() - 1.\n"
        "\n"
        "Raises:\n"
        "    ValueError: `index` is out of range.\n"
        "    RuntimeError: the plan is not built.");
  c.def("build_plan_at_index", [](PyGraph& g, int64_t i, OptHandle h) {
    const Handle& hd = g.handle(h);
    nb::gil_scoped_release release;
    check(g.graph.build_plan_at_index(hd, i));
  }, nb::arg("index"), nb::arg("handle").none() = nb::none(),
        "Build candidate plan `index` only (for execute_plan_at_index). Releases the GIL.\n"
        "\n"
        "Args:\n"
        "    index: 0 .. get_execution_plan_count() - 1.\n"
        "    handle: the handle to use for this call (None: the graph's own).\n"
        "\n"
        "Raises:\n"
        "    ValueError: `index` is out of range.\n"
        "    GraphNotSupportedError: the plan's engine cannot build it.\n"
        "    RuntimeError: called before check_support.");
  c.def("explain", [](const PyGraph& g) { return g.graph.explain(); },
        "The partitions, every engine's verdict on each (with reasons), and the plan list, as text.");

  c.def("serialize", [](const PyGraph& g) {
    std::vector<uint8_t> bytes;
    check(g.graph.serialize(bytes));
    return nb::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  },
        "The built plans as bytes (kernels included), for deserialize without recompiling.\n"
        "\n"
        "Raises:\n"
        "    RuntimeError: the plans are not built.");
  c.def("deserialize", [](PyGraph& g, const Handle& h, nb::handle data) {
    auto bytes = to_bytes(data);
    nb::gil_scoped_release release;
    check(g.graph.deserialize(h, bytes));
  }, nb::arg("handle"), nb::arg("data"),
        "Load plans made by serialize, on `handle`.\n"
        "\n"
        "Args:\n"
        "    handle: the handle to run on; its device must match the one the plans were made for.\n"
        "    data: bytes (or any bytes-like object) from serialize().\n"
        "\n"
        "Raises:\n"
        "    RuntimeError: the bytes are damaged, truncated, from another version or for another device.");
  c.def("deserialize", [](PyGraph& g, nb::handle data) {
    auto bytes = to_bytes(data);
    const Handle& h = g.handle();
    nb::gil_scoped_release release;
    check(g.graph.deserialize(h, bytes));
  }, nb::arg("data"),
        "Load plans made by serialize, on the graph's own handle.\n"
        "\n"
        "Args:\n"
        "    data: bytes (or any bytes-like object) from serialize().\n"
        "\n"
        "Raises:\n"
        "    RuntimeError: the bytes are damaged, truncated, from another version or for another device.");
  c.def("to_json", [](const PyGraph& g) { return g.graph.to_json(); },
        "The graph in docs/graph-json.md's format, as a str (pygraph.from_json reads it back).");
  c.def_static("from_json", [](nb::handle json, OptHandle h) {
    auto g = std::make_unique<PyGraph>("", DataType::NOT_SET, DataType::NOT_SET, DataType::NOT_SET, std::move(h),
                                       nullptr, false);
    check(Graph::from_json(json_text(json), g->graph));
    return g;
  }, nb::arg("json"), nb::arg("handle").none() = nb::none(),
        "A graph read from docs/graph-json.md's format.\n"
        "\n"
        "Args:\n"
        "    json: a str, or the bytes of a file (UTF-8).\n"
        "    handle: the handle to run on (None: the best device).\n"
        "\n"
        "Raises:\n"
        "    ValueError: the text is not valid JSON or not a valid graph; the message names the field.");
  c.def("__repr__", [](const PyGraph& g) { return g.graph.to_json(); });
}

void init_pygraph(nb::module_& m) {
  nb::class_<PyGraph> c(m, "pygraph", "An operation graph: build it, plan it, run it (cudnn.pygraph's API).");
  bind_pygraph_build(c);
  bind_pygraph_execute(c);
  bind_pygraph_ops(c);
  bind_pygraph_pointwise(c);
  bind_pygraph_engines(c);
}

}  // namespace dnngraph::python
