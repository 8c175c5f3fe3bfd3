"""Which aten ops dnngraph takes (a check per op, on the node's arguments, dtypes and devices) and
how each becomes pygraph calls (a translator per op). A check returns the reason it refuses the
node, or None; a translator may still raise Unsupported for what only the real tensors show."""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

import torch
import torch.fx

import dnngraph
from ._leaves import Unsupported

if TYPE_CHECKING:
    from ._lower import Lowering

aten = torch.ops.aten
FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def bound_args(node: torch.fx.Node) -> Dict[str, Any]:
    """The node's arguments by their schema names, defaults filled in."""
    schema = node.target._schema
    out: Dict[str, Any] = {}
    for i, arg in enumerate(schema.arguments):
        if i < len(node.args):
            out[arg.name] = node.args[i]
        elif arg.name in node.kwargs:
            out[arg.name] = node.kwargs[arg.name]
        else:
            out[arg.name] = arg.default_value if arg.has_default_value() else None
    return out


def meta_tensors(node: torch.fx.Node) -> List[Any]:
    """The fake tensors of a node's result (one, or each of a tuple's), None left out."""
    val = node.meta.get("val")
    vals = val if isinstance(val, (tuple, list)) else [val]
    return [v for v in vals if isinstance(v, torch.Tensor)]


def check_tensors(node: torch.fx.Node) -> Optional[str]:
    """Refuses nodes whose tensors (inputs and result) are not float32/float16/bfloat16 on one CPU
    or CUDA device with static shapes."""
    tensors = list(meta_tensors(node))[:1]  # of several results only the first is taken (others: unused)
    for arg in node.all_input_nodes:
        tensors += meta_tensors(arg)
    if not tensors:
        return "no tensor metadata (meta['val']) on the node or its inputs"
    devices = {t.device for t in tensors}
    if len(devices) != 1 or next(iter(devices)).type not in ("cpu", "cuda"):
        return f"tensors on {sorted(str(d) for d in devices)}: one cpu or cuda device is needed"
    for t in tensors:
        if t.dtype not in FLOAT_DTYPES:
            return f"a tensor of dtype {t.dtype}: dnngraph takes float32, float16 and bfloat16 here"
        if not all(isinstance(d, int) for d in list(t.shape) + list(t.stride())):
            return "symbolic (dynamic) shapes or strides"
    return None


def only_first_output_used(node: torch.fx.Node) -> Optional[str]:
    """Multi-output ops (norms, pools with indices, attention with statistics): only output 0 is taken."""
    for user in node.users:
        if user.target is not operator.getitem or user.args[1] != 0:
            return "an output other than the first (statistics or indices) is used"
    return None


# -- translators ------------------------------------------------------------------------------

def _conv(L: "Lowering", node: torch.fx.Node, a: Dict[str, Any]) -> Any:
    g, out = L.graph, L.meta(node)
    rank = out.dim()
    pad, stride, dil = list(a["padding"]), list(a["stride"]), list(a["dilation"])
    bn = L.folds.get(node)
    if bn is not None:
        x, w_leaf, b_leaf = L.tensor(a["input"]), *L.fold_batchnorm(a["weight"], a["bias"], bn)
        w = L.tensor(w_leaf)
    else:
        x, w = L.tensor(a["input"]), L.tensor(a["weight"])
        b_leaf = a["bias"]
    if a["transposed"]:
        y = g.conv_dgrad(loss=x, filter=w, padding=pad, stride=stride, dilation=dil, name=L.name(node))
        y.set_dim(list(out.shape))
    else:
        y = g.conv_fprop(image=x, weight=w, padding=pad, stride=stride, dilation=dil, name=L.name(node))
    if b_leaf is not None:
        shape = [1, out.shape[1]] + [1] * (rank - 2)
        y = g.bias(y, L.tensor(L.leaf_view(b_leaf, lambda t: t.reshape(shape), "the convolution's bias")),
                   name=L.name(node) + ".bias")
    return y


def _check_conv(node: torch.fx.Node, a: Dict[str, Any]) -> Optional[str]:
    if result_rank(node) not in (4, 5):
        return f"a {result_rank(node) - 2}-D convolution: dnngraph takes 2-D and 3-D ones"
    if a["transposed"] and a["groups"] != 1:
        return f"a transposed convolution with groups={a['groups']}: conv_dgrad takes one group"
    return None


def result_rank(node: torch.fx.Node) -> int:
    """The rank of the node's (first) result."""
    return int(meta_tensors(node)[0].dim())


def _addmm(L: "Lowering", node: torch.fx.Node, a: Dict[str, Any]) -> Any:
    g = L.graph
    y = g.matmul(L.tensor(a["mat1"]), L.tensor(a["mat2"]), name=L.name(node))
    n = L.meta(node).shape[1]
    bias = L.tensor(L.leaf_view(a["self"], lambda t: t.reshape(1, n) if t.dim() == 1 else t, "addmm's bias"))
    return g.bias(y, bias, name=L.name(node) + ".bias")


def _check_addmm(node: torch.fx.Node, a: Dict[str, Any]) -> Optional[str]:
    if a["beta"] != 1 or a["alpha"] != 1:
        return f"beta={a['beta']}, alpha={a['alpha']}: only 1 and 1"
    return None


def _matmul(L: "Lowering", node: torch.fx.Node, a: Dict[str, Any]) -> Any:
    return L.graph.matmul(L.tensor(a["self"]), L.tensor(a["mat2"]), name=L.name(node))


def _batchnorm(L: "Lowering", node: torch.fx.Node, a: Dict[str, Any]) -> Any:
    if node in L.folded:  # already inside the convolution before it (_conv)
        return (L.value(a["input"]), None, None)
    # x * A + B with A = gamma / sqrt(var + eps), B = beta - mean * A (leaves kept while the
    # parameters are unchanged): pointwise ops that fuse into the epilogue of what precedes them,
    # and that run on every device (batchnorm_inference has no CUDA engine of dnngraph's own).
    c = L.meta(node)[0].shape[1]
    shape = [1, c] + [1] * (L.meta(node)[0].dim() - 2)
    eps = float(a["eps"])

    def mul_of(gamma: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
        return (gamma.float() * torch.rsqrt(var.float() + eps)).to(gamma.dtype).reshape(shape)

    def add_of(gamma: torch.Tensor, beta: torch.Tensor, mean: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
        return (beta.float() - mean.float() * gamma.float() * torch.rsqrt(var.float() + eps)).to(gamma.dtype).reshape(shape)

    scale = L.derived([a["weight"], a["running_var"]], mul_of, "the batch norm's parameters")
    shift = L.derived([a["weight"], a["bias"], a["running_mean"], a["running_var"]], add_of,
                      "the batch norm's parameters")
    y = L.graph.mul(L.tensor(a["input"]), L.tensor(scale), name=L.name(node))
    return (L.graph.add(y, L.tensor(shift), name=L.name(node) + ".shift"), None, None)


def _check_affine(node: torch.fx.Node, a: Dict[str, Any]) -> Optional[str]:
    if a.get("weight") is None or a.get("bias") is None:
        return "no affine weight or bias (elementwise_affine=False / affine=False)"
    return only_first_output_used(node)


def _layernorm(L: "Lowering", node: torch.fx.Node, a: Dict[str, Any]) -> Any:
    x_meta, g = L.meta(a["input"]), L.graph
    norm = list(a["normalized_shape"])
    lead, cols = list(x_meta.shape[: x_meta.dim() - len(norm)]), math.prod(norm)
    rows, eps = math.prod(lead), float(a["eps"])
    # dnngraph's layernorm normalizes over every dim but the first: X as [rows, cols], a view
    # PyTorch computes where X is a partition input, else a layout copy in the graph (and Y back),
    # which cost less than the statistics as reductions did (the ONNX encoder's, 2026-12-06).
    weight = L.tensor(L.leaf_view(a["weight"], lambda t: t.reshape(1, cols), "the layer norm's weight"))
    bias = L.tensor(L.leaf_view(a["bias"], lambda t: t.reshape(1, cols), "the layer norm's bias"))
    if x_meta.dim() == 2:
        x = L.tensor(a["input"])
    elif L.is_leaf(a["input"]):
        x = L.tensor(L.leaf_view(a["input"], lambda t: t.reshape(rows, cols), "the input"))
    else:
        x = g.reshape(L.tensor(a["input"]), dim=[rows, cols], name=L.name(node) + ".fold")
    y, _, _ = g.layernorm(dnngraph.norm_forward_phase.INFERENCE, x, scale=weight, bias=bias, epsilon=eps,
                          name=L.name(node))
    if x_meta.dim() != 2:
        y = g.reshape(y, dim=list(x_meta.shape), name=L.name(node) + ".unfold")
    return (y, None, None)


def _unary(method: str, **kwargs: Any) -> Callable[["Lowering", torch.fx.Node, Dict[str, Any]], Any]:
    def lower(L: "Lowering", node: torch.fx.Node, a: Dict[str, Any]) -> Any:
        return getattr(L.graph, method)(L.tensor(a["self"]), name=L.name(node), **kwargs)
    return lower


def _gelu(L: "Lowering", node: torch.fx.Node, a: Dict[str, Any]) -> Any:
    method = L.graph.gelu_approx_tanh if a["approximate"] == "tanh" else L.graph.gelu
    return method(L.tensor(a["self"]), name=L.name(node))


def _hardtanh(L: "Lowering", node: torch.fx.Node, a: Dict[str, Any]) -> Any:
    return L.graph.relu(L.tensor(a["self"]), lower_clip=float(a["min_val"]), upper_clip=float(a["max_val"]),
                        name=L.name(node))


def _binary(method: str) -> Callable[["Lowering", torch.fx.Node, Dict[str, Any]], Any]:
    def lower(L: "Lowering", node: torch.fx.Node, a: Dict[str, Any]) -> Any:
        rank = max(L.meta(node).dim(), 1)
        return getattr(L.graph, method)(L.operand(a["self"], rank), L.operand(a["other"], rank), name=L.name(node))
    return lower


def _check_binary(node: torch.fx.Node, a: Dict[str, Any]) -> Optional[str]:
    if a.get("alpha", 1) != 1:
        return f"alpha={a['alpha']}: only 1"
    if a.get("rounding_mode") is not None:
        return f"rounding_mode='{a['rounding_mode']}'"
    for key in ("self", "other"):
        if not isinstance(a[key], (torch.fx.Node, int, float)) or isinstance(a[key], bool):
            return f"operand '{key}' is {type(a[key]).__name__}"
    return None


def _pool_padding(L: "Lowering", node: torch.fx.Node, a: Dict[str, Any], allow_ceil: bool) -> tuple:
    kernel = list(a["kernel_size"]) * (2 // len(a["kernel_size"]))
    stride = list(a["stride"] or kernel) * (2 // len(a["stride"] or kernel))
    pre = list(a["padding"]) * (2 // len(a["padding"]))
    post, x, out = list(pre), L.meta(a["self"]), L.meta(node)
    out = out[0] if isinstance(out, (tuple, list)) else out
    for i in range(2):
        # ceil_mode's last, partial window: extra padding at the end (excluded / -inf).
        extra = (out.shape[2 + i] - 1) * stride[i] + kernel[i] - (x.shape[2 + i] + pre[i] + post[i])
        if extra > 0 and not allow_ceil:
            raise Unsupported("ceil_mode with count_include_pad=True (the partial window's divisor)")
        post[i] += max(extra, 0)
    return kernel, stride, pre, post


def _max_pool(L: "Lowering", node: torch.fx.Node, a: Dict[str, Any]) -> Any:
    kernel, stride, pre, post = _pool_padding(L, node, a, True)
    y, _ = L.graph.resample(L.tensor(a["self"]), resampling_mode=dnngraph.resample_mode.MAXPOOL,
                            padding_mode=dnngraph.padding_mode.NEG_INF_PAD, window=kernel, stride=stride,
                            pre_padding=pre, post_padding=post, name=L.name(node))
    return (y, None) if node.target is aten.max_pool2d_with_indices.default else y


def _check_max_pool(node: torch.fx.Node, a: Dict[str, Any]) -> Optional[str]:
    if any(d != 1 for d in a["dilation"]):
        return f"dilation {list(a['dilation'])}: dnngraph's pooling has none"
    return only_first_output_used(node) if node.target is aten.max_pool2d_with_indices.default else None


def _avg_pool(L: "Lowering", node: torch.fx.Node, a: Dict[str, Any]) -> Any:
    include = bool(a["count_include_pad"]) and any(p != 0 for p in a["padding"])
    kernel, stride, pre, post = _pool_padding(L, node, a, not include)
    mode = (dnngraph.resample_mode.AVGPOOL_INCLUDE_PADDING if include
            else dnngraph.resample_mode.AVGPOOL_EXCLUDE_PADDING)
    y, _ = L.graph.resample(L.tensor(a["self"]), resampling_mode=mode, padding_mode=dnngraph.padding_mode.ZERO_PAD,
                            window=kernel, stride=stride, pre_padding=pre, post_padding=post, name=L.name(node))
    return y


def _check_avg_pool(node: torch.fx.Node, a: Dict[str, Any]) -> Optional[str]:
    return None if a["divisor_override"] is None else f"divisor_override={a['divisor_override']}"


def _mean(L: "Lowering", node: torch.fx.Node, a: Dict[str, Any]) -> Any:
    y = L.graph.reduction(L.tensor(a["self"]), mode=dnngraph.reduction_mode.AVG, name=L.name(node))
    y.set_dim(list(L.meta(node).shape))
    return y


def _check_mean(node: torch.fx.Node, a: Dict[str, Any]) -> Optional[str]:
    if node.target is aten._adaptive_avg_pool2d.default:
        return None if list(a["output_size"]) == [1, 1] else f"output_size {list(a['output_size'])}: only [1, 1]"
    if not a["keepdim"]:
        return "keepdim=False (the reduced dims would need a reshape)"
    return None if a.get("dtype") is None else f"dtype={a['dtype']}"


def _sdpa(L: "Lowering", node: torch.fx.Node, a: Dict[str, Any]) -> Any:
    q = L.meta(a["query"])
    scale = a.get("scale")
    o, _ = L.graph.sdpa(L.tensor(a["query"]), L.tensor(a["key"]), L.tensor(a["value"]), is_inference=True,
                        attn_scale=float(scale) if scale is not None else 1.0 / math.sqrt(q.shape[-1]),
                        use_causal_mask=bool(a.get("is_causal")), name=L.name(node))
    return tuple([o] + [None] * (len(node.meta["val"]) - 1))


def _check_sdpa(node: torch.fx.Node, a: Dict[str, Any]) -> Optional[str]:
    if a.get("attn_mask") is not None or a.get("attn_bias") is not None:
        return "an attention mask or bias"
    if a.get("dropout_p", 0.0) != 0.0:
        return f"dropout_p={a['dropout_p']}"
    q, k, v = (meta_tensors(a[n])[0] for n in ("query", "key", "value"))
    if q.dim() != 4 or q.shape[1] != k.shape[1] or k.shape != v.shape:
        return f"Q {list(q.shape)}, K {list(k.shape)}, V {list(v.shape)}: [b, h, s, d] with equal heads"
    if a.get("is_causal") and q.shape[2] != k.shape[2]:
        return f"is_causal with {q.shape[2]} queries and {k.shape[2]} keys"
    return only_first_output_used(node)


def _cat(L: "Lowering", node: torch.fx.Node, a: Dict[str, Any]) -> Any:
    rank = L.meta(node).dim()
    return L.graph.concatenate([L.tensor(t) for t in a["tensors"]], axis=int(a["dim"]) % rank, name=L.name(node))


def _clone(L: "Lowering", node: torch.fx.Node, a: Dict[str, Any]) -> Any:
    return L.graph.identity(L.tensor(a["self"]), name=L.name(node))


@dataclass(frozen=True)
class OpRule:
    """What dnngraph takes of one aten op: `check` refuses nodes (a reason, or None), `lower` adds
    the pygraph ops and returns the result (a tensor, or a tuple for multi-output ops)."""

    lower: Callable[["Lowering", torch.fx.Node, Dict[str, Any]], Any]
    check: Optional[Callable[[torch.fx.Node, Dict[str, Any]], Optional[str]]] = None


SDPA_OPS = [getattr(aten, name).default for name in (
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention") if hasattr(aten, name)]

COMPUTE_OPS: Dict[Any, OpRule] = {
    aten.convolution.default: OpRule(_conv, _check_conv),
    aten.addmm.default: OpRule(_addmm, _check_addmm),
    aten.mm.default: OpRule(_matmul),
    aten.bmm.default: OpRule(_matmul),
    aten._native_batch_norm_legit_no_training.default: OpRule(_batchnorm, _check_affine),
    aten.native_layer_norm.default: OpRule(_layernorm, _check_affine),
    aten.relu.default: OpRule(_unary("relu")),
    aten.gelu.default: OpRule(_gelu),
    aten.silu.default: OpRule(_unary("swish", swish_beta=1.0)),
    aten.sigmoid.default: OpRule(_unary("sigmoid")),
    aten.tanh.default: OpRule(_unary("tanh")),
    aten.hardtanh.default: OpRule(_hardtanh),
    aten.max_pool2d_with_indices.default: OpRule(_max_pool, _check_max_pool),
    aten.max_pool2d.default: OpRule(_max_pool, _check_max_pool),
    aten.avg_pool2d.default: OpRule(_avg_pool, _check_avg_pool),
    aten._adaptive_avg_pool2d.default: OpRule(_mean, _check_mean),
    aten.mean.dim: OpRule(_mean, _check_mean),
    aten.cat.default: OpRule(_cat),
    aten.clone.default: OpRule(_clone),
    **{op: OpRule(_sdpa, _check_sdpa) for op in SDPA_OPS},
    **{getattr(aten, name).Tensor: OpRule(_binary(name), _check_binary) for name in ("add", "sub", "mul", "div")},
    **{getattr(aten, name).Scalar: OpRule(_binary(name), _check_binary) for name in ("add", "sub", "mul", "div")},
}

# Views: free in PyTorch, so dnngraph takes them only on leaves (the partition's inputs and views
# of them), where they are applied in PyTorch at every call and the graph reads the result.
VIEW_OPS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.permute.default,
            aten.t.default, aten.transpose.int, aten.unsqueeze.default, aten.squeeze.dim, aten.alias.default}
