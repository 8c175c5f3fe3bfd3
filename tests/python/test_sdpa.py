"""Scaled dot-product attention against NumPy: causal masks (both alignments), bands, GQA, stats."""
import math

import numpy as np
import pytest

import dnngraph
from conftest import assert_close, graph, poisoned, rand, run


def sdpa_ref(q, k, v, scale, right=None, left=None, bottom_right=False):
    b, h, sq, d = q.shape
    hk, skv = k.shape[1], k.shape[2]
    k = np.repeat(k.astype(np.float64), h // hk, axis=1)
    v = np.repeat(v.astype(np.float64), h // hk, axis=1)
    s = np.einsum("bhid,bhjd->bhij", q.astype(np.float64), k) * scale
    offset = skv - sq if bottom_right else 0
    i = np.arange(sq)[:, None]
    j = np.arange(skv)[None, :]
    visible = np.ones((sq, skv), bool)
    if right is not None:
        visible &= j <= i + offset + right
    if left is not None:
        visible &= j > i + offset - left
    s = np.where(visible, s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    p = np.exp(s - m)
    den = p.sum(-1, keepdims=True)
    o = np.einsum("bhij,bhjd->bhid", p / np.where(den > 0, den, 1), v)
    stats = np.where(den > 0, m + np.log(np.where(den > 0, den, 1)), 0)
    return o, stats


CASES = [
    # b, h, hk, sq, skv, d, kwargs, reference masks
    (1, 2, 2, 5, 5, 8, dict(use_causal_mask=True), dict(right=0)),
    (2, 4, 2, 4, 7, 8, dict(use_causal_mask_bottom_right=True), dict(right=0, bottom_right=True)),
    (1, 2, 1, 6, 6, 4, dict(), dict()),
    (1, 1, 1, 7, 7, 8, dict(diagonal_alignment=dnngraph.diagonal_alignment.TOP_LEFT, diagonal_band_left_bound=3,
                            diagonal_band_right_bound=1), dict(left=3, right=1)),
    (1, 2, 2, 6, 6, 8, dict(use_causal_mask=True, sliding_window_length=2), dict(right=0, left=2)),
]


@pytest.mark.parametrize("b,h,hk,sq,skv,d,kwargs,masks", CASES)
def test_sdpa_inference(cpu, rng, b, h, hk, sq, skv, d, kwargs, masks):
    g = graph(cpu)
    q, k, v = rand(rng, (b, h, sq, d)), rand(rng, (b, hk, skv, d)), rand(rng, (b, hk, skv, d))
    Q, K, V = g.tensor_like(q), g.tensor_like(k), g.tensor_like(v)
    scale = 1 / math.sqrt(d)
    O, stats = g.sdpa(q=Q, k=K, v=V, is_inference=True, attn_scale=scale, **kwargs)
    assert stats is None
    O.set_output(True)
    o = poisoned((b, h, sq, d))
    run(g, {Q: q, K: k, V: v, O: o})
    assert_close(o, sdpa_ref(q, k, v, scale, **masks)[0], scale=10)


def test_sdpa_training_stats_and_bshd_layout(cpu, rng):
    b, h, s, d = 2, 3, 6, 8
    # Q, K, V stored as [b, s, h, d] and described as [b, h, s, d] by strides.
    q, k, v = (rand(rng, (b, s, h, d)).transpose(0, 2, 1, 3) for _ in range(3))
    g = graph(cpu)
    Q, K, V = g.tensor_like(q), g.tensor_like(k), g.tensor_like(v)
    O, STATS = g.sdpa(Q, K, V, generate_stats=True, use_causal_mask=True)
    O.set_output(True).set_dim([b, h, s, d]).set_stride([h * s * d, s * d, d, 1])
    STATS.set_output(True).set_data_type(dnngraph.data_type.FLOAT)
    o, st = poisoned((b, h, s, d)), poisoned((b, h, s, 1))
    run(g, {Q: q, K: k, V: v, O: o, STATS: st})
    o_ref, st_ref = sdpa_ref(q, k, v, 1 / math.sqrt(d), right=0)
    assert_close(o, o_ref, scale=10)
    assert_close(st, st_ref, scale=10)


def test_sdpa_rejects_tensor_scale(cpu):
    g = graph(cpu)
    Q = g.tensor(dim=[1, 1, 2, 4])
    with pytest.raises(ValueError, match="attn_scale"):
        g.sdpa(Q, Q, Q, attn_scale=Q)
