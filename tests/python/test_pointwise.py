"""Pointwise operations against NumPy: chains, broadcasting, every named helper, the generic form."""
import math

import numpy as np
import pytest

import dnngraph
from conftest import assert_close, graph, poisoned, rand, run

erf = np.vectorize(math.erf)


def gelu(x):
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


@pytest.mark.parametrize("shape,bias_shape", [((2, 3, 4), (1, 3, 1)), ((5, 7), (1, 7)), ((2, 3, 4, 5), (1, 3, 1, 1))])
def test_bias_relu_chain(cpu, rng, shape, bias_shape):
    g = graph(cpu)
    x, b = rand(rng, shape), rand(rng, bias_shape)
    X, B = g.tensor_like(x, name="X"), g.tensor_like(b, name="B")
    Y = g.relu(input=g.bias(input=X, bias=B))
    Y.set_output(True)
    y = poisoned(shape)
    run(g, {X: x, B: b, Y: y})
    assert_close(y, np.maximum(x + b, 0))


def test_chain_with_scale_and_gelu(cpu, rng):
    g = graph(cpu)
    x, s, b = rand(rng, (3, 8)), rand(rng, (1, 8)), rand(rng, (3, 8))
    X, S, B = g.tensor_like(x), g.tensor_like(s), g.tensor_like(b)
    Y = g.gelu(g.add(a=g.scale(input=X, scale=S), b=B))
    Y.set_output(True)
    y = poisoned((3, 8))
    run(g, {X: x, S: s, B: b, Y: y})
    assert_close(y, gelu(x * s + b))


UNARY = [
    ("abs", np.abs), ("neg", np.negative), ("exp", np.exp), ("sin", np.sin), ("cos", np.cos),
    ("tanh", np.tanh), ("sigmoid", sigmoid), ("gelu", gelu), ("erf", erf), ("floor", np.floor),
    ("ceil", np.ceil), ("identity", lambda x: x),
]


@pytest.mark.parametrize("name,ref", UNARY)
def test_unary(cpu, rng, name, ref):
    g = graph(cpu)
    x = rand(rng, (4, 5), low=-2, high=2)
    X = g.tensor_like(x)
    Y = getattr(g, name)(input=X)
    Y.set_output(True)
    y = poisoned((4, 5))
    run(g, {X: x, Y: y})
    assert_close(y, ref(x.astype(np.float64)))


@pytest.mark.parametrize("name,ref", [("sqrt", np.sqrt), ("log", np.log), ("rsqrt", lambda x: 1 / np.sqrt(x)),
                                      ("reciprocal", lambda x: 1 / x)])
def test_unary_positive_domain(cpu, rng, name, ref):
    g = graph(cpu)
    x = rand(rng, (6,), low=0.5, high=3)
    X = g.tensor_like(x)
    Y = getattr(g, name)(X)
    Y.set_output(True)
    y = poisoned((6,))
    run(g, {X: x, Y: y})
    assert_close(y, ref(x.astype(np.float64)))


BINARY = [
    ("add", ("a", "b"), np.add), ("sub", ("a", "b"), np.subtract), ("mul", ("a", "b"), np.multiply),
    ("div", ("a", "b"), np.divide), ("max", ("input0", "input1"), np.maximum),
    ("min", ("input0", "input1"), np.minimum), ("add_square", ("a", "b"), lambda a, b: a + b * b),
]


@pytest.mark.parametrize("name,keys,ref", BINARY)
def test_binary_with_broadcast(cpu, rng, name, keys, ref):
    g = graph(cpu)
    a, b = rand(rng, (3, 4)), rand(rng, (3, 1), low=0.5, high=1.5)
    A, B = g.tensor_like(a), g.tensor_like(b)
    Y = getattr(g, name)(**{keys[0]: A, keys[1]: B})
    Y.set_output(True)
    y = poisoned((3, 4))
    run(g, {A: a, B: b, Y: y})
    assert_close(y, ref(a.astype(np.float64), b.astype(np.float64)))


def test_relu_clips_and_slope(cpu, rng):
    g = graph(cpu)
    x = rand(rng, (50,), low=-3, high=3)
    X = g.tensor_like(x)
    Y = g.relu(X, negative_slope=0.1, upper_clip=1.5)
    L = g.leaky_relu(X, negative_slope=0.2)
    for t in (Y, L):
        t.set_output(True)
    y, l = poisoned((50,)), poisoned((50,))
    run(g, {X: x, Y: y, L: l})
    assert_close(y, np.minimum(np.where(x > 0, x, 0.1 * x), 1.5))
    assert_close(l, np.where(x > 0, x, 0.2 * x))


def test_comparison_and_binary_select(cpu, rng):
    g = graph(cpu)
    a, b = rand(rng, (4, 6)), rand(rng, (4, 6))
    A, B = g.tensor_like(a), g.tensor_like(b)
    mask = g.cmp_gt(input=A, comparison=B)
    mask.set_data_type(dnngraph.data_type.BOOLEAN)
    Y = g.binary_select(input0=A, input1=B, mask=mask)
    Y.set_output(True)
    y = poisoned((4, 6))
    run(g, {A: a, B: b, Y: y})
    assert_close(y, np.where(a > b, a, b))


def test_generic_pointwise_and_arity_check(cpu, rng):
    g = graph(cpu)
    a, b = rand(rng, (5,)), rand(rng, (5,))
    A, B = g.tensor_like(a), g.tensor_like(b)
    Y = g.pointwise(mode=dnngraph.pointwise_mode.SUB, input0=A, input1=B)
    Y.set_output(True)
    with pytest.raises(ValueError, match="takes 2 inputs, got 1"):
        g.pointwise(dnngraph.pointwise_mode.SUB, A)
    y = poisoned((5,))
    run(g, {A: a, B: b, Y: y})
    assert_close(y, a - b)


def test_half_precision_io(cpu, rng):
    g = graph(cpu, io=dnngraph.data_type.HALF)
    x, b = rand(rng, (8, 16), np.float16), rand(rng, (1, 16), np.float16)
    X, B = g.tensor_like(x), g.tensor_like(b)
    Y = g.relu(g.bias(X, B))
    Y.set_output(True)
    y = poisoned((8, 16), np.float16)
    run(g, {X: x, B: b, Y: y})
    assert_close(y, np.maximum(x.astype(np.float32) + b, 0), np.float16)


def test_pass_by_value_scalar(cpu, rng):
    g = graph(cpu)
    x = rand(rng, (3, 3))
    X = g.tensor_like(x)
    S = g.tensor(dim=[1, 1], stride=[1, 1], data_type=dnngraph.data_type.FLOAT, value=2.5, name="s")
    T = g.tensor(dim=[1, 1], is_pass_by_value=True, data_type=dnngraph.data_type.FLOAT, name="t")
    Y = g.add(g.mul(X, S), T)
    Y.set_output(True)
    y = poisoned((3, 3))
    run(g, {X: x, Y: y, T: np.array([[0.5]], np.float32)})  # T's value comes from a host array
    assert_close(y, x * 2.5 + 0.5)


def test_output_takes_the_sliced_inputs_strides_and_writes_back_in_place(cpu, rng):
    # The cuDNN frontend's rule (its test_apply_rope relies on it): an output without strides takes
    # those of the input of its dims, gaps included, so the result can go back into the slices.
    x = rand(rng, (2, 8, 16))
    x1, x2 = x[..., :4], x[..., 4:8]
    c, s = rand(rng, (1, 8, 4)), rand(rng, (1, 8, 4))
    want1, want2 = x1 * c - x2 * s, x2 * c + x1 * s
    g = graph(cpu)
    X1, X2, C, S = (g.tensor_like(a) for a in (x1, x2, c, s))
    Y1 = g.sub(a=g.mul(a=X1, b=C), b=g.mul(a=X2, b=S))
    Y2 = g.add(a=g.mul(a=X2, b=C), b=g.mul(a=X1, b=S))
    for y in (Y1, Y2):
        y.set_output(True)
    g.build()
    assert Y1.get_stride() == [128, 16, 1] and Y2.get_stride() == [128, 16, 1]
    xin = x.copy()
    g.execute({X1: xin[..., :4], X2: xin[..., 4:8], C: c, S: s, Y1: x1, Y2: x2},
              np.empty(max(1, g.get_workspace_size()), np.uint8))
    assert_close(x[..., :4], want1)
    assert_close(x[..., 4:8], want2)
