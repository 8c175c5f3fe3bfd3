"""ONNX models built with onnx.helper and random weights, for tests/python/test_onnx*.py, the
latency figures in docs/onnx.md and bench/onnx_gpu.py: a ResNet basic block, a ResNet-50 and a
MobileNetV2 (torchvision's layouts, no download), an MLP, a transformer encoder layer and a
6-layer encoder of BERT-base width, and a U-Net with a 3D conv stem and ConvTransposes."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper


class Builder:
    """Nodes and initializers with generated names; weights He-scaled so activations stay O(1)."""

    def __init__(self, rng):
        self.rng, self.nodes, self.inits, self.count = rng, [], [], 0

    def name(self, base):
        self.count += 1
        return f"{base}{self.count}"

    def weight(self, base, *shape, scale=None):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        s = scale if scale is not None else np.sqrt(2.0 / fan_in)
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(self.rng.normal(0, s, shape).astype(np.float32), n))
        return n

    def const(self, base, array):
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(array), n))
        return n

    def node(self, op, inputs, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out + "_node", **attrs))
        return out

    def conv_bn(self, x, cin, cout, k, stride=1, relu=True):
        w = self.weight("w", cout, cin, k, k)
        y = self.node("Conv", [x, w], pads=[k // 2] * 4, strides=[stride, stride])
        bn = [self.const("s", self.rng.uniform(0.5, 1.5, cout).astype(np.float32)),
              self.const("b", self.rng.uniform(-0.1, 0.1, cout).astype(np.float32)),
              self.const("m", self.rng.uniform(-0.1, 0.1, cout).astype(np.float32)),
              self.const("v", self.rng.uniform(0.5, 1.5, cout).astype(np.float32))]
        y = self.node("BatchNormalization", [y] + bn, epsilon=1e-5)
        return self.node("Relu", [y]) if relu else y

    def model(self, x_name, x_shape, y, opset=17):
        g = helper.make_graph(self.nodes, "model", [helper.make_tensor_value_info(x_name, TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)], self.inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def resnet_block(rng, n=1, c=32, hw=28):
    """conv-bn-relu, conv-bn, + identity, relu; then a strided block with a 1x1 projection."""
    b = Builder(rng)
    y = b.conv_bn(b.conv_bn("x", c, c, 3), c, c, 3, relu=False)
    y = b.node("Relu", [b.node("Add", [y, "x"])])
    main = b.conv_bn(b.conv_bn(y, c, 2 * c, 3, stride=2), 2 * c, 2 * c, 3, relu=False)
    y = b.node("Relu", [b.node("Add", [main, b.conv_bn(y, c, 2 * c, 1, stride=2, relu=False)])])
    return b.model("x", [n, c, hw, hw], y)


def bottleneck(b, x, cin, width, stride):
    y = b.conv_bn(b.conv_bn(x, cin, width, 1), width, width, 3, stride=stride)
    y = b.conv_bn(y, width, 4 * width, 1, relu=False)
    short = x if stride == 1 and cin == 4 * width else b.conv_bn(x, cin, 4 * width, 1, stride=stride, relu=False)
    return b.node("Relu", [b.node("Add", [y, short])])


def resnet50(rng, n=1, hw=224, classes=1000):
    b = Builder(rng)
    y = b.conv_bn("x", 3, 64, 7, stride=2)
    y = b.node("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            y = bottleneck(b, y, cin, width, stride if i == 0 else 1)
            cin = 4 * width
    y = b.node("Flatten", [b.node("GlobalAveragePool", [y])], axis=1)
    y = b.node("Gemm", [y, b.weight("fc", classes, cin, scale=0.01), b.const("fcb", np.zeros(classes, np.float32))],
               transB=1)
    return b.model("x", [n, 3, hw, hw], y)


def _conv_bn_relu6(b, x, cin, cout, k, stride=1, groups=1, act=True):
    w = b.weight("w", cout, cin // groups, k, k)
    y = b.node("Conv", [x, w], pads=[k // 2] * 4, strides=[stride, stride], group=groups)
    bn = [b.const(n, b.rng.uniform(lo, hi, cout).astype(np.float32))
          for n, lo, hi in (("s", 0.5, 1.5), ("b", -0.1, 0.1), ("m", -0.1, 0.1), ("v", 0.5, 1.5))]
    y = b.node("BatchNormalization", [y] + bn, epsilon=1e-5)
    return b.node("Clip", [y, b.const("lo", np.float32(0)), b.const("hi", np.float32(6))]) if act else y


def mobilenet_v2(rng, n=1, hw=224, classes=1000, width=1.0):
    """MobileNetV2 (torchvision's layout): inverted residuals with depthwise 3x3 convs and ReLU6."""
    b = Builder(rng)
    c = int(32 * width)
    y = _conv_bn_relu6(b, "x", 3, c, 3, stride=2)
    for t, cout, repeats, stride in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                                     (6, 160, 3, 2), (6, 320, 1, 1)):
        cout = int(cout * width)
        for i in range(repeats):
            s, hidden = stride if i == 0 else 1, c * t
            z = _conv_bn_relu6(b, y, c, hidden, 1) if t != 1 else y
            z = _conv_bn_relu6(b, z, hidden, hidden, 3, stride=s, groups=hidden)
            z = _conv_bn_relu6(b, z, hidden, cout, 1, act=False)
            y = b.node("Add", [y, z]) if s == 1 and c == cout else z
            c = cout
    y = _conv_bn_relu6(b, y, c, 1280, 1)
    y = b.node("Flatten", [b.node("GlobalAveragePool", [y])], axis=1)
    y = b.node("Gemm", [y, b.weight("fc", classes, 1280, scale=0.01), b.const("fcb", np.zeros(classes, np.float32))],
               transB=1)
    return b.model("x", [n, 3, hw, hw], y)


def mlp(rng, n=32, sizes=(256, 512, 512, 10)):
    """Gemm + bias, Gelu, LayerNormalization, MatMul + Add, Relu, Softmax."""
    b = Builder(rng)
    y = b.node("Gemm", ["x", b.weight("w", sizes[1], sizes[0]), b.weight("bias", sizes[1], scale=0.1)], transB=1)
    y = b.node("Gelu", [y])
    y = b.node("LayerNormalization", [y, b.const("g", np.ones(sizes[1], np.float32)),
                                      b.const("beta", np.zeros(sizes[1], np.float32))], axis=-1)
    y = b.node("Add", [b.node("MatMul", [y, b.weight("w", sizes[1], sizes[2])]), b.weight("bias", sizes[2], scale=0.1)])
    y = b.node("Relu", [y])
    y = b.node("Softmax", [b.node("MatMul", [y, b.weight("w", sizes[2], sizes[3])])], axis=-1)
    return b.model("x", [n, sizes[0]], y, opset=20)


def _encoder_block(B, x, b, s, e, heads, mask):
    """One pre-norm encoder layer on value x [b, s, e]; returns its output's name."""
    rng, d = B.rng, e // heads

    def linear(v, fin, fout):
        return B.node("Add", [B.node("MatMul", [v, B.weight("w", fin, fout, scale=fin ** -0.5)]),
                              B.weight("bias", fout, scale=0.02)])

    def ln(v):
        return B.node("LayerNormalization", [v, B.const("g", rng.uniform(0.8, 1.2, e).astype(np.float32)),
                                             B.const("beta", rng.uniform(-0.1, 0.1, e).astype(np.float32))], axis=-1)

    split = B.const("split", np.array([b, s, heads, d], np.int64))
    h = ln(x)
    q = B.node("Transpose", [B.node("Reshape", [linear(h, e, e), split])], perm=[0, 2, 1, 3])
    kt = B.node("Transpose", [B.node("Reshape", [linear(h, e, e), split])], perm=[0, 2, 3, 1])
    v = B.node("Transpose", [B.node("Reshape", [linear(h, e, e), split])], perm=[0, 2, 1, 3])
    scores = B.node("Div", [B.node("MatMul", [q, kt]), B.const("sqrt_d", np.array(np.sqrt(d), np.float32))])
    if mask is not None:  # an additive mask [s, s] (a decoder's causal one: 0 and -inf)
        scores = B.node("Add", [scores, B.const("mask", mask.astype(np.float32))])
    ctx = B.node("MatMul", [B.node("Softmax", [scores], axis=-1), v])
    ctx = B.node("Reshape", [B.node("Transpose", [ctx], perm=[0, 2, 1, 3]),
                             B.const("merge", np.array([b, s, e], np.int64))])
    x1 = B.node("Add", [x, linear(ctx, e, e)])
    return B.node("Add", [x1, linear(B.node("Gelu", [linear(ln(x1), e, 4 * e)]), 4 * e, e)])


def encoder_layer(rng, b=2, s=16, e=64, heads=4, opset=20, mask=None):
    """A pre-norm transformer encoder layer as PyTorch exports it: LayerNorm, Q/K/V projections,
    heads split by Reshape + Transpose (K^T straight from [b, s, h, d]), scores scaled by Div,
    Softmax, MatMul with V, heads merged, output projection, residual; then LayerNorm, a Gelu MLP
    and a residual. `mask`: an additive attention mask [s, s]."""
    B = Builder(rng)
    return B.model("x", [b, s, e], _encoder_block(B, "x", b, s, e, heads, mask), opset=opset)


def transformer_encoder(rng, layers=6, b=8, s=128, e=768, heads=12, opset=20, mask=None):
    """`layers` encoder layers (encoder_layer's) and a final LayerNorm: BERT-base width by default
    (e 768, 12 heads, MLP 3072)."""
    B = Builder(rng)
    y = "x"
    for _ in range(layers):
        y = _encoder_block(B, y, b, s, e, heads, mask)
    y = B.node("LayerNormalization", [y, B.const("g", np.ones(e, np.float32)), B.const("beta", np.zeros(e, np.float32))],
               axis=-1)
    return B.model("x", [b, s, e], y, opset=opset)


def unet(rng, n=1, c=8, hw=32, frames=3, depth=2):
    """A small U-Net with a 3D conv stem: x [n, 3, frames, hw, hw] -> Conv3d (frames x 3 x 3, no
    padding in time) -> [n, c, 1, hw, hw] -> Reshape to 2-D; `depth` levels of conv-bn-relu x 2 and
    MaxPool down, ConvTranspose (stride 2) up, Concat with the skip, conv-bn-relu x 2; a 1x1 conv
    and Sigmoid: [n, 1, hw, hw]."""
    B = Builder(rng)
    w3 = B.weight("w3d", c, 3, frames, 3, 3)
    y = B.node("Conv", ["x", w3, B.weight("b3d", c, scale=0.05)], pads=[0, 1, 1, 0, 1, 1])
    y = B.node("Relu", [B.node("Reshape", [y, B.const("to2d", np.array([n, c, hw, hw], np.int64))])])
    skips, ch = [], c
    for _ in range(depth):
        y = B.conv_bn(B.conv_bn(y, ch, 2 * ch, 3), 2 * ch, 2 * ch, 3)
        skips.append((y, 2 * ch))
        y = B.node("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])
        ch *= 2
    y = B.conv_bn(B.conv_bn(y, ch, 2 * ch, 3), 2 * ch, 2 * ch, 3)
    ch *= 2
    for skip, sc in reversed(skips):
        up = B.node("ConvTranspose", [y, B.weight("wt", ch, sc, 2, 2), B.weight("bt", sc, scale=0.05)],
                    strides=[2, 2])
        y = B.node("Concat", [up, skip], axis=1)
        y = B.conv_bn(B.conv_bn(y, 2 * sc, sc, 3), sc, sc, 3)
        ch = sc
    y = B.node("Sigmoid", [B.node("Conv", [y, B.weight("wout", 1, ch, 1, 1)])])
    return B.model("x", [n, 3, frames, hw, hw], y)


def _median_ms(fn, runs):
    import time
    fn()
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return float(np.median(times)), float(np.min(times))


def main():
    """Latency of dnngraph.onnx and onnxruntime (CPU provider, default threads) on these models:
    PYTHONPATH=build/python python3 tests/python/onnx_models.py [resnet50] [mobilenet]."""
    import sys
    import time

    import onnxruntime as ort

    import dnngraph
    import dnngraph.onnx as dgx
    rng = np.random.default_rng(0)
    cases = [("resnet_block N1 C64 56x56", resnet_block(rng, n=1, c=64, hw=56), (1, 64, 56, 56), 20),
             ("mlp N32 256-512-512-10", mlp(rng), (32, 256), 50),
             ("encoder layer B4 S128 E256 H4", encoder_layer(rng, b=4, s=128, e=256, heads=4), (4, 128, 256), 20)]
    if "resnet50" in sys.argv[1:]:
        cases.append(("resnet50 N1 224x224", resnet50(rng), (1, 3, 224, 224), 5))
    if "mobilenet" in sys.argv[1:]:
        cases.append(("mobilenet_v2 N1 224x224", mobilenet_v2(rng), (1, 3, 224, 224), 10))
    print(f"dnngraph CPU handle threads: {dnngraph.create_handle('cpu').num_threads}")
    for name, m, shape, runs in cases:
        x = {"x": rng.uniform(-1, 1, shape).astype(np.float32)}
        r = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        ref = r.run(None, x)[0]
        timed = []
        for options in ({}, {"layout_in_numpy": True}):
            t = time.perf_counter()
            s = dgx.load(m, **options)
            load_s = time.perf_counter() - t
            err = float(np.abs(s.run(None, x)[0] - ref).max() / max(1.0, np.abs(ref).max()))
            # onnxruntime's intra-op threads spin for a while after a run (its default): dnngraph is
            # timed first and each measurement starts after a pause, so neither runs beside them.
            time.sleep(1.0)
            timed.append((options, load_s, err, len(s.graphs), _median_ms(lambda: s.run(None, x), runs)))
        time.sleep(1.0)
        o = _median_ms(lambda: r.run(None, x), runs)
        for options, load_s, err, graphs, d in timed:
            print(f"{name} {options or ''}: dnngraph {d[0]:.2f} ms (min {d[1]:.2f}), onnxruntime {o[0]:.2f} ms "
                  f"(min {o[1]:.2f}), ort/dnngraph {o[0] / d[0]:.2f}x; load {load_s:.2f} s; {graphs} "
                  f"graph(s); max err / peak {err:.1e}")


if __name__ == "__main__":
    main()
