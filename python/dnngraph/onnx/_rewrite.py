"""Graph rewrites at load, on the ONNX nodes before lowering. BatchNormalization after a Conv
with constant weights is folded into the weights and bias (as onnxruntime does): dnngraph then
fuses the bias, residual Add and Relu into the convolution's epilogue, where a separate
batchnorm_inference would be its own partition reading and writing the activation once more."""
import numpy as np
from onnx import helper

from ._numpy_ops import attributes


def _consumers(nodes):
    uses = {}
    for node in nodes:
        for name in node.input:
            if name:
                uses[name] = uses.get(name, 0) + 1
    return uses


def _foldable(bn, producer, prepared, uses):
    if producer is None or producer.op_type != "Conv" or bn.op_type != "BatchNormalization":
        return False
    if attributes(bn).get("training_mode", 0) or any(o for o in bn.output[1:]):
        return False
    conv_out = producer.output[0]
    if uses.get(conv_out, 0) != 1 or conv_out in prepared.outputs:
        return False
    weights = list(producer.input[1:]) + list(bn.input[1:])
    return all(n in prepared.constants for n in weights if n)


def _folded_conv(bn, conv, prepared):
    c = prepared.constants
    scale, bias, mean, var = (c[n].astype(np.float64) for n in bn.input[1:5])
    eps = float(attributes(bn).get("epsilon", 1e-5))
    w = c[conv.input[1]]
    factor = scale / np.sqrt(var + eps)
    b0 = c[conv.input[2]].astype(np.float64) if len(conv.input) > 2 and conv.input[2] else np.zeros(w.shape[0])
    w_name, b_name = f"{conv.input[1]}@bn:{bn.name}", f"{bn.name}@bias"
    c[w_name] = (w.astype(np.float64) * factor.reshape([-1] + [1] * (w.ndim - 1))).astype(w.dtype)
    c[b_name] = ((b0 - mean) * factor + bias).astype(w.dtype)
    for name in (w_name, b_name):
        prepared.values[name] = type(prepared.values[bn.output[0]])(name, c[name].shape, c[name].dtype)
    node = helper.make_node("Conv", [conv.input[0], w_name, b_name], [bn.output[0]], name=conv.name)
    node.attribute.extend(conv.attribute)
    return node


def fold_batchnorm_into_conv(prepared):
    """Rewrites prepared.nodes in place; returns how many BatchNormalizations were folded."""
    producers = {o: n for n in prepared.nodes for o in n.output}
    uses = _consumers(prepared.nodes)
    replaced, dropped, count = {}, set(), 0
    for node in prepared.nodes:
        conv = producers.get(node.input[0]) if node.input else None
        if _foldable(node, conv, prepared, uses) and id(conv) not in dropped:
            replaced[id(node)] = _folded_conv(node, conv, prepared)
            dropped.add(id(conv))
            count += 1
    prepared.nodes = [replaced.get(id(n), n) for n in prepared.nodes if id(n) not in dropped]
    return count


# The rewrite's node: inputs Q, K, V [, per-batch key lengths]; attributes scale, causal, left, right.
ATTENTION = ("dnngraph", "Attention")
MASKED = -1e4  # an additive mask entry at or below this hides its key (exp(-1e4) is 0 in fp32)


def mask_pattern(mask, batch, heads, sq, skv):
    """The sdpa masks equal to a constant additive mask (0 where a key is seen, <= MASKED where
    not): {"causal": bool, "left": int or None, "right": int or None, "kv_lens": [b] or None},
    a top-left band and/or per-batch key lengths; None for any other mask (it stays as ops)."""
    try:
        m = np.broadcast_to(mask, (batch, heads, sq, skv))
    except ValueError:
        return None
    seen = m == 0
    if not np.all(seen | (m <= MASKED)) or not np.all(seen == seen[:, :1]):
        return None  # values that are no mask, or a mask that differs by head
    seen = seen[:, 0]
    if not seen.any(axis=2).all():
        return None  # a query that sees no key: ONNX's softmax averages them all, sdpa does not
    kv_lens = skv - np.argmax(seen.any(axis=1)[:, ::-1], axis=1)  # one past the last key seen, per batch
    d = np.arange(skv)[None, :] - np.arange(sq)[:, None]          # j - i
    near = np.where(seen, d[None], skv)
    far = np.where(seen, d[None], -sq)
    right, lo = int(far.max()), int(near.min())
    right_bound = None if right >= skv - 1 else right
    left_bound = None if lo <= -(sq - 1) else 1 - lo               # key j seen when j - i > -left
    want = np.ones((batch, sq, skv), bool) & (np.arange(skv)[None, None, :] < kv_lens[:, None, None])
    if right_bound is not None:
        want &= (d <= right_bound)[None]
    if left_bound is not None:
        want &= (d > -left_bound)[None]
    if not np.array_equal(want, seen):
        return None
    padded = bool(np.any(kv_lens < skv))
    causal = right_bound == 0 and left_bound is None and sq == skv and not padded
    return {"causal": causal, "left": None if causal else left_bound, "right": None if causal else right_bound,
            "kv_lens": kv_lens.astype(np.int32) if padded else None}


def _single_use(name, uses, prepared):
    return uses.get(name, 0) == 1 and name not in prepared.outputs


def _attention_match(mm2, producers, uses, prepared):
    """For MatMul(Softmax([Mul|Div](MatMul(Q, Transpose(K'))), axis=-1), V) with 4-D Q, K, V:
    (nodes it replaces, Q, the Transpose node, V, scale); None when the pattern is not there."""
    if mm2.op_type != "MatMul":
        return None
    sm = producers.get(mm2.input[0])
    if sm is None or sm.op_type != "Softmax" or not _single_use(sm.output[0], uses, prepared):
        return None
    if prepared.opset < 13 or attributes(sm).get("axis", -1) not in (-1, 3):
        return None
    scale, mask, scores = 1.0, None, producers.get(sm.input[0])
    replaced = [mm2, sm]
    if scores is not None and scores.op_type == "Add" and scores.input[1] in prepared.constants:
        shape = prepared.values.get(scores.output[0])
        if shape is None or len(shape.shape) != 4 or not _single_use(scores.output[0], uses, prepared):
            return None
        mask = mask_pattern(prepared.constants[scores.input[1]], *shape.shape)
        if mask is None:
            return None
        replaced.append(scores)
        scores = producers.get(scores.input[0])
    if scores is not None and scores.op_type in ("Mul", "Div") and scores.input[1] in prepared.constants:
        c = prepared.constants[scores.input[1]]
        if c.size != 1 or not _single_use(scores.output[0], uses, prepared):
            return None
        scale = float(c.reshape(-1)[0]) if scores.op_type == "Mul" else 1.0 / float(c.reshape(-1)[0])
        replaced.append(scores)
        scores = producers.get(scores.input[0])
    if scores is None or scores.op_type != "MatMul" or not _single_use(scores.output[0], uses, prepared):
        return None
    kt = producers.get(scores.input[1])
    if kt is None or kt.op_type != "Transpose" or "perm" not in attributes(kt):
        return None
    shapes = [prepared.values.get(n) for n in (scores.input[0], scores.input[1], mm2.input[1])]
    if any(v is None or len(v.shape) != 4 for v in shapes):
        return None
    return replaced + [scores], scores.input[0], kt, mm2.input[1], scale, mask


def fuse_attention(prepared):
    """Rewrites the attention pattern (with an additive constant mask that is causal, a band or a
    padding of the keys: mask_pattern) to one node that lowers to dnngraph's sdpa; returns how many."""
    producers = {o: n for n in prepared.nodes for o in n.output}
    uses = _consumers(prepared.nodes)
    replaced, dropped, count = {}, set(), 0
    for node in prepared.nodes:
        match = _attention_match(node, producers, uses, prepared)
        if match is None:
            continue
        gone, q, kt, v, scale, mask = match
        perm = list(attributes(kt)["perm"])
        k = f"{node.name or node.output[0]}@K"
        # K' transposed to [b, h, s, d]: the Transpose that made K^T with its last two axes swapped.
        k_node = helper.make_node("Transpose", [kt.input[0]], [k], name=k, perm=perm[:-2] + [perm[-1], perm[-2]])
        kv = prepared.values[kt.output[0]]
        prepared.values[k] = type(kv)(k, kv.shape[:2] + (kv.shape[3], kv.shape[2]), kv.dtype)
        mask = mask or {"causal": False, "left": None, "right": None, "kv_lens": None}
        bands = {key: mask[key] for key in ("left", "right") if mask[key] is not None}
        inputs = [q, k, v]
        if mask["kv_lens"] is not None:  # a padding mask: the per-batch key lengths, a constant input
            lens = f"{node.name or node.output[0]}@kv_lens"
            prepared.constants[lens] = mask["kv_lens"]
            prepared.values[lens] = type(kv)(lens, mask["kv_lens"].shape, mask["kv_lens"].dtype)
            inputs.append(lens)
        fused = helper.make_node(ATTENTION[1], inputs, [node.output[0]], name=node.name or node.output[0],
                                 domain=ATTENTION[0], scale=scale, causal=int(mask["causal"]), **bands)
        replaced[id(node)] = [k_node, fused]
        dropped.update(id(n) for n in gone if n is not node)
        count += 1
    nodes = []
    for n in prepared.nodes:
        if id(n) not in dropped:
            nodes.extend(replaced.get(id(n), [n]))
    prepared.nodes = _live(nodes, prepared.outputs)
    return count


def _live(nodes, outputs):
    """The nodes whose outputs something uses (a Transpose left without readers goes)."""
    needed, kept = set(outputs), []
    for node in reversed(nodes):
        if any(o in needed for o in node.output):
            kept.append(node)
            needed.update(n for n in node.input if n)
    return list(reversed(kept))


def _zero_spatial_pads(pad, prepared):
    """The spatial (pre, post) pads of a constant-mode, zero-valued Pad of an NC... tensor, or None."""
    a = attributes(pad)
    mode = a.get("mode", b"constant")
    if (mode.decode() if isinstance(mode, bytes) else mode) != "constant" or prepared.opset < 11:
        return None
    if len(pad.input) < 2 or pad.input[1] not in prepared.constants:
        return None
    if len(pad.input) > 2 and pad.input[2] and (pad.input[2] not in prepared.constants
                                                 or np.any(prepared.constants[pad.input[2]] != 0)):
        return None
    if len(pad.input) > 3 and pad.input[3]:
        return None  # axes given (opset 18): rare in exports, left to the general path
    pads = [int(p) for p in prepared.constants[pad.input[1]].reshape(-1)]
    rank = len(pads) // 2
    if rank < 3 or any(pads[i] or pads[rank + i] for i in (0, 1)) or any(p < 0 for p in pads):
        return None
    return pads[2:rank], pads[rank + 2:]


def fold_pad_into_conv(prepared):
    """Pad (zeros, spatial dims) feeding only a Conv becomes the Conv's padding; returns how many."""
    producers = {o: n for n in prepared.nodes for o in n.output}
    uses = _consumers(prepared.nodes)
    replaced, dropped = {}, set()
    for node in prepared.nodes:
        pad = producers.get(node.input[0]) if node.op_type == "Conv" else None
        if pad is None or pad.op_type != "Pad" or uses.get(pad.output[0]) != 1 or pad.output[0] in prepared.outputs:
            continue
        extra = _zero_spatial_pads(pad, prepared)
        a = attributes(node)
        if extra is None or a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
            continue
        n = len(extra[0])
        old = [int(p) for p in a.get("pads", [0] * 2 * n)]
        conv = helper.make_node("Conv", [pad.input[0]] + list(node.input[1:]), list(node.output), name=node.name)
        conv.attribute.extend(x for x in node.attribute if x.name != "pads")
        conv.attribute.append(helper.make_attribute("pads", [o + e for o, e in zip(old, extra[0] + extra[1])]))
        replaced[id(node)] = conv
        dropped.add(id(pad))
    prepared.nodes = [replaced.get(id(n), n) for n in prepared.nodes if id(n) not in dropped]
    return len(replaced)
