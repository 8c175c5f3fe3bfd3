"""NumPy stand-ins for what NVIDIA's frontend tests take from PyTorch (torch.randn, channels_last,
conv2d/conv3d, layer_norm), for the ports in test_fe_*.py. References compute in float64."""
import numpy as np


def randn(rng, shape, dtype):
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def randint(rng, low, high, shape, dtype):
    return rng.integers(low, high, size=shape).astype(dtype)


def channels_last(a):
    """a's values in a channels-last layout, with dims still (N, C, spatial...): torch's
    .to(memory_format=torch.channels_last) and permute(0, 4, 1, 2, 3) of an NDHWC tensor."""
    order = (0,) + tuple(range(2, a.ndim)) + (1,)
    back = (0, a.ndim - 1) + tuple(range(1, a.ndim - 1))
    return np.ascontiguousarray(a.transpose(order)).transpose(back)


def strides_of(a):
    """a's strides in elements (torch's .stride()), for graph.tensor(stride=...)."""
    return [s // a.itemsize for s in a.strides]


def empty_like(a, dtype=None):
    """An array with a's dims and strides (torch.empty_like keeps the layout), NaN-poisoned when floating."""
    dtype = np.dtype(dtype or a.dtype)
    order = np.argsort([-s for s in a.strides], kind="stable")
    base = np.empty([a.shape[i] for i in order], dtype)
    if dtype.kind == "f" or dtype.name in ("bfloat16",):
        base[...] = np.nan
    return base.transpose(np.argsort(order))


def conv(x, w, padding, stride, dilation):
    """Cross-correlation of x (N, C, spatial...) with w (K, C, filter...), zero padding on both sides."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    nd = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    out = [(x.shape[2 + i] - dilation[i] * (w.shape[2 + i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    y = np.zeros((x.shape[0], w.shape[0], *out))
    for tap in np.ndindex(*w.shape[2:]):
        window = tuple(slice(tap[i] * dilation[i], tap[i] * dilation[i] + (out[i] - 1) * stride[i] + 1, stride[i])
                       for i in range(nd))
        y += np.einsum("nc...,kc->nk...", x[(slice(None), slice(None)) + window], w[(slice(None), slice(None)) + tap])
    return y


def assert_close(actual, expected, atol, rtol):
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected, np.float64), atol=atol, rtol=rtol)
