"""NVIDIA cudnn-frontend's test/python/test_wgrads.py ported to NumPy on dnngraph's CPU handle.

Only `import cudnn` resolves to dnngraph. The graph: scale, bias and ReLU of a HALF X at the FLOAT
intermediate type feed a HALF conv_wgrad (a FLOAT virtual input beside a HALF DY), as in the
original; DW's array is `zeros_like(X_gpu)` as there (a [4,32,32,32] HALF array for the
[64,32,3,3] DW: taken as DW's memory, test_fe_packs.py). What changed: torch tensors are NumPy
arrays in the originals' layouts, the architecture skip is dropped (dnngraph runs wgrad on every
device), and, beyond the original, which checks nothing, DW is compared with a float64 reference
of the same graph.
"""
import cudnn
import numpy as np
import pytest

from frontend_refs import assert_close, channels_last, conv, randn, strides_of

n, c, k = 4, 32, 64
padding, stride, dilation = [1, 1], [1, 1], [1, 1]


@pytest.fixture(scope="module")
def cudnn_handle():
    return cudnn.create_handle("cpu")


def wgrad_reference(x, dy, r, s):
    """DW[k, c, i, j] = sum over n, h, w of DY[n, k, h, w] * X_padded[n, c, h + i, w + j] (stride and dilation 1)."""
    xp = np.pad(np.asarray(x, np.float64), [(0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2])
    h, w = dy.shape[2:]
    dy64 = np.asarray(dy, np.float64)
    dw = np.zeros((dy.shape[1], x.shape[1], r, s))
    for i in range(r):
        for j in range(s):
            dw[:, :, i, j] = np.einsum("nkhw,nchw->kc", dy64, xp[:, :, i:i + h, j:j + w])
    return dw


@pytest.mark.L0
def test_scale_bias_relu_wgrad(cudnn_handle):
    rng = np.random.default_rng(0)
    X_gpu = channels_last(randn(rng, (n, c, 32, 32), np.float16))
    DY_gpu = channels_last(randn(rng, (n, k, 32, 32), np.float16))
    scale = channels_last((randn(rng, (1, c, 1, 1), np.float16) * 0.01).astype(np.float16))
    bias = channels_last((randn(rng, (1, c, 1, 1), np.float16) * 0.01).astype(np.float16))

    graph = cudnn.pygraph(io_data_type=cudnn.data_type.HALF, intermediate_data_type=cudnn.data_type.FLOAT,
                          compute_data_type=cudnn.data_type.FLOAT, handle=cudnn_handle)
    X = graph.tensor(name="X", dim=X_gpu.shape, stride=strides_of(X_gpu), data_type=X_gpu.dtype)
    DY = graph.tensor(name="DY", dim=DY_gpu.shape, stride=strides_of(DY_gpu), data_type=DY_gpu.dtype)
    B = graph.tensor(name="B", dim=bias.shape, stride=strides_of(bias), data_type=bias.dtype)
    S = graph.tensor(name="S", dim=scale.shape, stride=strides_of(scale), data_type=scale.dtype)
    scale_output = graph.scale(name="scale", input=X, scale=S)
    bias_output = graph.bias(name="bias", input=scale_output, bias=B)
    relu_output = graph.relu(name="relu", input=bias_output)
    wgrad_output = graph.conv_wgrad(name="wgrad", image=relu_output, loss=DY, padding=padding, stride=stride,
                                    dilation=dilation)
    wgrad_output.set_output(True).set_dim([k, c, 3, 3])

    graph.validate()
    assert relu_output.get_data_type() == cudnn.data_type.FLOAT  # the intermediate type, beside a HALF DY
    graph.build_operation_graph()
    graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    graph.check_support()
    graph.build_plans()

    workspace = np.empty(max(graph.get_workspace_size(), 1), np.uint8)
    DW_actual = np.zeros_like(X_gpu)  # the original's array: X's dims and layout, larger than DW
    graph.execute({X: X_gpu, DY: DY_gpu, B: bias, S: scale, wgrad_output: DW_actual}, workspace,
                  handle=cudnn_handle)

    # Beyond the original: DW, read from the array's memory by DW's own (KRSC) strides.
    relu = np.maximum(np.asarray(X_gpu, np.float64) * scale + np.asarray(bias, np.float64), 0)
    expected = wgrad_reference(relu, DY_gpu, 3, 3)
    dw_strides = [st * DW_actual.itemsize for st in wgrad_output.get_stride()]
    dw = np.lib.stride_tricks.as_strided(DW_actual, shape=(k, c, 3, 3), strides=dw_strides)
    assert np.abs(expected).max() > 0.1  # the comparison has something to compare
    assert_close(dw, expected, atol=2e-3, rtol=3e-3)


@pytest.mark.parametrize("x_type,w_type", [(np.float32, np.float16), (np.float16, np.float32)])
def test_conv_fprop_of_two_floating_types_on_every_plan(cudnn_handle, x_type, w_type):
    # The relaxed rule serves every conv: each engine reads each input by its own type, or refuses.
    rng = np.random.default_rng(6)
    x = channels_last(randn(rng, (2, 8, 9, 9), x_type))
    w = channels_last(randn(rng, (16, 8, 3, 3), w_type))
    graph = cudnn.pygraph(io_data_type=cudnn.data_type.FLOAT, intermediate_data_type=cudnn.data_type.FLOAT,
                          compute_data_type=cudnn.data_type.FLOAT, handle=cudnn_handle)
    X, W = graph.tensor_like(x), graph.tensor_like(w)
    Y = graph.conv_fprop(image=X, weight=W, padding=padding, stride=stride, dilation=dilation)
    Y.set_output(True)
    graph.build([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    graph.build_plans(cudnn.build_plan_policy.ALL)
    expected = conv(x, w, padding, stride, dilation)
    for i in range(graph.get_execution_plan_count()):
        y = channels_last(np.full((2, 16, 9, 9), np.nan, np.float32))
        graph.execute_plan_at_index({X: x, W: w, Y: y}, np.empty(max(graph.get_workspace_size_plan_at_index(i), 1),
                                                                   np.uint8), i)
        assert_close(y, expected, atol=1e-4, rtol=1e-4)
