"""Lowering one FX partition (a GraphModule of supported aten nodes) into one dnngraph pygraph,
for the real tensors of a call: the partition's inputs and the views and parameter-derived
tensors computed from them are leaves (_leaves.py), bound as graph inputs at every call; every
other node becomes pygraph ops (_ops.py). A convolution whose only user is an inference batch
norm takes the norm into its weight and bias (both leaves, recomputed only when the parameters
change), so the pair runs as one convolution with a bias epilogue."""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import torch
import torch.fx

import dnngraph
from ._leaves import Leaves, Unsupported
from ._ops import COMPUTE_OPS, VIEW_OPS, bound_args


@dataclass(frozen=True)
class LeafRef:
    """A value PyTorch computes (index into the partition's Leaves)."""

    index: int


@dataclass(frozen=True)
class OutputSpec:
    """How one partition output is produced at a call: a graph output tensor (allocated with its
    dims, strides and dtype) or a leaf (a view PyTorch computes)."""

    tensor: Optional[dnngraph.tensor]
    leaf: Optional[int]
    dims: Tuple[int, ...] = ()
    strides: Tuple[int, ...] = ()
    dtype: Optional[torch.dtype] = None


def _is_leafish(node: Any) -> bool:
    """A node whose value is a leaf: a placeholder, or a view op of one."""
    if not isinstance(node, torch.fx.Node):
        return False
    if node.op == "placeholder":
        return True
    return node.op == "call_function" and node.target in VIEW_OPS and _is_leafish(node.args[0])


def find_batchnorm_folds(graph: torch.fx.Graph) -> Dict[torch.fx.Node, torch.fx.Node]:
    """conv -> batch norm, for each non-transposed convolution whose one user is an inference batch
    norm and whose weight, bias and norm parameters are leaves."""
    folds = {}
    bn_op = torch.ops.aten._native_batch_norm_legit_no_training.default
    for node in graph.nodes:
        if node.op != "call_function" or node.target is not torch.ops.aten.convolution.default:
            continue
        users = list(node.users)
        if len(users) != 1 or users[0].target is not bn_op or users[0].args[0] is not node:
            continue
        a, bn = bound_args(node), bound_args(users[0])
        params = [a["weight"], bn["weight"], bn["bias"], bn["running_mean"], bn["running_var"]]
        if a["transposed"] or not all(_is_leafish(p) for p in params) or (
                a["bias"] is not None and not _is_leafish(a["bias"])):
            continue
        folds[node] = users[0]
    return folds


class Lowering:
    """One partition being lowered for one input signature. Translators (in _ops.py) call the
    methods below; the result is `graph` (not yet built), `bindings` and `outputs`."""

    def __init__(self, module: torch.fx.GraphModule, inputs: Sequence[torch.Tensor], handle: dnngraph.Handle,
                 name: str) -> None:
        self.module, self.name_prefix = module, name
        self.leaves = Leaves(inputs)
        io_type = next((t.dtype for t in inputs if t.is_floating_point()), torch.float32)
        # Values between the graph's partitions are stored as PyTorch stores them (a 16-bit model's
        # activations in 16 bits), so a convolution after another partition reads its own input
        # type; the arithmetic stays FLOAT.
        self.graph = dnngraph.pygraph(name=name, io_data_type=io_type, intermediate_data_type=io_type,
                                      compute_data_type=torch.float32, handle=handle)
        self.values: Dict[torch.fx.Node, Any] = {}
        self.declared: Dict[int, dnngraph.tensor] = {}
        self.bindings: List[Tuple[dnngraph.tensor, int]] = []
        self.folds = find_batchnorm_folds(module.graph)
        self.folded: Set[torch.fx.Node] = set(self.folds.values())
        self.outputs: List[OutputSpec] = []
        self.returns_tuple = False

    # -- what translators ask -----------------------------------------------------------------
    def name(self, node: torch.fx.Node) -> str:
        """The dnngraph node name of an FX node."""
        return node.name

    def meta(self, node: Any) -> Any:
        """The fake tensor (or tuple of them) PyTorch recorded for a node's result."""
        return node.meta["val"]

    def value(self, arg: Any) -> Any:
        """What an FX argument lowered to (a LeafRef, a graph tensor, a tuple, or a Python value)."""
        if isinstance(arg, torch.fx.Node):
            return self.values[arg]
        return arg

    def is_leaf(self, arg: Any) -> bool:
        """Whether an argument is computed by PyTorch (a leaf)."""
        return isinstance(self.value(arg), LeafRef)

    def tensor(self, arg: Any) -> dnngraph.tensor:
        """The graph tensor of an argument; a leaf becomes a graph input (once)."""
        v = self.value(arg)
        if isinstance(v, LeafRef):
            return self._declare(v.index)
        if isinstance(v, dnngraph.tensor):
            return v
        raise Unsupported(f"argument {arg!r} is {type(v).__name__}, not a tensor")

    def _declare(self, index: int) -> dnngraph.tensor:
        if index not in self.declared:
            t = self.leaves.examples[index]
            dims, strides = list(t.shape) or [1], list(t.stride()) or [1]
            tensor = self.graph.tensor(dim=dims, stride=strides, data_type=t.dtype,
                                       name=f"{self.name_prefix}.in{len(self.declared)}")
            self.declared[index] = tensor
            self.bindings.append((tensor, index))
        return self.declared[index]

    def _leaf_index(self, arg: Any, what: str) -> int:
        v = self.value(arg)
        if not isinstance(v, LeafRef):
            raise Unsupported(f"{what} ('{getattr(arg, 'name', arg)}') is computed inside the partition; "
                              "dnngraph takes it only as an input")
        return v.index

    def leaf_view(self, arg: Any, fn: Callable[[torch.Tensor], torch.Tensor], what: str) -> LeafRef:
        """`fn` (a view or reshape) of a leaf argument, computed by PyTorch at every call."""
        return LeafRef(self.leaves.view(self._leaf_index(arg, what), fn))

    def derived(self, args: List[Any], fn: Callable[..., torch.Tensor], what: str) -> LeafRef:
        """A tensor computed by PyTorch from leaf arguments, recomputed only when they change."""
        return LeafRef(self.leaves.derived([self._leaf_index(a, what) for a in args], fn))

    def operand(self, arg: Any, rank: int) -> dnngraph.tensor:
        """A pointwise operand at `rank` dims (size-1 dims in front, as PyTorch broadcasts); a
        Python number becomes a scalar baked into the plan."""
        if not isinstance(arg, torch.fx.Node):
            return self.graph.tensor_scalar(float(arg))
        shape = list(self.meta(arg).shape)
        if len(shape) == rank:
            return self.tensor(arg)
        padded = [1] * (rank - len(shape)) + shape
        if self.is_leaf(arg):
            return self.tensor(self.leaf_view(arg, lambda t: t.reshape(padded), "operand"))
        return self.graph.reshape(self.tensor(arg), dim=padded)

    def fold_batchnorm(self, weight: Any, bias: Any, bn: torch.fx.Node) -> Tuple[LeafRef, LeafRef]:
        """The convolution weight and bias with the inference batch norm `bn` folded in:
        w * gamma / sqrt(var + eps) per output channel, and beta + (b - mean) * gamma / sqrt(var + eps)."""
        a = bound_args(bn)
        eps = float(a["eps"])

        def scale_of(gamma: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
            return gamma.float() * torch.rsqrt(var.float() + eps)

        def fold_weight(w: torch.Tensor, gamma: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
            s = scale_of(gamma, var).reshape([-1] + [1] * (w.dim() - 1))
            return torch.empty_like(w).copy_(w.float() * s)  # w's exact strides (channels-last stays)

        def fold_bias(gamma: torch.Tensor, beta: torch.Tensor, mean: torch.Tensor, var: torch.Tensor,
                      b: Optional[torch.Tensor] = None) -> torch.Tensor:
            shift = mean.float() if b is None else mean.float() - b.float()
            return (beta.float() - shift * scale_of(gamma, var)).to(gamma.dtype)

        w = self.derived([weight, a["weight"], a["running_var"]], fold_weight, "the convolution's weight")
        bias_args = [a["weight"], a["bias"], a["running_mean"], a["running_var"]] + ([bias] if bias is not None else [])
        return w, self.derived(bias_args, fold_bias, "the batch norm's parameters")

    # -- the walk -------------------------------------------------------------------------------
    def lower(self) -> None:
        """Lowers every node; fills bindings and outputs. Raises Unsupported or dnngraph's errors."""
        nodes = list(self.module.graph.nodes)
        # Placeholders first: a fused submodule declares them where their first user was copied.
        for position, node in enumerate(n for n in nodes if n.op == "placeholder"):
            self.values[node] = LeafRef(self.leaves.input(position))
        for node in nodes:
            if node.op == "placeholder":
                continue
            if node.op == "call_function":
                self.values[node] = self._lower_call(node)
            elif node.op == "output":
                self._lower_outputs(node.args[0])
            else:
                raise Unsupported(f"node '{node.name}' is a {node.op}")

    def _lower_call(self, node: torch.fx.Node) -> Any:
        if node.target is operator.getitem:
            return self.value(node.args[0])[node.args[1]]
        if node.target in VIEW_OPS:
            source, rest = node.args[0], node.args[1:]
            target: Any = node.target
            return self.leaf_view(source, lambda t: target(t, *rest, **node.kwargs), f"the input of '{node.name}'")
        rule = COMPUTE_OPS.get(node.target)
        if rule is None:
            raise Unsupported(f"node '{node.name}' ({node.target}) has no dnngraph translation")
        return rule.lower(self, node, bound_args(node))

    def _lower_outputs(self, result: Any) -> None:
        self.returns_tuple = isinstance(result, (tuple, list))
        nodes: List[Any] = list(result) if isinstance(result, (tuple, list)) else [result]
        for node in nodes:
            v = self.value(node)
            if isinstance(v, LeafRef):
                self.outputs.append(OutputSpec(None, v.index))
                continue
            if not isinstance(v, dnngraph.tensor):
                raise Unsupported(f"output '{node.name}' lowered to {type(v).__name__}")
            meta = self.meta(node)
            if not v.get_is_output():
                v.set_output(True)
                v.set_data_type(meta.dtype)
                if _dense(meta):
                    v.set_stride(list(meta.stride()) or [1])
            self.outputs.append(OutputSpec(v, None, tuple(meta.shape), tuple(meta.stride()), meta.dtype))

    def check_outputs(self) -> None:
        """After validate: every graph output has PyTorch's dims (else the partition is refused)."""
        for spec in self.outputs:
            if spec.tensor is not None and list(spec.tensor.get_dim()) != (list(spec.dims) or [1]):
                raise Unsupported(f"output '{spec.tensor.get_name()}' has dims {spec.tensor.get_dim()} in dnngraph, "
                                  f"{list(spec.dims)} in PyTorch")


def _dense(t: torch.Tensor) -> bool:
    """Strides that are a permutation of a dense layout (no broadcast or overlapping dims)."""
    pairs = sorted((s, d) for s, d in zip(t.stride(), t.shape) if d != 1)
    step = 1
    for s, d in pairs:
        if s != step:
            return False
        step *= d
    return True
