"""dnngraph.onnx session machinery on the CPU: compute_precision (bf16 / fp16 storage) against
onnxruntime, the arena that the values between pygraphs share (planned from their lifetimes),
the shared workspace, results that never alias the arena, bf16 rounding, the CUDA-only options
refused with their reasons, and `dnngraph run MODEL.onnx --precision` (the CUDA side is
test_onnx_gpu.py)."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper  # noqa: E402

import dnngraph.onnx as dgx  # noqa: E402
from dnngraph.onnx import _arena, _arrays  # noqa: E402
from test_onnx import model, rand, seeded  # noqa: E402

# Relative to the output's peak, for small whole networks stored in 16 bits and computed in fp32.
PRECISION_TOL = {"float16": 1e-2, "bfloat16": 5e-2}


def reference(m, feeds):
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def near(ours, ref, tol):
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    return float(np.abs(ours - ref).max()) / max(1.0, float(np.abs(ref).max())) <= tol


@pytest.mark.parametrize("precision", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", ["resnet_block", "mlp", "encoder_layer"])
def test_compute_precision_against_onnxruntime(request, precision, name):
    import onnx_models
    rng = seeded(request.node.name)
    m, shape = {"resnet_block": (onnx_models.resnet_block(rng, n=1, c=16, hw=8), (1, 16, 8, 8)),
                "mlp": (onnx_models.mlp(rng, n=4, sizes=(16, 32, 32, 8)), (4, 16)),
                "encoder_layer": (onnx_models.encoder_layer(rng, b=2, s=8, e=32, heads=2), (2, 8, 32))}[name]
    x = rand(rng, *shape)
    ref = reference(m, {"x": x})[0]
    s = dgx.load(m, compute_precision=precision)
    (y,) = s.run(None, {"x": x})
    assert y.dtype == np.float32  # results come back as the model's type
    assert near(y, ref, PRECISION_TOL[precision])
    assert not near(y, ref, 1e-7)  # it really was stored narrower (fp32 agrees to ~1e-7 here)
    fp32 = dgx.load(m).run(None, {"x": x})[0]
    assert near(fp32, ref, 1e-5)


def test_bfloat16_conversion_rounds_to_nearest_even():
    a = np.array([1.0, -2.5, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, np.inf, -np.inf, 3.4e38],
                 np.float32)
    bits = _arrays.NumpyLike().convert(a, "bfloat16")
    assert bits.dtype == np.uint16
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to even (1); 1 + 3 * 2^-8 to even (1 + 2^-6); 3.4e38 (past bf16's largest) to inf.
    assert [hex(b) for b in bits] == ["0x3f80", "0xc020", "0x3f80", "0x3f82", "0x3f81", "0x7f80", "0xff80", "0x7f80"]
    back = _arrays.NumpyLike().convert(bits, "float32")
    assert back.dtype == np.float32 and back[1] == -2.5 and np.isinf(back[5])
    nan = int(_arrays.NumpyLike().convert(np.array([np.nan], np.float32), "bfloat16")[0])
    assert nan & 0x7F80 == 0x7F80 and nan & 0x7F  # still a NaN, not inf


def test_arena_plan_shares_bytes_between_values_that_are_not_alive_together():
    a, b, c = _arena.Lifetime("a", 1000, 0, 1), _arena.Lifetime("b", 1000, 1, 2), _arena.Lifetime("c", 1000, 2, 3)
    offsets, total = _arena.plan([a, b, c])
    assert offsets["a"] == offsets["c"] != offsets["b"]  # a is dead when c is written
    assert total == 2 * 1024  # two 256-aligned slots
    offsets, total = _arena.plan([_arena.Lifetime("x", 10, 0, 5), _arena.Lifetime("y", 3000, 1, 2),
                                  _arena.Lifetime("z", 3000, 3, 4)])
    assert offsets["y"] == offsets["z"] and total == 3072 + 256
    assert _arena.plan([]) == ({}, 0)


def test_arena_and_workspace_buffers_start_on_a_256_byte_boundary():
    # NumPy's large buffers start 16 bytes into a page: every tensor placed in such an arena would
    # straddle cache lines (MobileNetV2 ran ~10% slower on the CPU).
    lib = _arrays.NumpyLike()
    for nbytes in (1, 1000, 3 * 2**20 + 5, 50_000_000):
        buf = lib.empty_bytes(nbytes)
        assert lib.pointer(buf) % _arrays.BUFFER_ALIGNMENT == 0
        assert buf.nbytes == nbytes and buf.dtype == np.uint8
    # An input copied into the session's layout (NCHW -> NHWC memory) lands aligned too, any size,
    # with up to 4 channels copied one channel at a time and more by one transpose copy, from
    # contiguous and strided arrays alike.
    strided = np.arange(2 * 4 * 6 * 5, dtype=np.float32).reshape(2, 4, 6, 5)[:, ::2, ::2]
    for x in [np.arange(np.prod(s), dtype=np.float32).reshape(s)
              for s in ((2, 3, 17, 19), (1, 0, 4, 4), (3, 4, 5, 6), (2, 2, 3, 1), (2, 5, 3, 3))] + [strided]:
        y = lib.in_layout(x, True)
        assert y.shape == x.shape and np.array_equal(y, x)
        if x.size:
            assert lib.pointer(y) % _arrays.BUFFER_ALIGNMENT == 0 and y.strides[1] == 4


def _chain(n):
    """x -> (Relu -> Reshape) x n -> y, each Reshape a cut under layout_in_numpy."""
    nodes, shapes, prev = [], [], "x"
    for i in range(n):
        shape = (4, 8, 16) if i % 2 == 0 else (32, 16)
        shapes.append((f"s{i}", np.array(shape, np.int64)))
        nodes += [helper.make_node("Relu" if i % 2 == 0 else "Sigmoid", [prev], [f"a{i}"], name=f"act{i}"),
                  helper.make_node("Reshape", [f"a{i}", f"s{i}"], [f"r{i}"], name=f"reshape{i}")]
        prev = f"r{i}"
    nodes.append(helper.make_node("Neg", [prev], ["y"], name="neg"))
    return model(nodes, [("x", (32, 16))], [("y", None)], shapes)


def test_values_between_graphs_share_one_arena(request):
    rng = seeded(request.node.name)
    m = _chain(6)
    s = dgx.load(m, layout_in_numpy=True)
    kinds = [k for k, _ in s.steps]
    assert kinds == ["graph", "array"] * 6 + ["graph"]
    each = 32 * 16 * 4  # every value is 512 floats
    # Seven graph outputs, but a value is dead once the reshape after the next graph read its view.
    assert s.arena_bytes <= 3 * each and s.arena_bytes < 7 * each
    assert s.workspace_bytes == max(g.get_workspace_size() for g in s.graphs)
    x1, x2 = rand(rng, 32, 16), rand(rng, 32, 16)
    (y1,) = s.run(None, {"x": x1})
    keep = y1.copy()
    (y2,) = s.run(None, {"x": x2})
    np.testing.assert_array_equal(y1, keep)  # results are copies: the next run does not overwrite them
    for x, y in ((x1, y1), (x2, y2)):
        np.testing.assert_allclose(y, reference(m, {"x": x})[0], rtol=1e-6, atol=1e-6)


def test_cuda_only_features_are_refused_on_the_cpu():
    from test_onnx import one
    s = dgx.load(one("Relu", [(2, 3)]))
    with pytest.raises(RuntimeError, match="capture_cuda_graph needs a CUDA session on PyTorch; this one runs on cpu"):
        s.capture_cuda_graph()
    with pytest.raises(ValueError, match="arrays='tpu' is not 'torch' or 'cupy'"):
        _arrays.backend_for(type("H", (), {"is_cuda": True, "device": "cuda:0"})(), "tpu")


def test_cli_runs_in_bf16_and_refuses_cuda_options_on_the_cpu(tmp_path, request):
    import subprocess
    import sys
    import onnx_models
    path = tmp_path / "block.onnx"
    onnx.save(onnx_models.resnet_block(seeded(request.node.name), n=1, c=8, hw=6), str(path))

    def cli(*args):
        return subprocess.run([sys.executable, "-c", "import sys, dnngraph._run_onnx as r; sys.exit(r.main(sys.argv[1:]))",
                               "run", str(path), *args], capture_output=True, text=True, timeout=300)

    r = cli("--precision", "bfloat16", "--iters", "1", "--explain")
    assert r.returncode == 0 and "precision bfloat16" in r.stdout and "(rtol 0.05)" in r.stdout, r.stdout + r.stderr
    assert "step 0: dnngraph graph 0" in r.stdout and "(chosen)" in r.stdout
    r = cli("--tf32", "--iters", "1")
    assert r.returncode == 0 and "(tf32 allowed)" in r.stdout and "(rtol 0.01)" in r.stdout, r.stdout + r.stderr
    for args, message in ((["--cuda-graph"], "--cuda-graph needs --device cuda"),
                          (["--device", "tpu"], "--device tpu: cpu, cuda or cuda:N"),
                          (["--precision", "int8"], "invalid choice: 'int8'")):
        r = cli(*args)
        assert r.returncode == 64 and message in r.stderr, (args, r.returncode, r.stderr)
    import dnngraph
    try:
        dnngraph.create_handle("cuda")
    except RuntimeError:  # no GPU here: the handle's reason, as a model that cannot run (exit 2)
        r = cli("--device", "cuda")
        assert r.returncode == 2 and "DEVICE_NOT_AVAILABLE" in r.stderr, (r.returncode, r.stderr)



def test_a_numpy_step_result_that_views_its_input_is_copied():
    # A NumPy step's input may be a view of the arena, whose bytes a later value reuses: a result
    # that views it (a Slice, an Identity) must not alias it.
    from dnngraph.onnx import _model, _steps
    node = helper.make_node("Slice", ["a", "st", "en"], ["s"], name="slice")
    arena = np.arange(32, dtype=np.float32)
    a = arena[:16].reshape(4, 4)
    values = {"a": _model.Value("a", (4, 4), np.dtype(np.float32))}
    prepared = type("P", (), {"values": values})()
    env = {"a": a}
    _steps.HostStep(node, prepared).run(env, _arrays.NumpyLike(), {"st": np.array([1]), "en": np.array([3])})
    np.testing.assert_array_equal(env["s"], a[1:3])
    assert not np.may_share_memory(env["s"], arena)
    arena[:] = -1  # the arena reused: the result keeps its values
    assert env["s"][0, 0] == 4


def test_allow_tf32_reaches_every_graph(request):
    import json
    import onnx_models
    m = onnx_models.resnet_block(seeded(request.node.name), n=1, c=8, hw=6)
    for allowed in (False, True):
        s = dgx.load(m, allow_tf32=allowed)
        assert s.options.allow_tf32 is allowed
        assert all(json.loads(g.to_json()).get("allow_tf32", False) is allowed for g in s.graphs)


def test_explain_names_every_step(request):
    m = _chain(2)
    s = dgx.load(m, layout_in_numpy=True)
    text = s.explain()
    assert text.startswith("onnx session on cpu (numpy arrays, precision of the model): 5 steps")
    assert "step 1: node 'reshape0' (Reshape) by numpy layout op" in text
    assert "step 4: dnngraph graph 4 (1 outputs)" in text and "(chosen)" in text


def test_channels_last_is_for_images_not_attention_operands(request):
    import onnx_models
    from dnngraph.onnx import _lower, _steps
    rng = seeded(request.node.name)
    block = dgx.load(onnx_models.resnet_block(rng, n=1, c=8, hw=6))
    assert "x" in _lower.image_values(block._p)
    assert block._steps[0].input_nhwc == {"x": True}
    # With the heads' reshapes and transposes cut out, Q, K and V are graph inputs: row-major, the
    # head dim contiguous, as the attention kernels need (CUDA's refuse anything else).
    enc = dgx.load(onnx_models.encoder_layer(rng, b=2, s=8, e=32, heads=2), layout_in_numpy=True)
    assert not _lower.image_values(enc._p)
    sdpa = [s for s in enc._steps if isinstance(s, _steps.Segment) and "sdpa" in s.graph.explain()]
    assert sdpa and all(not nhwc for s in sdpa for nhwc in s.input_nhwc.values())
    assert all(len(set(s.input_nhwc.values())) <= 1 for s in sdpa)


def test_large_feature_maps_enter_and_leave_through_the_tiled_transpose(request):
    # A conv on a 16-channel NCHW feature map (NHWC inside the session) whose 16-channel output is
    # returned as the model's NCHW array: both conversions by a dnngraph transpose (one graph per
    # pair of layouts, kept), the result row-major and equal to onnxruntime's.
    from test_onnx import one
    rng = seeded(request.node.name)
    w = rand(rng, 16, 16, 3, 3)
    m = one("Conv", [[2, 16, 64, 64]], {"pads": [1, 1, 1, 1]}, initializers=[("w", w)], extra_inputs=["w"])
    s = dgx.load(m)
    x = rand(rng, 2, 16, 64, 64)
    for _ in range(2):
        (y,) = s.run(None, {"x0": x})
        assert y.flags.c_contiguous and y.shape == (2, 16, 64, 64)
        assert near(y, reference(m, {"x0": x})[0], 1e-5)
    assert len(s.arrays._copies) == 2


def test_images_of_every_rank_get_channels_last_strides_inside_the_graph(request, monkeypatch):
    """1-D, 2-D and 3-D images are channels-last (NWC, NHWC, NDHWC) inside a session, past a reshape
    too (whose output the library would make row-major): one NCHW image there made every conv after
    it gather its channels per pixel (a U-Net's convs behind its 3-D stem ran ~5x slower)."""
    from onnx import helper, numpy_helper, TensorProto
    import onnxruntime as ort
    from dnngraph.onnx import _arrays, _lower
    assert _arrays.channels_last([2, 3, 5]) == [15, 1, 3]
    assert _arrays.channels_last([2, 3, 4, 5]) == [60, 1, 15, 3]
    assert _arrays.channels_last([1, 3, 2, 4, 5]) == [120, 1, 60, 15, 3]
    for rank in (3, 4, 5):
        a = np.arange(2 * 3 * 4 ** (rank - 2)).reshape((2, 3) + (4,) * (rank - 2))
        last = a.transpose(_arrays.to_channels_last(rank))
        assert last.shape == (2,) + (4,) * (rank - 2) + (3,)
        assert np.array_equal(last.transpose(_arrays.from_channels_last(rank)), a)
    made = {}
    set_tensor = _lower.Lowering.set
    monkeypatch.setattr(_lower.Lowering, "set", lambda self, name, t: (made.update({name: t}), set_tensor(self, name, t))[1])
    rng = seeded(request.node.name)
    nodes = [helper.make_node("Conv", ["x", "w3"], ["c3"], pads=[0, 1, 1, 0, 1, 1]),
             helper.make_node("Reshape", ["c3", "to2d"], ["r"]), helper.make_node("Relu", ["r"], ["a"]),
             helper.make_node("Conv", ["a", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Reshape", ["c2", "to1d"], ["q"]),
             helper.make_node("Conv", ["q", "w1"], ["y"], pads=[1, 1])]
    inits = [("w3", rng.uniform(-1, 1, (8, 3, 2, 3, 3))), ("to2d", np.array([1, 8, 6, 6], np.int64)),
             ("w2", rng.uniform(-1, 1, (4, 8, 3, 3))), ("to1d", np.array([1, 4, 36], np.int64)),
             ("w1", rng.uniform(-1, 1, (5, 4, 3)))]
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 2, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.asarray(v, np.int64 if v.dtype == np.int64 else np.float32), n)
                           for n, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    x = {"x": rng.uniform(-1, 1, (1, 3, 2, 6, 6)).astype(np.float32)}
    s = dgx.load(m)
    assert s._steps[0].input_nhwc == {"x": True}
    assert list(made["c3"].get_stride()) == [288, 1, 288, 48, 8]  # NDHWC, depth 1
    assert list(made["r"].get_stride()) == [288, 1, 48, 8]  # the reshape's output: NHWC
    assert list(made["a"].get_stride()) == [288, 1, 48, 8]
    assert list(made["q"].get_stride()) == [144, 1, 4]  # NWC
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, x)[0]
    got = s.run(None, x)[0]
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * float(np.abs(ref).max()))
