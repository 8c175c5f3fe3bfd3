"""Normalizations and pooling / resizing against NumPy."""
import numpy as np
import pytest

import dnngraph
from conftest import assert_close, graph, poisoned, rand, run, skip_if_pending

phase = dnngraph.norm_forward_phase


@pytest.mark.parametrize("shape", [(4, 10), (2, 3, 4, 5)])
def test_layernorm_training(cpu, rng, shape):
    g = graph(cpu)
    pd = (1,) + shape[1:]
    x, s, b = rand(rng, shape), rand(rng, pd), rand(rng, pd)
    X, S, B = g.tensor_like(x), g.tensor_like(s), g.tensor_like(b)
    eps = g.tensor(dim=[1] * len(shape), value=1e-5, data_type=dnngraph.data_type.FLOAT, name="eps")
    Y, M, IV = g.layernorm(norm_forward_phase=phase.TRAINING, input=X, scale=S, bias=B, epsilon=eps)
    for t in (Y, M, IV):
        t.set_output(True)
    g.validate()
    y, m, iv = poisoned(shape), poisoned(M.get_dim()), poisoned(IV.get_dim())
    run(g, {X: x, S: s, B: b, Y: y, M: m, IV: iv})
    axes = tuple(range(1, len(shape)))
    xd = x.astype(np.float64)
    mean = xd.mean(axes, keepdims=True)
    inv = 1 / np.sqrt(xd.var(axes, keepdims=True) + 1e-5)
    assert_close(y, (xd - mean) * inv * s + b, scale=10)
    assert_close(m, mean, scale=10)
    assert_close(iv, inv, scale=10)


def test_layernorm_inference_with_number_epsilon(cpu, rng):
    g = graph(cpu)
    x, s, b = rand(rng, (3, 8)), rand(rng, (1, 8)), rand(rng, (1, 8))
    X, S, B = g.tensor_like(x), g.tensor_like(s), g.tensor_like(b)
    Y, M, IV = g.layernorm(phase.INFERENCE, X, scale=S, bias=B, epsilon=1e-3)
    assert M is None and IV is None
    Y.set_output(True)
    y = poisoned((3, 8))
    run(g, {X: x, S: s, B: b, Y: y})
    xd = x.astype(np.float64)
    ref = (xd - xd.mean(1, keepdims=True)) / np.sqrt(xd.var(1, keepdims=True) + 1e-3) * s + b
    assert_close(y, ref, scale=10)


def test_rmsnorm(cpu, rng):
    g = graph(cpu)
    x, s = rand(rng, (5, 12)), rand(rng, (1, 12))
    X, S = g.tensor_like(x), g.tensor_like(s)
    Y, IR = g.rmsnorm(norm_forward_phase=phase.TRAINING, input=X, scale=S, epsilon=1e-5)
    Y.set_output(True)
    IR.set_output(True)
    y, ir = poisoned((5, 12)), poisoned((5, 1))
    run(g, {X: x, S: s, Y: y, IR: ir})
    xd = x.astype(np.float64)
    inv = 1 / np.sqrt((xd * xd).mean(1, keepdims=True) + 1e-5)
    assert_close(y, xd * inv * s, scale=10)
    assert_close(ir, inv, scale=10)


def test_batchnorm_inference(cpu, rng):
    g = graph(cpu)
    x = rand(rng, (2, 3, 4, 4))
    mean, iv, s, b = (rand(rng, (1, 3, 1, 1), low=0.5, high=1.5) for _ in range(4))
    X, MEAN, IV, S, B = (g.tensor_like(a) for a in (x, mean, iv, s, b))
    Y = g.batchnorm_inference(input=X, mean=MEAN, inv_variance=IV, scale=S, bias=B)
    Y.set_output(True)
    y = poisoned(x.shape)
    run(g, {X: x, MEAN: mean, IV: iv, S: s, B: b, Y: y})
    assert_close(y, (x.astype(np.float64) - mean) * iv * s + b)


def pool_ref(x, window, stride, pad, mode):
    n, c, h, w = x.shape
    fill = -np.inf if mode == "max" else 0.0
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    ones = np.pad(np.ones((h, w)), pad)
    p, q = (h + 2 * pad - window) // stride + 1, (w + 2 * pad - window) // stride + 1
    y = np.zeros((n, c, p, q))
    for i in range(p):
        for j in range(q):
            win = xp[:, :, i * stride:i * stride + window, j * stride:j * stride + window]
            if mode == "max":
                y[:, :, i, j] = win.max((2, 3))
            elif mode == "avg_include":
                y[:, :, i, j] = win.mean((2, 3))
            else:
                count = ones[i * stride:i * stride + window, j * stride:j * stride + window].sum()
                y[:, :, i, j] = win.sum((2, 3)) / count
    return y


@pytest.mark.parametrize("mode,rmode,pmode", [
    ("max", "MAXPOOL", "NEG_INF_PAD"),
    ("avg_include", "AVGPOOL_INCLUDE_PADDING", "ZERO_PAD"),
    ("avg_exclude", "AVGPOOL_EXCLUDE_PADDING", "ZERO_PAD"),
])
def test_pooling(cpu, rng, mode, rmode, pmode):
    g = graph(cpu)
    x = rand(rng, (2, 3, 7, 7))
    X = g.tensor_like(x)
    Y, index = g.resample(input=X, resampling_mode=getattr(dnngraph.resample_mode, rmode),
                          padding_mode=getattr(dnngraph.padding_mode, pmode), window=[3, 3], stride=[2, 2],
                          pre_padding=[1, 1], post_padding=[1, 1])
    assert index is None
    Y.set_output(True)
    y = poisoned((2, 3, 4, 4))
    run(g, {X: x, Y: y})
    assert_close(y, pool_ref(x, 3, 2, 1, mode))


def test_pooling_rejects_other_padding_modes(cpu):
    g = graph(cpu)
    X = g.tensor(dim=[1, 1, 4, 4])
    with pytest.raises(ValueError, match="padding_mode"):
        g.resample(X, dnngraph.resample_mode.MAXPOOL, padding_mode=dnngraph.padding_mode.ZERO_PAD, window=[2, 2],
                   stride=[2, 2])


def test_nearest_resize(cpu, rng):
    g = graph(cpu)
    x = rand(rng, (1, 2, 3, 4))
    X = g.tensor_like(x)
    Y, _ = g.resample(X, dnngraph.resample_mode.NEAREST, scale=[2.0, 2.0])
    Y.set_output(True)
    y = poisoned((1, 2, 6, 8))
    with skip_if_pending():
        run(g, {X: x, Y: y})
    assert_close(y, x.repeat(2, axis=2).repeat(2, axis=3))
