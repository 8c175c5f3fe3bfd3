"""dnngraph.Graph: the cuDNN frontend's ``cudnn.Graph`` class.

    x = np.random.rand(8, 64, 56, 56).astype(np.float32)
    w = np.random.rand(32, 64, 3, 3).astype(np.float32)
    with dnngraph.Graph(io_data_type=dnngraph.data_type.FLOAT, inputs=["conv::image", "conv::weight"],
                        outputs=["relu::OUT"]) as graph:
        y = graph.conv_fprop(image=x, weight=w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv")
        graph.relu(y, name="relu").set_output(True)
    out = graph(x, w)                       # a new array; or graph(x, w, out=y_array)
    res = graph({"conv::image": x, "conv::weight": w})  # by name: a dict with the outputs added

Ops take arrays (anything DLPack or the buffer protocol takes, ml_dtypes' bf16/fp8 NumPy arrays too)
where tensors go: each array becomes a tensor like it (dims, strides, dtype), once per array.
An op's inputs are named "<node>::<keyword>" ("conv::image"; positional ones "<node>::<index>") and
its outputs by their tensor's name ("conv::Y", "relu::OUT", or the name given with set_name); any of
them can also be named by the tensor's own name, uid, the tensor object or the array it came from.
The graph builds on leaving the ``with`` block (validate, operation graph, plans by ``heuristics``,
support check, plans) and manages its workspace unless ``workspace=`` is passed to a call.
"""
from __future__ import annotations

import collections
from types import TracebackType
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

from . import _dnngraph
from ._dnngraph import Handle, data_type, heur_mode, pygraph, tensor

# Calls the class makes itself (the build steps) or replaces (execute: call the graph instead).
_BLOCKED = {
    "build", "build_operation_graph", "build_plan_at_index", "build_plans", "check_support", "create_execution_plan",
    "create_execution_plans", "execute", "execute_plan_at_index", "validate", "autotune", "populate_cuda_graph",
    "update_cuda_graph", "deselect_engines", "select_engines",
}
# Queries that take no tensors: passed to the pygraph as they are.
_PASS_THROUGH = {
    "get_workspace_size", "get_workspace_size_plan_at_index", "serialize", "deserialize", "get_execution_plan_count",
    "get_plan_name_at_index", "get_behavior_notes", "get_behavior_notes_for_plan_at_index", "explain", "to_json",
    "get_engine_count", "get_knobs_for_engine", "handle", "kernel_cache", "set_allow_tf32", "key",
}


def _is_array(obj: object) -> bool:
    return not isinstance(obj, tensor) and (hasattr(obj, "__dlpack__") or hasattr(obj, "__array_interface__"))


def _family(arrays: Iterable[object]) -> str:
    """'torch', 'cupy' or 'numpy': the kind of array outputs are made as, from the inputs given."""
    for a in arrays:
        mod = type(a).__module__.split(".")[0]
        if mod in ("torch", "cupy"):
            return mod
    return "numpy"


def _numpy_dtype(t: data_type) -> Any:
    import numpy as np
    names = {data_type.FLOAT: np.float32, data_type.HALF: np.float16, data_type.DOUBLE: np.float64,
             data_type.INT8: np.int8, data_type.UINT8: np.uint8, data_type.INT32: np.int32,
             data_type.INT64: np.int64, data_type.BOOLEAN: np.bool_}
    if t in names:
        return names[t]
    ml = {data_type.BFLOAT16: ("bfloat16", np.uint16), data_type.FP8_E4M3: ("float8_e4m3fn", np.uint8),
          data_type.FP8_E5M2: ("float8_e5m2", np.uint8)}
    if t in ml:
        try:
            import ml_dtypes
            return getattr(ml_dtypes, ml[t][0])
        except ImportError:  # the same bits in an unsigned array of the width (docs/python.md)
            return ml[t][1]
    raise ValueError(f"Graph: cannot allocate an array of {t}")


def _span(dims: Sequence[int], strides: Sequence[int]) -> int:
    return 1 + sum((d - 1) * s for d, s in zip(dims, strides)) if all(d > 0 for d in dims) else 0


def _allocate(t: tensor, family: str, device: str, what: str) -> Any:
    """An array with tensor t's dims, strides and type, of `family`, on `device` ("cpu", "cuda:N")."""
    dims, strides, dtype = t.get_dim(), t.get_stride(), t.get_data_type()
    if family == "torch" or (device != "cpu" and family == "numpy"):
        try:
            import torch
        except ImportError:
            raise RuntimeError(f"Graph: allocating {what} on {device} needs PyTorch or CuPy; pass out= arrays") from None
        return torch.empty_strided(dims, strides, dtype=getattr(torch, _torch_name(dtype)), device=device)
    if family == "cupy":
        import cupy
        dt = cupy.dtype(_numpy_dtype(dtype))
        with cupy.cuda.Device(int(device.split(":")[1]) if ":" in device else 0):
            base = cupy.empty(_span(dims, strides), dt)
        return cupy.lib.stride_tricks.as_strided(base, dims, [s * dt.itemsize for s in strides])
    import numpy as np
    dt = np.dtype(_numpy_dtype(dtype))
    base = np.empty(_span(dims, strides), dt)
    return np.lib.stride_tricks.as_strided(base, dims, [s * dt.itemsize for s in strides])


def _torch_name(t: data_type) -> str:
    return {data_type.FLOAT: "float32", data_type.HALF: "float16", data_type.BFLOAT16: "bfloat16",
            data_type.DOUBLE: "float64", data_type.INT8: "int8", data_type.UINT8: "uint8", data_type.INT32: "int32",
            data_type.INT64: "int64", data_type.BOOLEAN: "bool", data_type.FP8_E4M3: "float8_e4m3fn",
            data_type.FP8_E5M2: "float8_e5m2"}[t]


class Graph:
    """A graph built in a ``with`` block from arrays and tensors, then called like a function."""

    def __init__(self, *, handle: Handle | str | None = None, inputs: Sequence[object] | None = None,
                 outputs: Sequence[object] | None = None, heuristics: Sequence[heur_mode] | None = None,
                 workspace_alloc: bool = True, name: str = "graph", **kwargs: Any) -> None:
        for what, v in (("inputs", inputs), ("outputs", outputs), ("heuristics", heuristics)):
            if v is not None and not isinstance(v, (list, tuple)):
                raise ValueError(f"Graph: {what} must be a list or tuple; got {type(v).__name__}")
        # "auto" (the frontend's default): the best device. Another str reaches pygraph, whose TypeError names it.
        self._handle: Any = None if isinstance(handle, str) and handle == "auto" else handle
        self._kwargs: dict[str, Any] = dict(kwargs, name=name)
        self._graph: _dnngraph.pygraph | None = None
        # id(array) -> (array, tensor): the array is kept so its id is not reused
        self._arrays: dict[int, tuple[Any, tensor]] = {}
        self._tensor_in: collections.OrderedDict[str, tensor] = collections.OrderedDict()   # "<node>::<arg>" -> tensor
        self._tensor_out: collections.OrderedDict[str, tensor] = collections.OrderedDict()  # "<node>::<slot>" -> tensor
        self._node_count: dict[str, int] = {}
        self._node_names: set[str] = set()
        self._inputs: list[object] = list(inputs or [])
        self._outputs: list[object] = list(outputs or [])
        # Set by set_io_tuples when the graph is built.
        self._input_tuple: list[tuple[str, tensor]] = []
        self._output_tuple: list[tuple[str, tensor]] = []
        self._heuristics = list(heuristics or [heur_mode.A, heur_mode.FALLBACK])
        self._manage_workspace = workspace_alloc
        self._workspace: dict[tuple[str, str], Any] = {}  # (family, device) -> array
        self._built = False

    # ---- building
    def __enter__(self) -> Graph:
        if self._graph is not None:
            raise RuntimeError("Graph: already built (a Graph is entered once)")
        self._graph = pygraph(handle=self._handle, **self._kwargs)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        if exc_type is not None:
            self._graph = None
            return False
        g = self._pg
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans(self._heuristics)
        g.check_support()
        g.build_plans()
        self._built = True
        self.set_io_tuples(self._inputs, self._outputs)
        return False

    @property
    def pygraph(self) -> _dnngraph.pygraph | None:
        """The dnngraph.pygraph underneath (None outside the `with` block that builds it)."""
        return self._graph

    @property
    def _pg(self) -> _dnngraph.pygraph:
        """The pygraph, for the calls that run inside the `with` block or after it."""
        if self._graph is None:
            raise RuntimeError("Graph: this needs the graph: call it inside `with Graph(...) as graph:`")
        return self._graph

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if self.__dict__.get("_graph") is None:
            raise RuntimeError(f"Graph: {name}() needs the graph: call it inside `with Graph(...) as graph:`")
        attr = getattr(self._graph, name)
        if name in _PASS_THROUGH or not callable(attr):
            return attr
        if name in _BLOCKED:
            raise RuntimeError(f"Graph: {name}() is not called on a Graph (it builds on leaving `with`, and runs "
                               f"when called); use graph.pygraph for the step-by-step API")
        if self._built:
            raise RuntimeError(f"Graph: {name}() after the graph was built (on leaving `with`)")
        if name in ("tensor", "tensor_like", "tensor_scalar"):
            return self._declaring(attr)
        return self._node(name, attr)

    def _declaring(self, method: Callable[..., tensor]) -> Callable[..., tensor]:
        def call(*args: Any, **kwargs: Any) -> tensor:
            t = method(*args, **kwargs)
            source = args[0] if args else kwargs.get("input")
            if _is_array(source):  # later uses of the array mean this tensor
                self._arrays[id(source)] = (source, t)
            return t
        return call

    def _as_tensor(self, array: Any, name: str) -> tensor:
        """The tensor of `array` (made on its first use, named by that use), or array itself."""
        held = self._arrays.get(id(array))
        if held is None:
            if getattr(array, "requires_grad", False):
                array = array.detach()
            held = self._arrays[id(array)] = (array, self._pg.tensor_like(array, name=name))
        return held[1]

    def _convert(self, obj: object, label: str) -> object:
        if isinstance(obj, tuple):  # sdpa's dropout: (probability, seed, offset)
            return tuple(self._convert(o, f"{label}::{j}") for j, o in enumerate(obj))
        if _is_array(obj):
            obj = self._as_tensor(obj, label)
        if isinstance(obj, tensor):
            self._tensor_in[label] = obj
        return obj

    def _node(self, op: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            n = self._node_count.get(op, 0)
            self._node_count[op] = n + 1
            node = kwargs.get("name") or f"{op}.{n}"
            kwargs["name"] = node
            if node in self._node_names:
                raise ValueError(f"Graph: node name '{node}' is already used")
            self._node_names.add(node)
            converted = [self._convert(a, f"{node}::{i}") for i, a in enumerate(args)]
            kwargs = {k: self._convert(v, f"{node}::{k}") if k != "name" else v for k, v in kwargs.items()}
            result = method(*converted, **kwargs)
            for i, t in enumerate(result if isinstance(result, (list, tuple)) else [result]):
                if isinstance(t, tensor):
                    self._tensor_out[t.get_name() or f"{node}::{i}"] = t
            return result
        return call

    # ---- naming inputs and outputs
    def _names(self, table: Iterable[str]) -> str:
        return ", ".join(f"'{k}'" for k in table) or "none"

    def _find(self, key: object, table: Mapping[str, tensor]) -> str | None:
        """The name in `table` that key (a name, a tensor's own name, uid, tensor or array) means, or None."""
        if isinstance(key, str):
            if key in table:
                return key
            return next((k for k, t in table.items() if t.get_name() == key), None)
        if isinstance(key, int):
            return next((k for k, t in table.items() if t.get_uid() == key), None)
        if isinstance(key, tensor):
            return next((k for k, t in table.items() if t is key), None)
        if _is_array(key) and id(key) in self._arrays:
            want = self._arrays[id(key)][1]
            return next((k for k, t in table.items() if t is want), None)
        return None

    def _graph_inputs(self) -> collections.OrderedDict[str, tensor]:
        """Non-virtual tensors read by nodes and written by none, each once, in first-use order."""
        seen: set[int] = set()
        out: collections.OrderedDict[str, tensor] = collections.OrderedDict()
        written = {id(t) for t in self._tensor_out.values()}
        for k, t in self._tensor_in.items():
            if not t.get_is_virtual() and id(t) not in written and id(t) not in seen:
                seen.add(id(t))
                out[k] = t
        return out

    def set_io_tuples(self, inputs: Sequence[object], outputs: Sequence[object]) -> None:
        """The order of positional arguments and of results. Without them (empty lists): the graph's
        inputs in the order nodes first read them, and its outputs in the order nodes made them."""
        if not isinstance(inputs, (list, tuple)) or not isinstance(outputs, (list, tuple)):
            raise ValueError("Graph: set_io_tuples takes two lists (inputs, outputs)")
        if not self._built:
            self._inputs, self._outputs = list(inputs), list(outputs)
            return
        graph_inputs = self._graph_inputs()
        produced = collections.OrderedDict((k, t) for k, t in self._tensor_out.items() if t.get_is_output())
        ins = self._resolve(inputs or list(graph_inputs), graph_inputs, "input")
        outs = self._resolve(outputs or list(produced), produced, "output")
        chosen = {id(t) for _, t in ins} | {id(t) for _, t in outs}
        for k, t in graph_inputs.items():
            if id(t) not in chosen:
                raise ValueError(f"Graph: input '{k}' is read by the graph but is not in inputs "
                                 f"({self._names(dict(ins))})")
        self._input_tuple, self._output_tuple = ins, outs

    def _resolve(self, keys: Sequence[object], table: Mapping[str, tensor], what: str) -> list[tuple[str, tensor]]:
        out: list[tuple[str, tensor]] = []
        seen: set[int] = set()
        for i, key in enumerate(keys):
            found = self._find(key, table)
            if found is None:
                shown = key if isinstance(key, (str, int)) else type(key).__name__
                raise ValueError(f"Graph: {what} {i} ({shown!r}) is not an {what} of this graph "
                                 f"(its {what}s: {self._names(table)})")
            if id(table[found]) in seen:
                raise ValueError(f"Graph: {what} {i} ('{found}') is given twice")
            seen.add(id(table[found]))
            out.append((found, table[found]))
        return out

    # ---- running
    def __call__(self, *args: Any, handle: Handle | None = None, workspace: Any = None, out: Any = None) -> Any:
        """Run the built graph: positional arrays in `inputs` order give one output array (or a
        tuple of them, in `outputs` order); one dict fills inputs and outputs by name and is returned
        with the outputs it lacked added. out: arrays to write the outputs into; workspace: an array
        of at least get_workspace_size() bytes (None: the graph's own)."""
        if not self._built:
            raise RuntimeError("Graph: call the graph after it is built (on leaving `with`)")
        h = handle if handle is not None else self._pg.handle
        if len(args) == 1 and isinstance(args[0], dict):
            return self._call_dict(args[0], h, workspace)
        if len(args) != len(self._input_tuple):
            names = ", ".join(f"'{k}'" for k, _ in self._input_tuple)
            raise ValueError(f"Graph: takes {len(self._input_tuple)} inputs ({names}); got {len(args)}")
        for (k, _), a in zip(self._input_tuple, args):
            if not _is_array(a):
                raise ValueError(f"Graph: input '{k}' must be an array; got {type(a).__name__}")
        family = _family(args)
        outs = self._outputs_from(out, family, h)
        pack = {t: a for (_, t), a in zip(self._input_tuple, args)}
        pack.update({t: a for (_, t), a in zip(self._output_tuple, outs)})
        self._pg.execute(pack, self._workspace_for(workspace, family, h), handle=h)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _outputs_from(self, out: Any, family: str, h: Handle) -> list[Any]:
        if out is None:
            return [_allocate(t, family, h.device, f"output '{k}'") for k, t in self._output_tuple]
        outs = [out] if _is_array(out) else list(out)
        if len(outs) != len(self._output_tuple):
            names = ", ".join(f"'{k}'" for k, _ in self._output_tuple)
            raise ValueError(f"Graph: out= takes {len(self._output_tuple)} arrays ({names}); got {len(outs)}")
        return outs

    def _workspace_for(self, workspace: Any, family: str, h: Handle) -> Any:
        if workspace is not None:
            return workspace
        size = self._pg.get_workspace_size()
        if size == 0:
            return None
        if not self._manage_workspace:
            raise RuntimeError(f"Graph: built with workspace_alloc=False: pass workspace= ({size} bytes)")
        key = (family, h.device)
        if key not in self._workspace:
            self._workspace[key] = self._bytes(size, family, h.device)
        return self._workspace[key]

    @staticmethod
    def _bytes(size: int, family: str, device: str) -> Any:
        if family == "torch" or (device != "cpu" and family == "numpy"):
            import torch
            return torch.empty(size, dtype=torch.uint8, device=device)
        if family == "cupy":
            import cupy
            return cupy.empty(size, cupy.uint8)
        import numpy as np
        return np.empty(size, np.uint8)

    def _call_dict(self, given: dict[Any, Any], h: Handle, workspace: Any) -> dict[Any, Any]:
        """Fills every non-virtual input and output from `given` (by any name), allocating the
        outputs it lacks; returns `given` with those added under their names."""
        tables = (("input", self._graph_inputs()),
                  ("output", collections.OrderedDict((k, t) for k, t in self._tensor_out.items() if t.get_is_output())))
        for key in given:
            if all(self._find(key, table) is None for _, table in tables):
                shown = key if isinstance(key, (str, int)) else type(key).__name__
                raise ValueError(f"Graph: {shown!r} names no input or output of this graph (inputs: "
                                 f"{self._names(tables[0][1])}; outputs: {self._names(tables[1][1])})")
        family = _family(v for v in given.values() if _is_array(v))
        pack: dict[tensor, Any] = {}
        missing: list[str] = []
        for what, table in tables:
            for k, t in table.items():
                value = next((v for key, v in given.items() if self._find(key, table) == k), None)
                if value is None and what == "output":
                    value = given[k] = _allocate(t, family, h.device, f"output '{k}'")
                if value is None:
                    missing.append(k)
                    continue
                pack[t] = value
        if missing:
            raise ValueError(f"Graph: no array for input(s) {', '.join(repr(m) for m in missing)}")
        self._pg.execute(pack, self._workspace_for(workspace, family, h), handle=h)
        return given
