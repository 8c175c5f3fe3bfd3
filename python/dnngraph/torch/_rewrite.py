"""An aten-graph rewrite before partitioning: views of computed values are moved below the
elementwise ops and last-dim layer norms that read them, and view round trips are dropped.

PyTorch writes `linear` on a [B, S, H] activation as view [B*S, H] -> addmm -> view [B, S, N];
the GELU, residual add and layer norm that follow read the 3-D view. dnngraph takes views only of
its graphs' inputs (inside a graph a reshape is a copy), so each such view ends a partition, and
the matmul loses its epilogue. Since these ops act on the last dim alone (or elementwise), they
commute with a view that keeps the last dim: op(view(A)) = view(op(A)). Sinking the views leaves
back-to-back view pairs that cancel, and the layer's matmuls, epilogues and norms join one
partition."""
from __future__ import annotations

import operator
from typing import Any, Optional

import torch
import torch.fx
from torch._guards import detect_fake_mode

aten = torch.ops.aten
RESHAPES = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}
UNARY = {aten.relu.default, aten.gelu.default, aten.silu.default, aten.sigmoid.default, aten.tanh.default,
         aten.hardtanh.default, aten.clone.default}
BINARY = {aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor, aten.div.Tensor}


def _val(node: Any) -> Any:
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def _sinkable_view(node: Any) -> bool:
    """A reshape of a computed, contiguous value that keeps its last dim."""
    if not isinstance(node, torch.fx.Node) or node.op != "call_function" or node.target not in RESHAPES:
        return False
    src = node.args[0]
    if not isinstance(src, torch.fx.Node) or src.op != "call_function" or src.target in RESHAPES:
        return False
    a, v = _val(src), _val(node)
    return (isinstance(a, torch.Tensor) and isinstance(v, torch.Tensor) and a.dim() >= 1 and v.dim() >= 1
            and a.shape[-1] == v.shape[-1] and a.is_contiguous())


class _Rewriter:
    def __init__(self, gm: torch.fx.GraphModule) -> None:
        self.gm, self.graph = gm, gm.graph
        vals = [n.meta.get("val") for n in gm.graph.nodes]
        self.fake_mode = detect_fake_mode([v for v in vals if isinstance(v, torch.Tensor)])

    def call(self, target: Any, args: tuple, kwargs: Optional[dict] = None) -> torch.fx.Node:
        """A new node (before the insertion point) with its fake value computed."""
        node = self.graph.call_function(target, args, kwargs or {})
        fake_args = [_val(a) if isinstance(a, torch.fx.Node) else a for a in args]
        fake_args = [[_val(x) if isinstance(x, torch.fx.Node) else x for x in a] if isinstance(a, list) else a
                     for a in fake_args]
        with self.fake_mode:
            node.meta["val"] = target(*fake_args, **(kwargs or {}))
        return node

    def sink(self, view: torch.fx.Node, user: torch.fx.Node) -> bool:
        """Rewrites user(view(A)) as view(user(A)) where that is the same; True when done."""
        src, shape = view.args[0], list(_val(view).shape)
        a_shape = list(_val(src).shape)
        if user.target in UNARY and user.args[0] is view and view not in user.args[1:]:
            with self.graph.inserting_before(user):
                moved = self.call(user.target, (src,) + tuple(user.args[1:]), dict(user.kwargs))
                back = self.call(aten.view.default, (moved, shape))
            user.replace_all_uses_with(back)
            self.graph.erase_node(user)
            return True
        if user.target in BINARY and len(user.args) == 2:
            i = 0 if user.args[0] is view else 1
            other = user.args[1 - i]
            if other is view:
                return False
            if isinstance(other, torch.fx.Node):
                o = _val(other)
                if not isinstance(o, torch.Tensor) or list(user.meta["val"].shape) != shape:
                    return False
                if list(o.shape) == shape:
                    with self.graph.inserting_before(user):
                        other = self.call(aten.reshape.default, (other, a_shape))
                elif o.dim() > 1 or (o.dim() == 1 and o.shape[0] not in (1, shape[-1])):
                    return False  # a broadcast over more than the last dim
            args = [other, other]
            args[i] = src
            with self.graph.inserting_before(user):
                moved = self.call(user.target, tuple(args), dict(user.kwargs))
                back = self.call(aten.view.default, (moved, shape))
            user.replace_all_uses_with(back)
            self.graph.erase_node(user)
            return True
        if (user.target is aten.native_layer_norm.default and user.args[0] is view and len(user.args[1]) == 1
                and all(u.target is operator.getitem and u.args[1] == 0 for u in user.users)):
            with self.graph.inserting_before(user):
                moved = self.call(user.target, (src,) + tuple(user.args[1:]))
                first = self.call(operator.getitem, (moved, 0))
                back = self.call(aten.view.default, (first, shape))
            for g in list(user.users):
                g.replace_all_uses_with(back)
                self.graph.erase_node(g)
            self.graph.erase_node(user)
            return True
        return False

    def fold(self, node: torch.fx.Node) -> bool:
        """view(view(X)) with X's own shape is X."""
        if node.target not in RESHAPES or not isinstance(node.args[0], torch.fx.Node):
            return False
        inner = node.args[0]
        if inner.target not in RESHAPES or not isinstance(inner.args[0], torch.fx.Node):
            return False
        x = inner.args[0]
        if _val(x) is None or list(_val(x).shape) != list(_val(node).shape) or _val(x).stride() != _val(node).stride():
            return False
        node.replace_all_uses_with(x)
        self.graph.erase_node(node)
        return True

    def run(self) -> int:
        """Sinks and folds until nothing changes; returns the number of rewrites."""
        count = 0
        changed = self.fake_mode is not None
        while changed:  # each rewrite restarts the walk: graphs are hundreds of nodes, rewrites tens
            changed = False
            for node in list(self.graph.nodes):
                if node.op != "call_function":
                    continue
                if self.fold(node) or (_sinkable_view(node) and any(self.sink(node, u) for u in list(node.users))):
                    changed, count = True, count + 1
                    break
        self.graph.eliminate_dead_code()
        self.gm.recompile()
        return count


def sink_views(gm: torch.fx.GraphModule) -> int:
    """Moves views of computed values below the ops that commute with them and drops view round
    trips, in place; returns the number of rewrites (0 when the graph carries no fake values)."""
    return _Rewriter(gm).run()
