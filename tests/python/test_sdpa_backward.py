"""sdpa_backward against NumPy: the frontend's keyword signature, causal and band masks, GQA/MQA,
padding masks, BSHD layouts, and the frontend arguments dnngraph refuses by name."""
import math
from typing import Any, Dict, Optional, Tuple

import numpy as np
import pytest

import dnngraph
from conftest import assert_close, graph, poisoned, rand, run
from test_sdpa import sdpa_ref


def visible_mask(sq: int, skv: int, seq_q: int, seq_kv: int, right: Optional[int], left: Optional[int],
                 bottom_right: bool) -> np.ndarray:
    """The [sq, skv] matrix of keys each query row sees (src/graph/sdpa.cpp's rules)."""
    offset = seq_kv - seq_q if bottom_right else 0
    i = np.arange(sq)[:, None]
    j = np.arange(skv)[None, :]
    visible = (i < seq_q) & (j < seq_kv)
    if right is not None:
        visible &= j <= i + offset + right
    if left is not None:
        visible &= j > i + offset - left
    return visible


def sdpa_backward_ref(q: np.ndarray, k: np.ndarray, v: np.ndarray, d_o: np.ndarray, scale: float,
                      visible: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """dQ, dK, dV of softmax(scale * Q K^T masked) V, in float64; visible is [b, sq, skv]."""
    b, h, sq, d = q.shape
    hk = k.shape[1]
    kr = np.repeat(k.astype(np.float64), h // hk, axis=1)
    vr = np.repeat(v.astype(np.float64), h // hk, axis=1)
    s = np.einsum("bhid,bhjd->bhij", q.astype(np.float64), kr) * scale
    vis = visible[:, None, :, :]
    s = np.where(vis, s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    p = np.where(vis, np.exp(s - m), 0)
    den = p.sum(-1, keepdims=True)
    p = p / np.where(den > 0, den, 1)
    d_o64 = d_o.astype(np.float64)
    dp = np.einsum("bhid,bhjd->bhij", d_o64, vr)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    dq = np.einsum("bhij,bhjd->bhid", ds, kr) * scale
    dk = np.einsum("bhij,bhid->bhjd", ds, q.astype(np.float64)) * scale
    dv = np.einsum("bhij,bhid->bhjd", p, d_o64)
    group = h // hk
    dk = dk.reshape(b, hk, group, *dk.shape[2:]).sum(2)
    dv = dv.reshape(b, hk, group, *dv.shape[2:]).sum(2)
    return dq, dk, dv


def forward(cpu: Any, q: np.ndarray, k: np.ndarray, v: np.ndarray, kwargs: Dict[str, Any],
            seq: Optional[Tuple[np.ndarray, np.ndarray]]) -> Tuple[np.ndarray, np.ndarray]:
    """O and Stats of dnngraph's own forward."""
    g = graph(cpu)
    Q, K, V = g.tensor_like(q), g.tensor_like(k), g.tensor_like(v)
    pack: Dict[Any, np.ndarray] = {Q: q, K: k, V: v}
    extra: Dict[str, Any] = {}
    if seq is not None:
        SQ, SKV = g.tensor_like(seq[0]), g.tensor_like(seq[1])
        extra = dict(use_padding_mask=True, seq_len_q=SQ, seq_len_kv=SKV)
        pack.update({SQ: seq[0], SKV: seq[1]})
    O, STATS = g.sdpa(q=Q, k=K, v=V, generate_stats=True, **kwargs, **extra)
    O.set_output(True)
    STATS.set_output(True).set_data_type(dnngraph.data_type.FLOAT)
    b, h, sq, _ = q.shape
    o, st = poisoned((b, h, sq, v.shape[3])), poisoned((b, h, sq, 1))
    pack.update({O: o, STATS: st})
    run(g, pack)
    return o, st


CASES = [
    # b, h, hk, sq, skv, d, padding, kwargs, reference masks
    (1, 2, 2, 5, 5, 8, False, dict(use_causal_mask=True), dict(right=0)),
    (2, 4, 2, 4, 7, 8, True, dict(use_causal_mask_bottom_right=True), dict(right=0, bottom_right=True)),
    (1, 3, 1, 6, 6, 4, False, dict(), dict()),
    (2, 2, 1, 7, 9, 8, True, dict(diagonal_alignment=dnngraph.diagonal_alignment.BOTTOM_RIGHT,
                                   diagonal_band_left_bound=3, diagonal_band_right_bound=1),
     dict(left=3, right=1, bottom_right=True)),
    (1, 2, 2, 6, 6, 8, False, dict(use_causal_mask=True, sliding_window_length=2), dict(right=0, left=2)),
]


@pytest.mark.parametrize("b,h,hk,sq,skv,d,padding,kwargs,masks", CASES)
def test_sdpa_backward_matches_numpy(cpu: Any, rng: np.random.Generator, b: int, h: int, hk: int, sq: int,
                                     skv: int, d: int, padding: bool, kwargs: Dict[str, Any],
                                     masks: Dict[str, Any]) -> None:
    q, k, v = rand(rng, (b, h, sq, d)), rand(rng, (b, hk, skv, d)), rand(rng, (b, hk, skv, d))
    d_o = rand(rng, (b, h, sq, d))
    seq = None
    lengths = [(sq, skv)] * b
    if padding:
        lengths = [(max(1, sq - 1 - i), max(1, skv - 2 * i)) for i in range(b)]
        seq = (np.array([x for x, _ in lengths], np.int32).reshape(b, 1, 1, 1),
               np.array([y for _, y in lengths], np.int32).reshape(b, 1, 1, 1))
    scale = 0.7 / math.sqrt(d)
    o, st = forward(cpu, q, k, v, dict(attn_scale=scale, **kwargs), seq)
    g = graph(cpu)
    Q, K, V, O, DO, ST = (g.tensor_like(x) for x in (q, k, v, o, d_o, st))
    pack: Dict[Any, np.ndarray] = {Q: q, K: k, V: v, O: o, DO: d_o, ST: st}
    extra: Dict[str, Any] = {}
    if seq is not None:
        SQ, SKV = g.tensor_like(seq[0]), g.tensor_like(seq[1])
        extra = dict(use_padding_mask=True, seq_len_q=SQ, seq_len_kv=SKV)
        pack.update({SQ: seq[0], SKV: seq[1]})
    dQ, dK, dV = g.sdpa_backward(name="sdpa_backward", q=Q, k=K, v=V, o=O, dO=DO, stats=ST, attn_scale=scale,
                                 use_deterministic_algorithm=True, **kwargs, **extra)
    outs = [poisoned(x.shape) for x in (q, k, v)]
    for t, x in zip((dQ, dK, dV), outs):
        t.set_output(True).set_dim(list(x.shape)).set_stride([s // 4 for s in x.strides])
    pack.update(dict(zip((dQ, dK, dV), outs)))
    run(g, pack)
    assert g.get_plan_name_at_index(0).startswith("cpu_sdpa_backward_flash[")  # mode A's first: not ref
    visible = np.stack([visible_mask(sq, skv, lq, lkv, masks.get("right"), masks.get("left"),
                                     masks.get("bottom_right", False)) for lq, lkv in lengths])
    want = sdpa_backward_ref(q, k, v, d_o, scale, visible)
    for got, ref in zip(outs, want):
        assert_close(got, ref, scale=10)


def test_sdpa_backward_gradients_match_forward_reference(cpu: Any, rng: np.random.Generator) -> None:
    """The NumPy backward above is itself the gradient of test_sdpa's forward (finite differences)."""
    q, k, v = rand(rng, (1, 2, 3, 4)), rand(rng, (1, 1, 4, 4)), rand(rng, (1, 1, 4, 4))
    d_o = rand(rng, (1, 2, 3, 4))
    visible = visible_mask(3, 4, 3, 4, 0, None, True)[None]
    dq, dk, _ = sdpa_backward_ref(q, k, v, d_o, 0.5, visible)
    step = 1e-3
    for x, grad in ((q, dq), (k, dk)):
        x64 = x.astype(np.float64)
        for idx in [(0, 0, 1, 2), (0, 0, 2, 3)]:
            up, down = x64.copy(), x64.copy()
            up[idx] += step
            down[idx] -= step
            args_up = (up, k, v) if x is q else (q, up, v)
            args_down = (down, k, v) if x is q else (q, down, v)
            lu = (sdpa_ref(*args_up, 0.5, right=0, bottom_right=True)[0] * d_o).sum()
            ld = (sdpa_ref(*args_down, 0.5, right=0, bottom_right=True)[0] * d_o).sum()
            assert abs((lu - ld) / (2 * step) - grad[idx]) < 1e-5


@pytest.mark.parametrize("argument,value", [("rng_dump", "T"), ("score_mod", "T"), ("sink_token", "T"),
                                            ("dSink_token", "T")])
def test_sdpa_backward_refuses_features_it_lacks(cpu: Any, argument: str, value: Any) -> None:
    g = graph(cpu)
    Q = g.tensor(dim=[1, 1, 2, 4], stride=[8, 8, 4, 1])
    ST = g.tensor(dim=[1, 1, 2, 1], stride=[2, 2, 1, 1], data_type=dnngraph.data_type.FLOAT)
    if value == "T":
        value = Q
    elif isinstance(value, tuple):
        value = tuple(Q if x == "T" else x for x in value)
    with pytest.raises(ValueError, match=f"sdpa_backward 'bwd': {argument} asks for"):
        g.sdpa_backward(Q, Q, Q, Q, Q, ST, name="bwd", **{argument: value})


@pytest.mark.parametrize("argument,value", [("block_mask", "T"), ("score_mod", "T"), ("score_max", "T"),
                                            ("sink_token", "T"), ("unfuse_fma", True)])
def test_sdpa_refuses_features_it_lacks(cpu: Any, argument: str, value: Any) -> None:
    g = graph(cpu)
    Q = g.tensor(dim=[1, 1, 2, 4], stride=[8, 8, 4, 1])
    with pytest.raises(ValueError, match=f"sdpa 'fwd': {argument.split('_')[0]}"):
        g.sdpa(Q, Q, Q, name="fwd", **{argument: Q if value == "T" else value})


def test_sdpa_dropout_takes_probability_seed_offset(cpu: Any) -> None:
    g = graph(cpu)
    Q = g.tensor(dim=[1, 1, 2, 4], stride=[8, 8, 4, 1])
    with pytest.raises(ValueError, match="the frontend's \\(mask, scale\\) form"):
        g.sdpa(Q, Q, Q, name="fwd", dropout=(Q, Q))
    with pytest.raises(ValueError, match="seed and offset must be tensors"):
        g.sdpa(Q, Q, Q, name="fwd", dropout=(0.1, 3, 4))


def test_sdpa_backward_validation_names_node_and_tensor(cpu: Any) -> None:
    g = graph(cpu)
    Q = g.tensor(name="Q", dim=[1, 1, 2, 4], stride=[8, 8, 4, 1])
    ST = g.tensor(name="ST", dim=[1, 1, 2, 1], stride=[2, 2, 1, 1], data_type=dnngraph.data_type.HALF)
    dQ, dK, dV = g.sdpa_backward(Q, Q, Q, Q, Q, ST, name="bwd")
    for t in (dQ, dK, dV):
        t.set_output(True)
    with pytest.raises(ValueError, match=r"node 'bwd' \(sdpa_backward\), tensor 'ST': data type HALF must be FLOAT"):
        g.validate()
