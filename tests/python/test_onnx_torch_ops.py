"""fallback="torch"'s evaluators (python/dnngraph/onnx/_torch_ops.py) map ONNX attributes onto
torch.nn.functional's arguments: checked here with a stand-in for torch.nn.functional that
records its calls, so they run without torch (the GPU tests run them on torch itself)."""
import numpy as np
import pytest

pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

from dnngraph.onnx import _model, _torch_ops  # noqa: E402


class RecordingF:
    """torch.nn.functional's pooling and pad, recording (name, args, kwargs) and returning a tag."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def call(*args, **kwargs):
            self.calls.append((name, args[1:], kwargs))
            return f"{name}-result"
        return call


class Prepared:
    def __init__(self, shapes, constants=None, opset=17):
        self.values = {n: _model.Value(n, s, np.dtype(np.float32)) for n, s in shapes.items()}
        self.constants = constants or {}
        self.opset = opset


def build(node, prepared):
    F = RecordingF()
    fn = _torch_ops._BUILDERS[node.op_type](F, node, node.input[0], _torch_ops.attributes(node), prepared)
    if fn is not None:
        fn("x")
    return fn, F.calls


def test_maxpool_symmetric_pads_go_inline():
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    _, calls = build(node, Prepared({"x": (2, 8, 16, 16), "y": (2, 8, 8, 8)}))
    assert calls == [("max_pool2d", ([3, 3], [2, 2], [1, 1], [1, 1]), {"ceil_mode": False})]


def test_maxpool_uneven_pads_pad_with_minus_infinity_first():
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 3], pads=[0, 1, 1, 2], ceil_mode=1)
    _, calls = build(node, Prepared({"x": (1, 4, 6, 6), "y": (1, 4, 6, 7)}))
    # F.pad lists (W before, W after, H before, H after); ONNX's pads are (H, W before, H, W after).
    assert calls[0] == ("pad", ((1, 2, 0, 1),), {"value": float("-inf")})
    assert calls[1] == ("max_pool2d", ([2, 3], [1, 1], 0, [1, 1]), {"ceil_mode": True})


def test_average_pool_includes_or_excludes_pads_as_onnx_says():
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    _, calls = build(node, Prepared({"x": (1, 4, 6, 6), "y": (1, 4, 6, 6)}))
    assert calls == [("avg_pool2d", ([3, 3], [1, 1], [1, 1]), {"ceil_mode": False, "count_include_pad": False})]
    uneven = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[0, 0, 1, 1])
    fn, _ = build(uneven, Prepared({"x": (1, 4, 6, 6), "y": (1, 4, 5, 5)}))
    assert fn is None  # excluded, uneven pads: torch cannot take them inline, so dnngraph keeps the node
    counted = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[0, 0, 1, 1],
                               count_include_pad=1)
    _, calls = build(counted, Prepared({"x": (1, 4, 6, 6), "y": (1, 4, 5, 5)}))
    assert calls[0] == ("pad", ((0, 1, 0, 1),), {})
    assert calls[1] == ("avg_pool2d", ([3, 3], [1, 1], 0), {"ceil_mode": False, "count_include_pad": True})


def test_three_d_pooling_and_the_indices_output_are_not_taken():
    pool3d = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2, 2])
    assert build(pool3d, Prepared({"x": (1, 2, 4, 4, 4), "y": (1, 2, 3, 3, 3)}))[0] is None
    indices = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2])
    assert build(indices, Prepared({"x": (1, 2, 4, 4), "y": (1, 2, 3, 3)}))[0] is None


def test_constant_pad_lists_the_axes_last_first():
    node = helper.make_node("Pad", ["x", "pads", "v"], ["y"])
    p = Prepared({"x": (2, 3, 6, 7), "y": (2, 3, 10, 9)},
                 {"pads": np.array([0, 0, 1, 2, 0, 0, 3, 0]), "v": np.array(0.5, np.float32)})
    _, calls = build(node, p)
    assert calls == [("pad", ([2, 0, 1, 3, 0, 0, 0, 0],), {"mode": "constant", "value": 0.5})]


def test_reflect_and_edge_pads_take_the_spatial_axes_only():
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="edge")
    p = Prepared({"x": (1, 3, 4, 4), "y": (1, 3, 6, 8)}, {"pads": np.array([0, 0, 1, 2, 0, 0, 1, 2])})
    _, calls = build(node, p)
    assert calls == [("pad", ([2, 2, 1, 1],), {"mode": "replicate"})]
    channels = Prepared({"x": (1, 3, 4, 4), "y": (1, 5, 4, 4)}, {"pads": np.array([0, 1, 0, 0, 0, 1, 0, 0])})
    assert build(helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect"), channels)[0] is None


def test_evaluator_needs_static_shapes_and_the_default_domain():
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])
    assert _torch_ops.evaluator(node, Prepared({"x": (1, 2, 4, 4)})) is None  # no shape for y
    other = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], domain="com.example")
    assert _torch_ops.evaluator(other, Prepared({"x": (1, 2, 4, 4), "y": (1, 2, 3, 3)})) is None
    assert _torch_ops.evaluator(helper.make_node("Relu", ["x"], ["y"]), Prepared({"x": (1,), "y": (1,)})) is None


def test_slice_takes_constant_bounds_and_forward_steps():
    node = helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])
    p = Prepared({"x": (2, 8, 6), "y": (2, 3, 6)},
                 {"st": np.array([1]), "en": np.array([7]), "ax": np.array([1]), "sp": np.array([2])})
    fn = _torch_ops._BUILDERS["Slice"](None, node, "x", {}, p)
    x = np.arange(96).reshape(2, 8, 6)
    np.testing.assert_array_equal(fn(x), x[:, 1:7:2])  # NumPy indexes as torch does
    p.constants["sp"] = np.array([-1])
    assert _torch_ops._BUILDERS["Slice"](None, node, "x", {}, p) is None
    assert _torch_ops.inputs(node) == ["x"]
    assert _torch_ops.inputs(helper.make_node("Concat", ["a", "b", "c"], ["y"], axis=1)) == ["a", "b", "c"]
