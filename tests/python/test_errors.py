"""Errors become exceptions carrying the library's message and code: ValueError for a bad graph,
value or variant pack; GraphNotSupportedError when no engine takes the graph; RuntimeError otherwise."""
import numpy as np
import pytest

import dnngraph
from conftest import build, graph, poisoned, rand, workspace

code = dnngraph.error_code


def relu_graph(cpu, rng, shape=(2, 3)):
    g = graph(cpu)
    x = rand(rng, shape)
    X = g.tensor_like(x, name="X")
    Y = g.relu(X)
    Y.set_output(True)
    return g, X, Y, x


def test_bad_graph_is_value_error_naming_node_and_tensor(cpu):
    g = graph(cpu)
    A = g.tensor(dim=[1, 4, 5], name="A")
    B = g.tensor(dim=[1, 6, 3], name="B")
    g.matmul(A, B, name="mm").set_output(True)
    with pytest.raises(ValueError) as e:
        g.validate()
    assert e.value.code == code.SHAPE_DEDUCTION_FAILED
    assert "node 'mm'" in str(e.value)


def test_missing_output_is_invalid_graph(cpu):
    g = graph(cpu)
    g.relu(g.tensor(dim=[2]))
    with pytest.raises(ValueError) as e:
        g.validate()
    assert e.value.code == code.INVALID_GRAPH


def test_variant_pack_errors_name_the_tensor(cpu, rng):
    g, X, Y, x = relu_graph(cpu, rng)
    build(g)
    ws = workspace(g)
    y = poisoned((2, 3))
    cases = [
        ({Y: y}, "tensor 'X'.*missing"),
        ({X: x.astype(np.float64), Y: y}, "tensor 'X'.*FLOAT but the array is float64"),
        ({X: x[:1], Y: y}, "tensor 'X'.*spans 24 bytes"),
        ({X: x, Y: y, 999: y}, "uid 999"),
        ({X: "x", Y: y}, "tensor 'X'.*expected an array"),
        ({"X": x, Y: y}, "keys must be"),
        ({X: None, Y: y}, "null pointer"),
    ]
    for pack, pattern in cases:
        with pytest.raises(ValueError, match=pattern) as e:
            g.execute(pack, ws)
        assert e.value.code == code.INVALID_VARIANT_PACK
    frozen = y.copy()
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="output but the array is read-only"):
        g.execute({X: x, Y: frozen}, ws)


def test_tensor_of_another_graph(cpu, rng):
    g, X, Y, x = relu_graph(cpu, rng)
    other = graph(cpu).tensor(dim=[2, 3], name="stranger")
    build(g)
    with pytest.raises(ValueError, match="stranger"):
        g.execute({X: x, Y: poisoned((2, 3)), other: x}, workspace(g))


def test_workspace_too_small(cpu, rng):
    g = graph(cpu)
    a, b, c = rand(rng, (1, 4, 5)), rand(rng, (1, 5, 6)), rand(rng, (1, 6, 3))
    A, B, C = g.tensor_like(a), g.tensor_like(b), g.tensor_like(c)
    Y = g.matmul(g.relu(g.matmul(A, B)), C)  # two partitions: the intermediate lives in the workspace
    Y.set_output(True)
    build(g)
    need = g.get_workspace_size()
    assert need > 0
    pack = {A: a, B: b, C: c, Y: poisoned((1, 4, 3))}
    for ws in (np.empty(need - 1, np.uint8), None):
        with pytest.raises(ValueError) as e:
            g.execute(pack, ws)
        assert e.value.code == code.WORKSPACE_TOO_SMALL
    g.execute(pack, np.empty(need // 4 + 1, np.float32))  # any dtype: its size in bytes counts
    np.testing.assert_allclose(pack[Y], np.maximum(a @ b, 0) @ c, rtol=1e-5, atol=1e-5)


def test_no_engine_is_graph_not_supported(cpu, rng):
    g, X, Y, x = relu_graph(cpu, rng)
    g.select_engines(["cuda_pointwise_jit"])
    g.validate()
    g.build_operation_graph()
    with pytest.raises(dnngraph.GraphNotSupportedError) as e:
        g.create_execution_plans([dnngraph.heur_mode.A])
        g.check_support()
    assert e.value.code == code.GRAPH_NOT_SUPPORTED
    assert isinstance(e.value, RuntimeError)
    assert "cuda_pointwise_jit" in str(e.value)


def test_call_order_is_runtime_error(cpu, rng):
    g, X, Y, x = relu_graph(cpu, rng)
    with pytest.raises(RuntimeError) as e:
        g.execute({X: x, Y: poisoned((2, 3))}, None)
    assert e.value.code == code.INVALID_CALL_ORDER
    assert not isinstance(e.value, (ValueError, dnngraph.GraphNotSupportedError))


def test_bad_values(cpu):
    with pytest.raises(ValueError, match="not \"cpu\""):
        dnngraph.create_handle("tpu")
    with pytest.raises(ValueError, match="CPU handle has no streams"):
        dnngraph.set_stream(cpu, 1234)
    with pytest.raises(ValueError, match="not a data type"):
        graph(cpu).tensor(dim=[2], data_type="complex64")
    with pytest.raises(ValueError, match="expected an int"):
        dnngraph.set_stream(cpu, 1.5)


def test_unavailable_device_is_runtime_error():
    try:
        h = dnngraph.create_handle("cuda:7")
    except RuntimeError as e:
        assert e.code in (code.DEVICE_NOT_AVAILABLE, code.CUDA_API_FAILED)
        assert not isinstance(e, ValueError)
    else:
        assert h.is_cuda  # a machine with eight GPUs
