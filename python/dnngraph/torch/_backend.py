"""The torch.compile backend "dnngraph": dynamo's graph goes through aot_autograd (aten ops, the
parameters as inputs); CapabilityBasedPartitioner groups the nodes DnngraphSupport accepts into
partitions, each of which becomes a LoweredPartition; the rest stays PyTorch. A backward graph
(training) runs in PyTorch: only the forward is lowered."""
from __future__ import annotations

import logging
import operator
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import torch
import torch.fx
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner, Partition
from torch.fx.passes.operator_support import OperatorSupport

from ._leaves import derived_leaves_not_kept
from ._ops import COMPUTE_OPS, VIEW_OPS, bound_args, check_tensors
from ._partition import LoweredPartition
from ._rewrite import sink_views

log = logging.getLogger("dnngraph.torch")


class DnngraphSupport(OperatorSupport):
    """Says which aten nodes dnngraph takes: the ops of _ops.COMPUTE_OPS whose checks pass, the
    getitem of their first output, and views of values that stay leaves (inputs of the partition
    and views of them). `refused` keeps each refused node's reason, for logs and reports."""

    def __init__(self) -> None:
        super().__init__()
        self.refused: Dict[str, str] = {}
        self._memo: Dict[torch.fx.Node, Optional[str]] = {}

    def is_node_supported(self, submodules: Mapping[str, torch.nn.Module], node: torch.fx.Node) -> bool:
        """Whether dnngraph takes `node` (the partitioner's question)."""
        return self.reason(node) is None

    def reason(self, node: torch.fx.Node) -> Optional[str]:
        """Why dnngraph refuses `node`, or None when it takes it."""
        if node not in self._memo:
            self._memo[node] = self._reason(node)
            if self._memo[node] is not None and node.op == "call_function":
                self.refused[node.name] = f"{node.target}: {self._memo[node]}"
        return self._memo[node]

    def _reason(self, node: torch.fx.Node) -> Optional[str]:
        if node.op != "call_function":
            return f"a {node.op} node"
        if node.target is operator.getitem:
            source = node.args[0]
            if isinstance(source, torch.fx.Node) and source.target in COMPUTE_OPS and self.reason(source) is None:
                return None
            return "a getitem of a node dnngraph does not take"
        if node.target in VIEW_OPS:
            if not self._stays_leaf(node.args[0]):
                return "a view of a value dnngraph computes (free in PyTorch; a copy in dnngraph)"
            return check_tensors(node)
        rule = COMPUTE_OPS.get(node.target)
        if rule is None:
            return "no dnngraph translation for this op"
        refused = check_tensors(node)
        if refused is None and rule.check is not None:
            refused = rule.check(node, bound_args(node))
        return refused

    def _stays_leaf(self, arg: Any) -> bool:
        """A value PyTorch has at the partition's start: a graph input, a node dnngraph refuses,
        or a view of one of those."""
        if not isinstance(arg, torch.fx.Node):
            return False
        if arg.op != "call_function":
            return True
        if arg.target in VIEW_OPS:
            return self.reason(arg) is None
        return self.reason(arg) is not None


def _has_compute(partition: Partition) -> bool:
    return any(n.target in COMPUTE_OPS for n in partition.nodes)


def lower_graph_module(gm: torch.fx.GraphModule, support: Optional[DnngraphSupport] = None,
                       autotune: bool = False, rewrite: bool = False) -> torch.fx.GraphModule:
    """Fuses the supported nodes of an aten-level GraphModule into LoweredPartition submodules
    (named dnngraph_0, dnngraph_1, ...; `autotune`: each times all its plans on its first call);
    returns the module, which runs the rest in PyTorch. `rewrite` first sinks views below the
    ops that commute with them (_rewrite.py; inference graphs: it changes which outputs are views)."""
    support = support or DnngraphSupport()
    if rewrite:
        log.debug("dnngraph.torch: %d view rewrites", sink_views(gm))
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    proposed = [p for p in partitioner.propose_partitions() if _has_compute(p)]
    if not proposed:
        log.info("dnngraph.torch: no node of the graph is taken (%d refused)", len(support.refused))
        return gm
    fused = partitioner.fuse_partitions(proposed, prefix="dnngraph_")
    for name, child in list(fused.named_children()):
        if name.startswith("dnngraph_") and isinstance(child, torch.fx.GraphModule):
            setattr(fused, name, LoweredPartition(child, name, autotune))
    for node_name, why in support.refused.items():
        log.debug("dnngraph.torch: PyTorch keeps %s: %s", node_name, why)
    return fused


def _forward_compiler(autotune: bool, rewrite: bool) -> Callable[..., Any]:
    def compile_forward(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        return make_boxed_func(lower_graph_module(gm, autotune=autotune, rewrite=rewrite).forward)
    return compile_forward


def _backward_in_torch(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    return make_boxed_func(gm.forward)


def _static_input_indices(fixed: int, example_inputs: Sequence[Any]) -> List[int]:
    """The inputs that keep their storage from call to call, which CUDA graph trees read in place
    instead of copying them into the graph's buffers at every replay: the parameters aot_autograd
    lifted (the first `fixed`), and, where dynamo passes a module's parameters and buffers as graph
    inputs (inlined nn modules), those it recorded as static (the tracing context's
    static_input_indices, which inductor reads). Copied inputs would also miss the folded batch
    norms kept from the first call (their key is the sources' storage), so every replay would
    recompute them: ResNet-50 ran 1016 kernels per forward with CUDA graphs against 60 without
    (H200, 2026-12-06)."""
    static = set(range(fixed))
    try:
        from torch._guards import TracingContext

        context = TracingContext.try_get()
        meta = getattr(context, "fw_metadata", None) if context is not None else None
        static |= set(getattr(meta, "static_input_indices", None) or ())
    except ImportError:
        pass
    return sorted(i for i in static if 0 <= i < len(example_inputs))


def _cuda_graph_compiler(dynamo_input_count: int, autotune: bool) -> Callable[..., Any]:
    """An inference compiler that lowers the graph, then records it with torch's CUDA graph trees
    (as the "cudagraphs" backend does): one replay per forward instead of a launch per kernel and
    a Python call per partition. Graphs torch's checks skip (CPU tensors, input mutations) run
    without CUDA graphs, logged. The first call runs eagerly, outside the graph trees: what the
    partitions keep (workspaces, weights with a batch norm folded in) is allocated there, since
    torch refuses live tensors in its graph pool that are not outputs."""
    def compile_forward(gm: torch.fx.GraphModule, example_inputs: List[Any]) -> Callable[..., Any]:
        lowered = make_boxed_func(lower_graph_module(gm, autotune=autotune, rewrite=True).forward)

        def run_releasing_inputs(args: List[Any]) -> Any:
            # CUDA graph trees call with a list they own and expect it emptied (so that the inputs
            # can be freed), as inductor's compiled functions do.
            taken = list(args)
            args.clear()
            with derived_leaves_not_kept():  # what they compute lives in the graph's pool
                return lowered(taken)

        try:  # torch's helpers, as its "cudagraphs" backend calls them (private: they move between releases)
            from torch._dynamo.backends import cudagraphs as tcg
            from torch._inductor.cudagraph_trees import cudagraphify_impl

            fixed = tcg.num_fw_fixed_arguments(dynamo_input_count, len(example_inputs))
            skip = tcg.check_for_skip(gm, fixed)
            if skip:
                log.info("dnngraph.torch: no CUDA graph: %s", skip)
                return lowered
            static = _static_input_indices(fixed, example_inputs)
            log.info("dnngraph.torch: CUDA graph with %d of %d inputs static", len(static), len(example_inputs))
            out = cudagraphify_impl(run_releasing_inputs, example_inputs, static, device_index=tcg.get_device_index(gm),
                                    is_backward=False, is_inference=True, stack_traces=tcg.get_stack_traces(gm),
                                    placeholders=tcg.get_placeholder_info(gm.graph),
                                    mutated_input_idxs=tcg.find_input_mutations(gm.graph))
        except (ImportError, AttributeError, TypeError) as e:
            log.warning("dnngraph.torch: no CUDA graph: this torch's CUDA graph trees differ (%s: %s)",
                        type(e).__name__, e)
            return lowered
        first_call_done = False

        def run(args: List[Any]) -> Any:
            nonlocal first_call_done
            if first_call_done:
                return out(args)
            first_call_done = True
            return lowered(args)

        run._boxed_call = True  # type: ignore[attr-defined]
        return run

    return compile_forward


def backend(gm: torch.fx.GraphModule, example_inputs: List[torch.Tensor], mode: Optional[str] = None,
            options: Optional[Dict[str, Any]] = None) -> Callable[..., Any]:
    """The torch.compile backend: `torch.compile(model, backend="dnngraph")` (or backend=this).

    Args:
        gm: the FX graph dynamo captured.
        example_inputs: its example (fake) inputs.
        mode: torch.compile's mode: "reduce-overhead" records inference graphs as CUDA graphs,
            "max-autotune" times every plan of each dnngraph graph on its first call.
        options: torch.compile's options: {"cuda_graphs": True}, {"autotune": True} do the same
            (they override the mode); other keys are a ValueError.

    Returns:
        A callable that runs the graph: dnngraph graphs for the partitions it takes, PyTorch for the rest.

    Raises:
        ValueError: an option this backend does not know.
    """
    options = dict(options or {})
    cuda_graphs = bool(options.pop("cuda_graphs", mode == "reduce-overhead"))
    autotune = bool(options.pop("autotune", mode == "max-autotune"))
    if options:
        raise ValueError(f"dnngraph backend: unknown option(s) {sorted(options)}; it takes 'cuda_graphs', 'autotune'")
    inference = (_cuda_graph_compiler(len(example_inputs), autotune) if cuda_graphs
                 else _forward_compiler(autotune, rewrite=True))
    compile_with = aot_autograd(fw_compiler=_forward_compiler(autotune, rewrite=False), bw_compiler=_backward_in_torch,
                                inference_compiler=inference)
    return compile_with(gm, example_inputs)


def register() -> None:
    """Registers `backend` as "dnngraph" with dynamo, unless it is registered already or is about to
    be, through the `torch_dynamo_backends` entry point (whose loading imports this package)."""
    from torch._dynamo.backends import registry

    if "dnngraph" in registry._COMPILER_FNS or registry._BACKENDS.get("dnngraph") is not None:
        return
    registry.register_backend(compiler_fn=backend, name="dnngraph")
