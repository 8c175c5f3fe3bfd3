"""Arrays from PyTorch, CuPy and JAX through DLPack, on the CPU and (when present) the GPU; CUDA
streams from PyTorch and CuPy. Each test skips when its framework or device is absent."""
import numpy as np
import pytest

import dnngraph


def cuda_handle():
    try:
        return dnngraph.create_handle("cuda")
    except RuntimeError:
        return None


def devices(framework_has_cuda):
    out = ["cpu"]
    if framework_has_cuda and cuda_handle() is not None:
        out.append("cuda")
    return out


def bias_relu_graph(handle, X_arr, B_arr, io):
    g = dnngraph.pygraph(io_data_type=io, intermediate_data_type=dnngraph.data_type.FLOAT,
                         compute_data_type=dnngraph.data_type.FLOAT, handle=handle)
    X, B = g.tensor_like(X_arr, name="X"), g.tensor_like(B_arr, name="B")
    Y = g.relu(g.bias(X, B))
    Y.set_output(True)
    g.build([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
    return g, X, B, Y


# ---- PyTorch



def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("dtype_name,tol", [("float32", 1e-5), ("float16", 3e-3), ("bfloat16", 1e-2)])
def test_torch_bias_relu(device, dtype_name, tol):
    torch = _torch()
    if device not in devices(torch.cuda.is_available()):
        pytest.skip("no CUDA device for dnngraph and torch")
    dtype = getattr(torch, dtype_name)
    handle = dnngraph.create_handle(device)
    gen = torch.Generator(device="cpu").manual_seed(7)
    x = torch.randn(4, 8, 16, generator=gen).to(device=device, dtype=dtype)
    b = torch.randn(1, 8, 1, generator=gen).to(device=device, dtype=dtype)
    g, X, B, Y = bias_relu_graph(handle, x, b, dtype)  # a torch dtype names the io type
    y = torch.full_like(x, float("nan"))
    ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8, device=device)
    g.execute({X: x, B: b, Y: y}, ws, handle=handle)
    if device == "cuda":
        torch.cuda.synchronize()
    torch.testing.assert_close(y.float(), torch.relu(x.float() + b.float()), rtol=tol, atol=tol)


def test_torch_conv_against_torch():
    torch = _torch()
    for device in devices(torch.cuda.is_available()):
        handle = dnngraph.create_handle(device)
        gen = torch.Generator(device="cpu").manual_seed(3)
        x = torch.randn(2, 8, 9, 9, generator=gen).to(device).to(memory_format=torch.channels_last)
        w = torch.randn(16, 8, 3, 3, generator=gen).to(device).to(memory_format=torch.channels_last)
        g = dnngraph.pygraph(io_data_type=torch.float32, compute_data_type=torch.float32, handle=handle)
        X, W = g.tensor_like(x), g.tensor_like(w)
        Y = g.conv_fprop(image=X, weight=W, padding=[1, 1], stride=[2, 2], dilation=[1, 1])
        # In float64 on the CPU: PyTorch's own fp32 conv on a GPU runs in TF32 by default.
        ref = torch.nn.functional.conv2d(x.double().cpu(), w.double().cpu(), padding=1, stride=2)
        ref = ref.to(device=device, dtype=torch.float32, memory_format=torch.channels_last)
        Y.set_output(True).set_dim(list(ref.shape)).set_stride(list(ref.stride()))
        g.build()
        y = torch.full_like(ref, float("nan"))
        ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8, device=device)
        g.execute({X: x, W: w, Y: y}, ws)
        if device == "cuda":
            torch.cuda.synchronize()
        torch.testing.assert_close(y, ref, rtol=1e-4, atol=1e-4)


def test_torch_stream_and_wrong_device():
    torch = _torch()
    if "cuda" not in devices(torch.cuda.is_available()):
        pytest.skip("no CUDA device for dnngraph and torch")
    handle = dnngraph.create_handle("cuda:0")
    x = torch.randn(64, 32, device="cuda")
    b = torch.randn(1, 32, device="cuda")
    g, X, B, Y = bias_relu_graph(handle, x, b, dnngraph.data_type.FLOAT)
    y = torch.empty_like(x)
    ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8, device="cuda")
    stream = torch.cuda.Stream()
    dnngraph.set_stream(handle, stream)  # an object with .cuda_stream
    assert dnngraph.get_stream(handle) == stream.cuda_stream
    with torch.cuda.stream(stream):
        g.execute({X: x, B: b, Y: y}, ws)
    stream.synchronize()
    torch.testing.assert_close(y, torch.relu(x + b))
    dnngraph.set_stream(handle, None)
    with pytest.raises(ValueError, match="tensor 'X'.*cpu array but the handle is cuda:0"):
        g.execute({X: x.cpu(), B: b, Y: y}, ws)


def test_torch_non_contiguous_views_are_refused_by_layout():
    torch = _torch()
    handle = dnngraph.create_handle("cpu")
    x, b = torch.randn(4, 8, 16), torch.randn(1, 8, 1)
    g, X, B, Y = bias_relu_graph(handle, x, b, torch.float32)
    ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8)
    xt = torch.randn(4, 16, 8).transpose(1, 2)  # dims (4, 8, 16), strides (128, 1, 8)
    with pytest.raises(ValueError, match=r"tensor 'X' .*has strides \[128,16,1\] but the array has strides \[128,1,8\]"):
        g.execute({X: xt, B: b, Y: torch.empty_like(x)}, ws, handle=handle)
    y = torch.full_like(x, float("nan"))
    g.execute({X: xt.contiguous(), B: b, Y: y}, ws, handle=handle)
    torch.testing.assert_close(y, torch.relu(xt + b))


# ---- CuPy (GPU only)

def test_cupy_matmul_and_stream():
    cp = pytest.importorskip("cupy")
    handle = cuda_handle()
    if handle is None:
        pytest.skip("no CUDA device for dnngraph")
    rs = cp.random.RandomState(5)
    a = rs.standard_normal((2, 16, 32), dtype=cp.float32)
    b = rs.standard_normal((2, 32, 8), dtype=cp.float32)
    g = dnngraph.pygraph(io_data_type=cp.float32, compute_data_type=cp.float32, handle=handle)
    A, B = g.tensor_like(a), g.tensor_like(b)
    C = g.matmul(A, B)
    C.set_output(True)
    g.build()
    c = cp.full((2, 16, 8), cp.nan, dtype=cp.float32)
    stream = cp.cuda.Stream()
    dnngraph.set_stream(handle, stream)  # an object with .ptr
    g.execute({A: a, B: b, C: c}, cp.empty(max(g.get_workspace_size(), 1), cp.uint8))
    stream.synchronize()
    dnngraph.set_stream(handle, None)
    cp.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)


# ---- JAX (arrays are read-only: inputs only)

def test_jax_inputs_on_cpu_and_gpu():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    rng = np.random.default_rng(11)
    x_np = rng.standard_normal((3, 5)).astype(np.float32)
    b_np = rng.standard_normal((1, 5)).astype(np.float32)
    targets = [("cpu", jax.devices("cpu")[0])]
    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        gpus = []
    if gpus and cuda_handle() is not None:
        targets.append(("cuda", gpus[0]))
    for device, jdev in targets:
        x, b = jax.device_put(jnp.asarray(x_np), jdev), jax.device_put(jnp.asarray(b_np), jdev)
        handle = dnngraph.create_handle(device)
        g, X, B, Y = bias_relu_graph(handle, x, b, dnngraph.data_type.FLOAT)
        if device == "cpu":
            y = np.full((3, 5), np.nan, np.float32)
        else:
            torch = pytest.importorskip("torch")
            y = torch.full((3, 5), float("nan"), device="cuda")
        g.execute({X: x, B: b, Y: y}, None)
        if device == "cuda":
            torch.cuda.synchronize()
            y = y.cpu().numpy()
        np.testing.assert_allclose(y, np.maximum(x_np + b_np, 0), rtol=1e-5, atol=1e-5)
