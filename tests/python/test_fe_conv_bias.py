"""NVIDIA cudnn-frontend's test/python/test_conv_bias.py, ported to NumPy on dnngraph's CPU handle.

Only `import cudnn` resolves to dnngraph (tests/python/cudnn_shim/cudnn.py). What changed from the
original, and why: torch CUDA tensors are NumPy arrays (channels-last views where the original used
torch.channels_last), PyTorch's conv2d/conv3d references are NumPy ones in float64, there is no
stream to set, and the cuDNN-version skips are dropped (they gate cuDNN features, and
backend_version_string() is cuDNN's only where dnngraph's cudnn engine loaded it). Graph-building
code, shapes, tolerances and test names are the original's.
"""
import cudnn
import numpy as np
import pytest

from frontend_refs import assert_close, channels_last, conv, empty_like, randint, randn


@pytest.fixture(scope="module")
def cudnn_handle():
    return cudnn.create_handle("cpu")


@pytest.fixture
def rng():
    return np.random.default_rng(0)  # torch_fork_set_rng(seed=0)


def csbr(x, w, b=None, padding=(1, 1), stride=(1, 1), dilation=(1, 1), lower_clip=0.0, upper_clip=128):
    y = conv(x, w, padding, stride, dilation)
    if b is not None:
        y = y + np.asarray(b, np.float64).reshape(1, -1, *([1] * (y.ndim - 2)))
    return np.clip(y, lower_clip, upper_clip).astype(np.float16)


@cudnn.jit(heur_modes=[cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
def create_conv_bias_relu_graph(handle, X_gpu, W_gpu, B_gpu, padding, stride, dilation, lower_clip=0.5,
                                upper_clip=0.55):
    with cudnn.graph(handle, io_data_type=cudnn.data_type.HALF, intermediate_data_type=cudnn.data_type.FLOAT,
                     compute_data_type=cudnn.data_type.FLOAT) as (g, _):
        X = g.tensor_like(X_gpu)
        W = g.tensor_like(W_gpu)
        B = g.tensor_like(B_gpu)
        conv_output = g.conv_fprop(image=X, weight=W, pre_padding=padding, post_padding=padding, stride=stride,
                                   dilation=dilation)
        bias_output = g.bias(name="bias", input=conv_output, bias=B)
        Y = g.relu(name="relu", input=bias_output, lower_clip=lower_clip, upper_clip=upper_clip)
        Y.set_output(True)
        return g, [X, W, B, Y]


@cudnn.jit(heur_modes=[cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
def create_conv_relu_graph(handle, X_gpu, W_gpu, padding, stride, dilation, lower_clip=0.5, upper_clip=0.55):
    with cudnn.graph(handle, io_data_type=cudnn.data_type.HALF, intermediate_data_type=cudnn.data_type.FLOAT,
                     compute_data_type=cudnn.data_type.FLOAT) as (g, _):
        X = g.tensor_like(X_gpu)
        W = g.tensor_like(W_gpu)
        conv_output = g.conv_fprop(image=X, weight=W, padding=padding, stride=stride, dilation=dilation)
        Y = g.relu(name="relu", input=conv_output, lower_clip=lower_clip, upper_clip=upper_clip)
        Y.set_output(True)
        return g, [X, W, Y]


@pytest.mark.L0
def test_conv_bias_relu(cudnn_handle, rng):
    X_gpu = channels_last(randn(rng, (4, 16, 56, 56), np.float16))
    W_gpu = channels_last(randn(rng, (16, 16, 3, 3), np.float16))
    B_gpu = channels_last(randn(rng, (1, 16, 1, 1), np.float16))
    padding, stride, dilation = [1, 1], [3, 3], [1, 1]
    Y_expected = csbr(X_gpu, W_gpu, b=B_gpu, padding=padding, stride=stride, dilation=dilation, lower_clip=0.5,
                      upper_clip=0.55)

    single_mode_graph = cudnn.jit(heur_modes=cudnn.heur_mode.A)(create_conv_bias_relu_graph.__wrapped__)
    g, uids = single_mode_graph(cudnn_handle, X_gpu, W_gpu, B_gpu, padding, stride, dilation)
    X_uid, W_uid, B_uid, Y_uid = uids

    Y_actual = empty_like(channels_last(Y_expected))
    workspace = np.empty(g.get_workspace_size(), np.uint8)
    g.execute({X_uid: X_gpu, W_uid: W_gpu, B_uid: B_gpu, Y_uid: Y_actual}, workspace, handle=cudnn_handle)
    assert_close(Y_actual, Y_expected, atol=0.05, rtol=1e-2)


@pytest.mark.L0
def test_conv_relu(cudnn_handle, rng):
    X_gpu = channels_last(randn(rng, (20, 40, 30, 40), np.float16))
    W_gpu = channels_last(randn(rng, (54, 40, 3, 4), np.float16))
    padding, stride, dilation = [0, 1], [2, 3], [1, 1]
    Y_expected = csbr(X_gpu, W_gpu, padding=padding, stride=stride, dilation=dilation, lower_clip=0.5,
                      upper_clip=0.55)

    g, uids = create_conv_relu_graph(cudnn_handle, X_gpu, W_gpu, padding, stride, dilation)
    X_uid, W_uid, Y_uid = uids

    Y_actual = empty_like(channels_last(Y_expected))
    workspace = np.empty(g.get_workspace_size(), np.uint8)
    g.execute({X_uid: X_gpu, W_uid: W_gpu, Y_uid: Y_actual}, workspace, handle=cudnn_handle)
    assert_close(Y_actual, Y_expected, atol=1e-3, rtol=1e-3)


@pytest.mark.L0
def test_conv_relu_execution_plan_creation(cudnn_handle, rng):
    X_gpu = channels_last(randn(rng, (20, 40, 30, 40), np.float16))
    W_gpu = channels_last(randn(rng, (54, 40, 3, 4), np.float16))
    padding, stride, dilation = [0, 1], [2, 3], [1, 1]
    Y_expected = csbr(X_gpu, W_gpu, padding=padding, stride=stride, dilation=dilation, lower_clip=0.5,
                      upper_clip=0.55)

    graph = cudnn.pygraph(io_data_type=cudnn.data_type.HALF, intermediate_data_type=cudnn.data_type.FLOAT,
                          compute_data_type=cudnn.data_type.FLOAT, handle=cudnn_handle)
    # X_gpu.size() / .stride() / .dtype: NumPy's shape, strides in bytes, dtype.
    X = graph.tensor(name="X", dim=X_gpu.shape, stride=[s // 2 for s in X_gpu.strides], data_type=X_gpu.dtype)
    W = graph.tensor(name="W", dim=W_gpu.shape, stride=[s // 2 for s in W_gpu.strides], data_type=W_gpu.dtype)
    conv_output = graph.conv_fprop(image=X, weight=W, padding=padding, stride=stride, dilation=dilation)
    Y = graph.relu(name="relu", input=conv_output, lower_clip=0.5, upper_clip=0.55)
    Y.set_output(True)

    graph.validate()
    graph.build_operation_graph()

    # Build all unique kernel cfg plans
    for engine in range(graph.get_engine_count()):
        try:
            knobs = graph.get_knobs_for_engine(engine)
        except RuntimeError:
            continue
        for knob in knobs:
            if knob.type == cudnn.knob_type.KERNEL_CFG:
                for kernel_cfg in range(knob.min_value, knob.max_value + 1, knob.stride):
                    try:
                        graph.create_execution_plan(engine, {cudnn.knob_type.KERNEL_CFG: kernel_cfg})
                    except RuntimeError:
                        continue

    graph.check_support()
    graph.build_plans()

    workspace = np.empty(graph.get_workspace_size(), np.uint8)
    Y_actual = empty_like(channels_last(Y_expected))
    graph.execute({X: X_gpu, W: W_gpu, Y: Y_actual}, workspace, handle=cudnn_handle)
    assert_close(Y_actual, Y_expected, atol=1e-3, rtol=1e-3)


@cudnn.jit(heur_modes=[cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
def create_conv3d_bias_leaky_relu_graph(handle, X_gpu, W_gpu, B_gpu, padding, stride, dilation, negative_slope):
    with cudnn.graph(handle, io_data_type=cudnn.data_type.HALF, intermediate_data_type=cudnn.data_type.FLOAT,
                     compute_data_type=cudnn.data_type.FLOAT) as (g, _):
        X = g.tensor_like(X_gpu)
        W = g.tensor_like(W_gpu)
        B = g.tensor_like(B_gpu)
        conv_output = g.conv_fprop(image=X, weight=W, padding=padding, stride=stride, dilation=dilation)
        bias_output = g.bias(name="bias", input=conv_output, bias=B)
        Y = g.leaky_relu(name="relu", input=bias_output, negative_slope=negative_slope)
        Y.set_output(True)
        return g, [X, W, B, Y]


@pytest.mark.L0
def test_conv3d_bias_leaky_relu(cudnn_handle, rng):
    N, C, D, H, W = 4, 16, 52, 54, 56
    K, R, S, T = 32, 3, 3, 3
    padding, stride, dilation = [0, 1, 2], [2, 3, 4], [1, 1, 1]
    negative_slope = 0.01

    X_gpu = channels_last(randn(rng, (N, C, D, H, W), np.float16))
    W_gpu = channels_last(randn(rng, (K, C, R, S, T), np.float16))
    B_gpu = channels_last(randn(rng, (1, K, 1, 1, 1), np.float16))
    conv_out_expected = (conv(X_gpu, W_gpu, padding, stride, dilation) +
                         np.asarray(B_gpu, np.float64).reshape(1, -1, 1, 1, 1)).astype(np.float16)
    c = conv_out_expected.astype(np.float64)
    Y_expected = np.where(c > 0, c, c * negative_slope).astype(np.float16)

    g, uids = create_conv3d_bias_leaky_relu_graph(cudnn_handle, X_gpu, W_gpu, B_gpu, padding, stride, dilation,
                                                  negative_slope)
    X_uid, W_uid, B_uid, Y_uid = uids

    Y_actual = empty_like(channels_last(Y_expected))
    workspace = np.empty(g.get_workspace_size(), np.uint8)
    g.execute({X_uid: X_gpu, W_uid: W_gpu, B_uid: B_gpu, Y_uid: Y_actual}, workspace, handle=cudnn_handle)
    assert_close(Y_actual, Y_expected, atol=1e-2, rtol=1e-2)


@cudnn.jit(heur_modes=[cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
def create_leaky_relu_backward_graph(handle, loss_gpu, input_gpu, negative_slope):
    with cudnn.graph(handle, io_data_type=cudnn.data_type.HALF, intermediate_data_type=cudnn.data_type.FLOAT,
                     compute_data_type=cudnn.data_type.FLOAT) as (g, _):
        loss = g.tensor_like(loss_gpu)
        input = g.tensor_like(input_gpu)
        Y = g.leaky_relu_backward(loss=loss, input=input, negative_slope=negative_slope)
        Y.set_output(True)
        return g, [loss, input, Y]


@pytest.mark.L0
def test_leaky_relu_backward(cudnn_handle, rng):
    N, C, H, W = 4, 16, 56, 56
    negative_slope = 0.01
    loss_gpu = channels_last(randn(rng, (N, C, H, W), np.float16))
    input_gpu = channels_last(randn(rng, (N, C, H, W), np.float16))
    Y_expected = np.where(input_gpu <= 0.0, np.float16(negative_slope), np.float16(1)) * loss_gpu

    g, uids = create_leaky_relu_backward_graph(cudnn_handle, loss_gpu, input_gpu, negative_slope)
    loss_uid, input_uid, Y_uid = uids

    Y_actual = empty_like(Y_expected)
    workspace = np.empty(g.get_workspace_size(), np.uint8)
    g.execute({loss_uid: loss_gpu, input_uid: input_gpu, Y_uid: Y_actual}, workspace, handle=cudnn_handle)
    assert_close(Y_actual, Y_expected, atol=1e-4, rtol=1e-4)


@cudnn.jit(heur_modes=[cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
def create_conv_int8_graph(handle, X_gpu, W_gpu, padding, stride, dilation):
    with cudnn.graph(handle, io_data_type=cudnn.data_type.INT8, intermediate_data_type=cudnn.data_type.INT32,
                     compute_data_type=cudnn.data_type.INT32) as (g, _):
        X = g.tensor_like(X_gpu)
        W = g.tensor_like(W_gpu)
        conv_output = g.conv_fprop(image=X, weight=W, padding=padding, stride=stride, dilation=dilation)
        Y = g.identity(name="identity", input=conv_output)
        Y.set_output(True).set_data_type(cudnn.data_type.INT32)
        return g, [X, W, Y]


@pytest.mark.L0
def test_conv_int8(cudnn_handle, rng):
    N, C, H, W = 2, 64, 32, 32
    K, R, S = 4, 3, 3
    padding, stride, dilation = [1, 1], [1, 1], [1, 1]
    X_gpu = channels_last(randint(rng, -127, 128, (N, C, H, W), np.int8))
    W_gpu = channels_last(randint(rng, -127, 128, (K, C, R, S), np.int8))
    Y_expected = conv(X_gpu, W_gpu, padding, stride, dilation).astype(np.int32)

    g, uids = create_conv_int8_graph(cudnn_handle, X_gpu, W_gpu, padding, stride, dilation)
    X_uid, W_uid, Y_uid = uids

    # The original allocates Y with X's dims (N, C, H, W), larger than Y's (N, K, H, W) with the same
    # strides pattern; NumPy needs Y's own dims for the array to span Y's tensor.
    Y_actual = empty_like(channels_last(np.zeros(Y_expected.shape, np.int32)))
    workspace = np.empty(g.get_workspace_size(), np.uint8)
    g.execute({X_uid: X_gpu, W_uid: W_gpu, Y_uid: Y_actual}, workspace, handle=cudnn_handle)
    assert_close(Y_actual, Y_expected, atol=1e-2, rtol=1e-2)
