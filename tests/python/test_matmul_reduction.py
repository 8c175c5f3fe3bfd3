"""Matmul (batched, broadcast, with an epilogue and an AMAX) and reductions against NumPy."""
import math

import numpy as np
import pytest

import dnngraph
from conftest import assert_close, graph, poisoned, rand, run


@pytest.mark.parametrize("ad,bd", [((1, 5, 7), (1, 7, 3)), ((3, 4, 6), (1, 6, 5)), ((2, 1, 3, 8), (1, 3, 8, 2))])
def test_matmul_broadcast(cpu, rng, ad, bd):
    g = graph(cpu)
    a, b = rand(rng, ad), rand(rng, bd)
    A, B = g.tensor_like(a), g.tensor_like(b)
    C = g.matmul(A=A, B=B)
    C.set_output(True)
    ref = np.matmul(a.astype(np.float64), b)
    c = poisoned(ref.shape)
    run(g, {A: a, B: b, C: c})
    assert_close(c, ref, scale=10)


def test_matmul_transposed_operand(cpu, rng):
    g = graph(cpu)
    a, bt = rand(rng, (2, 6, 4)), rand(rng, (2, 5, 4))
    b = bt.transpose(0, 2, 1)  # B[2,4,5] with column-major strides
    A, B = g.tensor_like(a), g.tensor_like(b)
    C = g.matmul(A, B)
    C.set_output(True)
    c = poisoned((2, 6, 5))
    run(g, {A: a, B: b, C: c})
    assert_close(c, a.astype(np.float64) @ b, scale=10)


def test_matmul_epilogue_with_amax(cpu, rng):
    """C = gelu(A @ B * scale + bias) and amax = max |C|, one graph."""
    g = graph(cpu)
    a, b, bias = rand(rng, (1, 16, 32)), rand(rng, (1, 32, 24)), rand(rng, (1, 1, 24))
    A, B, BIAS = g.tensor_like(a), g.tensor_like(b), g.tensor_like(bias)
    S = g.tensor(dim=[1, 1, 1], value=0.5, data_type=dnngraph.data_type.FLOAT, name="scale")
    C = g.gelu(g.bias(g.scale(g.matmul(A, B), S), BIAS))
    C.set_output(True)
    AMAX = g.reduction(input=C, mode=dnngraph.reduction_mode.AMAX)
    AMAX.set_output(True).set_dim([1, 1, 1]).set_stride([1, 1, 1])
    c, amax = poisoned((1, 16, 24)), poisoned((1, 1, 1))
    run(g, {A: a, B: b, BIAS: bias, C: c, AMAX: amax})
    z = (a.astype(np.float64) @ b) * 0.5 + bias
    ref = 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))
    assert_close(c, ref, scale=10)
    assert_close(amax, np.abs(ref).max(keepdims=True), scale=10)


REDUCTIONS = [
    ("ADD", lambda x, ax: x.sum(ax, keepdims=True)),
    ("MUL", lambda x, ax: x.prod(ax, keepdims=True)),
    ("MIN", lambda x, ax: x.min(ax, keepdims=True)),
    ("MAX", lambda x, ax: x.max(ax, keepdims=True)),
    ("AMAX", lambda x, ax: np.abs(x).max(ax, keepdims=True)),
    ("AVG", lambda x, ax: x.mean(ax, keepdims=True)),
    ("NORM1", lambda x, ax: np.abs(x).sum(ax, keepdims=True)),
    ("NORM2", lambda x, ax: np.sqrt((x * x).sum(ax, keepdims=True))),
]


@pytest.mark.parametrize("mode,ref", REDUCTIONS)
@pytest.mark.parametrize("axes", [(1,), (0, 2), (0, 1, 2)])
def test_reduction(cpu, rng, mode, ref, axes):
    g = graph(cpu)
    x = rand(rng, (3, 4, 5), low=0.5, high=1.5) * rng.choice([-1, 1], size=(3, 4, 5)).astype(np.float32)
    X = g.tensor_like(x)
    Y = g.reduction(X, mode=getattr(dnngraph.reduction_mode, mode))
    ydims = [1 if i in axes else d for i, d in enumerate(x.shape)]
    Y.set_output(True).set_dim(ydims)
    y = poisoned(ydims)
    run(g, {X: x, Y: y})
    assert_close(y, ref(x.astype(np.float64), axes), scale=10)
