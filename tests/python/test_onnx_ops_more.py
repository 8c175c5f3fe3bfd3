"""dnngraph.onnx against onnxruntime for the ops of docs/onnx.md's second list: Pad on its own
(constant mode, negative pads, any axes), grouped ConvTranspose, and attention masks other than
causal (top-left bands, sliding windows, per-batch key padding, padding with causal), each also
refused with its reason where dnngraph cannot take it."""
import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import helper  # noqa: E402

import dnngraph.onnx as dgx  # noqa: E402
from dnngraph.onnx import _rewrite  # noqa: E402
from test_onnx import check, model, rand, seeded  # noqa: E402


@pytest.mark.parametrize("pads,value,axes", [
    ([0, 0, 1, 2, 0, 0, 3, 0], 0.5, None),          # spatial, uneven
    ([0, 1, -1, 0, 0, 0, 1, -2], -2.0, None),        # channels padded, negative pads crop
    ([2, 1, 0, 3], 0.0, [1, 3]),                     # opset 18's axes input
    ([1, 0, 0, 0, 0, 0, 0, 1], 3.0, None),           # the batch axis too
])
def test_constant_pad_on_its_own(request, pads, value, axes):
    rng = seeded(request.node.name)
    names = ["x", "pads", "value"] + (["axes"] if axes else [])
    inits = [("pads", np.array(pads, np.int64)), ("value", np.array(value, np.float32))]
    if axes:
        inits.append(("axes", np.array(axes, np.int64)))
    nodes = [helper.make_node("Pad", names, ["p"], name="pad"), helper.make_node("Relu", ["p"], ["y"], name="relu")]
    m = model(nodes, [("x", (2, 3, 6, 7))], [("y", None)], inits)
    s = check(m, {"x": rand(rng, 2, 3, 6, 7)})
    assert s.node_kinds["pad"] == "dnngraph" and s.folded_pads == 0


def test_pad_without_a_constant_value_pads_with_zeros(request):
    rng = seeded(request.node.name)
    m = model([helper.make_node("Pad", ["x", "pads"], ["y"], name="pad")], [("x", (1, 2, 3, 3))], [("y", None)],
              [("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))])
    check(m, {"x": rand(rng, 1, 2, 3, 3)})


@pytest.mark.parametrize("mode", ["reflect", "edge"])
def test_non_constant_pads_are_refused_with_the_mode(mode):
    m = model([helper.make_node("Pad", ["x", "pads"], ["y"], name="pad", mode=mode)], [("x", (1, 2, 3, 3))],
              [("y", None)], [("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))])
    with pytest.raises(dgx.UnsupportedModelError, match=rf"node 'pad' \(Pad\): mode '{mode}': dnngraph has no op"):
        dgx.load(m)


def test_pad_with_runtime_pads_is_refused_naming_the_input():
    m = model([helper.make_node("Pad", ["x", "pads"], ["y"], name="pad")], [("x", (1, 2, 3, 3)), ("pads", (8,))],
              [("y", None)])
    m.graph.input[1].type.tensor_type.elem_type = 7  # int64
    with pytest.raises(dgx.UnsupportedModelError, match=r"Pad's pads \('pads'\) must be a constant"):
        dgx.load(m)


@pytest.mark.parametrize("group,cin,cout_per_group,attrs", [
    (2, 8, 3, {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}),
    (4, 8, 2, {"pads": [0, 1, 1, 0]}),
    (8, 8, 1, {"strides": [2, 2]}),                  # depthwise transposed
])
def test_grouped_conv_transpose(request, group, cin, cout_per_group, attrs):
    rng = seeded(request.node.name)
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="ct", group=group, **attrs)
    m = model([node], [("x", (2, cin, 5, 5))], [("y", None)],
              [("w", rand(rng, cin, cout_per_group, 3, 3)), ("b", rand(rng, cout_per_group * group))])
    check(m, {"x": rand(rng, 2, cin, 5, 5)})


def _mask(kind, b, s):
    i, j = np.arange(s)[:, None], np.arange(s)[None, :]
    lens = np.array([s, s - 5])[:b]
    seen = {
        "band": (j - i <= 2) & (j - i > -3),
        "window": (j <= i) & (j > i - 4),
        "right_only": j - i <= 1,
        "padding": (j < lens[:, None, None]),
        "padding_causal": (j < lens[:, None, None]) & (j <= i),
    }[kind]
    mask = np.where(seen, 0.0, -np.inf if kind in ("band", "padding") else -1e4)
    return mask[:, None] if mask.ndim == 3 else mask  # per batch: [b, 1, s, s]


@pytest.mark.parametrize("kind", ["band", "window", "right_only", "padding", "padding_causal"])
def test_attention_masks_other_than_causal_become_sdpa_masks(request, kind):
    import onnx_models
    rng = seeded(request.node.name)
    m = onnx_models.encoder_layer(rng, b=2, s=12, e=32, heads=2, mask=_mask(kind, 2, 12))
    s = check(m, {"x": rand(rng, 2, 12, 32)}, scale=50)
    assert s.fused_attentions == 1


def test_mask_pattern_reads_bands_and_key_lengths():
    s = 6
    i, j = np.arange(s)[:, None], np.arange(s)[None, :]
    assert _rewrite.mask_pattern(np.where(j <= i, 0.0, -np.inf), 1, 2, s, s) == {
        "causal": True, "left": None, "right": None, "kv_lens": None}
    band = _rewrite.mask_pattern(np.where((j - i <= 1) & (j - i > -2), 0.0, -1e9), 1, 2, s, s)
    assert band["left"] == 2 and band["right"] == 1 and band["kv_lens"] is None
    pad = _rewrite.mask_pattern(np.where(j[None] < np.array([6, 3])[:, None, None], 0.0, -1e4)[:, None], 2, 2, s, s)
    assert pad["kv_lens"].tolist() == [6, 3] and pad["left"] is None and pad["right"] is None


@pytest.mark.parametrize("why,mask", [
    ("a value that hides nothing fully", lambda i, j: np.where(j <= i, 0.0, -5.0)),
    ("a row that sees no key", lambda i, j: np.where((j <= i) & (i > 0), 0.0, -np.inf)),
    ("a hole inside the band", lambda i, j: np.where((j <= i) & ~((i == 4) & (j == 2)), 0.0, -np.inf)),
])
def test_masks_no_sdpa_mask_equals_are_left_to_the_ops(request, why, mask):
    import onnx_models
    rng = seeded(request.node.name)
    i, j = np.arange(8)[:, None], np.arange(8)[None, :]
    assert _rewrite.mask_pattern(mask(i, j), 2, 2, 8, 8) is None, why
    m = onnx_models.encoder_layer(rng, b=2, s=8, e=32, heads=2, mask=mask(i, j))
    s = check(m, {"x": rand(rng, 2, 8, 32)}, scale=50)
    assert s.fused_attentions == 0


def test_a_mask_that_differs_by_head_is_left_to_the_ops():
    i, j = np.arange(4)[:, None], np.arange(4)[None, :]
    per_head = np.stack([np.where(j <= i, 0.0, -np.inf), np.zeros((4, 4))])[None]  # [1, 2, 4, 4]
    assert _rewrite.mask_pattern(per_head, 1, 2, 4, 4) is None


def test_unet_with_a_3d_conv_stem_and_conv_transposes(request):
    import onnx_models
    rng = seeded(request.node.name)
    m = onnx_models.unet(rng, n=1, c=4, hw=16, frames=3, depth=2)
    s = check(m, {"x": rand(rng, 1, 3, 3, 16, 16)})
    ops = {n.op_type for n in m.graph.node}
    assert {"ConvTranspose", "Concat", "MaxPool", "Reshape"} <= ops and s.folded_batchnorms == 10  # 2 per level down and up, 2 at the bottom


def test_six_layer_transformer_encoder(request):
    import onnx_models
    rng = seeded(request.node.name)
    m = onnx_models.transformer_encoder(rng, layers=6, b=2, s=8, e=32, heads=2)
    s = check(m, {"x": rand(rng, 2, 8, 32)}, scale=100)
    assert s.fused_attentions == 6
