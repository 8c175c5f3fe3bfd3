"""dnngraph.Graph, the frontend's class form: ops on arrays, names "<node>::<slot>", the built graph
called positionally, with out=, or with a dict by name; every error names the user's name."""
import numpy as np
import pytest

import dnngraph
from conftest import assert_close, rand

F = dnngraph.data_type.FLOAT


def conv_graph(cpu, x, w, **kw):
    with dnngraph.Graph(handle=cpu, io_data_type=F, compute_data_type=F, **kw) as graph:
        y = graph.conv_fprop(image=x, weight=w, padding=[0, 0], stride=[1, 1], dilation=[1, 1], name="conv")
        graph.relu(y, name="relu").set_output(True)
    return graph


def conv_ref(x, w):
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    y = np.zeros((n, k, h - r + 1, wd - s + 1), np.float64)
    for i in range(r):
        for j in range(s):
            y += np.einsum("nchw,kc->nkhw", x[:, :, i:i + y.shape[2], j:j + y.shape[3]], w[:, :, i, j])
    return np.maximum(y, 0)


@pytest.fixture
def xw(rng):
    return rand(rng, (2, 4, 7, 7)), rand(rng, (3, 4, 3, 3))


def test_positional_call_returns_new_outputs(cpu, xw):
    x, w = xw
    graph = conv_graph(cpu, x, w, inputs=["conv::image", "conv::weight"], outputs=["relu::OUT"])
    y = graph(x, w)
    assert isinstance(y, np.ndarray) and y.shape == (2, 3, 5, 5)
    assert_close(y, conv_ref(x, w))
    x2 = x * 2  # same signature, new data: the built graph runs on it
    assert_close(graph(x2, w), conv_ref(x2, w))


def test_out_arrays_are_written(cpu, xw):
    x, w = xw
    graph = conv_graph(cpu, x, w)
    y = np.full((2, 3, 5, 5), np.nan, np.float32)
    assert graph(x, w, out=y) is y
    assert_close(y, conv_ref(x, w))
    with pytest.raises(ValueError, match=r"out= takes 1 arrays \('relu::OUT'\); got 2"):
        graph(x, w, out=[y, y])


def test_inputs_and_outputs_by_every_kind_of_name(cpu, xw):
    x, w = xw
    with dnngraph.Graph(handle=cpu, io_data_type=F) as graph:
        W = graph.tensor_like(w, name="filters")
        y = graph.conv_fprop(x, W, padding=[0, 0], stride=[1, 1], dilation=[1, 1], name="conv")
        out = graph.relu(input=y, name="relu").set_output(True).set_name("Y")
    # inputs by array, by tensor name; outputs by tensor object
    graph.set_io_tuples([w, x], [out])  # the order given is the order of arguments
    assert_close(graph(w, x), conv_ref(x, w))
    graph.set_io_tuples(["filters", "conv::0"], ["Y"])
    assert_close(graph(w, x), conv_ref(x, w))
    graph.set_io_tuples([W.get_uid(), "conv::0"], [out.get_uid()])
    assert_close(graph(w, x), conv_ref(x, w))


def test_default_io_order_is_first_use_and_creation(cpu, rng):
    a, b, c = rand(rng, (3, 4)), rand(rng, (4, 5)), rand(rng, (1, 5))
    with dnngraph.Graph(handle=cpu, io_data_type=F) as graph:
        mm = graph.matmul(A=a, B=b, name="mm")
        graph.bias(input=mm, bias=c, name="add").set_output(True)
        graph.relu(input=mm, name="act").set_output(True)
    s, r = graph(a, b, c)  # mm::A, mm::B, add::bias; outputs in the order made
    assert_close(s, a @ b + c)
    assert_close(r, np.maximum(a @ b, 0))


def test_dict_form_by_name_adds_missing_outputs(cpu, xw):
    x, w = xw
    graph = conv_graph(cpu, x, w)
    res = graph({"conv::image": x, "conv::weight": w})
    assert set(res) == {"conv::image", "conv::weight", "relu::OUT"}
    assert_close(res["relu::OUT"], conv_ref(x, w))
    given = np.full((2, 3, 5, 5), np.nan, np.float32)
    res = graph({"conv::image": x, "conv::weight": w, "relu::OUT": given})
    assert res["relu::OUT"] is given
    assert_close(given, conv_ref(x, w))


def test_workspace_managed_or_passed(cpu, rng):
    # A conv the winograd/implicit-GEMM engines run needs workspace on the CPU: managed, or given.
    x, w = rand(rng, (1, 16, 12, 12)), rand(rng, (16, 16, 3, 3))
    graph = conv_graph(cpu, x, w, workspace_alloc=False)
    size = graph.get_workspace_size()
    if size == 0:
        pytest.skip("the chosen plan needs no workspace here")
    with pytest.raises(RuntimeError, match=f"workspace_alloc=False: pass workspace= \\({size} bytes\\)"):
        graph(x, w)
    assert_close(graph(x, w, workspace=np.empty(size, np.uint8)), conv_ref(x, w), scale=10)
    assert_close(conv_graph(cpu, x, w)(x, w), conv_ref(x, w), scale=10)


def test_errors_name_the_users_names(cpu, xw):
    x, w = xw
    graph = conv_graph(cpu, x, w)
    with pytest.raises(ValueError, match=r"takes 2 inputs \('conv::image', 'conv::weight'\); got 1"):
        graph(x)
    with pytest.raises(ValueError, match=r"input 'conv::weight' must be an array; got list"):
        graph(x, [1.0])
    with pytest.raises(ValueError, match=r"tensor 'conv::weight' .* is FLOAT but the array is float64"):
        graph(x, w.astype(np.float64))
    with pytest.raises(ValueError, match=r"'conv::imag' names no input or output of this graph \(inputs: "
                                         r"'conv::image', 'conv::weight'; outputs: 'relu::OUT'\)"):
        graph({"conv::imag": x})
    with pytest.raises(ValueError, match=r"no array for input\(s\) 'conv::weight'"):
        graph({"conv::image": x})
    with pytest.raises(ValueError, match=r"input 0 \('conv::bias'\) is not an input of this graph \(its inputs: "
                                         r"'conv::image', 'conv::weight'\)"):
        graph.set_io_tuples(["conv::bias"], [])
    with pytest.raises(ValueError, match=r"output 0 \('conv::image'\) is not an output of this graph"):
        graph.set_io_tuples([], ["conv::image"])
    with pytest.raises(ValueError, match=r"input 1 \('conv::image'\) is given twice"):
        graph.set_io_tuples(["conv::image", x], [])
    with pytest.raises(ValueError, match=r"input 'conv::weight' is read by the graph but is not in inputs "
                                         r"\('conv::image'\)"):
        graph.set_io_tuples(["conv::image"], [])


def test_build_errors_and_misuse(cpu, xw):
    x, w = xw
    with pytest.raises(ValueError, match="inputs must be a list or tuple; got str"):
        dnngraph.Graph(inputs="conv::image")
    with pytest.raises(ValueError, match="node name 'conv' is already used"):
        with dnngraph.Graph(handle=cpu, io_data_type=F) as graph:
            graph.relu(x, name="conv")
            graph.relu(x, name="conv")
    with pytest.raises(RuntimeError, match=r"Graph: validate\(\) is not called on a Graph"):
        with dnngraph.Graph(handle=cpu) as graph:
            graph.validate()
    with pytest.raises(ValueError, match="no tensor is marked as an output"):  # raised on leaving `with`
        with dnngraph.Graph(handle=cpu, io_data_type=F) as graph:
            graph.relu(x, name="r")
    graph = conv_graph(cpu, x, w)
    with pytest.raises(RuntimeError, match=r"relu\(\) after the graph was built"):
        graph.relu(x)
    with pytest.raises(RuntimeError, match="a Graph is entered once"):
        with graph:
            pass
    unbuilt = dnngraph.Graph(handle=cpu)
    with pytest.raises(RuntimeError, match=r"relu\(\) needs the graph: call it inside"):
        unbuilt.relu(x)
    with pytest.raises(RuntimeError, match="call the graph after it is built"):
        unbuilt(x)


def test_same_array_is_one_tensor_and_default_node_names(cpu, rng):
    a = rand(rng, (4, 4))
    with dnngraph.Graph(handle=cpu, io_data_type=F) as graph:
        s = graph.add(a, a)  # one tensor, read twice
        graph.mul(s, a).set_output(True)
    assert graph.pygraph is not None
    (y,) = [graph(a)]
    assert_close(y, (a + a) * a)
    res = graph({"add.0::0": a})  # the frontend's "<op>.<n>" node names
    assert set(res) == {"add.0::0", "mul.0::OUT"}


def test_bf16_arrays_from_ml_dtypes(cpu, rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = rand(rng, (8, 16)).astype(ml_dtypes.bfloat16)
    b = rand(rng, (16, 8)).astype(ml_dtypes.bfloat16)
    with dnngraph.Graph(handle=cpu, io_data_type=dnngraph.data_type.BFLOAT16, intermediate_data_type=F,
                        compute_data_type=F) as graph:
        graph.matmul(a, b, name="mm").set_output(True)
    y = graph(a, b)
    assert y.dtype == ml_dtypes.bfloat16  # outputs are allocated as ml_dtypes arrays
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(y.astype(np.float32), want, rtol=2e-2, atol=2e-2)


def test_the_frontends_wrapper_example_through_import_cudnn(rng):
    """python/cudnn/wrapper.py's docstring example, with NumPy arrays for torch's and a CPU handle."""
    import cudnn
    from cudnn import data_type

    x = np.ascontiguousarray(rand(rng, (8, 12, 12, 16)).astype(np.float16)).transpose(0, 3, 1, 2)
    w = np.ascontiguousarray(rand(rng, (32, 3, 3, 16)).astype(np.float16)).transpose(0, 3, 1, 2)
    with cudnn.Graph(handle="auto") as auto:  # the frontend's default handle: here, the best device
        assert auto.handle.device in ("cpu", "cuda:0")
        # A NumPy array on a CUDA graph would be a host scalar (the frontend's rule): declare it there.
        X = auto.tensor(name="X", dim=list(x.shape), stride=[s // 2 for s in x.strides], data_type=data_type.HALF)
        auto.relu(X, name="r").set_output(True)
    with cudnn.Graph(handle=cudnn.create_handle("cpu")) as graph:
        y = graph.conv_fprop(image=x, weight=w, padding=[1, 1], stride=[1, 1], dilation=[1, 1],
                             compute_data_type=data_type.FLOAT, name="conv2d")
        y.set_output(True).set_data_type(data_type.HALF)
    graph.set_io_tuples(["conv2d::image", "conv2d::weight"], ["conv2d::Y"])
    output = graph(x, w)
    assert output.dtype == np.float16 and output.shape == (8, 32, 12, 12)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (1, 1), (1, 1)])
    want = sum(np.einsum("nchw,kc->nkhw", xp[:, :, i:i + 12, j:j + 12], w[:, :, i, j].astype(np.float64))
               for i in range(3) for j in range(3))
    np.testing.assert_allclose(output.astype(np.float64), want, rtol=3e-3, atol=3e-3)
