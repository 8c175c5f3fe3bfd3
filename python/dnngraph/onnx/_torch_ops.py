"""PyTorch evaluators for fallback="torch" on a CUDA session: the nodes dnngraph refuses, and the
ops for which dnngraph has no CUDA engine yet (its pooling, concatenate and slice, and the Pad
built from them, run on `ref`, which stages GPU memory through the host and cannot be captured
in a CUDA graph), run as torch ops on the session's device arrays, on torch's current stream (so
they are captured too). Each evaluator takes the tensors of `inputs(node)`, in order."""
from ._numpy_ops import attributes
from ._ops_nn import window_padding

# Ops run with torch under fallback="torch" even though dnngraph lowers them: dnngraph has no
# CUDA engine for them yet (docs/engines.md), so they would run on `ref` through the host.
NO_CUDA_ENGINE = {"Pad", "Concat", "Slice"}


def _text(v):
    return v.decode() if isinstance(v, bytes) else v


def _pool(F, node, x, attrs, prepared):
    kernel = [int(k) for k in attrs["kernel_shape"]]
    n = len(kernel)
    if n != 2 or (len(node.output) > 1 and node.output[1]):
        return None
    strides = [int(s) for s in attrs.get("strides", [1] * n)]
    dilations = [int(d) for d in attrs.get("dilations", [1] * n)]
    pre, post = window_padding(attrs, prepared.values[node.input[0]].shape[2:], kernel, strides, dilations)
    ceil = bool(attrs.get("ceil_mode", 0))
    # torch pads symmetrically, by at most half the (dilated) window; other pads go in by F.pad.
    inline = pre == post and all(2 * p <= (k - 1) * d + 1 for p, k, d in zip(pre, kernel, dilations))
    pads = (pre[1], post[1], pre[0], post[0])
    if node.op_type == "MaxPool":
        if inline:
            return lambda t: F.max_pool2d(t, kernel, strides, pre, dilations, ceil_mode=ceil)
        return lambda t: F.max_pool2d(F.pad(t, pads, value=float("-inf")), kernel, strides, 0, dilations,
                                      ceil_mode=ceil)
    include = bool(attrs.get("count_include_pad", 0))
    if any(d != 1 for d in dilations) or (not inline and not include):
        return None  # excluded pads that torch cannot take inline: left to dnngraph
    if inline:
        return lambda t: F.avg_pool2d(t, kernel, strides, pre, ceil_mode=ceil, count_include_pad=include)
    return lambda t: F.avg_pool2d(F.pad(t, pads), kernel, strides, 0, ceil_mode=ceil, count_include_pad=True)


def _pad(F, node, x, attrs, prepared):
    mode = _text(attrs.get("mode", "constant"))
    c = prepared.constants
    if prepared.opset < 11 or node.input[1] not in c or (len(node.input) > 3 and node.input[3]):
        return None
    if len(node.input) > 2 and node.input[2] and node.input[2] not in c:
        return None
    pads = [int(p) for p in c[node.input[1]].reshape(-1)]
    rank = len(pads) // 2
    value = float(c[node.input[2]].reshape(-1)[0]) if len(node.input) > 2 and node.input[2] else 0.0
    torch_mode = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}.get(mode)
    if torch_mode is None or (torch_mode != "constant" and any(pads[i] or pads[rank + i] for i in (0, 1))):
        return None  # torch pads the spatial dims only in the other modes
    pairs = []  # torch lists (before, after) from the last axis backwards
    for axis in reversed(range(0 if torch_mode == "constant" else 2, rank)):
        pairs += [pads[axis], pads[rank + axis]]
    if torch_mode == "constant":
        return lambda t: F.pad(t, pairs, mode="constant", value=value)
    return lambda t: F.pad(t, pairs, mode=torch_mode)


def _concat(F, node, x, attrs, prepared):
    import torch
    axis = int(attrs["axis"]) % len(prepared.values[node.output[0]].shape)
    return lambda *ts: torch.cat(ts, axis)


def _slice(F, node, x, attrs, prepared):
    c = prepared.constants
    names = list(node.input[1:])
    if any(n and n not in c for n in names) or prepared.opset < 10:
        return None
    starts, ends = (c[n].reshape(-1) for n in names[:2])
    rank = len(prepared.values[node.input[0]].shape)
    axes = c[names[2]].reshape(-1) if len(names) > 2 and names[2] else range(len(starts))
    steps = c[names[3]].reshape(-1) if len(names) > 3 and names[3] else [1] * len(starts)
    index = [slice(None)] * rank
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if int(step) < 1:
            return None  # torch slices forwards only
        index[int(axis) % rank] = slice(int(start), int(end), int(step))
    return lambda t: t[tuple(index)]


_BUILDERS = {"MaxPool": _pool, "AveragePool": _pool, "Pad": _pad, "Concat": _concat, "Slice": _slice}


def inputs(node):
    """The node's inputs that its evaluator takes as tensors (the others are constants read at load)."""
    return [n for n in node.input if n] if node.op_type == "Concat" else [node.input[0]]


def evaluator(node, prepared):
    """A function of the node's first input (a torch tensor) giving its output, or None when this
    module has none for the node's op and attributes."""
    build = _BUILDERS.get(node.op_type)
    if (build is None or node.domain not in ("", "ai.onnx") or node.input[0] not in prepared.values
            or node.output[0] not in prepared.values):
        return None
    import torch.nn.functional as F
    return build(F, node, node.input[0], attributes(node), prepared)
