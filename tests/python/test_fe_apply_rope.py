"""NVIDIA cudnn-frontend's test/python/test_apply_rope.py ported to NumPy on dnngraph's CPU handle.

Only `import cudnn` resolves to dnngraph. The original stores Y1 over x1 and Y2 over x2 (views
into one x), while Y2 = x2*cos2 + x1*sin2 still reads x1: correct only when every input of an
element is read before any output is stored. dnngraph's partitioner first put the two halves in
partitions of their own, so the second read what the first had written (the values differed on
the H200); pure pointwise partitions that read the same tensors are now one fused loop
(src/fusion/pointwise_merge.cpp), and the reference engine computes an output that overlaps an
input aside. What changed from the original: torch tensors are NumPy arrays, the sizes are
smaller (B=2, nh=4, T=256; hs and rope_n_elem are the original's), the reference is computed in
float32 as torch does for float16 x float32, and every plan is run, not only the first.
"""
import cudnn
import numpy as np
import pytest

from frontend_refs import assert_close


@pytest.fixture(scope="module")
def cudnn_handle():
    return cudnn.create_handle("cpu")


def build_rope_cache(seq_len, n_elem, base=10000):
    theta = 1.0 / (base ** (np.arange(0, n_elem, 2, dtype=np.float32) / n_elem))
    idx_theta = np.outer(np.arange(seq_len, dtype=np.float32), theta)
    idx_theta = np.concatenate([idx_theta, idx_theta], axis=1)
    return np.cos(idx_theta).astype(np.float32), np.sin(idx_theta).astype(np.float32)


def apply_rope_ref(q, cos, sin):
    rope_n_elem = cos.shape[-1]
    x = q[..., :rope_n_elem].astype(np.float32)
    half = rope_n_elem // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    roped = (x * cos + rotated * sin).astype(q.dtype)
    return np.concatenate([roped, q[..., rope_n_elem:]], axis=-1)


@cudnn.jit(heur_modes=[cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
def create_rope_graph(handle, x1_gpu, x2_gpu, cos1_gpu, cos2_gpu, sin1_gpu, sin2_gpu):
    with cudnn.graph(handle, intermediate_data_type=cudnn.data_type.FLOAT,
                     compute_data_type=cudnn.data_type.FLOAT) as (g, _):
        x1 = g.tensor_like(x1_gpu)
        x2 = g.tensor_like(x2_gpu)
        cos1 = g.tensor_like(cos1_gpu)
        cos2 = g.tensor_like(cos2_gpu)
        sin1 = g.tensor_like(sin1_gpu)
        sin2 = g.tensor_like(sin2_gpu)
        x1_cos1 = g.mul(a=x1, b=cos1)
        x2_cos2 = g.mul(a=x2, b=cos2)
        x2_sin1 = g.mul(a=x2, b=sin1)
        x1_sin2 = g.mul(a=x1, b=sin2)
        Y1 = g.sub(a=x1_cos1, b=x2_sin1)
        Y1.set_output(True).set_data_type(cudnn.data_type.HALF)
        Y2 = g.add(a=x2_cos2, b=x1_sin2)
        Y2.set_output(True).set_data_type(cudnn.data_type.HALF)
        return g, [x1, x2, sin1, sin2, cos1, cos2, Y1, Y2]


def rope_inputs(x, cos, sin, T, hs, rope_n_elem):
    """The original's views: x1, x2 into x (B*nh, T, hs), and the halves of cos and sin."""
    x3 = x.reshape(-1, T, hs)
    half = rope_n_elem // 2
    c = cos.reshape(1, T, rope_n_elem)
    s = sin.reshape(1, T, rope_n_elem)
    return x3[..., :half], x3[..., half:rope_n_elem], c[..., :half], c[..., half:], s[..., :half], s[..., half:]


@pytest.mark.L0
def test_apply_rope(cudnn_handle):
    B, nh, T, hs = 2, 4, 256, 128
    rope_n_elem = int(0.25 * hs)
    rng = np.random.default_rng(0)
    x_gpu = rng.standard_normal((B, nh, T, hs)).astype(np.float16)
    cos_gpu, sin_gpu = build_rope_cache(seq_len=T, n_elem=rope_n_elem)
    Y_expected = apply_rope_ref(x_gpu, cos_gpu, sin_gpu)

    x1_gpu, x2_gpu, cos1_gpu, cos2_gpu, sin1_gpu, sin2_gpu = rope_inputs(x_gpu, cos_gpu, sin_gpu, T, hs, rope_n_elem)
    g, uids = create_rope_graph(cudnn_handle, x1_gpu, x2_gpu, cos1_gpu, cos2_gpu, sin1_gpu, sin2_gpu)
    x1_uid, x2_uid, sin1_uid, sin2_uid, cos1_uid, cos2_uid, Y1_uid, Y2_uid = uids
    workspace = np.empty(max(g.get_workspace_size(), 1), np.uint8)
    g.execute({x1_uid: x1_gpu, x2_uid: x2_gpu, sin1_uid: sin1_gpu, sin2_uid: sin2_gpu, cos1_uid: cos1_gpu,
               cos2_uid: cos2_gpu, Y1_uid: x1_gpu, Y2_uid: x2_gpu}, workspace, handle=cudnn_handle)
    assert_close(x_gpu, Y_expected, atol=1e-2, rtol=1e-2)


def test_apply_rope_in_place_on_every_plan(cudnn_handle):
    # Beyond the original: every plan of the graph (the CPU fused loop and the reference engine).
    T, hs, rope_n_elem = 64, 64, 32
    rng = np.random.default_rng(1)
    cos, sin = build_rope_cache(seq_len=T, n_elem=rope_n_elem)
    x = rng.standard_normal((1, 2, T, hs)).astype(np.float16)
    g, uids = create_rope_graph(cudnn_handle, *rope_inputs(x, cos, sin, T, hs, rope_n_elem))
    g.build_plans(cudnn.build_plan_policy.ALL)
    names = [g.get_plan_name_at_index(i) for i in range(g.get_execution_plan_count())]
    assert any(n.startswith("ref") for n in names) and any(n.startswith("cpu_pointwise_fused") for n in names), names
    for i in range(g.get_execution_plan_count()):
        x = rng.standard_normal((1, 2, T, hs)).astype(np.float16)
        expected = apply_rope_ref(x, cos, sin)
        x1, x2, c1, c2, s1, s2 = rope_inputs(x, cos, sin, T, hs, rope_n_elem)
        pack = dict(zip(uids, [x1, x2, s1, s2, c1, c2, x1, x2]))
        g.execute_plan_at_index(pack, np.empty(max(g.get_workspace_size_plan_at_index(i), 1), np.uint8), i)
        assert_close(x, expected, atol=1e-2, rtol=1e-2)


def test_sibling_pointwise_chains_are_one_partition(cudnn_handle):
    T, hs, rope_n_elem = 16, 32, 16
    cos, sin = build_rope_cache(seq_len=T, n_elem=rope_n_elem)
    x = np.zeros((1, 1, T, hs), np.float16)
    g, _ = create_rope_graph(cudnn_handle, *rope_inputs(x, cos, sin, T, hs, rope_n_elem))
    text = g.explain()
    assert text.startswith("partition 0 (pointwise_chain): pointwise_0, pointwise_1, pointwise_2, pointwise_3, "
                           "pointwise_4, pointwise_5\n"), text
    assert "partition 1" not in text, text


def test_apply_rope_in_place_on_every_cuda_plan():
    # On a GPU (skipped without torch and a CUDA device): the original's in-place form, every plan.
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    handle = cudnn.create_handle("cuda")
    B, nh, T, hs = 2, 4, 512, 128
    rope_n_elem = int(0.25 * hs)
    cos, sin = build_rope_cache(seq_len=T, n_elem=rope_n_elem)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((B, nh, T, hs)).astype(np.float16)
    views = [torch.from_numpy(np.ascontiguousarray(a)) for a in (x, cos, sin)]
    xd, cd, sd = (v.cuda() for v in views)
    g, uids = create_rope_graph(handle, *rope_inputs(xd, cd, sd, T, hs, rope_n_elem))
    g.build_plans(cudnn.build_plan_policy.ALL)
    for i in range(g.get_execution_plan_count()):
        x = rng.standard_normal((B, nh, T, hs)).astype(np.float16)
        expected = apply_rope_ref(x, cos, sin)
        xd = torch.from_numpy(x).cuda()
        x1, x2, c1, c2, s1, s2 = rope_inputs(xd, cd, sd, T, hs, rope_n_elem)
        ws = torch.empty(max(g.get_workspace_size_plan_at_index(i), 1), dtype=torch.uint8, device="cuda")
        g.execute_plan_at_index(dict(zip(uids, [x1, x2, s1, s2, c1, c2, x1, x2])), ws, i)
        torch.cuda.synchronize()
        assert_close(xd.cpu().numpy(), expected, atol=1e-2, rtol=1e-2)
