"""dnngraph.onnx sessions on CUDA against onnxruntime's CPU provider: NumPy, torch and CuPy inputs,
device outputs, bf16/fp16 storage, torch's current stream, fallback="torch" for the pooling, one
CUDA graph for the whole forward pass, and `dnngraph run --device cuda`. Skipped without a CUDA
device (and, per test, without torch or CuPy)."""
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import dnngraph  # noqa: E402
import dnngraph.onnx as dgx  # noqa: E402
from test_onnx import rand, seeded  # noqa: E402


def _cuda_handle():
    try:
        return dnngraph.create_handle("cuda")
    except RuntimeError:
        return None


HANDLE = _cuda_handle()
pytestmark = pytest.mark.skipif(HANDLE is None, reason="no CUDA device")
# bf16 / fp16 tolerances relative to the output's peak, for whole small networks (conftest.TOL's
# per-op ones grow with depth).
TOL = {None: 1e-4, "float16": 1e-2, "bfloat16": 5e-2}


def _torch():
    return pytest.importorskip("torch")


def reference(m, feeds):
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def assert_near(ours, ref, precision):
    ours = np.asarray(ours, np.float64)
    ref = np.asarray(ref, np.float64)
    assert ours.shape == ref.shape
    peak = max(1.0, float(np.abs(ref).max()))
    err = float(np.abs(ours - ref).max()) / peak
    assert err <= TOL[precision], f"max error {err:.3g} of the peak {peak:.3g} (tolerance {TOL[precision]})"


def block_model(rng):
    import onnx_models
    return onnx_models.resnet_block(rng, n=2, c=32, hw=14)


@pytest.mark.parametrize("precision", [None, "float16", "bfloat16"])
def test_resnet_block_on_cuda_with_numpy_in_and_out(request, precision):
    rng = seeded(request.node.name)
    m = block_model(rng)
    x = rand(rng, 2, 32, 14, 14)
    s = dgx.load(m, device="cuda", compute_precision=precision)
    assert s.handle.is_cuda and s.arrays.on_gpu
    (y,) = s.run(None, {"x": x})
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.flags.c_contiguous
    assert_near(y, reference(m, {"x": x})[0], precision)


def test_torch_inputs_device_outputs_and_torch_current_stream(request):
    torch = _torch()
    rng = seeded(request.node.name)
    m = block_model(rng)
    x = rand(rng, 2, 32, 14, 14)
    s = dgx.load(m, handle=HANDLE, compute_precision="bfloat16", arrays="torch")
    ref = reference(m, {"x": x})[0]
    stream = torch.cuda.Stream()
    before = dnngraph.get_stream(HANDLE)
    with torch.cuda.stream(stream):
        xd = torch.from_numpy(x).cuda()
        (y,) = s.run(None, {"x": xd}, output_device="cuda")
        assert isinstance(y, torch.Tensor) and y.is_cuda and y.dtype == torch.float32 and y.is_contiguous()
        y2 = y * 1.0  # read on the same stream, with no synchronize: the session ran on it
    stream.synchronize()
    assert dnngraph.get_stream(HANDLE) == before  # the handle's own stream is restored
    assert_near(y2.cpu().numpy(), ref, "bfloat16")


def test_cupy_arrays(request):
    cupy = pytest.importorskip("cupy")
    rng = seeded(request.node.name)
    m = block_model(rng)
    x = rand(rng, 2, 32, 14, 14)
    for precision in (None, "bfloat16"):  # CuPy has no bfloat16: stored as uint16 bit patterns
        s = dgx.load(m, device="cuda", arrays="cupy", compute_precision=precision, output_device="cuda")
        assert s.arrays.name == "cupy"
        (y,) = s.run(None, {"x": cupy.asarray(x)})
        assert isinstance(y, cupy.ndarray)
        assert_near(cupy.asnumpy(y), reference(m, {"x": x})[0], precision)
    with pytest.raises(RuntimeError, match="capture_cuda_graph needs a CUDA session on PyTorch"):
        s.capture_cuda_graph()


def test_resnet50_bf16_captured_in_one_cuda_graph(request):
    torch = _torch()
    import onnx_models
    rng = seeded(request.node.name)
    m = onnx_models.resnet50(rng, n=2, hw=64, classes=10)
    s = dgx.load(m, device="cuda", compute_precision="bfloat16", fallback="torch")
    kinds = [k for k, _ in s.steps]
    # MaxPool inside a graph (cuda_pool_direct), Flatten as a view between the two graphs.
    assert kinds == ["graph", "array", "graph"], kinds
    x1, x2 = rand(rng, 2, 3, 64, 64), rand(rng, 2, 3, 64, 64)
    eager = s.run(None, {"x": x1})[0]
    s.capture_cuda_graph()
    for x in (x2, x1):  # replays with new inputs in the captured buffers
        (y,) = s.run(None, {"x": x})
        assert_near(y, reference(m, {"x": x})[0], "bfloat16")
    np.testing.assert_allclose(y, eager, rtol=1e-2, atol=1e-2 * max(1.0, float(np.abs(eager).max())))
    (yd,) = s.run(None, {"x": torch.from_numpy(x1).cuda()}, output_device="cuda")
    assert yd.is_cuda


def test_capture_refuses_a_session_with_a_ref_partition(request):
    _torch()
    from onnx import TensorProto, helper
    rng = seeded(request.node.name)
    # A float64 MaxPool: no CUDA engine takes doubles, so it runs on ref, staged through the host.
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["y"], name="pool", kernel_shape=[2, 2], strides=[2, 2])]
    g = helper.make_graph(nodes, "ref_pool", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, (1, 2, 8, 8))],
                          [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    s = dgx.load(m, device="cuda")
    x = rng.standard_normal((1, 2, 8, 8))
    assert_near(s.run(None, {"x": x})[0], reference(m, {"x": x})[0], None)
    with pytest.raises(ValueError, match="have a partition on the ref engine"):
        s.capture_cuda_graph()


def test_numpy_fallback_nodes_run_on_the_host_between_cuda_graphs(request):
    from onnx import helper
    from test_onnx import model
    rng = seeded(request.node.name)
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Pad", ["r", "pads"], ["p"], name="pad", mode="reflect"),
             helper.make_node("Sigmoid", ["p"], ["y"], name="sigmoid")]
    m = model(nodes, [("x", (1, 2, 4, 5))], [("y", None)], [("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))])
    s = dgx.load(m, device="cuda", fallback="numpy")
    x = rand(rng, 1, 2, 4, 5)
    assert [k for k, _ in s.steps] == ["graph", "numpy", "graph"]
    assert_near(s.run(None, {"x": x})[0], reference(m, {"x": x})[0], None)
    if s.arrays.name == "torch":
        with pytest.raises(ValueError, match=r"nodes \['pad'\] run with NumPy on the host"):
            s.capture_cuda_graph()


def test_cli_runs_an_onnx_model_on_cuda(tmp_path, request):
    _torch()  # --cuda-graph captures with torch
    import onnx
    rng = seeded(request.node.name)
    path = tmp_path / "block.onnx"
    onnx.save(block_model(rng), str(path))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for extra in ([], ["--precision", "bfloat16", "--cuda-graph", "--explain"]):
        r = subprocess.run([sys.executable, "-c", "import sys, dnngraph._run_onnx as r; sys.exit(r.main(sys.argv[1:]))",
                            "run", str(path), "--device", "cuda", "--iters", "3", *extra],
                           capture_output=True, text=True, env=env, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "device: cuda:0" in r.stdout and r.stdout.rstrip().endswith("PASS")


def test_unet_with_torch_for_concat_and_pooling(request):
    _torch()
    import onnx_models
    rng = seeded(request.node.name)
    m = onnx_models.unet(rng, n=2, c=8, hw=32, frames=3, depth=2)
    s = dgx.load(m, device="cuda", compute_precision="bfloat16", fallback="torch")
    torch_ops = {n for k, n in s.steps if k == "torch"}
    assert len(torch_ops) == 2, torch_ops  # the two Concats (the MaxPools run on cuda_pool_direct)
    x = rand(rng, 2, 3, 3, 32, 32)
    assert_near(s.run(None, {"x": x})[0], reference(m, {"x": x})[0], "bfloat16")
    native = dnngraph.behavior_note.SUPPORTS_CUDA_GRAPH_NATIVE_API
    if all(native in g.get_behavior_notes() for g in s.graphs):
        s.capture_cuda_graph()
        assert_near(s.run(None, {"x": x})[0], reference(m, {"x": x})[0], "bfloat16")
    else:  # a CUDA engine refused a partition (the 3D stem, say): capture says which graph
        with pytest.raises(ValueError, match="have a partition on the ref engine"):
            s.capture_cuda_graph()
