"""Norm axes by the scale's shape, as the cuDNN frontend decides them: layernorm and rmsnorm
normalize over the axes where the scale's dims are not 1 (a trailing block of X's dims)."""
import numpy as np
import pytest

import dnngraph
from conftest import assert_close, graph, rand, workspace

TRAINING, INFERENCE = dnngraph.norm_forward_phase.TRAINING, dnngraph.norm_forward_phase.INFERENCE


@pytest.mark.parametrize("x_shape,axes", [((4, 6, 32), (2,)), ((2, 3, 5, 16), (2, 3)), ((2, 1, 3, 8), (3,)),
                                          ((3, 8, 4), (1, 2))])
def test_layernorm_over_the_scales_axes(cpu, rng, x_shape, axes):
    p_shape = tuple(d if i in axes else 1 for i, d in enumerate(x_shape))
    x, s, b = rand(rng, x_shape), rand(rng, p_shape), rand(rng, p_shape)
    g = graph(cpu)
    X, S, B = g.tensor_like(x), g.tensor_like(s), g.tensor_like(b)
    Y, M, V = g.layernorm(TRAINING, X, S, B, 1e-5, name="ln")
    for t in (Y, M, V):
        t.set_output(True)
    assert (Y.get_name(), M.get_name(), V.get_name()) == ("ln::Y", "ln::MEAN", "ln::INV_VARIANCE")
    g.build()
    stat_shape = tuple(1 if i in axes else d for i, d in enumerate(x_shape))
    assert M.get_dim() == list(stat_shape) and Y.get_dim() == list(x_shape)
    y, m, v = np.full(x_shape, np.nan, np.float32), np.full(stat_shape, np.nan, np.float32), \
        np.full(stat_shape, np.nan, np.float32)
    g.execute({X: x, S: s, B: b, Y: y, M: m, V: v}, workspace(g))
    mu = x.astype(np.float64).mean(axis=axes, keepdims=True)
    iv = 1 / np.sqrt(x.astype(np.float64).var(axis=axes, keepdims=True) + 1e-5)
    assert_close(m, mu, scale=10)
    assert_close(v, iv, scale=10)
    assert_close(y, (x - mu) * iv * s + b, scale=10)


def test_rmsnorm_over_trailing_axes_inference(cpu, rng):
    x, s = rand(rng, (3, 5, 24)), rand(rng, (1, 1, 24))
    g = graph(cpu)
    X, S = g.tensor_like(x), g.tensor_like(s)
    Y, inv_rms = g.rmsnorm(INFERENCE, X, S, epsilon=1e-5, name="rms")
    assert inv_rms is None
    Y.set_output(True)
    g.build()
    y = np.full(x.shape, np.nan, np.float32)
    g.execute({X: x, S: s, Y: y}, workspace(g))
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=2, keepdims=True) + 1e-5) * s
    assert_close(y, want, scale=10)


def test_a_scale_over_other_axes_is_the_nodes_error(cpu, rng):
    g = graph(cpu)
    X = g.tensor_like(rand(rng, (4, 6, 8)))
    S = g.tensor_like(rand(rng, (1, 6, 1)))  # a middle axis only: not a trailing block
    Y, _, _ = g.layernorm(TRAINING, X, S, S, 1e-5, name="ln")
    Y.set_output(True)
    with pytest.raises(ValueError, match=r"SCALE dims \[1,6,1\] must be \[1,6,8\]"):
        g.validate()
