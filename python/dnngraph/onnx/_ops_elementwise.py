"""Translators for ONNX's elementwise ops and the layout ops: activations, broadcast arithmetic,
Clip, Cast, Softmax, Reshape / Flatten / Squeeze / Unsqueeze, Transpose, Concat, Identity."""
import numpy as np

import dnngraph
from ._lower import Unsupported, data_type, dims

FLOAT_MAX = float(np.finfo(np.float32).max)


def _unary(method, **fixed):
    def lower(L, node, attrs):
        data_type(L.dtype(node.input[0]), f"input '{node.input[0]}'")
        L.set(node.output[0], getattr(L.graph, method)(L.tensor(node.input[0]), name=node.name, **fixed))
    return lower


def _leaky_relu(L, node, attrs):
    L.set(node.output[0], L.graph.leaky_relu(L.tensor(node.input[0]), negative_slope=float(attrs.get("alpha", 0.01)),
                                             name=node.name))


def _gelu(L, node, attrs):
    approximate = attrs.get("approximate", b"none")
    approximate = approximate.decode() if isinstance(approximate, bytes) else approximate
    method = {"none": "gelu", "tanh": "gelu_approx_tanh"}.get(approximate)
    if method is None:
        raise Unsupported(f"approximate='{approximate}' is not 'none' or 'tanh'")
    L.set(node.output[0], getattr(L.graph, method)(L.tensor(node.input[0]), name=node.name))


def _binary(method):
    def lower(L, node, attrs):
        if len(node.input) != 2:
            raise Unsupported(f"{len(node.input)} inputs; dnngraph's pointwise {method} takes 2")
        for n in node.input:
            data_type(L.dtype(n), f"input '{n}'")
        rank = len(L.shape(node.output[0]))
        a, b = (L.at_rank(n, rank) for n in node.input)
        L.set(node.output[0], getattr(L.graph, method)(a, b, name=node.name))
    return lower


def _clip_bound(L, node, attrs, index, key):
    if len(node.input) > index and node.input[index]:
        return float(L.const(node.input[index], f"Clip's {key}").reshape(-1)[0])
    return float(attrs[key]) if key in attrs else None


def _clip(L, node, attrs):
    lo, hi = _clip_bound(L, node, attrs, 1, "min"), _clip_bound(L, node, attrs, 2, "max")
    # relu with a lower clip and zero slope is max(x, lo); with an upper clip, min(., hi).
    L.set(node.output[0], L.graph.relu(L.tensor(node.input[0]), lower_clip=-FLOAT_MAX if lo is None else lo,
                                       upper_clip=FLOAT_MAX if hi is None else hi, name=node.name))


def _cast(L, node, attrs):
    src, dst = L.dtype(node.input[0]), L.dtype(node.output[0])
    data_type(src, f"Cast's input '{node.input[0]}'")
    y = L.graph.identity(L.tensor(node.input[0]), name=node.name)
    y.set_data_type(L.dg_type(dst, f"Cast's output '{node.output[0]}'"))
    L.set(node.output[0], y)


def _softmax(L, node, attrs):
    shape = list(L.shape(node.input[0]))
    axis = attrs.get("axis", -1 if L.prepared.opset >= 13 else 1) % max(len(shape), 1)
    x = L.tensor(node.input[0])
    if L.prepared.opset < 13:
        # Before opset 13 Softmax coerces the input to 2-D at `axis` and normalizes each row.
        rows = int(np.prod(shape[:axis], dtype=np.int64))
        shape, axis = [rows, int(np.prod(shape[axis:], dtype=np.int64))], 1
        x = L.graph.reshape(x, dim=shape)
    reduced = [1 if i == axis else d for i, d in enumerate(shape)]
    g = L.graph
    peak = g.reduction(x, mode=dnngraph.reduction_mode.MAX, name=f"{node.name}.max")
    peak.set_dim(reduced)
    e = g.exp(g.sub(x, peak, name=f"{node.name}.shift"), name=f"{node.name}.exp")
    total = g.reduction(e, mode=dnngraph.reduction_mode.ADD, name=f"{node.name}.sum")
    total.set_dim(reduced)
    y = g.div(e, total, name=node.name)
    if L.prepared.opset < 13:
        y = g.reshape(y, dim=dims(L.shape(node.output[0])))
    L.set(node.output[0], y)


def _reshape_to_output(L, node, attrs):
    """Reshape, Flatten, Squeeze, Unsqueeze: the same elements in row-major order, with the dims
    shape inference gave the output (their shape inputs were folded at load)."""
    for n in node.input[1:]:
        if n:
            L.const(n, f"{node.op_type}'s shape/axes input")
    L.set(node.output[0], L.graph.reshape(L.tensor(node.input[0]), dim=dims(L.shape(node.output[0])),
                                          name=node.name))


def _transpose(L, node, attrs):
    rank = len(L.shape(node.input[0]))
    perm = [int(p) for p in attrs.get("perm", list(reversed(range(rank))))]
    L.set(node.output[0], L.graph.transpose(L.tensor(node.input[0]), perm, name=node.name))


def _concat(L, node, attrs):
    rank = len(L.shape(node.output[0]))
    for n in node.input:
        data_type(L.dtype(n), f"input '{n}'")
    L.set(node.output[0], L.graph.concatenate([L.tensor(n) for n in node.input], int(attrs["axis"]) % rank,
                                              name=node.name))


def _slice(L, node, attrs):
    shape = list(L.shape(node.input[0]))
    starts, ends = (L.const(n, f"Slice's {w}").reshape(-1) for n, w in zip(node.input[1:3], ("starts", "ends")))
    axes = (L.const(node.input[3], "Slice's axes").reshape(-1) if len(node.input) > 3 and node.input[3]
            else range(len(starts)))
    steps = (L.const(node.input[4], "Slice's steps").reshape(-1) if len(node.input) > 4 and node.input[4]
             else [1] * len(starts))
    bounds = [(0, d) for d in shape]
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if int(step) != 1:
            raise Unsupported(f"step {int(step)} on axis {int(axis)}: dnngraph's slice takes steps of 1")
        a = int(axis) % len(shape)
        # ONNX clamps like Python slicing (ends of INT64_MAX mean "to the end").
        lo, hi, _ = slice(int(start), int(end)).indices(shape[a])
        bounds[a] = (lo, max(hi, lo))
    L.set(node.output[0], L.graph.slice(L.tensor(node.input[0]), [slice(lo, hi) for lo, hi in bounds],
                                        name=node.name))


def _pad_arguments(L, node, attrs, rank):
    """(pre, post) per axis and the fill value of a constant-mode Pad (opset 11+: inputs)."""
    mode = attrs.get("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode != "constant":
        raise Unsupported(f"mode '{mode}': dnngraph has no op for it (fallback='numpy' runs it)")
    if L.prepared.opset < 11:
        pads, value = [int(p) for p in attrs["pads"]], float(attrs.get("value", 0.0))
        axes = list(range(rank))
    else:
        pads = [int(p) for p in L.const(node.input[1], "Pad's pads").reshape(-1)]
        value = 0.0
        if len(node.input) > 2 and node.input[2]:
            value = float(L.const(node.input[2], "Pad's constant_value").reshape(-1)[0])
        axes = (list(range(rank)) if len(node.input) <= 3 or not node.input[3]
                else [int(a) % rank for a in L.const(node.input[3], "Pad's axes").reshape(-1)])
    pre, post = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        pre[a], post[a] = pads[i], pads[len(axes) + i]
    return pre, post, value


def _pad(L, node, attrs):
    """Constant Pad: negative pads crop (a slice), then each padded axis is a concatenate of a
    constant block, the tensor and a constant block (dnngraph has no pad op of its own)."""
    shape = list(L.shape(node.input[0]))
    dtype = L.dtype(node.input[0])
    data_type(dtype, f"input '{node.input[0]}'")
    pre, post, value = _pad_arguments(L, node, attrs, len(shape))
    x = L.tensor(node.input[0])
    if any(p < 0 for p in pre + post):
        x = L.graph.slice(x, [slice(-min(a, 0), d + min(b, 0)) for a, b, d in zip(pre, post, shape)],
                          name=f"{node.name}.crop")
        shape = [d + min(a, 0) + min(b, 0) for a, b, d in zip(pre, post, shape)]
    for axis, (a, b) in enumerate(zip(pre, post)):
        parts = []
        for width, side in ((a, "pre"), (b, "post")):
            if width > 0:
                block = shape[:axis] + [width] + shape[axis + 1:]
                parts.append((side, L.array_tensor(np.full(block, value, dtype), f"{node.name}.{side}{axis}")))
        if parts:
            inputs = [t for side, t in parts if side == "pre"] + [x] + [t for side, t in parts if side == "post"]
            x = L.graph.concatenate(inputs, axis, name=f"{node.name}.axis{axis}")
            shape[axis] += max(a, 0) + max(b, 0)
    L.set(node.output[0], x)


def _alias(L, node, attrs):
    """Identity, and Dropout in inference (its mask output unused): the output is the input."""
    if len(node.output) > 1 and node.output[1]:
        raise Unsupported("Dropout's mask output is used")
    mode = node.input[2] if node.op_type == "Dropout" and len(node.input) > 2 else ""
    if mode and bool(L.const(mode, "Dropout's training_mode").reshape(-1)[0]):
        raise Unsupported("Dropout in training mode")
    L.set(node.output[0], L.tensor(node.input[0]))


TRANSLATORS = {
    "Relu": _unary("relu"), "Sigmoid": _unary("sigmoid"), "Tanh": _unary("tanh"), "HardSwish": _unary("hardswish"),
    "Erf": _unary("erf"), "Exp": _unary("exp"), "Log": _unary("log"), "Sqrt": _unary("sqrt"), "Neg": _unary("neg"),
    "Abs": _unary("abs"), "Reciprocal": _unary("reciprocal"), "Floor": _unary("floor"), "Ceil": _unary("ceil"),
    "LeakyRelu": _leaky_relu, "Gelu": _gelu, "Clip": _clip, "Cast": _cast, "Softmax": _softmax,
    "Add": _binary("add"), "Sub": _binary("sub"), "Mul": _binary("mul"), "Div": _binary("div"), "Pow": _binary("pow"),
    "Max": _binary("max"), "Min": _binary("min"),
    "Reshape": _reshape_to_output, "Flatten": _reshape_to_output, "Squeeze": _reshape_to_output,
    "Unsqueeze": _reshape_to_output, "Transpose": _transpose, "Concat": _concat, "Slice": _slice,
    "Identity": _alias, "Dropout": _alias, "Pad": _pad,
}
