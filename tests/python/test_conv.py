"""Convolutions against NumPy (explicit windows and loops): layouts, padding, stride, dilation,
groups, the fused conv -> bias -> relu, and the two gradients."""
import numpy as np
import pytest

from conftest import assert_close, graph, poisoned, rand, run


def conv_ref(x, w, pad, stride, dil):
    """x[N,C,H,W], w[K,C/g,R,S] -> y[N,K,P,Q], in float64."""
    n, c, h, wd = x.shape
    k, cg, r, s = w.shape
    groups = c // cg
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    p = (h + 2 * pad[0] - dil[0] * (r - 1) - 1) // stride[0] + 1
    q = (wd + 2 * pad[1] - dil[1] * (s - 1) - 1) // stride[1] + 1
    y = np.zeros((n, k, p, q))
    kg = k // groups
    for i in range(r):
        for j in range(s):
            hs, ws = i * dil[0], j * dil[1]
            patch = xp[:, :, hs:hs + stride[0] * (p - 1) + 1:stride[0], ws:ws + stride[1] * (q - 1) + 1:stride[1]]
            for gi in range(groups):
                y[:, gi * kg:(gi + 1) * kg] += np.einsum(
                    "nchw,kc->nkhw", patch[:, gi * cg:(gi + 1) * cg], w[gi * kg:(gi + 1) * kg, :, i, j])
    return y


def nhwc(rng, shape):
    """A random array with NCHW dims in NHWC memory order."""
    n, c, h, w = shape
    return rand(rng, (n, h, w, c)).transpose(0, 3, 1, 2)


CASES = [
    # x dims, w dims, pad, stride, dilation
    ((2, 3, 7, 6), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1)),
    ((1, 4, 9, 9), (2, 4, 3, 2), (0, 1), (2, 2), (1, 1)),
    ((1, 2, 8, 7), (3, 2, 3, 3), (2, 2), (1, 2), (2, 1)),
    ((2, 4, 5, 5), (4, 2, 3, 3), (1, 1), (1, 1), (1, 1)),  # two groups
]


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("xd,wd,pad,stride,dil", CASES)
def test_conv_fprop(cpu, rng, layout, xd, wd, pad, stride, dil):
    g = graph(cpu)
    x = rand(rng, xd) if layout == "nchw" else nhwc(rng, xd)
    w = rand(rng, wd) if layout == "nchw" else nhwc(rng, wd)
    X, W = g.tensor_like(x, name="X"), g.tensor_like(w, name="W")
    Y = g.conv_fprop(image=X, weight=W, padding=list(pad), stride=list(stride), dilation=list(dil))
    Y.set_output(True)
    g.validate()
    # The output in the layout the library inferred (the input's), poisoned.
    buf = np.full(int(np.prod(Y.get_dim())), np.nan, np.float32)
    y = np.lib.stride_tricks.as_strided(buf, shape=Y.get_dim(), strides=[s * 4 for s in Y.get_stride()])
    run(g, {X: x, W: w, Y: y})
    assert_close(y, conv_ref(x, w, pad, stride, dil), scale=10)


def test_conv_bias_relu_fused(cpu, rng):
    g = graph(cpu)
    x, w, b = nhwc(rng, (2, 8, 6, 6)), nhwc(rng, (16, 8, 3, 3)), rand(rng, (1, 16, 1, 1))
    X, W, B = g.tensor_like(x), g.tensor_like(w), g.tensor_like(b)
    Y = g.relu(g.bias(g.conv_fprop(X, W, padding=[1, 1], stride=[1, 1], dilation=[1, 1]), B))
    Y.set_output(True).set_stride([16 * 36, 1, 6 * 16, 16])
    buf = np.full(2 * 16 * 36, np.nan, np.float32)
    y = np.lib.stride_tricks.as_strided(buf, shape=(2, 16, 6, 6), strides=[s * 4 for s in Y.get_stride()])
    run(g, {X: x, W: w, B: b, Y: y})
    assert_close(y, np.maximum(conv_ref(x, w, (1, 1), (1, 1), (1, 1)) + b, 0), scale=10)


def test_conv_dgrad(cpu, rng):
    # DX = the gradient of conv_fprop with respect to X.
    xd, wd, pad, stride = (2, 3, 6, 5), (4, 3, 3, 3), (1, 1), (2, 1)
    w, dy = rand(rng, wd), rand(rng, (2, 4, 3, 5))
    dx_ref = np.zeros(xd)
    xp = np.zeros((xd[0], xd[1], xd[2] + 2, xd[3] + 2))
    for i in range(3):
        for j in range(3):
            xp[:, :, i:i + 2 * 2 + 1:2, j:j + 5] += np.einsum("nkhw,kc->nchw", dy, w[:, :, i, j])
    dx_ref = xp[:, :, 1:-1, 1:-1]
    g = graph(cpu)
    DY, W = g.tensor_like(dy), g.tensor_like(w)
    DX = g.conv_dgrad(loss=DY, filter=W, padding=list(pad), stride=list(stride), dilation=[1, 1])
    DX.set_output(True).set_dim(list(xd)).set_stride([90, 30, 5, 1])
    dx = poisoned(xd)
    run(g, {DY: dy, W: w, DX: dx})
    assert_close(dx, dx_ref, scale=10)


def test_conv_wgrad(cpu, rng):
    x, dy = rand(rng, (2, 3, 5, 5)), rand(rng, (2, 4, 5, 5))
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    dw_ref = np.zeros((4, 3, 3, 3))
    for i in range(3):
        for j in range(3):
            dw_ref[:, :, i, j] = np.einsum("nkhw,nchw->kc", dy, xp[:, :, i:i + 5, j:j + 5])
    g = graph(cpu)
    X, DY = g.tensor_like(x), g.tensor_like(dy)
    DW = g.conv_wgrad(image=X, loss=DY, padding=[1, 1], stride=[1, 1], dilation=[1, 1])
    DW.set_output(True).set_dim([4, 3, 3, 3]).set_stride([27, 9, 3, 1])
    dw = poisoned((4, 3, 3, 3))
    run(g, {X: x, DY: dy, DW: dw})
    assert_close(dw, dw_ref, scale=10)
