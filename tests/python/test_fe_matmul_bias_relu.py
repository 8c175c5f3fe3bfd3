"""NVIDIA cudnn-frontend's test/python/test_matmul_bias_relu.py, ported to NumPy on dnngraph's CPU handle.

Only `import cudnn` resolves to dnngraph (tests/python/cudnn_shim/cudnn.py). What changed from the
original, and why: torch CUDA tensors are NumPy arrays (bfloat16 from ml_dtypes), torch.matmul's
reference is NumPy's in float64 rounded to the output type, there is no stream to set, and the
skips for cuDNN versions and for GPUs older than Hopper are dropped (the CPU engines have neither
limit). Tolerances: where the original compares bit-close results of two GPU GEMMs (1e-4), these
compare against a float64 reference, so a 16-bit output may differ by one rounding step: one ulp
(fp16 1e-3, bf16 1e-2 relative). The behaviour-note check says what dnngraph's notes mean: plans
of its own CUDA engines compile at run time, CPU plans do not.
"""
import cudnn
import itertools

import numpy as np
import pytest

from frontend_refs import assert_close, randint, randn

ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 NumPy arrays come from ml_dtypes")
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float16, float32, int8 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int8)


@pytest.fixture(scope="module")
def cudnn_handle():
    return cudnn.create_handle("cpu")


@pytest.fixture
def rng():
    return np.random.default_rng(0)  # torch_fork_set_rng(seed=0)


def convert_to_cudnn_type(np_type):
    return {float16: cudnn.data_type.HALF, bfloat16: cudnn.data_type.BFLOAT16, float32: cudnn.data_type.FLOAT,
            np.dtype(np.bool_): cudnn.data_type.BOOLEAN, np.dtype(np.uint8): cudnn.data_type.UINT8,
            int8: cudnn.data_type.INT8}[np.dtype(np_type)]


def tolerance(np_type, strict):
    """(atol, rtol): the original's `strict` pair for fp32, one output ulp for 16-bit types."""
    return {float32: strict, float16: (1e-3, 1e-3), bfloat16: (1e-2, 1e-2)}[np.dtype(np_type)]


def matmul_ref(a, b, out_type):
    return (np.asarray(a, np.float64) @ np.asarray(b, np.float64)).astype(np.float32).astype(out_type)


def strided(a, shape, strides):
    return np.lib.stride_tricks.as_strided(a, shape, [s * a.itemsize for s in strides])


@pytest.mark.L0
def test_int8_bf16_matmul(cudnn_handle, rng):
    B, M, N, K = 16, 32, 64, 128
    A_gpu = randint(rng, 0, 3, (B, M, K), np.int8) - np.int8(2)
    B_gpu = (3 * randn(rng, (B, K, N), np.float32) - 1.25).astype(bfloat16)

    graph = cudnn.pygraph(handle=cudnn_handle)
    A = graph.tensor_like(A_gpu)
    B = graph.tensor_like(B_gpu)
    A_casted = graph.identity(input=A, compute_data_type=cudnn.data_type.FLOAT)
    A_casted.set_data_type(cudnn.data_type.BFLOAT16)
    C = graph.matmul(name="matmul", A=A_casted, B=B, compute_data_type=cudnn.data_type.FLOAT)
    C.set_output(True).set_data_type(cudnn.data_type.BFLOAT16)

    graph.validate()
    graph.build_operation_graph()
    try:
        graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        graph.check_support()
    except cudnn.cudnnGraphNotSupportedError as e:
        pytest.skip(f"TEST WAIVED: unsupported graph. {e}")
    graph.build_plans(cudnn.build_plan_policy.HEURISTICS_CHOICE)

    C_expected = matmul_ref(A_gpu.astype(bfloat16), B_gpu, bfloat16)
    C_actual = np.zeros(C_expected.shape, bfloat16)
    workspace = np.empty(graph.get_workspace_size(), np.uint8)
    graph.execute({A: A_gpu, B: B_gpu, C: C_actual}, workspace, handle=cudnn_handle)
    assert_close(C_actual, C_expected, *tolerance(bfloat16, None))


A_data_type_options = [int8, bfloat16, float16]
B_data_type_options = [int8, bfloat16, float16]
MMA_data_type_options = [bfloat16, float16, float32]


@pytest.mark.parametrize("A_data_type", A_data_type_options, ids=str)
@pytest.mark.parametrize("B_data_type", B_data_type_options, ids=str)
@pytest.mark.parametrize("MMA_data_type", MMA_data_type_options, ids=str)
@pytest.mark.L0
def test_mixed_precision_matmul(A_data_type, B_data_type, MMA_data_type, cudnn_handle, rng):
    B, M, N, K = 16, 32, 64, 128
    if A_data_type != int8:
        A_gpu = (2 * randn(rng, (B, M, K), np.float32) - 0.5).astype(A_data_type)
    else:
        A_gpu = randint(rng, 0, 4, (B, M, K), np.int8) - np.int8(1)
    if B_data_type != int8:
        B_gpu_strided = (3 * randn(rng, (B, K, N), np.float32) - 1.25).astype(B_data_type)
    else:
        B_gpu_strided = randint(rng, 0, 3, (B, K, N), np.int8) - np.int8(2)
    B_gpu = strided(B_gpu_strided, (B, K, N), (N * K, 1, N))

    graph = cudnn.pygraph(handle=cudnn_handle)
    A = graph.tensor_like(A_gpu)
    B = graph.tensor_like(B_gpu)
    A_casted = graph.identity(input=A, compute_data_type=cudnn.data_type.FLOAT)
    A_casted.set_data_type(convert_to_cudnn_type(MMA_data_type))
    B_casted = graph.identity(input=B, compute_data_type=cudnn.data_type.FLOAT)
    B_casted.set_data_type(convert_to_cudnn_type(MMA_data_type))
    C = graph.matmul(name="matmul", A=A_casted, B=B_casted, compute_data_type=cudnn.data_type.FLOAT)
    C.set_output(True).set_data_type(convert_to_cudnn_type(MMA_data_type))

    graph.validate()
    graph.build_operation_graph()
    try:
        graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        graph.check_support()
    except cudnn.cudnnGraphNotSupportedError as e:
        pytest.skip(f"TEST WAIVED: unsupported graph. {e}")
    graph.build_plans(cudnn.build_plan_policy.HEURISTICS_CHOICE)

    C_expected = matmul_ref(A_gpu.astype(MMA_data_type), B_gpu.astype(MMA_data_type), MMA_data_type)
    C_actual = np.zeros(C_expected.shape, MMA_data_type)
    workspace = np.empty(graph.get_workspace_size(), np.uint8)
    graph.execute({A: A_gpu, B: B_gpu, C: C_actual}, workspace, handle=cudnn_handle)
    assert_close(C_actual, C_expected, *tolerance(MMA_data_type, (1e-4, 1e-4)))


problem_size_options = [(1, 128, 768), (16, 512, 1600), (1, 128, 1024)]
input_type_options = [bfloat16, float16]
all_options = [elem for elem in itertools.product(*[problem_size_options, input_type_options])]


@pytest.fixture(params=all_options, ids=lambda p: f"{p[0]}-{p[1]}")
def param_extract(request):
    return request.param


@pytest.mark.L0
def test_matmul_bias(param_extract, cudnn_handle, rng):
    problem_size_options, input_type = param_extract
    b, s, e = problem_size_options
    X_gpu = randn(rng, (b, s, e), input_type)
    W_gpu = randn(rng, (1, e, e * 4), input_type)
    B_gpu = randn(rng, (1, 1, e * 4), input_type)
    # linear(X, W.squeeze().T, bias) = X @ W + bias, in float32 as the GPU computes it, then rounded.
    Y_expected = (np.matmul(X_gpu.astype(np.float32), W_gpu.astype(np.float32)) +
                  B_gpu.astype(np.float32)).astype(input_type)

    graph = cudnn.pygraph(intermediate_data_type=cudnn.data_type.FLOAT, compute_data_type=cudnn.data_type.FLOAT,
                          handle=cudnn_handle)
    isz = np.dtype(input_type).itemsize
    X = graph.tensor(name="X", dim=X_gpu.shape, stride=[t // isz for t in X_gpu.strides],
                     data_type=convert_to_cudnn_type(input_type))
    W = graph.tensor(name="W", dim=W_gpu.shape, stride=[t // isz for t in W_gpu.strides],
                     data_type=convert_to_cudnn_type(input_type))
    B = graph.tensor(name="B", dim=B_gpu.shape, stride=[t // isz for t in B_gpu.strides],
                     data_type=convert_to_cudnn_type(input_type))
    response = graph.matmul(name="matmul", A=X, B=W)
    Y = graph.bias(name="bias", input=response, bias=B)
    Y.set_output(True).set_data_type(convert_to_cudnn_type(input_type))

    graph.validate()
    graph.build_operation_graph()
    graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])

    # behaviour notes: RUNTIME_COMPILATION for dnngraph's own CUDA engines; none for CPU plans
    compiled = cudnn_handle.is_cuda
    notes = graph.get_behavior_notes_for_plan_at_index(0)
    assert (cudnn.behavior_note.RUNTIME_COMPILATION in notes) == compiled
    graph.check_support()
    graph.build_plans()
    notes = graph.get_behavior_notes()
    assert (cudnn.behavior_note.RUNTIME_COMPILATION in notes) == compiled

    workspace = np.empty(graph.get_workspace_size(), np.uint8)
    Y_actual = np.zeros(Y_expected.shape, input_type)
    graph.execute({X: X_gpu, W: W_gpu, B: B_gpu, Y: Y_actual}, workspace, handle=cudnn_handle)
    atol = 1e-3
    rtol = 1e-2 if input_type == bfloat16 else 1e-3
    assert_close(Y_actual, Y_expected, atol=atol, rtol=rtol)
