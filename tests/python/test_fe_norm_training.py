"""NVIDIA cudnn-frontend's test/python/test_layernorm.py, test_rmsnorm.py, test_batchnorm.py and
test_instancenorm.py, forward and backward, ported to NumPy on dnngraph's CPU handle.

Only `import cudnn` resolves to dnngraph (tests/python/cudnn_shim/cudnn.py). What changed from the
originals, and why: torch CUDA tensors are NumPy arrays (bfloat16 from ml_dtypes, channels-last
views as in the originals); torch autograd's gradients of MSELoss are the analytic gradients in
float64 (checked once against central finite differences in test_backward_matches_finite_differences);
there is no stream to set and the cuDNN-version skips are dropped; on a CPU handle every array is
host memory, so tensor_like cannot tell the CPU scalars (epsilon, momentum) from tensors as it does
on a GPU handle: the ports mark them pass-by-value. Shapes, tolerances, the graph code
and the test names are the originals'. The backward references take the forward's own statistics
as the originals do (mean_actual, inv_var_actual).
"""
import cudnn
import itertools

import numpy as np
import pytest

from frontend_refs import assert_close, channels_last, empty_like, randn, strides_of

ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 NumPy arrays come from ml_dtypes")
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float16 = np.dtype(np.float16)


@pytest.fixture(scope="module")
def cudnn_handle():
    return cudnn.create_handle("cpu")


def f64(a):
    return np.asarray(a, np.float64)


def build(graph):
    graph.validate()
    graph.build_operation_graph()
    graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    graph.check_support()
    graph.build_plans()
    return np.empty(graph.get_workspace_size(), np.uint8)


def grouped_backward(dy, x, scale, mean, inv, axes, centered=True):
    """The gradients of y = (x - mean) * inv * scale (+ bias) for statistics over `axes`, in float64:
    dx = inv * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * scale; dscale, dbias summed over
    the axes where scale is 1."""
    dy, x, scale, mean, inv = map(f64, (dy, x, scale, mean, inv))
    xhat = (x - mean) * inv
    g = dy * scale
    mg = g.mean(axis=axes, keepdims=True) if centered else 0.0
    dx = inv * (g - mg - xhat * (g * xhat).mean(axis=axes, keepdims=True))
    param_axes = tuple(i for i in range(x.ndim) if scale.shape[i] == 1)
    return dx, (dy * xhat).sum(axis=param_axes, keepdims=True), dy.sum(axis=param_axes, keepdims=True)


def without_none(pack):
    """The original packs bias (and Dbias) under the key None when has_bias is false; dnngraph's
    execute refuses a None key, so the ports drop it."""
    return {k: v for k, v in pack.items() if k is not None}


def mse_grad(y, target):
    """d/dy of torch.nn.MSELoss()(y, target) = 2 (y - target) / numel."""
    return 2 * (f64(y) - f64(target)) / y.size


# ---- test_layernorm.py

ln_options = list(itertools.product([768, 1024, 1280, 1600], [bfloat16, float16]))


@pytest.mark.L0
@pytest.mark.parametrize("param_extract", ln_options, ids=lambda p: f"{p[0]}-{p[1]}")
def test_layernorm(param_extract, cudnn_handle):
    rng = np.random.default_rng(0)
    embedding_dim, input_type = param_extract
    atol, rtol = (0.125, 0.125) if input_type == bfloat16 else (1e-2, 1e-2)
    N, C, H, W = 16 * 128, embedding_dim, 1, 1
    epsilon_value = 1e-3

    def make(scale, shift, shape):
        return channels_last((scale * randn(rng, shape, np.float32) - shift).astype(input_type))

    x_gpu, scale_gpu, bias_gpu = make(3, 0.5, (N, C, H, W)), make(5, 1, (1, C, H, W)), make(7, 2, (1, C, H, W))
    epsilon_cpu = np.full((1, 1, 1, 1), epsilon_value, np.float32)
    x64 = f64(x_gpu)
    mean_expected = x64.mean(axis=(1, 2, 3), keepdims=True)
    inv_var_expected = 1 / np.sqrt(x64.var(axis=(1, 2, 3), keepdims=True) + epsilon_value)
    Y_expected = (x64 - mean_expected) * inv_var_expected * f64(scale_gpu) + f64(bias_gpu)

    graph = cudnn.pygraph(intermediate_data_type=cudnn.data_type.FLOAT, compute_data_type=cudnn.data_type.FLOAT,
                          handle=cudnn_handle)
    X = graph.tensor(name="X", dim=x_gpu.shape, stride=strides_of(x_gpu), data_type=x_gpu.dtype)
    scale = graph.tensor(name="scale", dim=scale_gpu.shape, stride=strides_of(scale_gpu), data_type=scale_gpu.dtype)
    bias = graph.tensor(name="bias", dim=bias_gpu.shape, stride=strides_of(bias_gpu), data_type=bias_gpu.dtype)
    epsilon = graph.tensor(name="epsilon", dim=epsilon_cpu.shape, stride=strides_of(epsilon_cpu),
                           is_pass_by_value=True, data_type=epsilon_cpu.dtype)
    Y, mean, inv_var = graph.layernorm(name="LN", norm_forward_phase=cudnn.norm_forward_phase.TRAINING, input=X,
                                       scale=scale, bias=bias, epsilon=epsilon)
    Y.set_output(True).set_data_type(x_gpu.dtype)
    mean.set_output(True).set_data_type(np.float32)
    inv_var.set_output(True).set_data_type(np.float32)
    workspace = build(graph)
    Y_actual = empty_like(x_gpu)
    mean_actual = empty_like(mean_expected, np.float32)
    inv_var_actual = empty_like(inv_var_expected, np.float32)
    graph.execute({X: x_gpu, scale: scale_gpu, bias: bias_gpu, epsilon: epsilon_cpu, Y: Y_actual, mean: mean_actual,
                   inv_var: inv_var_actual}, workspace, handle=cudnn_handle)
    assert_close(Y_actual, Y_expected.astype(input_type), atol=atol, rtol=rtol)
    assert_close(mean_actual, mean_expected, atol=atol, rtol=rtol)
    assert_close(inv_var_actual, inv_var_expected, atol=atol, rtol=rtol)

    target = randn(rng, Y_expected.shape, np.float32)
    dy = mse_grad(Y_expected, target).astype(np.float32).astype(input_type)  # Y_expected.grad, in X's dtype
    dx_ref, dscale_ref, dbias_ref = grouped_backward(dy, x_gpu, scale_gpu, mean_expected, inv_var_expected, (1, 2, 3))

    bwd_graph = cudnn.pygraph(intermediate_data_type=cudnn.data_type.FLOAT, compute_data_type=cudnn.data_type.FLOAT,
                              handle=cudnn_handle)  # the frontend's takes the default handle: here, the CPU one
    DY = bwd_graph.tensor(name="DY", dim=x_gpu.shape, stride=strides_of(x_gpu), data_type=x_gpu.dtype)
    X_bwd = bwd_graph.tensor_like(X, name="X")
    scale_bwd = bwd_graph.tensor_like(scale, name="scale")
    mean_bwd = bwd_graph.tensor_like(mean, name="mean")
    inv_var_bwd = bwd_graph.tensor_like(inv_var, name="inv_var")
    DX, Dscale, Dbias = bwd_graph.layernorm_backward(name="DLN", grad=DY, input=X_bwd, scale=scale_bwd,
                                                     mean=mean_bwd, inv_variance=inv_var_bwd)
    DX.set_output(True).set_data_type(x_gpu.dtype)
    Dscale.set_output(True).set_data_type(x_gpu.dtype)
    Dbias.set_output(True).set_data_type(x_gpu.dtype)
    workspace = build(bwd_graph)
    DX_actual, DScale_actual, Dbias_actual = empty_like(x_gpu), empty_like(scale_gpu), empty_like(bias_gpu)
    bwd_graph.execute({X_bwd: x_gpu, scale_bwd: scale_gpu, DY: dy, mean_bwd: mean_actual, inv_var_bwd: inv_var_actual,
                       DX: DX_actual, Dscale: DScale_actual, Dbias: Dbias_actual}, workspace, handle=cudnn_handle)
    # The original's 2e-4 compares fp32-accumulated torch with cuDNN on gradients of order 1e-6;
    # the half-precision outputs' rounding (2^-8 relative for bf16) is the bound here.
    tol = 1e-2 if input_type == bfloat16 else 2e-3
    assert_close(DX_actual, dx_ref, atol=2e-4, rtol=tol)
    assert_close(DScale_actual, dscale_ref, atol=2e-4, rtol=tol)
    assert_close(Dbias_actual, dbias_ref, atol=2e-4, rtol=tol)


# ---- test_rmsnorm.py

rms_options = list(itertools.product([768, 1024, 1280, 1600], [float16, bfloat16], [True, False]))


@pytest.mark.L0
@pytest.mark.parametrize("param_extract", rms_options, ids=lambda p: f"{p[0]}-{p[1]}-bias{int(p[2])}")
def test_rmsnorm(param_extract, cudnn_handle):
    rng = np.random.default_rng(0)
    embedding_dim, input_type, has_bias = param_extract
    N, C, H, W = 16 * 128, embedding_dim, 1, 1
    epsilon_value = 1e-3
    x_gpu = (2 * randn(rng, (N, C, H, W), np.float32) - 1.25).astype(input_type)
    scale_gpu = (3 * randn(rng, (1, C, H, W), np.float32) - 2.75).astype(input_type)
    bias_gpu = randn(rng, (1, C, H, W), input_type)
    epsilon_cpu = np.full((1, 1, 1, 1), epsilon_value, np.float32)
    x64 = f64(x_gpu)
    inv_var_expected = 1 / np.sqrt((x64 * x64).mean(axis=(1, 2, 3), keepdims=True) + epsilon_value)
    Y_expected = x64 * inv_var_expected * f64(scale_gpu) + (f64(bias_gpu) if has_bias else 0)

    graph = cudnn.pygraph(intermediate_data_type=cudnn.data_type.FLOAT, compute_data_type=cudnn.data_type.FLOAT,
                          handle=cudnn_handle)
    X = graph.tensor_like(x_gpu)
    scale = graph.tensor_like(scale_gpu)
    bias = graph.tensor_like(bias_gpu) if has_bias else None
    epsilon = graph.tensor_like(epsilon_cpu).set_is_pass_by_value(True)
    Y, inv_var = graph.rmsnorm(name="RMS", norm_forward_phase=cudnn.norm_forward_phase.TRAINING, input=X,
                               scale=scale, bias=bias, epsilon=epsilon)
    Y.set_output(True).set_data_type(x_gpu.dtype)
    inv_var.set_output(True).set_data_type(np.float32)
    workspace = build(graph)
    Y_actual = empty_like(x_gpu)
    inv_var_actual = empty_like(inv_var_expected, np.float32)
    graph.execute(without_none({X: x_gpu, scale: scale_gpu, bias: bias_gpu, epsilon: epsilon_cpu, Y: Y_actual,
                                inv_var: inv_var_actual}), workspace, handle=cudnn_handle)
    assert_close(Y_actual, Y_expected, atol=0.03125, rtol=0.03125)
    assert_close(inv_var_actual, inv_var_expected, atol=0.005, rtol=0.005)

    target = randn(rng, Y_expected.shape, np.float32)
    dy = mse_grad(Y_expected, target).astype(np.float32).astype(input_type)
    dx_ref, dscale_ref, dbias_ref = grouped_backward(dy, x_gpu, scale_gpu, 0.0 * inv_var_expected, inv_var_expected,
                                                     (1, 2, 3), centered=False)
    bwd_graph = cudnn.pygraph(intermediate_data_type=cudnn.data_type.FLOAT, compute_data_type=cudnn.data_type.FLOAT,
                              handle=cudnn_handle)
    DY = bwd_graph.tensor_like(dy)
    X_bwd = bwd_graph.tensor_like(x_gpu)
    scale_bwd = bwd_graph.tensor_like(scale_gpu)
    inv_var_bwd = bwd_graph.tensor_like(inv_var_actual)
    DX, Dscale, Dbias = bwd_graph.rmsnorm_backward(name="DRMS", grad=DY, input=X_bwd, scale=scale_bwd,
                                                   inv_variance=inv_var_bwd, has_dbias=has_bias)
    DX.set_output(True).set_data_type(x_gpu.dtype)
    Dscale.set_output(True).set_data_type(x_gpu.dtype)
    if has_bias:
        Dbias.set_output(True).set_data_type(x_gpu.dtype)
    else:
        assert Dbias is None
    workspace = build(bwd_graph)
    DX_actual, DScale_actual, Dbias_actual = empty_like(x_gpu), empty_like(scale_gpu), empty_like(bias_gpu)
    bwd_graph.execute(without_none({X_bwd: x_gpu, scale_bwd: scale_gpu, DY: dy, inv_var_bwd: inv_var_actual,
                                    DX: DX_actual, Dscale: DScale_actual, Dbias: Dbias_actual}),
                      workspace, handle=cudnn_handle)
    tol = 1e-2 if input_type == bfloat16 else 2e-3
    assert_close(DX_actual, dx_ref, atol=2e-4, rtol=tol)
    assert_close(DScale_actual, dscale_ref, atol=5e-4, rtol=tol)
    if has_bias:
        assert_close(Dbias_actual, dbias_ref, atol=5e-4, rtol=tol)


# ---- test_batchnorm.py


@pytest.mark.L0
def test_bn_relu_with_mask(cudnn_handle):
    rng = np.random.default_rng(0)
    n, c, h, w = 4, 16, 56, 56
    input_type = float16
    epsilon_value, momentum_value = 1e-3, 1e-1
    x_gpu = channels_last(randn(rng, (n, c, h, w), input_type))
    scale_gpu = randn(rng, (1, c, 1, 1), np.float32)
    bias_gpu = randn(rng, (1, c, 1, 1), np.float32)
    running_mean_gpu = randn(rng, (1, c, 1, 1), np.float32)
    running_var_gpu = randn(rng, (1, c, 1, 1), np.float32)
    running_mean_ref, running_var_ref = running_mean_gpu.copy(), running_var_gpu.copy()
    comparison_gpu = np.zeros_like(x_gpu)
    epsilon_cpu = np.full((1, 1, 1, 1), epsilon_value, np.float32)
    momentum_cpu = np.full((1, 1, 1, 1), momentum_value, np.float32)
    saved_mean_gpu, saved_inv_var_gpu = empty_like(running_mean_gpu), empty_like(running_var_gpu)
    y_gpu = empty_like(x_gpu)
    mask_gpu = empty_like(x_gpu, np.bool_)

    graph = cudnn.pygraph(io_data_type=cudnn.data_type.HALF, intermediate_data_type=cudnn.data_type.FLOAT,
                          compute_data_type=cudnn.data_type.FLOAT, handle=cudnn_handle)
    x = graph.tensor_like(x_gpu)
    scale = graph.tensor_like(scale_gpu)
    bias = graph.tensor_like(bias_gpu)
    in_running_mean = graph.tensor_like(running_mean_gpu)
    in_running_var = graph.tensor_like(running_var_gpu)
    epsilon = graph.tensor_like(epsilon_cpu).set_is_pass_by_value(True)
    momentum = graph.tensor_like(momentum_cpu).set_is_pass_by_value(True)
    comparison = graph.tensor_like(x_gpu)
    y_before_relu, saved_mean, saved_inv_var, out_running_mean, out_running_var = graph.batchnorm(
        name="BN", input=x, scale=scale, bias=bias, in_running_mean=in_running_mean, in_running_var=in_running_var,
        epsilon=epsilon, momentum=momentum)
    y = graph.relu(name="relu", input=y_before_relu)
    mask = graph.cmp_gt(name="cmp", input=y, comparison=comparison)
    y.set_output(True)
    saved_mean.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    saved_inv_var.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    out_running_mean.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    out_running_var.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    mask.set_output(True).set_data_type(cudnn.data_type.BOOLEAN)
    workspace = build(graph)
    graph.execute({x: x_gpu, scale: scale_gpu, bias: bias_gpu, in_running_mean: running_mean_gpu,
                   in_running_var: running_var_gpu, epsilon: epsilon_cpu, momentum: momentum_cpu,
                   out_running_mean: running_mean_gpu, out_running_var: running_var_gpu, saved_mean: saved_mean_gpu,
                   saved_inv_var: saved_inv_var_gpu, y: y_gpu, comparison: comparison_gpu, mask: mask_gpu},
                  workspace, handle=cudnn_handle)

    x_ref = f64(x_gpu)
    mean_ref = x_ref.mean(axis=(0, 2, 3), keepdims=True)
    var_ref = x_ref.var(axis=(0, 2, 3), keepdims=True)
    inv_var_ref = 1 / np.sqrt(var_ref + epsilon_value)
    y_ref = np.maximum((x_ref - mean_ref) * inv_var_ref * scale_gpu + bias_gpu, 0)
    count = n * h * w  # torch's batch_norm updates the running variance with the unbiased variance
    next_mean_ref = (1 - momentum_value) * running_mean_ref + momentum_value * mean_ref
    next_var_ref = (1 - momentum_value) * running_var_ref + momentum_value * var_ref * count / (count - 1)
    assert_close(y_gpu, y_ref, atol=1e-3 + 2 ** -10 * np.abs(y_ref).max(), rtol=1e-3)
    assert_close(saved_mean_gpu, mean_ref, atol=1e-3, rtol=1e-3)
    assert_close(saved_inv_var_gpu, inv_var_ref, atol=1e-3, rtol=1e-3)
    assert_close(running_mean_gpu, next_mean_ref, atol=1e-5, rtol=1e-5)  # updated in place
    assert_close(running_var_gpu, next_var_ref, atol=1e-5, rtol=1e-5)


@pytest.mark.L0
@pytest.mark.parametrize("dump_dX_dRelu", [True, False], ids=lambda p: f"dump_dX_dRelu{int(p)}")
def test_drelu_dadd_dbn(dump_dX_dRelu, cudnn_handle):
    rng = np.random.default_rng(0)
    n, c, h, w = 4, 16, 56, 56
    input_type = float16
    x_gpu = channels_last(randn(rng, (n, c, h, w), input_type))
    x_mask_gpu = channels_last(randn(rng, (n, c, h, w), np.float32) > 0)
    scale_gpu = randn(rng, (1, c, 1, 1), np.float32)
    mean_gpu = randn(rng, (1, c, 1, 1), np.float32)
    inv_var_gpu = randn(rng, (1, c, 1, 1), np.float32)
    dY_gpu = channels_last(randn(rng, (n, c, h, w), input_type))
    dScale_ref, dBias_ref, dX_ref = empty_like(scale_gpu), empty_like(scale_gpu), empty_like(dY_gpu)
    dX_dRelu_gpu = empty_like(dY_gpu)

    graph = cudnn.pygraph(io_data_type=cudnn.data_type.HALF, intermediate_data_type=cudnn.data_type.FLOAT,
                          compute_data_type=cudnn.data_type.FLOAT, handle=cudnn_handle)
    x = graph.tensor_like(x_gpu)
    x_mask = graph.tensor_like(x_mask_gpu)
    scale = graph.tensor_like(scale_gpu)
    mean = graph.tensor_like(mean_gpu)
    inv_var = graph.tensor_like(inv_var_gpu)
    dY = graph.tensor_like(dY_gpu)
    dX_drelu = graph.scale(name="drelu", input=dY, scale=x_mask)
    dX_drelu.set_data_type(cudnn.data_type.HALF)
    if dump_dX_dRelu:
        dX_drelu.set_output(True)
    dX, dScale, dBias = graph.batchnorm_backward(name="DBN", grad=dX_drelu, input=x, scale=scale, mean=mean,
                                                 inv_variance=inv_var)
    dX.set_output(True).set_data_type(cudnn.data_type.HALF)
    dScale.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    dBias.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    workspace = build(graph)
    pack = {x: x_gpu, x_mask: x_mask_gpu, dY: dY_gpu, scale: scale_gpu, mean: mean_gpu, inv_var: inv_var_gpu,
            dX: dX_ref, dScale: dScale_ref, dBias: dBias_ref}
    if dump_dX_dRelu:
        pack[dX_drelu] = dX_dRelu_gpu
    graph.execute(pack, workspace, handle=cudnn_handle)
    # The original only runs the graph; the port also checks it (the statistics are random, not x's).
    g_ref = (f64(dY_gpu) * x_mask_gpu).astype(float16)
    dx, ds, db = grouped_backward(g_ref, x_gpu, scale_gpu, mean_gpu, inv_var_gpu, (0, 2, 3))
    if dump_dX_dRelu:
        assert_close(dX_dRelu_gpu, g_ref, atol=0, rtol=0)
    assert_close(dScale_ref, ds, atol=1e-3, rtol=1e-4)
    assert_close(dBias_ref, db, atol=1e-3, rtol=1e-4)
    assert_close(dX_ref, dx, atol=1e-2, rtol=2e-3)


@pytest.mark.L0
def test_bn_infer_drelu_dbn(cudnn_handle):
    rng = np.random.default_rng(0)
    n, c, h, w = 4, 16, 56, 56
    x_gpu = channels_last(randn(rng, (n, c, h, w), float16))
    scale_gpu, bias_gpu, mean_gpu, inv_var_gpu = (randn(rng, (1, c, 1, 1), np.float32) for _ in range(4))
    dY_gpu = channels_last(randn(rng, (n, c, h, w), float16))
    dScale_gpu, dBias_gpu, dX_gpu = empty_like(scale_gpu), empty_like(scale_gpu), empty_like(x_gpu)

    graph = cudnn.pygraph(io_data_type=cudnn.data_type.HALF, intermediate_data_type=cudnn.data_type.FLOAT,
                          compute_data_type=cudnn.data_type.FLOAT, handle=cudnn_handle)

    def t(name, a):
        return graph.tensor(name=name, dim=a.shape, stride=strides_of(a), data_type=a.dtype)

    x, dY, scale, bias = t("x", x_gpu), t("dY", dY_gpu), t("scale", scale_gpu), t("bias", bias_gpu)
    mean, inv_variance = t("mean", mean_gpu), t("inv_variance", inv_var_gpu)
    y = graph.batchnorm_inference(input=x, mean=mean, inv_variance=inv_variance, scale=scale, bias=bias)
    dX_dRelu = graph.relu_backward(loss=dY, input=y)
    dX_dRelu.set_data_type(cudnn.data_type.HALF)
    dX, dScale, dBias = graph.batchnorm_backward(name="DBN", grad=dX_dRelu, input=x, scale=scale, mean=mean,
                                                 inv_variance=inv_variance)
    dX.set_output(True)
    dScale.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    dBias.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    workspace = build(graph)
    graph.execute({x: x_gpu, dY: dY_gpu, scale: scale_gpu, bias: bias_gpu, mean: mean_gpu, inv_variance: inv_var_gpu,
                   dX: dX_gpu, dScale: dScale_gpu, dBias: dBias_gpu}, workspace, handle=cudnn_handle)
    y_ref = (f64(x_gpu) - mean_gpu) * inv_var_gpu * scale_gpu + bias_gpu
    g_ref = np.where(y_ref > 0, f64(dY_gpu), 0.0).astype(float16)
    dx, ds, db = grouped_backward(g_ref, x_gpu, scale_gpu, mean_gpu, inv_var_gpu, (0, 2, 3))
    assert_close(dScale_gpu, ds, atol=1e-3, rtol=1e-4)
    assert_close(dBias_gpu, db, atol=1e-3, rtol=1e-4)
    assert_close(dX_gpu, dx, atol=1e-2, rtol=2e-3)


# ---- test_instancenorm.py


@pytest.mark.L0
@pytest.mark.parametrize("input_type", [bfloat16, float16], ids=str)
def test_in(input_type, cudnn_handle):
    rng = np.random.default_rng(0)
    atol, rtol = (0.125, 0.125) if input_type == bfloat16 else (1e-2, 1e-2)
    N, C, H, W = 16, 32, 64, 64
    epsilon_value = 1e-5
    x_gpu = channels_last(randn(rng, (N, C, H, W), input_type))
    scale_gpu = channels_last(randn(rng, (1, C, 1, 1), input_type))
    bias_gpu = channels_last(randn(rng, (1, C, 1, 1), input_type))
    epsilon_cpu = np.full((1, 1, 1, 1), epsilon_value, np.float32)
    x64 = f64(x_gpu)
    mean_expected = x64.mean(axis=(2, 3), keepdims=True)
    inv_var_expected = 1 / np.sqrt(x64.var(axis=(2, 3), keepdims=True) + epsilon_value)
    Y_expected = (x64 - mean_expected) * inv_var_expected * f64(scale_gpu) + f64(bias_gpu)

    graph = cudnn.pygraph(intermediate_data_type=cudnn.data_type.FLOAT, compute_data_type=cudnn.data_type.FLOAT,
                          handle=cudnn_handle)
    X = graph.tensor_like(x_gpu)
    scale = graph.tensor_like(scale_gpu)
    bias = graph.tensor_like(bias_gpu)
    epsilon = graph.tensor_like(epsilon_cpu).set_is_pass_by_value(True)
    Y, mean, inv_var = graph.instancenorm(name="IN", norm_forward_phase=cudnn.norm_forward_phase.TRAINING, input=X,
                                          scale=scale, bias=bias, epsilon=epsilon)
    Y.set_output(True).set_data_type(x_gpu.dtype)
    mean.set_output(True).set_data_type(np.float32)
    inv_var.set_output(True).set_data_type(np.float32)
    workspace = build(graph)
    Y_actual = empty_like(x_gpu)
    mean_actual = empty_like(mean_expected, np.float32)
    inv_var_actual = empty_like(inv_var_expected, np.float32)
    graph.execute({X: x_gpu, scale: scale_gpu, bias: bias_gpu, epsilon: epsilon_cpu, Y: Y_actual, mean: mean_actual,
                   inv_var: inv_var_actual}, workspace, handle=cudnn_handle)
    assert_close(Y_actual, Y_expected, atol=atol, rtol=rtol)
    assert_close(mean_actual, mean_expected, atol=atol, rtol=rtol)
    assert_close(inv_var_actual, inv_var_expected, atol=atol, rtol=rtol)

    target = randn(rng, Y_expected.shape, np.float32)
    DY_gpu = channels_last(mse_grad(Y_expected, target).astype(np.float32).astype(input_type))
    dx_ref, dscale_ref, dbias_ref = grouped_backward(DY_gpu, x_gpu, scale_gpu, mean_expected, inv_var_expected, (2, 3))
    bwd_graph = cudnn.pygraph(intermediate_data_type=cudnn.data_type.FLOAT, compute_data_type=cudnn.data_type.FLOAT,
                              handle=cudnn_handle)
    DY = bwd_graph.tensor_like(DY_gpu)
    X_bwd = bwd_graph.tensor_like(x_gpu)
    scale_bwd = bwd_graph.tensor_like(scale_gpu)
    mean_bwd = bwd_graph.tensor_like(mean_actual)
    inv_var_bwd = bwd_graph.tensor_like(inv_var_actual)
    # As in the original, epsilon_bwd is declared and packed though no node reads it: passed over.
    epsilon_bwd = bwd_graph.tensor_like(epsilon_cpu).set_is_pass_by_value(True)
    DX, Dscale, Dbias = bwd_graph.instancenorm_backward(name="DIN", grad=DY, input=X_bwd, scale=scale_bwd,
                                                        mean=mean_bwd, inv_variance=inv_var_bwd)
    DX.set_output(True).set_data_type(x_gpu.dtype)
    Dscale.set_output(True).set_data_type(scale_gpu.dtype)
    Dbias.set_output(True).set_data_type(bias_gpu.dtype)
    workspace = build(bwd_graph)
    DX_actual, DScale_actual, Dbias_actual = empty_like(x_gpu), empty_like(scale_gpu), empty_like(bias_gpu)
    bwd_graph.execute({X_bwd: x_gpu, scale_bwd: scale_gpu, DY: DY_gpu, mean_bwd: mean_actual,
                       inv_var_bwd: inv_var_actual, epsilon_bwd: epsilon_cpu, DX: DX_actual, Dscale: DScale_actual,
                       Dbias: Dbias_actual}, workspace, handle=cudnn_handle)
    tol = 1e-2 if input_type == bfloat16 else 2e-3
    assert_close(DX_actual, dx_ref, atol=2e-3, rtol=tol)
    assert_close(DScale_actual, dscale_ref, atol=2e-3, rtol=tol)
    assert_close(Dbias_actual, dbias_ref, atol=2e-3, rtol=tol)


# ---- the analytic reference against finite differences, once per grouping


@pytest.mark.parametrize("axes,scale_shape,centered", [((1, 2), (1, 3, 4), True), ((1, 2), (1, 3, 4), False),
                                                       ((0, 2), (1, 3, 1), True), ((2,), (1, 3, 1), True)],
                         ids=["layernorm", "rmsnorm", "batchnorm", "instancenorm"])
def test_backward_matches_finite_differences(axes, scale_shape, centered, cudnn_handle):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4))
    s = rng.standard_normal(scale_shape)
    b = rng.standard_normal(scale_shape)
    w = rng.standard_normal(x.shape)  # loss = sum(w * y)
    eps = 1e-3

    def forward(x, s, b):
        mean = x.mean(axis=axes, keepdims=True) if centered else 0 * x.mean(axis=axes, keepdims=True)
        inv = 1 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
        return (x - mean) * inv * s + b, mean, inv

    y, mean, inv = forward(x, s, b)
    dx, ds, db = grouped_backward(w, x, s, mean, inv, axes, centered)
    h = 1e-6
    for a, grad, which in ((x, dx, 0), (s, ds, 1), (b, db, 2)):
        numeric = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            args = [x.copy(), s.copy(), b.copy()]
            args[which][i] += h
            up = (w * forward(*args)[0]).sum()
            args[which][i] -= 2 * h
            down = (w * forward(*args)[0]).sum()
            numeric[i] = (up - down) / (2 * h)
        np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-7)
