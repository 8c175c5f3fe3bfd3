"""A built pygraph as a PyTorch custom op (torch.library.custom_op): its inputs and outputs become
the op's Tensor arguments and results, its fake implementation gives the outputs' dims, strides and
dtypes from the graph, so the op runs in eager mode, inside torch.compile without a graph break,
and under CUDA graph capture (it allocates its outputs from torch's allocator and runs on torch's
current stream; the workspace is allocated once, here)."""
from __future__ import annotations

import atexit
import re
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence

import torch

import dnngraph

_DTYPES = {
    dnngraph.data_type.FLOAT: torch.float32, dnngraph.data_type.HALF: torch.float16,
    dnngraph.data_type.BFLOAT16: torch.bfloat16, dnngraph.data_type.DOUBLE: torch.float64,
    dnngraph.data_type.INT8: torch.int8, dnngraph.data_type.INT32: torch.int32,
    dnngraph.data_type.INT64: torch.int64, dnngraph.data_type.BOOLEAN: torch.bool,
}


def _torch_dtype(t: dnngraph.tensor) -> torch.dtype:
    dt = t.get_data_type()
    if dt not in _DTYPES:
        raise ValueError(f"dnngraph.torch.op: output '{t.get_name()}' is {dt}, which torch cannot allocate here")
    return _DTYPES[dt]


def _device_of(handle: dnngraph.Handle) -> torch.device:
    return torch.device(handle.device)  # "cpu" or "cuda:N"


@dataclass
class _OpState:
    """What a registered op runs; released at exit (torch's op registry outlives this module)."""

    graph: Optional[dnngraph.pygraph]
    handle: Optional[dnngraph.Handle]
    tensors: List[dnngraph.tensor]


_OPS: List[_OpState] = []


@atexit.register
def _release_ops() -> None:
    for state in _OPS:
        state.graph, state.handle, state.tensors = None, None, []


def _argument_names(inputs: Sequence[dnngraph.tensor]) -> List[str]:
    """Schema argument names from the tensors' names (so torch's errors name them), made unique."""
    names: List[str] = []
    for i, t in enumerate(inputs):
        base = re.sub(r"\W", "_", t.get_name()) or f"in{i}"
        base = base if base[0].isalpha() else f"in_{base}"
        names.append(base if base not in names else f"{base}_{i}")
    return names


def op(graph: dnngraph.pygraph, inputs: Sequence[dnngraph.tensor], outputs: Sequence[dnngraph.tensor],
       name: str = "dnngraph::graph", workspace: Optional[torch.Tensor] = None) -> Any:
    """Registers a built pygraph as the custom op `name` and returns it (call it with tensors).

    Args:
        graph: a pygraph whose plans are built (build() or build_plans()).
        inputs: the graph's input tensors, in the order the op takes them.
        outputs: the graph's output tensors, in the order the op returns them.
        name: "namespace::opname", unique in the process.
        workspace: a uint8 torch tensor of at least get_workspace_size() bytes on the graph's device,
            or None to allocate one now.

    Returns:
        The op (a torch.library CustomOpDef): op(*tensors) returns one tensor or a tuple.

    Raises:
        ValueError: `name` is not "namespace::opname", a tensor listed is virtual or both an input
            and an output, there is no output, or an output's dtype has no torch dtype.
        RuntimeError: the graph's plans are not built.
    """
    if not re.fullmatch(r"[A-Za-z_]\w*::[A-Za-z_]\w*", name):
        raise ValueError(f"dnngraph.torch.op: name '{name}' is not 'namespace::opname'")
    for role, tensors in (("input", inputs), ("output", outputs)):
        for t in tensors:
            if t.get_is_virtual():
                raise ValueError(f"dnngraph.torch.op: {role} '{t.get_name()}' is a virtual tensor of the graph "
                                 "(an intermediate; set_output(True) makes it an output)")
    shared = {t.get_uid() for t in inputs} & {t.get_uid() for t in outputs}
    if shared:
        raise ValueError(f"dnngraph.torch.op: tensor uid(s) {sorted(shared)} are listed as inputs and as outputs")
    if not outputs:
        raise ValueError("dnngraph.torch.op: the op needs at least one output")
    size = graph.get_workspace_size()  # RuntimeError when the plans are not built
    device = _device_of(graph.handle)
    ws = workspace if workspace is not None else torch.empty(max(size, 1), dtype=torch.uint8, device=device)
    layouts = [(list(t.get_dim()), list(t.get_stride()), _torch_dtype(t)) for t in outputs]
    arg_names = _argument_names(inputs)
    results = "Tensor" if len(outputs) == 1 else "(" + ", ".join(["Tensor"] * len(outputs)) + ")"
    schema = "(" + ", ".join(f"Tensor {n}" for n in arg_names) + ") -> " + results

    def _allocate(like: torch.Tensor) -> List[torch.Tensor]:
        return [torch.empty_strided(d, s, dtype=dt, device=like.device) for d, s, dt in layouts]

    state = _OpState(graph, graph.handle, list(inputs) + list(outputs))
    _OPS.append(state)

    def run(*args: torch.Tensor) -> Any:
        if state.graph is None or state.handle is None:
            raise RuntimeError(f"{name}: the interpreter is shutting down; its graph is released")
        outs = _allocate(args[0] if args else ws)
        pack = dict(zip(state.tensors, list(args) + outs))
        if state.handle.is_cuda:
            state.handle.set_stream(torch.cuda.current_stream(device).cuda_stream)
        state.graph.execute(pack, ws, handle=state.handle)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def fake(*args: torch.Tensor) -> Any:
        outs = _allocate(args[0] if args else torch.empty(0, device="meta"))
        return outs[0] if len(outs) == 1 else tuple(outs)

    custom = torch.library.custom_op(name, run, mutates_args=(), schema=schema)
    custom.register_fake(fake)
    return custom
