"""dnngraph.onnx against onnxruntime (CPU): one model per op family made with onnx.helper and
random weights, a ResNet-style block, an MLP and a ResNet-50, the unsupported-node report, the
NumPy fallback and the feed checks. Tolerances by precision (conftest.TOL)."""
import sys
import zlib

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dnngraph  # noqa: E402
import dnngraph.onnx as dgx  # noqa: E402
from conftest import TOL  # noqa: E402

OPSET = 20  # Gelu arrived in 20; onnxruntime 1.16+ runs it


def seeded(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def model(nodes, inputs, outputs, initializers=(), opset=OPSET):
    """A model: inputs / outputs as (name, shape) (shape None: left to inference), float32."""
    def info(name, shape, dtype=TensorProto.FLOAT):
        return helper.make_tensor_value_info(name, dtype, shape)
    g = helper.make_graph(nodes, "test", [info(*i) for i in inputs], [info(*o) for o in outputs],
                          [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def check(m, feeds, scale=1.0, dtype=np.float32, **load):
    """Runs `m` on dnngraph and onnxruntime and compares every output: relative tolerance by
    precision, absolute the same relative to the output's peak (random-weight nets grow large)."""
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for channels_last in (True, False):  # the layout is the library's business: both must agree with ort
        session = dgx.load(m, channels_last=channels_last, **load)
        compare(session.run(None, feeds), ref, scale, dtype)
    return session


def compare(ours, ref, scale, dtype):
    assert len(ours) == len(ref)
    for a, r in zip(ours, ref):
        assert a.shape == r.shape and a.dtype == r.dtype
        tol = TOL[dtype] * scale
        peak = max(1.0, float(np.abs(r.astype(np.float64)).max()))
        np.testing.assert_allclose(a.astype(np.float64), r.astype(np.float64), rtol=tol, atol=tol * peak)


def rand(rng, *shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, size=shape).astype(np.float32)


def one(op, in_shapes, attrs=None, initializers=(), extra_inputs=(), n="node"):
    """A model of one node on inputs x0, x1, ... (then the named extra inputs), output y."""
    names = [f"x{i}" for i in range(len(in_shapes))] + list(extra_inputs)
    node = helper.make_node(op, names, ["y"], name=n, **(attrs or {}))
    return model([node], [(f"x{i}", s) for i, s in enumerate(in_shapes)], [("y", None)], initializers)


def feeds_for(rng, m, low=-1.0, high=1.0):
    return {i.name: rand(rng, *[d.dim_value for d in i.type.tensor_type.shape.dim], low=low, high=high)
            for i in m.graph.input}


@pytest.mark.parametrize("attrs,x,w", [
    ({"pads": [1, 1, 1, 1]}, (2, 4, 9, 9), (8, 4, 3, 3)),
    ({"strides": [2, 2], "pads": [0, 1, 2, 1]}, (1, 3, 10, 11), (5, 3, 3, 3)),
    ({"dilations": [2, 2], "pads": [2, 2, 2, 2]}, (1, 4, 8, 8), (4, 4, 3, 3)),
    ({"group": 2, "pads": [1, 1, 1, 1]}, (2, 4, 6, 6), (6, 2, 3, 3)),
    ({"group": 8, "pads": [1, 1, 1, 1]}, (1, 8, 7, 7), (8, 1, 3, 3)),          # depthwise
    ({"auto_pad": "SAME_UPPER", "strides": [2, 2]}, (1, 3, 9, 8), (4, 3, 3, 3)),
    ({}, (2, 6, 5, 5), (7, 6, 1, 1)),
    ({"pads": [1, 1]}, (2, 3, 10), (4, 3, 3)),                                  # 1-D
    ({"pads": [1] * 6, "strides": [1, 2, 1]}, (1, 2, 5, 6, 7), (3, 2, 3, 3, 3)),  # 3-D
])
@pytest.mark.parametrize("bias", [True, False])
def test_conv(request, attrs, x, w, bias):
    rng = seeded(request.node.name)
    inits = [("w", rand(rng, *w))] + ([("b", rand(rng, w[0]))] if bias else [])
    m = one("Conv", [x], attrs, inits, ["w", "b"] if bias else ["w"])
    check(m, feeds_for(rng, m), scale=20)


@pytest.mark.parametrize("attrs,a,b,c", [
    ({}, (4, 6), (6, 5), (5,)),
    ({"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}, (6, 4), (5, 6), (4, 5)),
    ({"transB": 1}, (3, 8), (10, 8), None),
    ({"beta": 0.25}, (2, 3), (3, 4), (1, 4)),
])
def test_gemm(request, attrs, a, b, c):
    rng = seeded(request.node.name)
    inits = [("b", rand(rng, *b))] + ([("c", rand(rng, *c))] if c else [])
    m = one("Gemm", [a], attrs, inits, ["b", "c"] if c else ["b"])
    check(m, feeds_for(rng, m), scale=10)


def test_gemm_with_runtime_operands(request):
    rng = seeded(request.node.name)
    m = one("Gemm", [(6, 4), (5, 6), (4, 5)], {"transA": 1, "transB": 1, "alpha": 1.5, "beta": 0.5})
    check(m, feeds_for(rng, m), scale=10)


@pytest.mark.parametrize("a,b", [((4, 6), (6, 5)), ((2, 3, 4, 6), (6, 5)), ((2, 3, 4, 6), (3, 6, 2)),
                                 ((6,), (6, 5)), ((3, 4, 6), (6,))])
def test_matmul(request, a, b):
    rng = seeded(request.node.name)
    m = one("MatMul", [a, b])
    check(m, feeds_for(rng, m), scale=10)


@pytest.mark.parametrize("op,attrs", [("Relu", {}), ("LeakyRelu", {"alpha": 0.2}), ("LeakyRelu", {}),
                                      ("Sigmoid", {}), ("Tanh", {}), ("Gelu", {}), ("Gelu", {"approximate": "tanh"}),
                                      ("HardSwish", {}), ("Exp", {}), ("Neg", {}), ("Abs", {})])
def test_activations(request, op, attrs):
    rng = seeded(request.node.name)
    m = one(op, [(2, 3, 4, 5)], attrs)
    check(m, feeds_for(rng, m, low=-4, high=4), scale=10)


@pytest.mark.parametrize("lo,hi", [(0.0, 6.0), (-0.5, None), (None, 0.25)])
def test_clip(request, lo, hi):
    rng = seeded(request.node.name)
    names = ["x0", "lo" if lo is not None else "", "hi" if hi is not None else ""]
    inits = [(n, np.float32(v)) for n, v in (("lo", lo), ("hi", hi)) if v is not None]
    node = helper.make_node("Clip", names, ["y"], name="clip")
    m = model([node], [("x0", (3, 7))], [("y", None)], inits)
    check(m, {"x0": rand(rng, 3, 7, low=-8, high=8)})


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("a,b", [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)),
                                 ((1, 3, 1, 1), (2, 3, 5, 5)), ((2, 3), ())])
def test_binary_broadcast(request, op, a, b):
    rng = seeded(request.node.name)
    m = one(op, [a, b])
    feeds = feeds_for(rng, m)
    feeds["x1"] = rand(rng, *b, low=0.5, high=2.0)  # Div: no divisor near zero
    check(m, feeds, scale=10)


def test_binary_with_constant(request):
    rng = seeded(request.node.name)
    m = one("Mul", [(2, 3, 4, 4)], initializers=[("k", rand(rng, 3, 1, 1))], extra_inputs=["k"])
    check(m, feeds_for(rng, m))


def test_batchnorm(request):
    rng = seeded(request.node.name)
    c = 6
    inits = [("s", rand(rng, c)), ("bb", rand(rng, c)), ("mean", rand(rng, c)), ("var", rand(rng, c, low=0.5, high=2))]
    m = one("BatchNormalization", [(2, c, 5, 5)], {"epsilon": 1e-3}, inits, ["s", "bb", "mean", "var"])
    check(m, feeds_for(rng, m), scale=10)


@pytest.mark.parametrize("shape,axis", [((4, 16), -1), ((2, 5, 12), -1), ((2, 3, 4, 5), 1)])
def test_layernorm(request, shape, axis):
    rng = seeded(request.node.name)
    p = shape[axis:] if axis >= 0 else shape[axis:]
    inits = [("s", rand(rng, *p)), ("bb", rand(rng, *p))]
    m = one("LayerNormalization", [shape], {"axis": axis, "epsilon": 1e-5}, inits, ["s", "bb"])
    s = check(m, feeds_for(rng, m), scale=20)
    # One layernorm node on cpu_norm_rowwise, X folded to [rows, cols] (and back) by layout copies.
    chosen = [line for g in s.graphs for line in g.explain().splitlines() if "(chosen)" in line]
    assert sum("cpu_norm_rowwise" in line for line in chosen) == 1, chosen
    assert sum("cpu_layout_copy" in line for line in chosen) == (0 if len(shape) == 2 else 2), chosen


@pytest.mark.parametrize("op,attrs", [
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ("AveragePool", {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1]}),
    ("AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
    ("AveragePool", {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),
    ("GlobalAveragePool", {}),
    ("GlobalMaxPool", {}),
])
def test_pooling(request, op, attrs):
    rng = seeded(request.node.name)
    m = one(op, [(2, 3, 9, 9)], attrs)
    check(m, feeds_for(rng, m), scale=10)


@pytest.mark.parametrize("shape,axis", [((4, 10), -1), ((2, 3, 7), 1), ((2, 3, 4, 5), -1)])
def test_softmax(request, shape, axis):
    rng = seeded(request.node.name)
    m = one("Softmax", [shape], {"axis": axis})
    check(m, feeds_for(rng, m, low=-5, high=5), scale=10)


def test_softmax_opset_11_coerces_to_2d(request):
    rng = seeded(request.node.name)
    node = helper.make_node("Softmax", ["x0"], ["y"], name="sm", axis=1)
    m = model([node], [("x0", (2, 3, 4))], [("y", None)], opset=11)
    check(m, feeds_for(rng, m), scale=10)


def test_layout_ops(request):
    rng = seeded(request.node.name)
    nodes = [helper.make_node("Transpose", ["x"], ["t"], name="tr", perm=[0, 2, 3, 1]),
             helper.make_node("Flatten", ["t"], ["f"], name="flat", axis=2),
             helper.make_node("Unsqueeze", ["f", "ax"], ["u"], name="unsq"),
             helper.make_node("Squeeze", ["u", "ax"], ["s"], name="sq"),
             helper.make_node("Concat", ["s", "s"], ["c"], name="cat", axis=1),
             helper.make_node("Reshape", ["c", "shape"], ["y"], name="reshape")]
    m = model(nodes, [("x", (2, 3, 4, 5))], [("y", None)],
              [("ax", np.array([1], np.int64)), ("shape", np.array([0, -1, 6], np.int64))])
    check(m, {"x": rand(rng, 2, 3, 4, 5)})
    check(m, {"x": rand(rng, 2, 3, 4, 5)}, layout_in_numpy=True)


def test_shape_subgraph_feeding_reshape_is_folded(request):
    # The exporters' flatten: Shape -> Gather(0) -> Unsqueeze -> Concat(-1) -> Reshape.
    rng = seeded(request.node.name)
    nodes = [helper.make_node("Shape", ["x"], ["sh"], name="shape"),
             helper.make_node("Gather", ["sh", "zero"], ["n"], name="gather", axis=0),
             helper.make_node("Unsqueeze", ["n", "ax"], ["n1"], name="unsq"),
             helper.make_node("Concat", ["n1", "minus1"], ["dims"], name="cat", axis=0),
             helper.make_node("Reshape", ["x", "dims"], ["r"], name="reshape"),
             helper.make_node("Relu", ["r"], ["y"], name="relu")]
    m = model(nodes, [("x", (2, 3, 4, 4))], [("y", None)],
              [("zero", np.array(0, np.int64)), ("ax", np.array([0], np.int64)),
               ("minus1", np.array([-1], np.int64))])
    s = check(m, {"x": rand(rng, 2, 3, 4, 4)})
    assert set(s.node_kinds) == {"reshape", "relu"}  # the shape nodes were folded at load


def test_cast_to_half_and_back(request):
    rng = seeded(request.node.name)
    nodes = [helper.make_node("Cast", ["x"], ["h"], name="to_half", to=TensorProto.FLOAT16),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Cast", ["r"], ["y"], name="to_float", to=TensorProto.FLOAT)]
    m = model(nodes, [("x", (4, 8))], [("y", None)])
    check(m, {"x": rand(rng, 4, 8)}, dtype=np.float16)


def test_resnet_block(request):
    import onnx_models
    rng = seeded(request.node.name)
    m = onnx_models.resnet_block(rng, n=2, c=16, hw=14)
    check(m, {"x": rand(rng, 2, 16, 14, 14)}, scale=50)


def test_mlp(request):
    import onnx_models
    rng = seeded(request.node.name)
    m = onnx_models.mlp(rng, n=8, sizes=(64, 128, 96, 10))
    check(m, {"x": rand(rng, 8, 64)}, scale=50)


def test_resnet50(request):
    import onnx_models
    rng = seeded(request.node.name)
    m = onnx_models.resnet50(rng, n=1, hw=64)
    # 53 convolutions deep in fp32 (Winograd among them): rounding differences add up layer by layer.
    check(m, {"x": rand(rng, 1, 3, 64, 64)}, scale=100)


def test_unsupported_nodes_are_all_reported_before_anything_runs():
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok"),
             helper.make_node("Einsum", ["a", "a"], ["b"], name="ein", equation="ij,ij->ij"),
             helper.make_node("MaxPool", ["x4"], ["p"], name="dilated_pool", kernel_shape=[2, 2], dilations=[2, 2]),
             helper.make_node("Conv", ["x4", "w"], ["c"], name="runtime_weights_ok"),
             helper.make_node("Add", ["b", "p2"], ["y"], name="int_add")]
    m = model(nodes, [("x", (2, 3)), ("x4", (1, 2, 6, 6)), ("w", (2, 2, 1, 1))],
              [("y", None), ("p", None), ("c", None)])
    m.graph.input.append(helper.make_tensor_value_info("p2", TensorProto.INT64, (2, 3)))
    with pytest.raises(dgx.UnsupportedModelError) as e:
        dgx.load(m)
    got = {(n, op) for n, op, _ in e.value.problems}
    assert got == {("ein", "Einsum"), ("dilated_pool", "MaxPool"), ("int_add", "Add")}
    text = str(e.value)
    assert "node 'ein' (Einsum): dnngraph has no op for ONNX's Einsum" in text
    assert "node 'dilated_pool' (MaxPool): dilations [2, 2]" in text
    assert "node 'int_add' (Add): input 'p2' has dtype int64" in text


def test_symbolic_dims_need_input_shapes(request):
    rng = seeded(request.node.name)
    m = one("Relu", [("batch", 4)])
    with pytest.raises(dgx.UnsupportedModelError, match=r"node 'x0' \(input\): dims \['batch'\] are symbolic"):
        dgx.load(m)
    s = dgx.load(m, input_shapes={"x0": (3, 4)})
    x = rand(rng, 3, 4)
    np.testing.assert_array_equal(s.run(["y"], {"x0": x})[0], np.maximum(x, 0))


def test_numpy_fallback_runs_between_dnngraph_graphs(request):
    rng = seeded(request.node.name)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Shape", ["c"], ["s"], name="shape"),       # folded: c's dims are static
             helper.make_node("Expand", ["k", "s"], ["ke"], name="expand"),  # folded too (both constant)
             helper.make_node("Where", ["mask", "c", "ke"], ["wh"], name="where"),  # runs in NumPy
             helper.make_node("Relu", ["wh"], ["y"], name="relu")]
    mask = rng.uniform(size=(1, 4, 5, 5)) > 0.5
    m = model(nodes, [("x", (1, 3, 5, 5))], [("y", None)],
              [("w", rand(rng, 4, 3, 3, 3)), ("k", np.float32(0.5)), ("mask", mask)])
    with pytest.raises(dgx.UnsupportedModelError, match=r"node 'where' \(Where\): dnngraph has no op"):
        dgx.load(m)
    s = check(m, {"x": rand(rng, 1, 3, 5, 5)}, scale=10, fallback="numpy")
    assert s.node_kinds == {"conv": "dnngraph", "where": "numpy", "relu": "dnngraph"}
    assert len(s.graphs) == 2


def test_run_checks_its_feeds(request):
    rng = seeded(request.node.name)
    s = dgx.load(one("Relu", [(2, 3)]))
    with pytest.raises(ValueError, match=r"input 'x0' is float64\[2, 3\]; the session was loaded for float32\[2, 3\]"):
        s.run(None, {"x0": np.zeros((2, 3))})
    with pytest.raises(ValueError, match="not given the model's input 'x0'"):
        s.run(None, {})
    with pytest.raises(ValueError, match=r"\['z'\], which are not inputs"):
        s.run(None, {"x0": rand(rng, 2, 3), "z": rand(rng, 1)})
    with pytest.raises(ValueError, match=r"\['q'\] are not outputs"):
        s.run(["q"], {"x0": rand(rng, 2, 3)})
    with pytest.raises(ValueError, match="fallback must be one of"):
        dgx.load(one("Relu", [(2, 3)]), fallback="gpu")
    with pytest.raises(ValueError, match="fallback='torch' needs a CUDA session on PyTorch arrays; this one runs on cpu"):
        dgx.load(one("Relu", [(2, 3)]), fallback="torch")

    with pytest.raises(ValueError, match="compute_precision must be None or one of"):
        dgx.load(one("Relu", [(2, 3)]), compute_precision="int8")
    with pytest.raises(ValueError, match="output_device='cuda' needs a CUDA session"):
        dgx.load(one("Relu", [(2, 3)]), output_device="cuda")
    with pytest.raises(ValueError, match="output_device 'cuda': this session on cpu returns 'cpu' results"):
        s.run(None, {"x0": rand(rng, 2, 3)}, output_device="cuda")


def test_a_cuda_session_without_torch_or_cupy_says_what_to_install(monkeypatch):
    class GpuHandle:  # stands in for a CUDA handle on a machine without one
        is_cuda = True
        device = "cuda:0"

    monkeypatch.setitem(sys.modules, "torch", None)  # None in sys.modules makes the import fail
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(RuntimeError, match="needs PyTorch or CuPy for them"):
        dgx.load(one("Relu", [(2, 3)]), handle=GpuHandle())


def test_load_from_a_path_and_dlpack_inputs(request, tmp_path):
    rng = seeded(request.node.name)
    path = tmp_path / "relu.onnx"
    onnx.save(one("Sigmoid", [(2, 5)]), str(path))
    s = dgx.load(path)
    x = rand(rng, 2, 5)

    class Wrapped:  # an array known only through DLPack
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    (y,) = s.run(None, {"x0": Wrapped(x)})
    np.testing.assert_allclose(y, 1 / (1 + np.exp(-x)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fold", [True, False])
def test_batchnorm_folded_into_conv_or_not(request, fold):
    import onnx_models
    rng = seeded(request.node.name)
    m = onnx_models.resnet_block(rng, n=1, c=8, hw=10)
    s = check(m, {"x": rand(rng, 1, 8, 10, 10)}, scale=50, fold_batchnorm=fold)
    assert s.folded_batchnorms == (5 if fold else 0)
    explained = s.graphs[0].explain()
    assert ("batchnormalization" in explained) == (not fold)


def test_batchnorm_not_folded_when_the_conv_output_is_also_used():
    rng = seeded("bn_shared")
    c = 4
    inits = [("w", rand(rng, c, c, 1, 1)), ("s", rand(rng, c)), ("bb", rand(rng, c)), ("mean", rand(rng, c)),
             ("var", rand(rng, c, low=0.5, high=2))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("BatchNormalization", ["c", "s", "bb", "mean", "var"], ["b"], name="bn"),
             helper.make_node("Add", ["b", "c"], ["y"], name="add")]
    m = model(nodes, [("x", (1, c, 3, 3))], [("y", None)], inits)
    s = check(m, {"x": rand(rng, 1, c, 3, 3)}, scale=10)
    assert s.folded_batchnorms == 0


C4 = [("s", np.ones(4, np.float32)), ("bb", np.zeros(4, np.float32)), ("mean", np.zeros(4, np.float32)),
      ("var", np.ones(4, np.float32))]


@pytest.mark.parametrize("node,inits,reason", [
    (helper.make_node("Gelu", ["x"], ["y"], name="n", approximate="erf2"), [], "approximate='erf2' is not"),
    (helper.make_node("Clip", ["x", "x", ""], ["y"], name="n"), [], r"Clip's min \('x'\) must be a constant"),
    (helper.make_node("Dropout", ["x", "", "t"], ["y"], name="n"), [("t", np.array(True))], "training mode"),
    (helper.make_node("BatchNormalization", ["x", "s", "bb", "mean", "var"], ["y", "rm", "rv"], name="n",
                      training_mode=1), C4, "training mode"),
    (helper.make_node("LayerNormalization", ["x", "s"], ["y", "m"], name="n"), [("s", np.ones(5, np.float32))],
     "Mean / InvStdDev outputs are used"),
    (helper.make_node("AveragePool", ["x"], ["y"], name="n", kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1,
                      count_include_pad=1), [], "ceil_mode with count_include_pad=1"),
    (helper.make_node("Conv", ["x", "w"], ["y"], name="n", auto_pad="WRONG"),
     [("w", np.ones((2, 4, 1, 1), np.float32))], "auto_pad='WRONG'"),
    (helper.make_node("Max", ["x", "x", "x"], ["y"], name="n"), [], "3 inputs; dnngraph's pointwise max takes 2"),
    (helper.make_node("Relu", ["x"], ["y"], name="n", domain="com.example"), [], "domain 'com.example'"),
    (helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="n", output_shape=[6, 6]),
     [("w", np.ones((4, 1, 2, 2), np.float32))], "output_shape / auto_pad"),
    (helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="n"),
     [("st", np.array([0])), ("en", np.array([4])), ("ax", np.array([2])), ("sp", np.array([2]))], "step 2 on axis 2"),
])
def test_each_refusal_names_the_node_op_and_reason(node, inits, reason):
    g = helper.make_graph([node], "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 4, 5, 5))],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in node.output if o],
                          [numpy_helper.from_array(np.asarray(a), n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.example", 1)],
                          ir_version=9)
    with pytest.raises(dgx.UnsupportedModelError, match=rf"node 'n' \({node.op_type}\): .*{reason}") as e:
        dgx.load(m)
    assert [(n, op) for n, op, _ in e.value.problems] == [("n", node.op_type)]


def test_dropout_in_inference_is_the_identity(request):
    rng = seeded(request.node.name)
    nodes = [helper.make_node("Dropout", ["x", "", "off"], ["d"], name="drop"),
             helper.make_node("Tanh", ["d"], ["y"], name="tanh")]
    m = model(nodes, [("x", (3, 4))], [("y", None)], [("off", np.array(False))])
    check(m, {"x": rand(rng, 3, 4)})


@pytest.mark.parametrize("attrs,x,w", [
    ({"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}, (1, 4, 5, 5), (4, 3, 3, 3)),
    ({}, (2, 3, 4, 4), (3, 5, 2, 2)),
    ({"strides": [2, 2]}, (1, 6, 4, 3), (6, 2, 2, 2)),
])
def test_conv_transpose(request, attrs, x, w):
    rng = seeded(request.node.name)
    m = one("ConvTranspose", [x], attrs, [("w", rand(rng, *w)), ("b", rand(rng, w[1]))], ["w", "b"])
    check(m, feeds_for(rng, m), scale=20)


@pytest.mark.parametrize("starts,ends,axes", [([1], [3], [1]), ([0, -3], [2, 9223372036854775807], [0, 3]),
                                              ([1, 1, 1], [-1, -1, -1], None)])
def test_slice(request, starts, ends, axes):
    rng = seeded(request.node.name)
    inits = [("st", np.array(starts, np.int64)), ("en", np.array(ends, np.int64))]
    names = ["st", "en"]
    if axes is not None:
        inits.append(("ax", np.array(axes, np.int64)))
        names.append("ax")
    m = one("Slice", [(3, 4, 5, 6)], initializers=inits, extra_inputs=names)
    check(m, feeds_for(rng, m))


def test_instance_normalization(request):
    rng = seeded(request.node.name)
    m = one("InstanceNormalization", [(2, 3, 5, 6)], {"epsilon": 1e-4},
            [("s", rand(rng, 3)), ("bb", rand(rng, 3))], ["s", "bb"])
    check(m, feeds_for(rng, m), scale=20)


@pytest.mark.parametrize("attrs,scales", [
    ({"mode": "nearest"}, [1, 1, 2, 2]),
    ({"mode": "nearest", "nearest_mode": "floor", "coordinate_transformation_mode": "asymmetric"}, [1, 1, 3, 2]),
    ({"mode": "linear"}, [1, 1, 2, 2]),
    ({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, [1, 1, 2, 3]),
])
def test_resize(request, attrs, scales):
    rng = seeded(request.node.name)
    m = one("Resize", [(1, 2, 4, 5)], attrs, [("sc", np.array(scales, np.float32))], ["", "sc"])
    check(m, feeds_for(rng, m), scale=10)


def test_a_graph_the_library_refuses_at_build_keeps_its_message_and_code(request):
    m = one("Conv", [(1, 2, 3, 3)], {}, [("w", rand(seeded(request.node.name), 2, 2, 5, 5))], ["w"])
    with pytest.raises(ValueError, match=r"building dnngraph graph 0 of the model: SHAPE_DEDUCTION_FAILED: "
                                         r"node 'node' \(conv_fprop\), tensor 'x0'") as e:
        dgx.load(m)
    assert e.value.code == dnngraph.error_code.SHAPE_DEDUCTION_FAILED


@pytest.mark.parametrize("fuse,layout_in_numpy", [(True, False), (False, False), (True, True)])
def test_transformer_encoder_layer(request, fuse, layout_in_numpy):
    import onnx_models
    rng = seeded(request.node.name)
    m = onnx_models.encoder_layer(rng, b=2, s=16, e=64, heads=4)
    s = check(m, {"x": rand(rng, 2, 16, 64)}, scale=50, fuse_attention=fuse, layout_in_numpy=layout_in_numpy)
    assert s.fused_attentions == (1 if fuse else 0)
    layout = {n for n, kind in s.node_kinds.items() if kind == "array"}
    assert len(layout) == (8 if layout_in_numpy else 0)  # Q, K, V, merge: a Reshape and a Transpose each
    assert len(s.graphs) == (5 if layout_in_numpy else 1)
    chosen = [line for g in s.graphs for line in g.explain().splitlines() if "(chosen)" in line]
    assert any("sdpa" in line for line in chosen) == fuse


def test_zero_pad_before_conv_becomes_its_padding(request):
    rng = seeded(request.node.name)
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"], name="pad"),
             helper.make_node("Conv", ["p", "w"], ["y"], name="conv", pads=[1, 0, 1, 0])]
    m = model(nodes, [("x", (1, 3, 6, 7))], [("y", None)],
              [("pads", np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)), ("w", rand(rng, 4, 3, 3, 3))])
    s = check(m, {"x": rand(rng, 1, 3, 6, 7)}, scale=10)
    assert s.folded_pads == 1 and list(s.node_kinds) == ["conv"]


def test_reflect_pad_runs_in_numpy_under_the_fallback(request):
    rng = seeded(request.node.name)
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"], name="pad", mode="reflect"),
             helper.make_node("Conv", ["p", "w"], ["y"], name="conv")]
    m = model(nodes, [("x", (1, 3, 6, 7))], [("y", None)],
              [("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)), ("w", rand(rng, 4, 3, 3, 3))])
    with pytest.raises(dgx.UnsupportedModelError, match=r"node 'pad' \(Pad\): mode 'reflect': dnngraph has no op"):
        dgx.load(m)
    s = check(m, {"x": rand(rng, 1, 3, 6, 7)}, scale=10, fallback="numpy")
    assert s.folded_pads == 0 and s.node_kinds == {"pad": "numpy", "conv": "dnngraph"}


def _half_model(nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "half", [helper.make_tensor_value_info(n, TensorProto.FLOAT16, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT16, None) for n in outputs],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=9)


def test_float16_models(request):
    # fp16 in and out, computed in fp32 inside the graph: the fp16 tolerance.
    rng = seeded(request.node.name)
    conv = _half_model([helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                        helper.make_node("Relu", ["c"], ["y"], name="relu")], [("x", (1, 8, 8, 8))], ["y"],
                       [("w", rand(rng, 8, 8, 3, 3).astype(np.float16)), ("b", rand(rng, 8).astype(np.float16))])
    check(conv, {"x": rand(rng, 1, 8, 8, 8).astype(np.float16)}, scale=10, dtype=np.float16)
    mm = _half_model([helper.make_node("MatMul", ["x", "w"], ["c"], name="mm"),
                      helper.make_node("Gelu", ["c"], ["y"], name="gelu")],
                     [("x", (4, 32))], ["y"], [("w", rand(rng, 32, 16).astype(np.float16))])
    check(mm, {"x": rand(rng, 4, 32).astype(np.float16)}, scale=10, dtype=np.float16)


def test_outputs_that_no_op_produces(request):
    # An Identity of the input, a folded Shape (a constant), and a Relu, as the model's outputs.
    rng = seeded(request.node.name)
    nodes = [helper.make_node("Identity", ["x"], ["same"], name="id"),
             helper.make_node("Shape", ["x"], ["dims"], name="shape"),
             helper.make_node("Relu", ["x"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, 3, 4, 5))],
                          [helper.make_tensor_value_info("same", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("dims", TensorProto.INT64, None),
                           helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=9)
    s = check(m, {"x": rand(rng, 2, 3, 4, 5)})
    assert s.node_kinds == {"id": "dnngraph", "relu": "dnngraph"}


def test_mobilenet_v2(request):
    import onnx_models
    rng = seeded(request.node.name)
    m = onnx_models.mobilenet_v2(rng, n=1, hw=64, classes=100)
    s = check(m, {"x": rand(rng, 1, 3, 64, 64)}, scale=100)
    assert s.folded_batchnorms == 52


def test_a_numpy_node_that_fails_at_run_is_named(request):
    rng = seeded(request.node.name)
    # Gather with an index past the end: shape inference cannot see it, NumPy raises at run.
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Gather", ["r", "idx"], ["y"], name="gather", axis=0)]
    m = model(nodes, [("x", (3, 4))], [("y", None)], [("idx", np.array([5], np.int64))])
    s = dgx.load(m, fallback="numpy")
    with pytest.raises(RuntimeError, match=r"node 'gather' \(Gather\) failed in NumPy: index 5 is out of bounds"):
        s.run(None, {"x": rand(rng, 3, 4)})


@pytest.mark.parametrize("kind", ["causal", "causal_large_negative", "not_causal"])
def test_attention_with_an_additive_mask(request, kind):
    import onnx_models
    rng = seeded(request.node.name)
    s_len = 12
    upper = np.triu(np.ones((s_len, s_len), bool), k=1)
    mask = np.where(upper, -np.inf if kind == "causal" else -1e9, 0.0)
    if kind == "not_causal":
        mask[0, 1] = 0.0  # one hidden key shown: a mask the rewrite must leave to the ops one by one
    m = onnx_models.encoder_layer(rng, b=2, s=s_len, e=32, heads=2, mask=mask)
    s = check(m, {"x": rand(rng, 2, s_len, 32)}, scale=50)
    assert s.fused_attentions == (0 if kind == "not_causal" else 1)


def test_a_float64_model_stays_float64_inside_its_graph(request):
    """Relu -> MaxPool -> Mul -> Sigmoid -> Add of doubles: the graph's intermediates keep the
    model's float64 (they had been float32, 5.6e-8 off onnxruntime), so the result matches to
    double rounding."""
    rng = seeded(request.node.name)
    s = rng.standard_normal((1, 3, 1, 1))
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Mul", ["p", "s"], ["m"], name="mul"),
             helper.make_node("Sigmoid", ["m"], ["e"], name="sigmoid"),
             helper.make_node("Add", ["e", "p"], ["y"], name="add")]
    g = helper.make_graph(nodes, "doubles", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, (1, 3, 8, 8))],
                          [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)],
                          [numpy_helper.from_array(s, "s")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=9)
    x = rng.standard_normal((1, 3, 8, 8))
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    (y,) = dgx.load(m).run(None, {"x": x})
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12 * float(np.abs(ref).max()))
