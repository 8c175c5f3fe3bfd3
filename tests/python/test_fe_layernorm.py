"""NVIDIA cudnn-frontend's test/python/test_layernorm.py, forward, ported to NumPy on dnngraph's CPU handle.

Only `import cudnn` resolves to dnngraph (tests/python/cudnn_shim/cudnn.py). What changed from the
original, and why: torch CUDA tensors are NumPy arrays (bfloat16 from ml_dtypes; channels-last
views as in the original), torch's layer_norm / mean / var references are NumPy's in float64, there
is no stream to set, and the cuDNN-version skip is dropped. The original goes on to build
layernorm_backward from the forward's statistics; dnngraph has no layernorm backward yet (issue
#18's training ops), so the port stops after the forward's checks. Shapes, tolerances, the graph
code and the test name are the original's.
"""
import cudnn
import itertools

import numpy as np
import pytest

from frontend_refs import assert_close, channels_last, empty_like, randn, strides_of

ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 NumPy arrays come from ml_dtypes")
bfloat16 = np.dtype(ml_dtypes.bfloat16)

embedding_dim_options = [768, 1024, 1280, 1600]
input_type_options = [bfloat16, np.dtype(np.float16)]
all_options = [elem for elem in itertools.product(*[embedding_dim_options, input_type_options])]


@pytest.fixture(scope="module")
def cudnn_handle():
    return cudnn.create_handle("cpu")


@pytest.fixture(params=all_options, ids=lambda p: f"{p[0]}-{p[1]}")
def param_extract(request):
    return request.param


@pytest.mark.L0
def test_layernorm(param_extract, cudnn_handle):
    rng = np.random.default_rng(0)  # torch_fork_set_rng(seed=0)
    embedding_dim, input_type = param_extract
    if input_type == bfloat16:
        atol, rtol = 0.125, 0.125
    else:
        atol, rtol = 1e-2, 1e-2

    batch_size, seq_size = 16, 128
    N, C, H, W = batch_size * seq_size, embedding_dim, 1, 1
    epsilon_value = 1e-3

    def make(scale, shift, shape):
        return channels_last((scale * randn(rng, shape, np.float32) - shift).astype(input_type))

    x_gpu = make(3, 0.5, (N, C, H, W))
    scale_gpu = make(5, 1, (1, C, H, W))
    bias_gpu = make(7, 2, (1, C, H, W))
    epsilon_cpu = np.full((1, 1, 1, 1), epsilon_value, np.float32)

    x64 = x_gpu.astype(np.float64)
    mean_expected = x64.mean(axis=(1, 2, 3), keepdims=True)
    var = x64.var(axis=(1, 2, 3), keepdims=True)
    inv_var_expected = 1 / np.sqrt(var + epsilon_value)
    Y_expected = ((x64 - mean_expected) * inv_var_expected * scale_gpu.astype(np.float64) +
                  bias_gpu.astype(np.float64))
    mean_expected, inv_var_expected = mean_expected.astype(np.float32), inv_var_expected.astype(np.float32)

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
    mean.set_output(True).set_data_type(mean_expected.dtype)
    inv_var.set_output(True).set_data_type(inv_var_expected.dtype)

    graph.validate()
    graph.build_operation_graph()
    try:
        graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    except cudnn.cudnnGraphNotSupportedError as e:
        pytest.skip(f"TEST WAIVED: unsupported graph. {e}")
    graph.check_support()
    graph.build_plans()

    Y_actual = empty_like(x_gpu)
    mean_actual = empty_like(mean_expected)
    inv_var_actual = empty_like(inv_var_expected)
    workspace = np.empty(graph.get_workspace_size(), np.uint8)
    graph.execute({X: x_gpu, scale: scale_gpu, bias: bias_gpu, epsilon: epsilon_cpu, Y: Y_actual,
                   mean: mean_actual, inv_var: inv_var_actual}, workspace, handle=cudnn_handle)

    assert_close(Y_actual, Y_expected.astype(input_type), atol=atol, rtol=rtol)
    assert_close(mean_actual, mean_expected, atol=atol, rtol=rtol)
    assert_close(inv_var_actual, inv_var_expected, atol=atol, rtol=rtol)
