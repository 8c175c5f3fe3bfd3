"""NVIDIA cudnn-frontend's test/python/test_mhas.py (test_sdpa, test_sdpa_backward), ported to NumPy on
dnngraph's CPU handle.

Only `import cudnn` resolves to dnngraph (tests/python/cudnn_shim/cudnn.py). What changed from the
original, and why:
- torch CUDA tensors are NumPy arrays (bfloat16 from ml_dtypes); torch.as_strided views are
  np.lib.stride_tricks.as_strided views of one flat buffer, so the layouts (bshd, bs3hd, sbh3d, and
  the packed thd / t3hd of ragged tensors) are the original's element for element.
- compute_ref is ported line by line to NumPy in float64; test_sdpa_backward's torch.autograd is
  replaced by the analytic gradients of the same computation (ref_backward), masked_fill's zero
  gradient and the row-zeroing multiplies included.
- The parameter grid is the original's L0 grid with its skip rules (evaluated for cuDNN 9.10.2 on
  Hopper, where nothing is skipped for the version), but a seeded sample of it runs (SAMPLES_FWD,
  SAMPLES_BWD; cases the original always skips are left out of the sample), and the random sequence lengths come from small choices (1, 24, 32, 100 instead of
  24 .. 2048) so that the NumPy reference and the CPU engines stay within CI's time; the head dims are
  the original's (32 .. 520).
- validate()'s cudnnGraphNotSupportedError fails here instead of skipping: the CPU handle supports
  every configuration of the grid, so a skip would hide a gap.
- Dropout's seed and offset give dnngraph's Philox stream, not cuDNN's: as in the original, the
  reference reads the mask back from rng_dump, so the check does not depend on the stream.
- The real frontend's validate() refuses (cudnnGraphNotSupportedError, a skip) a sliding window or a
  bottom-right band without the padding mask when s_q > s_kv (cuDNN's rule); the reference gives
  NaN or, for rows that see no key, a logsumexp of the unmasked row for those. dnngraph runs them
  (a row that sees no key gives O = 0 and STATS = 0), so frontend_refuses() keeps the original's
  skip for them.
- There is no stream to set; torch_fork_set_rng(seed=0) becomes a numpy Generator per test.
The graph code, tolerances and comparisons are the original's.
"""
import cudnn
import itertools
import math
import random
import zlib

import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 NumPy arrays come from ml_dtypes")
bfloat16 = np.dtype(ml_dtypes.bfloat16)

input_type_options = [np.dtype(np.float16), bfloat16]
layout_options = ["bshd_bshd_bshd", "bs3hd", "sbh3d"]
head_group_options = ["multi_head", "group_query", "multi_query"]
bool_options = [False, True]
diagonal_alignment_options = [cudnn.diagonal_alignment.TOP_LEFT, cudnn.diagonal_alignment.BOTTOM_RIGHT]
page_table_options = [0, 1, "_packed"]
SAMPLES_FWD, SAMPLES_BWD = 120, 80
S_CHOICES = [24, 32, 100]


@pytest.fixture(scope="module")
def cudnn_handle():
    return cudnn.create_handle("cpu")


def as_strided(flat, shape, stride, offset):
    item = flat.itemsize
    return np.lib.stride_tricks.as_strided(flat[offset:], shape=shape, strides=[s * item for s in stride])


def compute_ref(q, k, v, attn_scale=1.0, bias=None, is_alibi=False, padding=None, sliding_window=(None, None),
                diagonal_alignment=cudnn.diagonal_alignment.TOP_LEFT, dropout_prob=0.0, dropout_mask=None):
    """The original's compute_ref in float64 NumPy. Returns (o, stats, saved) where saved holds what
    ref_backward needs."""
    b, h_q, s_q, d_qk = q.shape
    _, h_k, s_kv, _ = k.shape
    _, h_v, _, d_v = v.shape
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    left_bound, right_bound = sliding_window
    k = np.repeat(k, h_q // h_k, axis=1)
    v = np.repeat(v, h_q // h_v, axis=1)
    qz = np.ones((b, 1, s_q, 1))  # rows of q zeroed (swa_mask_zero, padding)
    kz = np.ones((b, 1, s_kv, 1))
    swa_mask_zero = np.ones((1, 1, s_q, 1), bool)
    if left_bound is not None:
        swa_mask_zero[:, :, s_kv + left_bound - 1:, :] = False
        qz = qz * swa_mask_zero
    s_mask = np.zeros((b, 1, s_q, s_kv), bool)
    p_mask = np.zeros((b, 1, s_q, 1), bool)
    if padding is not None:
        for i, (m, n) in enumerate(zip(*padding)):
            qz[i, :, m:, :] = 0
            kz[i, :, n:, :] = 0
            s_mask[i, :, :, n:] = True
            p_mask[i, :, m:, :] = True
    q, k, v = q * qz, k * kz, v * kz
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * attn_scale
    if bias is not None:
        s = s + bias.astype(np.float64)
    if is_alibi:
        distance = np.arange(s_kv, dtype=np.float64)[None, :] - np.arange(s_q, dtype=np.float64)[:, None]
        n = 2 ** math.floor(math.log2(h_q))
        m = (2.0 ** (-8.0 / n)) ** np.arange(1, 1 + n)
        if n < h_q:
            m = np.concatenate([m, (2.0 ** (-4.0 / n)) ** np.arange(1, 1 + 2 * (h_q - n), 2)])
        s = s + distance * m.reshape(1, -1, 1, 1)
    masked = np.broadcast_to(s_mask, s.shape).copy()
    if right_bound is not None:
        for i in range(b):
            if diagonal_alignment == cudnn.diagonal_alignment.TOP_LEFT:
                diag = 1 + right_bound
            elif padding is not None:
                diag = padding[1][i] - padding[0][i] + 1 + right_bound
            else:
                diag = s_kv - s_q + 1 + right_bound
            masked[i] |= np.triu(np.ones((s_q, s_kv), bool), k=diag)
    if left_bound is not None:
        for i in range(b):
            if diagonal_alignment == cudnn.diagonal_alignment.TOP_LEFT:
                diag = -left_bound
            elif padding is not None:
                diag = padding[1][i] - padding[0][i] - left_bound
            else:
                diag = -left_bound + (s_kv - s_q)
            masked[i] |= np.tril(np.ones((s_q, s_kv), bool), k=diag) & swa_mask_zero.reshape(s_q, 1)
    s = np.where(masked, -np.inf, s)
    with np.errstate(invalid="ignore", over="ignore"):
        row_max = s.max(-1, keepdims=True)
        e = np.exp(s - row_max)
        p = e / e.sum(-1, keepdims=True)
        stats = row_max + np.log(e.sum(-1, keepdims=True))
    row_keep = swa_mask_zero * 1.0
    p2 = np.where(p_mask, 0.0, p * row_keep)
    drop = dropout_mask.astype(np.float64) / (1 - dropout_prob) if dropout_prob != 0.0 else 1.0
    pd = p2 * drop
    o = np.einsum("bhqk,bhkd->bhqd", pd, v)
    saved = dict(q=q, k=k, v=v, qz=qz, kz=kz, p=p, pd=pd, drop=drop, row_keep=row_keep, p_mask=p_mask, masked=masked,
                 scale=attn_scale, h_k=h_k, h_v=h_v)
    return o, stats, saved


def ref_backward(saved, d_o, bias_shape):
    """The gradients torch.autograd gives the original's compute_ref, analytically."""
    q, k, v, p, pd = saved["q"], saved["k"], saved["v"], saved["p"], saved["pd"]
    d_o = d_o.astype(np.float64)
    dv = np.einsum("bhqk,bhqd->bhkd", pd, d_o)
    dpd = np.einsum("bhqd,bhkd->bhqk", d_o, v)
    dp = np.where(saved["p_mask"], 0.0, dpd * saved["drop"] * saved["row_keep"])
    with np.errstate(invalid="ignore"):
        ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    ds = np.where(saved["masked"], 0.0, ds)  # masked_fill(-inf) passes no gradient (nor a NaN row's)
    dq = np.einsum("bhqk,bhkd->bhqd", ds, k) * saved["scale"] * saved["qz"]
    dk = np.einsum("bhqk,bhqd->bhkd", ds, q) * saved["scale"] * saved["kz"]
    dv = dv * saved["kz"]
    b, h_q = q.shape[:2]
    dk = dk.reshape(b, saved["h_k"], h_q // saved["h_k"], *dk.shape[2:]).sum(2)
    dv = dv.reshape(b, saved["h_v"], h_q // saved["h_v"], *dv.shape[2:]).sum(2)
    dbias = None
    if bias_shape is not None:
        axes = tuple(i for i in (0, 1) if bias_shape[i] == 1)
        dbias = ds.sum(axis=axes, keepdims=True)
    return dq, dk, dv, dbias


def generate_layout(layout, head_group, shape_q, shape_k, shape_v, shape_o):
    """The original's generate_layout (unpacked; the packed layouts share its strides)."""
    b, h_q, s_q, d_qk = shape_q
    _, h_k, s_kv, _ = shape_k
    _, h_v, _, d_v = shape_v
    if layout == "bshd_bshd_bshd":
        return ((s_q * h_q * d_qk, d_qk, h_q * d_qk, 1), (s_kv * h_k * d_qk, d_qk, h_k * d_qk, 1),
                (s_kv * h_v * d_v, d_v, h_v * d_v, 1), (s_q * h_q * d_v, d_v, h_q * d_v, 1),
                0, b * s_q * h_q * d_qk, b * s_q * h_q * d_qk + b * s_kv * h_k * d_qk)
    if layout == "bs3hd":
        h, s, d = h_q, s_q, d_qk
        if head_group == "multi_head":
            st = (s * 3 * h * d, d, 3 * h * d, 1)
            return st, st, st, (s * h * d, d, h * d, 1), 0, h * d, 2 * h * d
        st = (s * 2 * h_k * d, d, 2 * h_k * d, 1)
        return ((s * h_q * d, d, h_q * d, 1), st, st, (s * h_q * d, d, h_q * d, 1), 0, s * b * h_q * d,
                s * b * h_q * d + h_k * d)
    h, s, d = h_q, s_q, d_qk  # sbh3d
    if head_group == "multi_head":
        st = (h * 3 * d, 3 * d, b * h * 3 * d, 1)
        return st, st, st, (h * d, d, b * h * d, 1), 0, d, 2 * d
    st = (h_k * 2 * d, 2 * d, b * h_k * 2 * d, 1)
    return (h_q * d, d, b * h_q * d, 1), st, st, (h_q * d, d, b * h_q * d, 1), 0, s * b * h_q * d, s * b * h_q * d + d


def generate_ragged_offset(layout, head_group, shape_q, shape_k, shape_v, seq_len_q, seq_len_kv):
    """The original's generate_ragged_offset: exclusive prefix sums of the lengths, in elements, INT64."""
    b, h_q, _, d_qk = shape_q
    h_k, h_v, d_v = shape_k[1], shape_v[1], shape_v[3]

    def prefix(t):
        return np.concatenate([[0], np.cumsum(t.flatten())]).reshape(-1, 1, 1, 1).astype(np.int64)

    if layout == "bshd_bshd_bshd":
        return (prefix(seq_len_q) * h_q * d_qk, prefix(seq_len_kv) * h_k * d_qk, prefix(seq_len_kv) * h_v * d_v,
                prefix(seq_len_q) * h_q * d_v)
    if head_group == "multi_head":
        return (prefix(seq_len_q) * 3 * h_q * d_qk,) * 3 + (prefix(seq_len_q) * h_q * d_qk,)
    return (prefix(seq_len_q) * h_q * d_qk, prefix(seq_len_kv) * 2 * h_k * d_qk, prefix(seq_len_kv) * 2 * h_k * d_qk,
            prefix(seq_len_q) * h_q * d_qk)


def convert_ragged_to_uniform(ragged, seq_len):
    b, h, s, d = ragged.shape
    uniform = np.zeros((b, s, h, d), ragged.dtype)
    flat = np.lib.stride_tricks.as_strided(ragged, shape=(b * s, h, d),
                                           strides=(ragged.strides[2], ragged.strides[1], ragged.strides[3]))
    t = 0
    for i, n in enumerate(seq_len.flatten()):
        uniform[i, :n] = flat[t:t + n]
        t += n
    return uniform.transpose(0, 2, 1, 3)


def generate_actual_seq_lens(rng, b, s_q, s_kv, layout, head_group, is_padding, force_sq_le_skv):
    if not is_padding:
        return None, None
    seq_len_q = rng.integers(1, s_q + 1, (b, 1, 1, 1)).astype(np.int32)
    if layout == "bs3hd" and head_group == "multi_head":
        return seq_len_q, seq_len_q
    seq_len_kv = rng.integers(1, s_kv + 1, (b, 1, 1, 1)).astype(np.int32)
    if force_sq_le_skv:
        seq_len_q = np.maximum(1, seq_len_q % seq_len_kv).astype(np.int32)
    return seq_len_q, seq_len_kv


def create_container_and_page_table(tensor, block_size):
    B, H, S, D = tensor.shape
    blocks_per_batch = math.ceil(S / block_size)
    padded = np.concatenate([tensor, np.zeros((B, H, blocks_per_batch * block_size - S, D), tensor.dtype)], axis=2)
    container = np.concatenate(np.split(padded, blocks_per_batch, axis=2), axis=0)
    table = np.arange(B * blocks_per_batch, dtype=np.int32).reshape(blocks_per_batch, 1, B, 1).transpose(2, 1, 0, 3)
    return container, np.ascontiguousarray(table)  # [B, 1, blocks, 1], batch outermost as the original's


def convert_uniform_to_ragged_page_tables(table, seq_len, block_size):
    B, H, S, D = table.shape
    offset = np.zeros((B + 1, 1, 1, 1), np.int32)
    for i in range(1, B + 1):
        offset[i] = offset[i - 1] + (seq_len.flatten()[i - 1] + block_size - 1) // block_size
    packed = np.zeros((B * S, H, D), table.dtype)
    flat = table.transpose(0, 2, 1, 3).reshape(B * S, H, D)
    t0 = 0
    for b, t1 in enumerate(offset.flatten()[1:]):
        packed[t0:t1] = flat[b * S:b * S + (t1 - t0)]
        t0 = t1
    return packed.reshape(B, S, H, D).transpose(0, 2, 1, 3), offset


def skipped(layout, head_group, paged, is_padding, is_ragged, *_):
    """The original's skip rules on Hopper with cuDNN >= 9.10.2 (test_sdpa's; paged=0 for the backward)."""
    if is_ragged and layout not in ("bshd_bshd_bshd", "bs3hd"):
        return True
    if is_ragged and not is_padding:
        return True
    return paged in (1, "_packed") and (not is_padding or layout != "bshd_bshd_bshd" or is_ragged)


def frontend_refuses(s_q, s_kv, is_padding, left_bound, right_bound, diagonal_alignment):
    """cuDNN's validate-time rules that turn these cases into skips in the original."""
    if is_padding or s_q <= s_kv:
        return False
    return left_bound is not None or (right_bound is not None and
                                      diagonal_alignment == cudnn.diagonal_alignment.BOTTOM_RIGHT)


def alibi_skipped(case):
    """test_sdpa_backward's ALiBi skip where it holds whatever the draws: ALiBi without a top-left right bound."""
    return len(case) == 12 and case[7] and not (case[8] == cudnn.diagonal_alignment.TOP_LEFT and case[10])


def sample(grid, n, seed):
    cases = [c for c in grid if not skipped(*c) and not alibi_skipped(c)]
    return random.Random(seed).sample(cases, n)


# (layout, head_group, paged, padding, ragged, input_type, bias, alibi, alignment, left, right, dropout, infer)
FWD_GRID = list(itertools.product(layout_options, head_group_options, page_table_options, bool_options, bool_options,
                                  input_type_options, bool_options, bool_options, diagonal_alignment_options,
                                  bool_options, bool_options, bool_options, bool_options))
BWD_GRID = list(itertools.product(layout_options, head_group_options, [0], bool_options, bool_options,
                                  input_type_options, bool_options, bool_options, diagonal_alignment_options,
                                  bool_options, bool_options, bool_options))


def case_id(c):
    names = ["", "", "paged", "padding", "ragged", "", "bias", "alibi", "", "left_bound", "right_bound", "dropout",
             "infer"]
    parts = [str(c[0]), str(c[1]), str(c[5])]
    parts += [f"{n}{int(v) if isinstance(v, bool) else v}" for n, v in zip(names, c) if n]
    parts.append(str(c[8]).replace("diagonal_alignment.", ""))
    return "-".join(parts)


def draw_sizes(rng, layout, head_group, s_q_choices, d_choices, d_v_choices):
    b = 2
    s_q = random.choice(s_q_choices)
    s_kv = random.choice(S_CHOICES) if layout == "bshd_bshd_bshd" else s_q
    d_qk = random.choice(d_choices)
    d_v = random.choice(d_v_choices) if layout == "bshd_bshd_bshd" else d_qk
    h_q = 6
    if head_group == "multi_head":
        h_k = h_v = 6
    elif head_group == "group_query":
        h_k = random.choice([6, 3, 2, 1])
        h_v = random.choice([6, 3, 2, 1]) if layout == "bshd_bshd_bshd" else h_k
    else:
        h_k = h_v = 1
    return b, s_q, s_kv, d_qk, d_v, h_q, h_k, h_v


def make_inputs(rng, input_type, layout, head_group, shapes):
    shape_q, shape_k, shape_v, shape_o = shapes
    stride_q, stride_k, stride_v, stride_o, off_q, off_k, off_v = generate_layout(layout, head_group, *shapes)
    n = math.prod(shape_q) + math.prod(shape_k) + math.prod(shape_v)
    qkv = (rng.standard_normal(n).astype(np.float32).astype(input_type) - 0.5).astype(input_type)
    q = as_strided(qkv, shape_q, stride_q, off_q)
    k = as_strided(qkv, shape_k, stride_k, off_k)
    v = as_strided(qkv, shape_v, stride_v, off_v)
    return qkv, (q, k, v), (stride_q, stride_k, stride_v, stride_o), (off_q, off_k, off_v)


def nan_array(shape, stride, dtype):
    flat = np.full(math.prod(shape), np.nan, np.float32).astype(dtype)
    return as_strided(flat, shape, stride, 0)


def assert_close(actual, expected, atol, rtol):
    actual = np.asarray(actual, np.float64)
    expected = np.asarray(expected, np.float64)
    bad = ~(np.abs(actual - expected) <= atol + rtol * np.abs(expected))
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} elements differ; first at "
                           f"{np.argwhere(bad)[0].tolist()}: {actual[bad][0]} vs {expected[bad][0]}")


@pytest.mark.L0
@pytest.mark.parametrize("case", sample(FWD_GRID, SAMPLES_FWD, 18), ids=case_id)
def test_sdpa(case, cudnn_handle):
    (layout, head_group, paged_attention, is_padding, is_ragged, input_type, is_bias, is_alibi, diagonal_alignment,
     is_left_bound, is_right_bound, is_dropout, is_infer) = case
    rng = np.random.default_rng(0)
    random.seed(zlib.crc32(case_id(case).encode()))
    is_paged = paged_attention in (1, "_packed")
    is_packed_paged = paged_attention == "_packed"
    s_q_choices = S_CHOICES + ([1] if layout == "bshd_bshd_bshd" else [])
    d_choices = [32, 56, 64, 128, 192, 256, 200, 264, 520]
    b, s_q, s_kv, d_qk, d_v, h_q, h_k, h_v = draw_sizes(rng, layout, head_group, s_q_choices, d_choices, d_choices)
    if s_q == 1:
        is_left_bound = False
        is_dropout = False
    block_size = random.choice([32, 64, 128])
    left_bound = max(1, random.choice([1, s_kv // 4])) if is_left_bound else None
    right_bound = random.choice([0, s_kv // 4]) if is_right_bound else None
    if frontend_refuses(s_q, s_kv, is_padding, left_bound, right_bound, diagonal_alignment):
        pytest.skip("cuDNN refuses a sliding window or bottom-right band without padding when s_q > s_kv")
    attn_scale = 0.125
    dropout_prob = 0.1 if is_dropout else 0.0
    shapes = ((b, h_q, s_q, d_qk), (b, h_k, s_kv, d_qk), (b, h_v, s_kv, d_v), (b, h_q, s_q, d_v))
    _, (q_gpu, k_gpu, v_gpu), strides, _ = make_inputs(rng, input_type, layout, head_group, shapes)
    bias_gpu = rng.standard_normal((1, h_q, s_q, s_kv)).astype(np.float32).astype(input_type) if is_bias else None
    seq_len_q_gpu, seq_len_kv_gpu = generate_actual_seq_lens(
        rng, b, s_q, s_kv, layout, head_group, is_padding,
        is_left_bound or (is_right_bound and diagonal_alignment == cudnn.diagonal_alignment.BOTTOM_RIGHT))
    seed_gpu = np.full((1, 1, 1, 1), 123456, np.int64)
    offset_gpu = np.full((1, 1, 1, 1), 789, np.int64)
    rng_dump_gpu = np.zeros((b, h_q, s_q, s_kv), np.float32) if is_dropout else None
    if is_ragged:
        q_off, k_off, v_off, o_off = generate_ragged_offset(layout, head_group, *shapes[:3], seq_len_q_gpu,
                                                            seq_len_kv_gpu)
    o_gpu = nan_array(shapes[3], strides[3], input_type)
    stats_gpu = np.full((b, h_q, s_q, 1), np.nan, np.float32) if not is_infer else None
    if is_paged:
        container_k, table_k = create_container_and_page_table(k_gpu, block_size)
        container_v, table_v = create_container_and_page_table(v_gpu, block_size)
    if is_packed_paged:
        table_k, table_k_off = convert_uniform_to_ragged_page_tables(table_k, seq_len_kv_gpu, block_size)
        table_v, table_v_off = convert_uniform_to_ragged_page_tables(table_v, seq_len_kv_gpu, block_size)

    graph = cudnn.pygraph(io_data_type=cudnn.data_type.HALF if input_type == np.float16 else cudnn.data_type.BFLOAT16,
                          intermediate_data_type=cudnn.data_type.FLOAT, compute_data_type=cudnn.data_type.FLOAT,
                          handle=cudnn_handle)
    q = graph.tensor_like(q_gpu)
    k = graph.tensor_like(container_k if is_paged else k_gpu)
    v = graph.tensor_like(container_v if is_paged else v_gpu)
    page_table_k = graph.tensor_like(table_k) if is_paged else None
    page_table_v = graph.tensor_like(table_v) if is_paged else None
    bias = graph.tensor_like(bias_gpu) if is_bias else None
    seq_len_q = graph.tensor_like(seq_len_q_gpu) if is_padding else None
    seq_len_kv = graph.tensor_like(seq_len_kv_gpu) if is_padding else None
    seed = graph.tensor_like(seed_gpu) if is_dropout else None
    offset = graph.tensor_like(offset_gpu) if is_dropout else None
    rng_dump = graph.tensor_like(rng_dump_gpu) if is_dropout else None
    ragged = [graph.tensor_like(x) for x in (q_off, k_off, v_off, o_off)] if is_ragged else [None] * 4
    if is_ragged:
        q.set_ragged_offset(ragged[0])
        k.set_ragged_offset(ragged[1])
        v.set_ragged_offset(ragged[2])
    if is_packed_paged:
        table_k_off_t, table_v_off_t = graph.tensor_like(table_k_off), graph.tensor_like(table_v_off)
        page_table_k.set_ragged_offset(table_k_off_t)
        page_table_v.set_ragged_offset(table_v_off_t)
    o, stats = graph.sdpa(name="sdpa", q=q, k=k, v=v, generate_stats=not is_infer, attn_scale=attn_scale, bias=bias,
                          use_alibi_mask=is_alibi, use_padding_mask=is_padding, seq_len_q=seq_len_q,
                          seq_len_kv=seq_len_kv, diagonal_band_left_bound=left_bound,
                          diagonal_band_right_bound=right_bound, diagonal_alignment=diagonal_alignment,
                          dropout=(dropout_prob, seed, offset) if is_dropout else None, rng_dump=rng_dump,
                          paged_attention_k_table=page_table_k, paged_attention_v_table=page_table_v,
                          paged_attention_max_seq_len_kv=s_kv if is_paged else None,
                          implementation=cudnn.attention_implementation.AUTO)
    o.set_output(True).set_dim(shapes[3]).set_stride(strides[3])
    if is_ragged:
        o.set_ragged_offset(ragged[3])
    if not is_infer:
        stats.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    graph.validate()  # the original skips on cudnnGraphNotSupportedError; here it fails (see above)
    graph.build_operation_graph()
    graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    graph.check_support()
    graph.build_plans()
    pack = {q: q_gpu, k: container_k if is_paged else k_gpu, v: container_v if is_paged else v_gpu, o: o_gpu}
    optional = [(bias, bias_gpu), (seq_len_q, seq_len_q_gpu), (seq_len_kv, seq_len_kv_gpu), (stats, stats_gpu),
                (rng_dump, rng_dump_gpu), (page_table_k, table_k if is_paged else None),
                (page_table_v, table_v if is_paged else None), (seed, seed_gpu), (offset, offset_gpu)]
    if is_ragged:
        optional += list(zip(ragged, (q_off, k_off, v_off, o_off)))
    if is_packed_paged:
        optional += [(table_k_off_t, table_k_off), (table_v_off_t, table_v_off)]
    pack.update({t: a for t, a in optional if t is not None})
    workspace = np.empty(graph.get_workspace_size(), np.uint8)
    graph.execute(pack, workspace, handle=cudnn_handle)

    q_ref, k_ref, v_ref = q_gpu, k_gpu, v_gpu
    if is_ragged:
        q_ref = convert_ragged_to_uniform(q_ref, seq_len_q_gpu)
        k_ref = convert_ragged_to_uniform(k_ref, seq_len_kv_gpu)
        v_ref = convert_ragged_to_uniform(v_ref, seq_len_kv_gpu)
    padding = (seq_len_q_gpu.flatten(), seq_len_kv_gpu.flatten()) if is_padding else None
    o_ref, stats_ref, _ = compute_ref(q_ref, k_ref, v_ref, attn_scale=attn_scale, bias=bias_gpu, is_alibi=is_alibi,
                                      padding=padding, sliding_window=(left_bound, right_bound),
                                      diagonal_alignment=diagonal_alignment, dropout_prob=dropout_prob,
                                      dropout_mask=rng_dump_gpu)
    o_out = convert_ragged_to_uniform(o_gpu, seq_len_q_gpu) if is_ragged else np.array(o_gpu, np.float64)
    o_out = np.asarray(o_out, np.float64)
    if is_padding:
        for i, m in enumerate(seq_len_q_gpu.flatten()):
            o_ref[i, :, m:, :] = 0
            o_out[i, :, m:, :] = 0
            if not is_infer:
                stats_ref[i, :, m:, :] = 0
                stats_gpu[i, :, m:, :] = 0
    assert_close(o_out, o_ref, atol=2e-2, rtol=2e-2)
    if not is_infer:
        assert_close(stats_gpu, stats_ref, atol=2e-2, rtol=2e-2)
    if is_dropout:  # the dump is a mask that drops about dropout_prob of the elements
        assert set(np.unique(rng_dump_gpu)) <= {0.0, 1.0}
        assert abs(1 - rng_dump_gpu.mean() - dropout_prob) < 0.05 or rng_dump_gpu.size < 2000


@pytest.mark.L0
@pytest.mark.parametrize("case", sample(BWD_GRID, SAMPLES_BWD, 19), ids=case_id)
def test_sdpa_backward(case, cudnn_handle):
    (layout, head_group, _, is_padding, is_ragged, input_type, is_bias, is_alibi, diagonal_alignment, is_left_bound,
     is_right_bound, is_dropout) = case
    rng = np.random.default_rng(0)
    random.seed(zlib.crc32(case_id(case).encode()))
    b, s_q, s_kv, d_qk, d_v, h_q, h_k, h_v = draw_sizes(rng, layout, head_group, [8, 16, 24, 32, 100], [32, 56, 64, 128],
                                                        [64, 96, 128])
    if layout != "bshd_bshd_bshd":
        s_kv = s_q
    left_bound = max(1, random.choice([1, s_kv // 4])) if is_left_bound else None
    right_bound = random.choice([0, s_kv // 4]) if is_right_bound else None
    if is_alibi and not (diagonal_alignment == cudnn.diagonal_alignment.TOP_LEFT and right_bound == 0):
        pytest.skip("ALiBi mask is only supported with causal mask")  # the original's skip
    if frontend_refuses(s_q, s_kv, is_padding, left_bound, right_bound, diagonal_alignment):
        pytest.skip("cuDNN refuses a sliding window or bottom-right band without padding when s_q > s_kv")
    attn_scale = 0.125
    dropout_prob = 0.1 if is_dropout else 0.0
    shapes = ((b, h_q, s_q, d_qk), (b, h_k, s_kv, d_qk), (b, h_v, s_kv, d_v), (b, h_q, s_q, d_v))
    qkv, (q_gpu, k_gpu, v_gpu), strides, offs = make_inputs(rng, input_type, layout, head_group, shapes)
    dqkv = np.full(qkv.size, np.nan, np.float32).astype(input_type)
    dq_gpu, dk_gpu, dv_gpu = (as_strided(dqkv, shapes[i], strides[i], offs[i]) for i in range(3))
    d_o_gpu = as_strided((0.1 * rng.standard_normal(math.prod(shapes[3]))).astype(np.float32).astype(input_type),
                         shapes[3], strides[3], 0)
    bias_gpu = rng.standard_normal((1, h_q, s_q, s_kv)).astype(np.float32).astype(input_type) if is_bias else None
    dbias_gpu = np.full((1, h_q, s_q, s_kv), np.nan, np.float32).astype(input_type) if is_bias else None
    seq_len_q_gpu, seq_len_kv_gpu = generate_actual_seq_lens(
        rng, b, s_q, s_kv, layout, head_group, is_padding,
        is_left_bound or (is_right_bound and diagonal_alignment == cudnn.diagonal_alignment.BOTTOM_RIGHT))
    seed_gpu = np.full((1, 1, 1, 1), 123456, np.int64)
    offset_gpu = np.full((1, 1, 1, 1), 789, np.int64)
    rng_dump_gpu = np.zeros((b, h_q, s_q, s_kv), np.float32) if is_dropout else None
    offsets = (generate_ragged_offset(layout, head_group, *shapes[:3], seq_len_q_gpu, seq_len_kv_gpu)
               if is_ragged else None)
    o_gpu = nan_array(shapes[3], strides[3], input_type)
    stats_gpu = np.full((b, h_q, s_q, 1), np.nan, np.float32)
    io = cudnn.data_type.HALF if input_type == np.float16 else cudnn.data_type.BFLOAT16

    def common(graph, backward):
        q, k, v = graph.tensor_like(q_gpu), graph.tensor_like(k_gpu), graph.tensor_like(v_gpu)
        t = dict(q=q, k=k, v=v, bias=graph.tensor_like(bias_gpu) if is_bias else None,
                 seq_len_q=graph.tensor_like(seq_len_q_gpu) if is_padding else None,
                 seq_len_kv=graph.tensor_like(seq_len_kv_gpu) if is_padding else None,
                 seed=graph.tensor_like(seed_gpu) if is_dropout else None,
                 offset=graph.tensor_like(offset_gpu) if is_dropout else None,
                 ragged=[graph.tensor_like(x) for x in offsets] if is_ragged else None)
        if is_ragged:
            q.set_ragged_offset(t["ragged"][0])
            k.set_ragged_offset(t["ragged"][1])
            v.set_ragged_offset(t["ragged"][2])
        kwargs = dict(attn_scale=attn_scale, bias=t["bias"], use_alibi_mask=is_alibi, use_padding_mask=is_padding,
                      seq_len_q=t["seq_len_q"], seq_len_kv=t["seq_len_kv"], diagonal_band_left_bound=left_bound,
                      diagonal_band_right_bound=right_bound, diagonal_alignment=diagonal_alignment,
                      dropout=(dropout_prob, t["seed"], t["offset"]) if is_dropout else None)
        pack = {q: q_gpu, k: k_gpu, v: v_gpu}
        for name, arr in (("bias", bias_gpu), ("seq_len_q", seq_len_q_gpu), ("seq_len_kv", seq_len_kv_gpu),
                          ("seed", seed_gpu), ("offset", offset_gpu)):
            if t[name] is not None:
                pack[t[name]] = arr
        if is_ragged:
            pack.update(dict(zip(t["ragged"], offsets)))
        return t, kwargs, pack

    graph = cudnn.pygraph(io_data_type=io, intermediate_data_type=cudnn.data_type.FLOAT,
                          compute_data_type=cudnn.data_type.FLOAT, handle=cudnn_handle)
    t, kwargs, pack = common(graph, False)
    rng_dump = graph.tensor_like(rng_dump_gpu) if is_dropout else None
    o, stats = graph.sdpa(name="sdpa", q=t["q"], k=t["k"], v=t["v"], generate_stats=True, rng_dump=rng_dump, **kwargs)
    o.set_output(True).set_dim(shapes[3]).set_stride(strides[3])
    if is_ragged:
        o.set_ragged_offset(t["ragged"][3])
    stats.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    graph.validate()
    graph.build_operation_graph()
    graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    graph.check_support()
    graph.build_plans()
    pack.update({o: o_gpu, stats: stats_gpu})
    if is_dropout:
        pack[rng_dump] = rng_dump_gpu
    graph.execute(pack, np.empty(graph.get_workspace_size(), np.uint8), handle=cudnn_handle)

    graph = cudnn.pygraph(io_data_type=io, intermediate_data_type=cudnn.data_type.FLOAT,
                          compute_data_type=cudnn.data_type.FLOAT, handle=cudnn_handle)
    t, kwargs, pack = common(graph, True)
    o, d_o, stats = graph.tensor_like(o_gpu), graph.tensor_like(d_o_gpu), graph.tensor_like(stats_gpu)
    dbias = graph.tensor_like(dbias_gpu).set_stride((h_q * s_q * s_kv, s_q * s_kv, s_kv, 1)) if is_bias else None
    if is_ragged:
        o.set_ragged_offset(t["ragged"][3])
        d_o.set_ragged_offset(t["ragged"][3])
    max_t_q = ((int(seq_len_q_gpu.sum()) + 63) // 64) * 64 if is_ragged else None
    max_t_kv = ((int(seq_len_kv_gpu.sum()) + 63) // 64) * 64 if is_ragged else None
    dq, dk, dv = graph.sdpa_backward(name="sdpa_backward", q=t["q"], k=t["k"], v=t["v"], o=o, dO=d_o, stats=stats,
                                     dBias=dbias, max_total_seq_len_q=max_t_q, max_total_seq_len_kv=max_t_kv,
                                     use_deterministic_algorithm=random.choice([True, False]), **kwargs)
    dq.set_output(True).set_dim(dq_gpu.shape).set_stride([s // dq_gpu.itemsize for s in dq_gpu.strides])
    dk.set_output(True).set_dim(dk_gpu.shape).set_stride([s // dk_gpu.itemsize for s in dk_gpu.strides])
    dv.set_output(True).set_dim(dv_gpu.shape).set_stride([s // dv_gpu.itemsize for s in dv_gpu.strides])
    if is_ragged:
        dq.set_ragged_offset(t["ragged"][0])
        dk.set_ragged_offset(t["ragged"][1])
        dv.set_ragged_offset(t["ragged"][2])
    graph.validate()
    graph.build_operation_graph()
    graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    graph.check_support()
    graph.build_plans()
    pack.update({o: o_gpu, d_o: d_o_gpu, stats: stats_gpu, dq: dq_gpu, dk: dk_gpu, dv: dv_gpu})
    if is_bias:
        pack[dbias] = dbias_gpu
    graph.execute(pack, np.empty(graph.get_workspace_size(), np.uint8), handle=cudnn_handle)

    q_ref, k_ref, v_ref, d_o_ref = q_gpu, k_gpu, v_gpu, d_o_gpu
    if is_ragged:
        q_ref = convert_ragged_to_uniform(q_ref, seq_len_q_gpu)
        k_ref = convert_ragged_to_uniform(k_ref, seq_len_kv_gpu)
        v_ref = convert_ragged_to_uniform(v_ref, seq_len_kv_gpu)
        d_o_ref = convert_ragged_to_uniform(d_o_ref, seq_len_q_gpu)
    padding = (seq_len_q_gpu.flatten(), seq_len_kv_gpu.flatten()) if is_padding else None
    _, _, saved = compute_ref(q_ref, k_ref, v_ref, attn_scale=attn_scale, bias=bias_gpu, is_alibi=is_alibi,
                              padding=padding, sliding_window=(left_bound, right_bound),
                              diagonal_alignment=diagonal_alignment, dropout_prob=dropout_prob,
                              dropout_mask=rng_dump_gpu)
    dq_ref, dk_ref, dv_ref, dbias_ref = ref_backward(saved, d_o_ref, bias_gpu.shape if is_bias else None)
    outs = [dq_gpu, dk_gpu, dv_gpu]
    if is_ragged:
        outs = [convert_ragged_to_uniform(outs[0], seq_len_q_gpu), convert_ragged_to_uniform(outs[1], seq_len_kv_gpu),
                convert_ragged_to_uniform(outs[2], seq_len_kv_gpu)]
    dq_out, dk_out, dv_out = (np.array(x, np.float64) for x in outs)
    if is_padding:
        for i, (m, n) in enumerate(zip(seq_len_q_gpu.flatten(), seq_len_kv_gpu.flatten())):
            dq_ref[i, :, m:, :] = dq_out[i, :, m:, :] = 0
            dk_ref[i, :, n:, :] = dk_out[i, :, n:, :] = 0
            dv_ref[i, :, n:, :] = dv_out[i, :, n:, :] = 0
    atol_kv = 2e-2 if input_type != bfloat16 else 7e-2
    assert_close(dq_out, dq_ref, atol=2e-2, rtol=2e-2)
    assert_close(dk_out, dk_ref, atol=atol_kv, rtol=2e-2)
    assert_close(dv_out, dv_ref, atol=atol_kv, rtol=2e-2)
    if is_bias:
        assert_close(dbias_gpu, dbias_ref, atol=atol_kv, rtol=2e-2)
