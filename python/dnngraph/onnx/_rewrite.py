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
