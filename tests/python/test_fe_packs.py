"""Variant packs the cuDNN frontend's own tests hand over, and what dnngraph does with them.

The frontend takes a pointer from every array; dnngraph checks each array against its tensor
(test_variant_packs.py). Three of the frontend's forms are accepted, because they are memory-safe:
- an array of other dims, dense and at least the tensor's span in bytes, of the same element size
  (test_conv_bias's int8 case packs a [2,64,32,32] array for a [2,4,32,32] output; test_wgrads an
  [4,32,32,32] array for a [64,32,3,3] DW): its memory is taken as the tensor's;
- an array of another type of the same size and kind (test_kernel_cache: a HALF graph, bfloat16
  arrays): its bytes are read as the tensor's type;
- a tensor the graph declared but no node uses (test_instancenorm packs the forward's epsilon into
  the backward graph): passed over.
Each is logged at debug level. What could read or write past an array, or misread a layout the user
meant element by element, is still refused, and tested here too.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import dnngraph
from conftest import build, graph, poisoned, rand, workspace

M, K, N = 8, 16, 4


def relu_graph(cpu, dims, io=None):
    """Y = relu(X), both of `dims`, row-major; io: the graph's io type (FLOAT when None)."""
    g = graph(cpu, io=io or dnngraph.data_type.FLOAT)
    X = g.tensor(dim=dims, name="X")
    Y = g.relu(X, name="r")
    Y.set_output(True).set_data_type(dnngraph.data_type.FLOAT)
    build(g)
    return g, X, Y


def test_an_output_array_of_other_dims_is_its_memory_when_dense_and_large_enough(cpu, rng):
    # The frontend's int8 conv form: an output array of the input's dims, larger than the output.
    g, X, Y = relu_graph(cpu, [2, 4, 3, 3])
    x = rand(rng, (2, 4, 3, 3))
    y = poisoned((2, 64, 3, 3))
    g.execute({X: x, Y: y}, workspace(g))
    flat = y.reshape(-1)
    np.testing.assert_array_equal(flat[: x.size], np.maximum(x, 0).reshape(-1))
    assert np.isnan(flat[x.size:]).all()  # nothing past the tensor's span is written
    # An input of other dims too (same bytes: the [1, K, M] array is read as [1, M, K]).
    h, A, B = relu_graph(cpu, [1, M, K])
    a = rand(rng, (1, K, M))
    b = poisoned((1, M, K))
    h.execute({A: a, B: b}, workspace(h))
    np.testing.assert_array_equal(b.reshape(-1), np.maximum(a, 0).reshape(-1))


def test_arrays_of_other_dims_that_could_be_overrun_or_misread_are_refused(cpu, rng):
    g, X, Y = relu_graph(cpu, [2, 4, 3, 3])
    x = rand(rng, (2, 4, 3, 3))
    with pytest.raises(ValueError, match=r"tensor 'r::OUT' \(uid \d+\) spans 288 bytes but the array holds only 144"):
        g.execute({X: x, Y: poisoned((2, 2, 3, 3))}, workspace(g))
    with pytest.raises(ValueError, match=r"tensor 'X' \(uid \d+\) has dims \[2,4,3,3\] but the array has dims "
                                         r"\[2,8,3,3\] \(an array of other dims is taken as the tensor's memory "
                                         r"only when it is dense, without gaps\)"):
        g.execute({X: rand(rng, (2, 16, 3, 3))[:, ::2], Y: poisoned((2, 4, 3, 3))}, workspace(g))
    with pytest.raises(ValueError, match=r"tensor 'X' \(uid \d+\) is FLOAT but the array is float64"):
        g.execute({X: rand(rng, (2, 4, 3, 3)).astype(np.float64), Y: poisoned((2, 4, 3, 3))}, workspace(g))
    # The same dims in another layout are a layout mistake, not a buffer: still refused.
    with pytest.raises(ValueError, match=r"tensor 'X' \(uid \d+\) has strides \[36,9,3,1\] but the array has strides"):
        g.execute({X: np.asfortranarray(x), Y: poisoned((2, 4, 3, 3))}, workspace(g))


def test_an_array_of_another_type_of_the_same_size_and_kind_is_read_as_the_tensors_type(cpu, rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    g, X, Y = relu_graph(cpu, [M, K], io=dnngraph.data_type.HALF)
    x = rand(rng, (M, K)).astype(ml_dtypes.bfloat16)  # the frontend's test_kernel_cache: bf16 for HALF
    y = poisoned((M, K))
    g.execute({X: x, Y: y}, workspace(g))
    np.testing.assert_array_equal(y, np.maximum(x.view(np.float16).astype(np.float32), 0))
    # int16 for HALF (another kind) and float32 for HALF (another size) are refused.
    for wrong, shown in ((x.view(np.int16), "DLPack dtype"), (rand(rng, (M, K)), "float32")):
        with pytest.raises(ValueError, match=f"tensor 'X' .* is HALF but the array is {shown}"):
            g.execute({X: wrong, Y: y}, workspace(g))
    # An integer array for a FLOAT tensor (same size, other kind) too.
    f, A, B = relu_graph(cpu, [M, K])
    with pytest.raises(ValueError, match=r"tensor 'X' .* is FLOAT but the array is int32"):
        f.execute({A: np.zeros((M, K), np.int32), B: y}, workspace(f))


@pytest.mark.parametrize("by_uid", [False, True], ids=["by tensor", "by uid"])
def test_a_declared_tensor_no_node_uses_is_passed_over(cpu, rng, by_uid):
    g = graph(cpu)
    X = g.tensor(dim=[M, K], name="X")
    eps = g.tensor(dim=[1, 1], name="epsilon", is_pass_by_value=True)  # the backward's unused epsilon
    if by_uid:
        eps.set_uid(77)
    Y = g.relu(X, name="r")
    Y.set_output(True)
    build(g)
    x, y = rand(rng, (M, K)), poisoned((M, K))
    pack = {X: x, eps: np.full((1, 1), 1e-5, np.float32), Y: y}
    if by_uid:
        pack = {X.get_uid(): x, 77: np.full((1, 1), 1e-5, np.float32), Y.get_uid(): y}
    g.execute(pack, workspace(g))
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    # A uid that names no tensor of the graph is still an error.
    if by_uid:
        with pytest.raises(ValueError, match=r"uid 99, which no tensor of this graph has"):
            g.execute({**pack, 99: y}, workspace(g))


def test_what_is_accepted_is_logged_at_debug_level(tmp_path):
    script = (
        "import numpy as np, dnngraph, ml_dtypes\n"
        "h = dnngraph.create_handle('cpu')\n"
        "g = dnngraph.pygraph(io_data_type=dnngraph.data_type.HALF, handle=h)\n"
        "X = g.tensor(dim=[2, 3], name='X'); E = g.tensor(dim=[1], name='E')\n"
        "Y = g.relu(X, name='r'); Y.set_output(True)\n"
        "g.build([dnngraph.heur_mode.A])\n"
        "g.execute({X: np.zeros((3, 2), ml_dtypes.bfloat16), E: np.zeros(1), Y: np.zeros(6, np.float16)}, None)\n"
    )
    pytest.importorskip("ml_dtypes")
    env = dict(os.environ, DNNGRAPH_LOG_LEVEL="3", DNNGRAPH_LOG_FILE=str(tmp_path / "log.txt"))
    subprocess.run([sys.executable, "-c", script], check=True, env=env)
    log = (tmp_path / "log.txt").read_text()
    assert "tensor 'X' (uid 0) is HALF but the array is bfloat16: its bytes are read as HALF" in log
    assert "tensor 'X' (uid 0) has dims [2,3]; the array's dims [3,2] differ" in log
    assert "tensor 'E' is used by no node of the plans: passed over" in log


def test_a_host_epsilon_on_a_cuda_graph_is_pass_by_value_and_passed_over_where_unused():
    # The frontend's test_instancenorm on a GPU (skipped without torch and a CUDA device): tensor_like of
    # a host [1,1,1,1] epsilon is pass-by-value; the backward graph packs it though no node reads it.
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    handle = dnngraph.create_handle("cuda")
    x = torch.randn(2, 4, 8, 8, device="cuda").to(memory_format=torch.channels_last)
    scale = torch.randn(1, 4, 1, 1, device="cuda").to(memory_format=torch.channels_last)
    bias = torch.randn(1, 4, 1, 1, device="cuda").to(memory_format=torch.channels_last)
    eps = torch.full((1, 1, 1, 1), 1e-5, dtype=torch.float32)
    g = dnngraph.pygraph(intermediate_data_type=dnngraph.data_type.FLOAT, compute_data_type=dnngraph.data_type.FLOAT,
                         handle=handle)
    X, S, B, E = g.tensor_like(x), g.tensor_like(scale), g.tensor_like(bias), g.tensor_like(eps)
    assert E.get_is_pass_by_value()
    Y, mean, inv_var = g.instancenorm(norm_forward_phase=dnngraph.norm_forward_phase.TRAINING, input=X, scale=S,
                                      bias=B, epsilon=E)
    for t in (Y, mean, inv_var):
        t.set_output(True).set_data_type(dnngraph.data_type.FLOAT)
    g.build([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
    y = torch.empty_like(x)
    m = torch.empty(2, 4, 1, 1, device="cuda")
    iv = torch.empty(2, 4, 1, 1, device="cuda")
    ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8, device="cuda")
    g.execute({X: x, S: scale, B: bias, E: eps, Y: y, mean: m, inv_var: iv}, ws)
    torch.cuda.synchronize()
    expected = torch.nn.functional.instance_norm(x, weight=scale.view(4), bias=bias.view(4), eps=1e-5)
    torch.testing.assert_close(y, expected, atol=1e-4, rtol=1e-4)
    b = dnngraph.pygraph(intermediate_data_type=dnngraph.data_type.FLOAT, compute_data_type=dnngraph.data_type.FLOAT,
                         handle=handle)
    DY, Xb, Sb, Mb, Ib, Eb = (b.tensor_like(t) for t in (x, x, scale, m, iv, eps))
    DX, DS, DB = b.instancenorm_backward(grad=DY, input=Xb, scale=Sb, mean=Mb, inv_variance=Ib)
    for t in (DX, DS, DB):
        t.set_output(True).set_data_type(dnngraph.data_type.FLOAT)
    b.build([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
    dx, ds, db = torch.empty_like(x), torch.empty_like(scale), torch.empty_like(bias)
    ws = torch.empty(max(b.get_workspace_size(), 1), dtype=torch.uint8, device="cuda")
    b.execute({DY: x, Xb: x, Sb: scale, Mb: m, Ib: iv, Eb: eps, DX: dx, DS: ds, DB: db}, ws)
    torch.cuda.synchronize()
    assert torch.isfinite(dx).all() and torch.isfinite(ds).all() and torch.isfinite(db).all()
