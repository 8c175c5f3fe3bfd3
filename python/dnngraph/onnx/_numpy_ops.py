"""NumPy evaluators for the ONNX ops that constant folding needs (the shape-only subgraphs:
Shape, Gather, Concat, Unsqueeze, ... feeding a Reshape) and that `fallback="numpy"` may run
between dnngraph graphs. Each takes the node, its input arrays (None for an omitted optional
input) and the node's attributes as a dict, and returns the list of its output arrays."""
import numpy as np
from onnx import helper, numpy_helper


def attributes(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _axes(node, inputs, attrs, index=1):
    """Axes from the attribute (opsets before 13/18) or from the input (after)."""
    if "axes" in attrs:
        return [int(a) for a in attrs["axes"]]
    if len(inputs) > index and inputs[index] is not None:
        return [int(a) for a in inputs[index].reshape(-1)]
    return None


def _shape(node, x, attrs):
    dims = np.array(x.shape, np.int64)
    start, end = attrs.get("start", 0), attrs.get("end", None)
    return [dims[start:end]]


def _gather(node, x, indices, attrs):
    return [np.take(x, indices.astype(np.int64), axis=attrs.get("axis", 0))]


def _concat(node, *xs, attrs):
    return [np.concatenate(xs, axis=attrs["axis"])]


def _unsqueeze(node, x, *rest, attrs):
    out, axes = x, _axes(node, (x,) + rest, attrs)
    rank = x.ndim + len(axes)
    for a in sorted(a % rank for a in axes):
        out = np.expand_dims(out, a)
    return [out]


def _squeeze(node, x, *rest, attrs):
    axes = _axes(node, (x,) + rest, attrs)
    if axes is None:
        return [np.squeeze(x)]
    return [np.squeeze(x, axis=tuple(a % x.ndim for a in axes))]


def _reshape(node, x, shape, attrs):
    dims = [int(d) for d in shape]
    if not attrs.get("allowzero", 0):
        dims = [x.shape[i] if d == 0 else d for i, d in enumerate(dims)]
    return [x.reshape(dims)]


def _cast(node, x, attrs):
    return [x.astype(helper.tensor_dtype_to_np_dtype(attrs["to"]))]


def _slice(node, x, starts, ends, axes=None, steps=None, attrs=None):
    axes = range(len(starts)) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[int(a) % x.ndim] = slice(int(s), int(e), int(st))
    return [x[tuple(index)]]


def _constant(node, attrs):
    if "value" in attrs:
        return [numpy_helper.to_array(attrs["value"])]
    for key, dtype in (("value_float", np.float32), ("value_int", np.int64)):
        if key in attrs:
            return [np.array(attrs[key], dtype)]
    for key, dtype in (("value_floats", np.float32), ("value_ints", np.int64)):
        if key in attrs:
            return [np.array(list(attrs[key]), dtype)]
    raise ValueError(f"Constant node '{node.name}': no value attribute this importer reads")


def _binary(fn):
    def run(node, a, b, attrs):
        return [np.asarray(fn(a, b)).astype(np.result_type(a, b), copy=False)]  # ONNX keeps the inputs' type
    return run


def _int_div(a, b):
    # ONNX Div on integers truncates toward zero (shape arithmetic uses it).
    if np.issubdtype(np.result_type(a, b), np.integer):
        return np.trunc(a / b).astype(np.result_type(a, b))
    return a / b


def _constant_of_shape(node, shape, attrs):
    value = numpy_helper.to_array(attrs["value"]) if "value" in attrs else np.zeros(1, np.float32)
    return [np.full([int(d) for d in shape], value.reshape(-1)[0], value.dtype)]


def _range(node, start, limit, delta, attrs):
    return [np.arange(start, limit, delta).astype(start.dtype)]


def _softmax(node, x, attrs):
    axis = attrs.get("axis", -1)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return [(e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)]


def _pad(node, x, pads, value=None, axes=None, attrs=None):
    mode = attrs.get("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    axes = range(x.ndim) if axes is None else [int(a) % x.ndim for a in axes]
    p = [int(v) for v in pads]
    widths = [(0, 0)] * x.ndim
    for i, a in enumerate(axes):
        widths[a] = (p[i], p[len(axes) + i])
    if mode == "constant":
        fill = 0 if value is None else value.reshape(-1)[0]
        return [np.pad(x, widths, constant_values=fill)]
    return [np.pad(x, widths, mode={"reflect": "reflect", "edge": "edge", "wrap": "wrap"}[mode])]


def _flatten(node, x, attrs):
    axis = attrs.get("axis", 1) % (x.ndim + 1) if x.ndim else 0
    return [x.reshape(int(np.prod(x.shape[:axis], dtype=np.int64)), -1)]


EVALUATORS = {
    "Transpose": lambda node, x, attrs: [np.transpose(x, attrs.get("perm"))],
    "Flatten": _flatten,
    "Pad": lambda node, *xs, attrs: _pad(node, *xs, attrs=attrs),
    "Shape": _shape,
    "Gather": _gather,
    "Concat": lambda node, *xs, attrs: _concat(node, *xs, attrs=attrs),
    "Unsqueeze": lambda node, *xs, attrs: _unsqueeze(node, *xs, attrs=attrs),
    "Squeeze": lambda node, *xs, attrs: _squeeze(node, *xs, attrs=attrs),
    "Reshape": _reshape,
    "Cast": _cast,
    "Slice": lambda node, *xs, attrs: _slice(node, *xs, attrs=attrs),
    "Constant": _constant,
    "ConstantOfShape": _constant_of_shape,
    "Range": _range,
    "Identity": lambda node, x, attrs: [x],
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Div": _binary(_int_div),
    "Neg": lambda node, x, attrs: [-x],
    "Exp": lambda node, x, attrs: [np.exp(x)],
    "Sqrt": lambda node, x, attrs: [np.sqrt(x)],
    "Softmax": _softmax,
    "Equal": lambda node, a, b, attrs: [np.equal(a, b)],
    "Where": lambda node, c, a, b, attrs: [np.where(c, a, b)],
    "Expand": lambda node, x, shape, attrs: [x * np.ones([int(d) for d in shape], x.dtype)],
}

# Ops whose outputs depend only on their inputs' shapes, not their values: folded when the
# input's shape is static even though its data is not known at load time.
SHAPE_ONLY = {"Shape"}


def evaluate(node, inputs):
    """The node's outputs from NumPy inputs; KeyError when there is no evaluator for its op."""
    fn = EVALUATORS[node.op_type]
    return fn(node, *inputs, attrs=attributes(node))
