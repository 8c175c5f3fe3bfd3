"""Translators for ONNX's layer ops: Conv, ConvTranspose, Gemm, MatMul, BatchNormalization
(inference), LayerNormalization, InstanceNormalization, Resize, the poolings, and the rewrites'
attention node. ONNX tensors are NCHW and are declared with NCHW dims; their strides are the
session's choice (channels-last for 4-D by default: _lower.Lowering.strides)."""
import numpy as np

import dnngraph
from ._lower import Unsupported, data_type, dims


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def window_padding(attrs, in_shape, kernel, strides, dilations):
    """(pre, post) padding per spatial dim from `pads` or `auto_pad` (ONNX's rules)."""
    n = len(kernel)
    auto = _text(attrs.get("auto_pad", "NOTSET"))
    if auto in ("NOTSET", "VALID"):
        pads = [int(p) for p in attrs.get("pads", [0] * 2 * n)] if auto == "NOTSET" else [0] * 2 * n
        return pads[:n], pads[n:]
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise Unsupported(f"auto_pad='{auto}'")
    pre, post = [], []
    for size, k, s, d in zip(in_shape, kernel, strides, dilations):
        total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
        small, large = total // 2, total - total // 2
        pre.append(small if auto == "SAME_UPPER" else large)
        post.append(large if auto == "SAME_UPPER" else small)
    return pre, post


def _conv(L, node, attrs):
    x_shape, w_shape = L.shape(node.input[0]), L.shape(node.input[1])
    data_type(L.dtype(node.input[0]), f"input '{node.input[0]}'")
    n = len(w_shape) - 2
    groups = int(attrs.get("group", 1))
    if x_shape[1] != groups * w_shape[1]:
        raise Unsupported(f"input has {x_shape[1]} channels, weight {w_shape[1]} per group x {groups} groups")
    kernel = [int(k) for k in attrs.get("kernel_shape", w_shape[2:])]
    strides = [int(s) for s in attrs.get("strides", [1] * n)]
    dilations = [int(d) for d in attrs.get("dilations", [1] * n)]
    pre, post = window_padding(attrs, x_shape[2:], kernel, strides, dilations)
    y = L.graph.conv_fprop(image=L.tensor(node.input[0]), weight=L.tensor(node.input[1]), pre_padding=pre,
                           post_padding=post, stride=strides, dilation=dilations, name=node.name)
    if len(node.input) > 2 and node.input[2]:
        bias_dims = [1, w_shape[0]] + [1] * n
        if L.is_const(node.input[2]):
            b = L.array_tensor(L.const(node.input[2], "Conv's bias").reshape(bias_dims), f"{node.input[2]}@nchw")
        else:
            b = L.graph.reshape(L.tensor(node.input[2]), dim=bias_dims)
        y = L.graph.bias(y, b, name=f"{node.name}.bias")
    L.set(node.output[0], y)


def _conv_transpose(L, node, attrs):
    w_shape, out = L.shape(node.input[1]), L.shape(node.output[0])
    data_type(L.dtype(node.input[0]), f"input '{node.input[0]}'")
    n = len(w_shape) - 2
    if "output_shape" in attrs or _text(attrs.get("auto_pad", "NOTSET")) != "NOTSET":
        raise Unsupported("output_shape / auto_pad (give pads and output_padding)")
    strides = [int(v) for v in attrs.get("strides", [1] * n)]
    dilations = [int(v) for v in attrs.get("dilations", [1] * n)]
    pads = [int(p) for p in attrs.get("pads", [0] * 2 * n)]
    # A transposed convolution is the data gradient of the forward convolution with the same
    # weight [C_in, C_out / group, k...], pads, strides and dilations; output_padding only lengthens
    # Y. Y's dims are set, so the library reads the groups off them (C_out / W's dim 1).
    y = L.graph.conv_dgrad(loss=L.tensor(node.input[0]), filter=L.tensor(node.input[1]), pre_padding=pads[:n],
                           post_padding=pads[n:], stride=strides, dilation=dilations, name=node.name)
    y.set_dim(dims(out))
    if len(node.input) > 2 and node.input[2]:
        b = L.const(node.input[2], "ConvTranspose's bias").reshape([1, out[1]] + [1] * n)
        y = L.graph.bias(y, L.array_tensor(b, f"{node.input[2]}@nchw"), name=f"{node.name}.bias")
    L.set(node.output[0], y)


def _operand(L, name, transpose, scale, what):
    """A Gemm operand: constants are transposed and scaled in NumPy at load, others in the graph."""
    if L.is_const(name):
        a = L.const(name, what)
        a = (a.T if transpose else a) * np.asarray(scale, a.dtype)
        return L.array_tensor(a, f"{name}@gemm")
    t = L.tensor(name)
    if transpose:
        t = L.graph.transpose(t, [1, 0])
    if scale != 1.0:
        t = L.graph.scale(t, L.array_tensor(np.full((1, 1), scale, L.dtype(name)), f"{name}@alpha"))
    return t


def _gemm(L, node, attrs):
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    for n in node.input[:2]:
        data_type(L.dtype(n), f"input '{n}'")
    a = _operand(L, node.input[0], attrs.get("transA", 0), 1.0, "Gemm's A")
    b = _operand(L, node.input[1], attrs.get("transB", 0), alpha, "Gemm's B")
    y = L.graph.matmul(a, b, name=node.name)
    if len(node.input) > 2 and node.input[2] and beta != 0.0:
        c_name = node.input[2]
        if L.is_const(c_name):
            c = L.const(c_name, "Gemm's C")
            c = (c * np.asarray(beta, c.dtype)).reshape([1] * (2 - c.ndim) + list(c.shape))
            c = L.array_tensor(c, f"{c_name}@gemm")
        else:
            c = L.at_rank(c_name, 2)
            if beta != 1.0:
                c = L.graph.scale(c, L.array_tensor(np.full((1, 1), beta, L.dtype(c_name)), f"{c_name}@beta"))
        y = L.graph.add(y, c, name=f"{node.name}.C")
    L.set(node.output[0], y)


def _matmul(L, node, attrs):
    a_shape, b_shape = L.shape(node.input[0]), L.shape(node.input[1])
    for n in node.input:
        data_type(L.dtype(n), f"input '{n}'")
    a_dims = [1] + list(a_shape) if len(a_shape) == 1 else list(a_shape)
    b_dims = list(b_shape) + [1] if len(b_shape) == 1 else list(b_shape)
    rank = max(len(a_dims), len(b_dims))
    a_dims, b_dims = [1] * (rank - len(a_dims)) + a_dims, [1] * (rank - len(b_dims)) + b_dims
    operands = []
    for name, want in ((node.input[0], a_dims), (node.input[1], b_dims)):
        if list(L.shape(name)) == want:
            operands.append(L.tensor(name))
        elif L.is_const(name):
            operands.append(L.array_tensor(L.const(name, "MatMul operand").reshape(want), f"{name}@matmul"))
        else:
            operands.append(L.graph.reshape(L.tensor(name), dim=want))
    y = L.graph.matmul(operands[0], operands[1], name=node.name)
    out = dims(L.shape(node.output[0]))
    if out != a_dims[:-1] + b_dims[-1:]:
        y = L.graph.reshape(y, dim=out)  # a 1-D operand's dim is dropped from the result
    L.set(node.output[0], y)


def _batchnorm(L, node, attrs):
    if attrs.get("training_mode", 0) or any(o for o in node.output[1:]):
        raise Unsupported("training mode (running statistics as outputs)")
    x_shape = L.shape(node.input[0])
    scale, bias, mean, var = (L.const(n, f"BatchNormalization's {w}")
                              for n, w in zip(node.input[1:], ("scale", "B", "mean", "var")))
    per_channel = [1, x_shape[1]] + [1] * (len(x_shape) - 2)
    eps = float(attrs.get("epsilon", 1e-5))
    inv = (1.0 / np.sqrt(var.astype(np.float64) + eps)).astype(var.dtype)
    t = [L.array_tensor(a.reshape(per_channel), f"{node.name}.{w}")
         for a, w in ((mean, "mean"), (inv, "inv_variance"), (scale, "scale"), (bias, "bias"))]
    L.set(node.output[0], L.graph.batchnorm_inference(L.tensor(node.input[0]), *t, name=node.name))


def _layernorm(L, node, attrs):
    if any(o for o in node.output[1:]):
        raise Unsupported("its Mean / InvStdDev outputs are used")
    shape = list(L.shape(node.input[0]))
    axis = int(attrs.get("axis", -1)) % len(shape)
    rows, cols = int(np.prod(shape[:axis], dtype=np.int64)), int(np.prod(shape[axis:], dtype=np.int64))
    g = L.graph

    def param(index, what):
        if len(node.input) <= index or not node.input[index]:
            return None
        a = L.const(node.input[index], f"LayerNormalization's {what}")
        return L.array_tensor(np.broadcast_to(a, shape[axis:]).reshape(1, cols), f"{node.input[index]}@ln")

    eps = float(attrs.get("epsilon", 1e-5))
    # dnngraph's layernorm normalizes over every dim but the first: other shapes go through [rows,
    # cols] and back, two layout copies (one memcpy each where X is packed) that cost less than the
    # statistics as reductions did (the encoder N1 S128: 51.3-52.8 -> 48.9-49.0 ms).
    x = L.tensor(node.input[0])
    if shape != [rows, cols]:
        x = g.reshape(x, dim=[rows, cols], name=f"{node.name}.fold")
    y, _, _ = g.layernorm(dnngraph.norm_forward_phase.INFERENCE, x, scale=param(1, "scale"), bias=param(2, "B"),
                          epsilon=eps, name=node.name)
    if shape != [rows, cols]:
        y = g.reshape(y, dim=shape, name=f"{node.name}.unfold")
    L.set(node.output[0], y)


def _pool(L, node, attrs):
    if len(node.output) > 1 and node.output[1]:
        raise Unsupported("its Indices output is used")
    x_shape, out_shape = L.shape(node.input[0]), L.shape(node.output[0])
    kernel = [int(k) for k in attrs["kernel_shape"]]
    n = len(kernel)
    strides = [int(s) for s in attrs.get("strides", [1] * n)]
    if any(int(d) != 1 for d in attrs.get("dilations", [1] * n)):
        raise Unsupported(f"dilations {list(attrs['dilations'])}: dnngraph's pooling has none")
    pre, post = window_padding(attrs, x_shape[2:], kernel, strides, [1] * n)
    if node.op_type == "MaxPool":
        mode, pad = dnngraph.resample_mode.MAXPOOL, dnngraph.padding_mode.NEG_INF_PAD
    elif attrs.get("count_include_pad", 0):
        mode, pad = dnngraph.resample_mode.AVGPOOL_INCLUDE_PADDING, dnngraph.padding_mode.ZERO_PAD
    else:
        mode, pad = dnngraph.resample_mode.AVGPOOL_EXCLUDE_PADDING, dnngraph.padding_mode.ZERO_PAD
    for i in range(n):
        # ceil_mode: extra padding at the end gives the last, partial window; it counts as
        # -inf (max) or is excluded (average without pads), as ONNX says. With pads counted it would not.
        extra = (out_shape[2 + i] - 1) * strides[i] + kernel[i] - (x_shape[2 + i] + pre[i] + post[i])
        if extra > 0 and mode == dnngraph.resample_mode.AVGPOOL_INCLUDE_PADDING:
            raise Unsupported("ceil_mode with count_include_pad=1 (the partial window's divisor)")
        post[i] += max(extra, 0)
    y, _ = L.graph.resample(L.tensor(node.input[0]), resampling_mode=mode, padding_mode=pad, window=kernel,
                            stride=strides, pre_padding=pre, post_padding=post, name=node.name)
    L.set(node.output[0], y)


def _resize(L, node, attrs):
    x_shape, out = L.shape(node.input[0]), L.shape(node.output[0])
    mode = _text(attrs.get("mode", "nearest"))
    coords = _text(attrs.get("coordinate_transformation_mode", "half_pixel"))
    nearest = _text(attrs.get("nearest_mode", "round_prefer_floor"))
    if len(x_shape) != 4 or list(out[:2]) != list(x_shape[:2]):
        raise Unsupported(f"resizes {list(x_shape)} to {list(out)}: only H and W of a 4-D tensor")
    factors = [o / i for o, i in zip(out[2:], x_shape[2:])]
    if mode == "nearest":
        # With whole up-scaling factors every ONNX nearest rule picks floor(i / factor), as dnngraph does.
        if any(f != int(f) or f < 1 for f in factors) or nearest not in ("round_prefer_floor", "floor"):
            raise Unsupported(f"nearest with factors {factors} and nearest_mode='{nearest}' (whole factors only)")
        rmode = dnngraph.resample_mode.NEAREST
    elif mode == "linear" and coords in ("half_pixel", "pytorch_half_pixel"):
        rmode = dnngraph.resample_mode.BILINEAR
    else:
        raise Unsupported(f"mode='{mode}' with coordinate_transformation_mode='{coords}'")
    y, _ = L.graph.resample(L.tensor(node.input[0]), resampling_mode=rmode, scale=[float(f) for f in factors],
                            name=node.name)
    L.set(node.output[0], y)


def _instancenorm(L, node, attrs):
    """Each (n, c) plane normalized: a layernorm of [N*C, H*W] rows, then the per-channel affine."""
    shape = list(L.shape(node.input[0]))
    rows, cols = shape[0] * shape[1], int(np.prod(shape[2:], dtype=np.int64))
    per_channel = [1, shape[1]] + [1] * (len(shape) - 2)
    scale, bias = (L.const(n, f"InstanceNormalization's {w}") for n, w in zip(node.input[1:3], ("scale", "B")))
    g = L.graph
    x = g.reshape(L.tensor(node.input[0]), dim=[rows, cols])
    # layernorm's scale and bias are per column (H*W); the channel's affine comes after.
    ones, zeros = (L.array_tensor(np.full((1, cols), v, scale.dtype), f"{node.name}.{w}") for v, w in
                   ((1, "one"), (0, "zero")))
    y, _, _ = g.layernorm(dnngraph.norm_forward_phase.INFERENCE, x, scale=ones, bias=zeros,
                          epsilon=float(attrs.get("epsilon", 1e-5)), name=node.name)
    y = g.scale(g.reshape(y, dim=shape), L.array_tensor(scale.reshape(per_channel), f"{node.input[1]}@in"))
    L.set(node.output[0], g.bias(y, L.array_tensor(bias.reshape(per_channel), f"{node.input[2]}@in")))


def _attention(L, node, attrs):
    """_rewrite.fuse_attention's node: MatMul-Softmax-MatMul as one sdpa (inference), with the
    mask the rewrite found: causal, a top-left band (left/right bounds), per-batch key lengths."""
    q, k, v = (L.shape(n) for n in node.input[:3])
    for n in node.input[:3]:
        data_type(L.dtype(n), f"input '{n}'")
    if q[0] != k[0] or k[:3] != v[:3] or q[3] != k[3] or q[1] % k[1]:
        raise Unsupported(f"Q {list(q)}, K {list(k)}, V {list(v)} are not [b, h, s, d] attention operands")
    causal = bool(attrs.get("causal", 0))
    if causal and q[2] != k[2]:
        raise Unsupported(f"a causal mask with {q[2]} queries and {k[2]} keys")
    masks = {}
    if "left" in attrs:
        masks["diagonal_band_left_bound"] = int(attrs["left"])
    if "right" in attrs:
        masks["diagonal_band_right_bound"] = int(attrs["right"])
    if len(node.input) > 3:  # the padding mask: every query, the keys below each batch's length
        lens = L.const(node.input[3], "the attention's key lengths").reshape(-1, 1, 1, 1)
        masks.update(use_padding_mask=True, seq_len_kv=L.int32_tensor(lens, f"{node.name}.seq_len_kv"),
                     seq_len_q=L.int32_tensor(np.full_like(lens, q[2]), f"{node.name}.seq_len_q"))
    o, _ = L.graph.sdpa(*(L.tensor(n) for n in node.input[:3]), is_inference=True, attn_scale=float(attrs["scale"]),
                        use_causal_mask=causal, name=node.name, **masks)
    L.set(node.output[0], o)


def _global_pool(L, node, attrs):
    mode = dnngraph.reduction_mode.AVG if node.op_type == "GlobalAveragePool" else dnngraph.reduction_mode.MAX
    y = L.graph.reduction(L.tensor(node.input[0]), mode=mode, name=node.name)
    y.set_dim(dims(L.shape(node.output[0])))
    L.set(node.output[0], y)


TRANSLATORS = {
    "Conv": _conv, "ConvTranspose": _conv_transpose, "Gemm": _gemm, "MatMul": _matmul, "BatchNormalization": _batchnorm,
    "LayerNormalization": _layernorm, "InstanceNormalization": _instancenorm, "Resize": _resize,
    "Upsample": _resize, "MaxPool": _pool, "AveragePool": _pool,
    "dnngraph.Attention": _attention, "GlobalAveragePool": _global_pool, "GlobalMaxPool": _global_pool,
}
