"""adalayernorm and adalayernorm_backward (the frontend's adaptive layernorm: a scale and a bias per
batch) on the CPU handle, against float64 NumPy; and the errors of a scale that normalizes nothing
and of dims that are not set when the composite is built."""
import cudnn

import numpy as np
import pytest

from test_fe_norm_training import build, f64, grouped_backward


@pytest.fixture(scope="module")
def handle():
    return cudnn.create_handle("cpu")


def tensors(graph, arrays):
    return {k: graph.tensor(name=k, dim=list(a.shape), stride=[s // a.itemsize for s in a.strides],
                            data_type=cudnn.data_type.FLOAT) for k, a in arrays.items()}


@pytest.mark.parametrize("b, s, d, per_batch", [(4, 33, 64, True), (2, 7, 130, True), (3, 5, 16, False)])
def test_forward_and_backward_match_float64(handle, b, s, d, per_batch):
    rng = np.random.default_rng(b * 1000 + s + d)
    pb = b if per_batch else 1
    arrays = {"X": (rng.standard_normal((b, s, d)) * 3 + 0.5).astype(np.float32),
              "scale": rng.standard_normal((pb, 1, d)).astype(np.float32),
              "bias": rng.standard_normal((pb, 1, d)).astype(np.float32),
              "DY": rng.standard_normal((b, s, d)).astype(np.float32)}
    eps = 1e-5

    fwd = cudnn.pygraph(handle=handle, io_data_type=cudnn.data_type.FLOAT,
                        intermediate_data_type=cudnn.data_type.FLOAT, compute_data_type=cudnn.data_type.FLOAT)
    t = tensors(fwd, {k: arrays[k] for k in ("X", "scale", "bias")})
    y, mean, inv = fwd.adalayernorm(cudnn.norm_forward_phase.TRAINING, t["X"], t["scale"], t["bias"], epsilon=eps,
                                    name="ada")
    for o in (y, mean, inv):
        o.set_output(True)
    assert (list(mean.get_dim()), mean.get_name()) == ([b, s, 1], "ada::MEAN")
    ws = build(fwd)
    out = {"Y": np.full((b, s, d), np.nan, np.float32), "mean": np.full((b, s, 1), np.nan, np.float32),
           "inv": np.full((b, s, 1), np.nan, np.float32)}
    fwd.execute({t["X"]: arrays["X"], t["scale"]: arrays["scale"], t["bias"]: arrays["bias"], y: out["Y"],
                 mean: out["mean"], inv: out["inv"]}, ws, handle=handle)
    x = f64(arrays["X"])
    m = x.mean(axis=2, keepdims=True)
    iv = 1.0 / np.sqrt(x.var(axis=2, keepdims=True) + eps)
    np.testing.assert_allclose(out["mean"], m, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["inv"], iv, rtol=1e-4)
    np.testing.assert_allclose(out["Y"], (x - m) * iv * f64(arrays["scale"]) + f64(arrays["bias"]), rtol=1e-4,
                               atol=1e-4)

    bwd = cudnn.pygraph(handle=handle, io_data_type=cudnn.data_type.FLOAT,
                        intermediate_data_type=cudnn.data_type.FLOAT, compute_data_type=cudnn.data_type.FLOAT)
    t = tensors(bwd, {"DY": arrays["DY"], "X": arrays["X"], "scale": arrays["scale"], "mean": out["mean"],
                      "inv": out["inv"]})
    dx, dscale, dbias = bwd.adalayernorm_backward(t["DY"], t["X"], t["scale"], mean=t["mean"], inv_variance=t["inv"])
    for o in (dx, dscale, dbias):
        o.set_output(True)
    ws = build(bwd)
    got = {"DX": np.full((b, s, d), np.nan, np.float32), "dscale": np.full((pb, 1, d), np.nan, np.float32),
           "dbias": np.full((pb, 1, d), np.nan, np.float32)}
    bwd.execute({t["DY"]: arrays["DY"], t["X"]: arrays["X"], t["scale"]: arrays["scale"], t["mean"]: out["mean"],
                 t["inv"]: out["inv"], dx: got["DX"], dscale: got["dscale"], dbias: got["dbias"]}, ws, handle=handle)
    want = grouped_backward(arrays["DY"], arrays["X"], arrays["scale"], out["mean"], out["inv"], axes=(2,))
    for name, w in zip(("DX", "dscale", "dbias"), want):
        np.testing.assert_allclose(got[name], w, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(w).max()), err_msg=name)


def test_a_scale_that_normalizes_nothing_is_named_at_validate(handle):
    g = cudnn.pygraph(handle=handle, io_data_type=cudnn.data_type.FLOAT)
    x = g.tensor(name="X", dim=[2, 3, 8], stride=[24, 8, 1], data_type=cudnn.data_type.FLOAT)
    scale = g.tensor(name="scale", dim=[2, 1, 1], stride=[1, 1, 1], data_type=cudnn.data_type.FLOAT)
    y, _, _ = g.adalayernorm(cudnn.norm_forward_phase.INFERENCE, x, scale, scale, epsilon=1e-5, name="ada")
    y.set_output(True)
    with pytest.raises(ValueError, match=r"node 'ada' \(adalayernorm\): the scale \[2,1,1\] normalizes no axis of X"):
        g.validate()


def test_dims_must_be_known_when_the_composite_is_built(handle):
    g = cudnn.pygraph(handle=handle, io_data_type=cudnn.data_type.FLOAT)
    x = g.tensor(name="X", dim=[2, 3, 8], stride=[24, 8, 1], data_type=cudnn.data_type.FLOAT)
    s = g.tensor(name="scale", dim=[2, 1, 8], stride=[8, 8, 1], data_type=cudnn.data_type.FLOAT)
    h = g.relu(x)  # a virtual tensor: its dims come at validate
    dx, _, _ = g.adalayernorm_backward(h, h, s, mean=s, inv_variance=s, name="ada_bwd")
    dx.set_output(True)
    with pytest.raises(ValueError, match=r"node 'ada_bwd' \(adalayernorm_backward\): X's and the scale's dims must "
                                         r"be set when adalayernorm is built"):
        g.validate()
