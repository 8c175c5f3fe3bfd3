"""A partition at run time: the module that replaces one fused FX submodule. It lowers and builds
one dnngraph graph per input signature (shapes, strides, dtypes, device) on its first call with
that signature, then runs it on torch's current stream; a partition dnngraph refuses (at lowering,
build or execution) runs its FX submodule in PyTorch instead, with the reason logged and kept."""
from __future__ import annotations

import atexit
import itertools
import logging
import re
import weakref
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
import torch.fx

import dnngraph
from ._leaves import Leaves, Unsupported
from ._lower import Lowering, OutputSpec

log = logging.getLogger("dnngraph.torch")

Signature = Tuple[Tuple[Tuple[int, ...], Tuple[int, ...], torch.dtype, torch.device], ...]
_HANDLES: Dict[str, dnngraph.Handle] = {}
_PARTITIONS: "weakref.WeakSet[LoweredPartition]" = weakref.WeakSet()
_SERIAL = itertools.count()  # makes partition names unique in the process (reports, profiles)
BUILD_ERRORS = (Unsupported, ValueError, RuntimeError, TypeError)


def handle_for(device: torch.device) -> dnngraph.Handle:
    """One dnngraph handle per torch device (created on first use; kept for the process)."""
    key = str(device if device.type == "cpu" or device.index is not None
              else torch.device("cuda", torch.cuda.current_device()))
    if key not in _HANDLES:
        _HANDLES[key] = dnngraph.create_handle("cpu" if device.type == "cpu" else key)
    return _HANDLES[key]


def signature_of(inputs: Sequence[torch.Tensor]) -> Signature:
    """What a built graph is specific to: each input's shape, strides, dtype and device."""
    return tuple((tuple(t.shape), tuple(t.stride()), t.dtype, t.device) for t in inputs)


@dataclass
class Built:
    """One input signature's dnngraph graph, or the reason it runs in PyTorch (`graph` None)."""

    graph: Optional[dnngraph.pygraph] = None
    leaves: Optional[Leaves] = None
    bindings: List[Tuple[dnngraph.tensor, int]] = field(default_factory=list)
    outputs: List[OutputSpec] = field(default_factory=list)
    out_layouts: List[Tuple[List[int], List[int]]] = field(default_factory=list)
    workspace: Optional[torch.Tensor] = None
    handle: Optional[dnngraph.Handle] = None
    device: Optional[torch.device] = None
    fallback_reason: str = ""
    calls: int = 0
    engines: List[str] = field(default_factory=list)
    tuned: bool = True


def chosen_engines(graph: dnngraph.pygraph) -> List[str]:
    """The chosen engine of each of the graph's partitions, from explain() ('partition K (...)'
    headers, each followed by its plans, the chosen one marked '(chosen)')."""
    engines = []
    for line in graph.explain().splitlines():
        m = re.match(r"\s*plan \d+: (\S+).*\(chosen\)", line)
        if m:
            engines.append(m.group(1))
    return engines


class LoweredPartition(torch.nn.Module):
    """Runs one FX partition as a dnngraph graph (per input signature), else in PyTorch."""

    def __init__(self, submodule: torch.fx.GraphModule, name: str, autotune: bool = False) -> None:
        super().__init__()
        self.autotune = autotune
        self.submodule, self.partition_name = submodule, f"{name}.{next(_SERIAL)}"
        self.builds: Dict[Signature, Built] = {}
        self.node_names = [n.name for n in submodule.graph.nodes if n.op == "call_function"]
        _PARTITIONS.add(self)

    def forward(self, *inputs: torch.Tensor) -> Any:
        """Runs the partition on `inputs` (dnngraph, or PyTorch where dnngraph refused it)."""
        sig = signature_of(inputs)
        built = self.builds.get(sig)
        if built is None:
            built = self.builds[sig] = self._build(inputs)
        built.calls += 1
        if built.graph is None:
            return self.submodule(*inputs)
        try:
            return self._execute(built, inputs)
        except BUILD_ERRORS as e:  # never a wrong result: PyTorch from now on for this signature
            built.graph, built.fallback_reason = None, f"execute failed: {e}"
            log.warning("dnngraph.torch: partition %s runs in PyTorch: %s", self.partition_name, built.fallback_reason)
            return self.submodule(*inputs)

    def _build(self, inputs: Sequence[torch.Tensor]) -> Built:
        device = inputs[0].device if inputs else torch.device("cpu")
        try:
            handle = handle_for(device)
            lowering = Lowering(self.submodule, inputs, handle, self.partition_name)
            lowering.lower()
            lowering.graph.validate()
            lowering.check_outputs()
            policy = dnngraph.build_plan_policy.ALL if self.autotune else dnngraph.build_plan_policy.HEURISTICS_CHOICE
            lowering.graph.build([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK], policy)
        except Exception as e:  # noqa: BLE001 - whatever the lowering meets, PyTorch runs the partition
            reason = f"{type(e).__name__}: {e}"
            log.warning("dnngraph.torch: partition %s (%s) runs in PyTorch: %s", self.partition_name,
                        ", ".join(self.node_names[:6]) + ("..." if len(self.node_names) > 6 else ""), reason)
            return Built(fallback_reason=reason)
        g = lowering.graph
        built = Built(graph=g, leaves=lowering.leaves, bindings=lowering.bindings, outputs=lowering.outputs,
                      handle=handle, device=device, engines=chosen_engines(g))
        built.out_layouts = [(list(s.tensor.get_dim()), list(s.tensor.get_stride())) if s.tensor is not None
                             else ([], []) for s in lowering.outputs]
        sizes = [g.get_workspace_size()]
        if self.autotune:  # autotune runs every built plan: the workspace must fit the largest
            sizes += [g.get_workspace_size_plan_at_index(i) for i in range(g.get_execution_plan_count())]
        built.workspace = torch.empty(max(max(sizes), 1), dtype=torch.uint8, device=device)
        built.tuned = not self.autotune
        self.returns_tuple = lowering.returns_tuple
        log.info("dnngraph.torch: partition %s built: %s", self.partition_name, ", ".join(built.engines))
        if handle.is_cuda and any(e.startswith("ref") for e in built.engines):
            log.warning("dnngraph.torch: partition %s runs a part on the reference engine (through host memory)",
                        self.partition_name)
        return built

    def _execute(self, built: Built, inputs: Sequence[torch.Tensor]) -> Any:
        assert built.graph is not None and built.leaves is not None
        leaves = built.leaves.run(inputs)
        pack: Dict[dnngraph.tensor, torch.Tensor] = {t: leaves[i] for t, i in built.bindings}
        results: List[torch.Tensor] = []
        for spec, (dims, strides) in zip(built.outputs, built.out_layouts):
            if spec.tensor is None:
                assert spec.leaf is not None
                results.append(leaves[spec.leaf])
                continue
            if spec.tensor in pack:  # the same graph output returned twice
                results.append(pack[spec.tensor])
                continue
            out = torch.empty_strided(dims, strides, dtype=spec.dtype, device=built.device)
            pack[spec.tensor] = out
            results.append(out.reshape(spec.dims) if list(spec.dims) != dims else out)
        assert built.device is not None and built.handle is not None
        if built.device.type == "cuda":
            built.handle.set_stream(torch.cuda.current_stream(built.device).cuda_stream)
        if not built.tuned and not (built.device.type == "cuda" and torch.cuda.is_current_stream_capturing()):
            built.graph.autotune(pack, built.workspace, handle=built.handle)  # times every plan on this call's data
            built.tuned, built.engines = True, chosen_engines(built.graph)
            log.info("dnngraph.torch: partition %s tuned: %s", self.partition_name, ", ".join(built.engines))
        if torch.autograd._profiler_enabled():  # a range per graph, for profiles (bench/networks_torch.py)
            with torch.profiler.record_function(f"dnngraph:{self.partition_name}"):
                built.graph.execute(pack, built.workspace, handle=built.handle)
        else:
            built.graph.execute(pack, built.workspace, handle=built.handle)
        return tuple(results) if self.returns_tuple else results[0]


def partitions() -> List[LoweredPartition]:
    """Every lowered partition alive in this process (for reports: builds, engines, fallbacks)."""
    return sorted(_PARTITIONS, key=lambda p: int(p.partition_name.rsplit(".", 1)[1]))


@atexit.register
def _release_graphs() -> None:
    """Frees the built graphs and handles before the interpreter's teardown (torch's compile
    caches outlive this module, and nanobind reports objects still alive at exit as leaks)."""
    for p in list(_PARTITIONS):
        p.builds.clear()
    _HANDLES.clear()
