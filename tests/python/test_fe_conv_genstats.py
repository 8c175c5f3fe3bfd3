"""NVIDIA cudnn-frontend's test/python/test_conv_genstats.py ported to NumPy on dnngraph's CPU handle,
and the genstats op's own rules.

Only `import cudnn` resolves to dnngraph. The graph is the original's: scale, bias and ReLU of X
into conv_fprop, Y an output, genstats(Y) -> SUM, SQ_SUM as FLOAT outputs; the pack holds SUM and
SQ_SUM as arrays of the reference's shape, [64], as the original's torch.zeros_like(sum_expected)
(the [1, 64, 1, 1] tensors' memory). What changed: torch tensors are NumPy arrays in the
original's layouts, the reference is float64 (the original's torch conv rounds Y to HALF and sums
that: so does this one, from the HALF Y), and the cuDNN-version skip is dropped. Tolerances are
the original's.
"""
import cudnn
import numpy as np
import pytest

from frontend_refs import assert_close, channels_last, conv, randn, strides_of

n, c, k = 4, 32, 64
padding, stride, dilation = [1, 1], [1, 1], [1, 1]


@pytest.fixture(scope="module")
def cudnn_handle():
    return cudnn.create_handle("cpu")


def conv_genstats_graph(handle, x, w):
    """Y = conv(X, W) with (SUM, SQ_SUM) = genstats(Y), HALF io, every plan built (heuristics A + FALLBACK)."""
    graph = cudnn.pygraph(io_data_type=cudnn.data_type.HALF, intermediate_data_type=cudnn.data_type.FLOAT,
                          compute_data_type=cudnn.data_type.FLOAT, handle=handle)
    X, W = graph.tensor_like(x), graph.tensor_like(w)
    Y = graph.conv_fprop(image=X, weight=W, padding=padding, stride=stride, dilation=dilation)
    Y.set_output(True)
    SUM, SQ_SUM = graph.genstats(input=Y)
    SUM.set_output(True)
    SQ_SUM.set_output(True)
    graph.build([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    graph.build_plans(cudnn.build_plan_policy.ALL)
    return graph, X, W, Y, SUM, SQ_SUM


def reference(scale, bias, x, w):
    x_conv = np.maximum(np.asarray(x, np.float64) * scale + bias, 0).astype(np.float16)  # a HALF intermediate
    y = channels_last(conv(x_conv, w, padding, stride, dilation).astype(np.float16))  # torch keeps NHWC
    y64 = np.asarray(y, np.float64)
    return y, y64.sum(axis=(0, 2, 3)), np.square(y64).sum(axis=(0, 2, 3))


@pytest.mark.L0
def test_conv_genstats(cudnn_handle):
    rng = np.random.default_rng(0)
    X_gpu = channels_last(randn(rng, (n, c, 32, 32), np.float16))
    W_gpu = channels_last(randn(rng, (k, c, 3, 3), np.float16))
    scale = channels_last((randn(rng, (1, c, 1, 1), np.float16) * 0.01).astype(np.float16))
    bias = channels_last((randn(rng, (1, c, 1, 1), np.float16) * 0.01).astype(np.float16))
    Y_expected, sum_expected, sq_sum_expected = reference(scale, bias, X_gpu, W_gpu)

    graph = cudnn.pygraph(io_data_type=cudnn.data_type.HALF, intermediate_data_type=cudnn.data_type.HALF,
                          compute_data_type=cudnn.data_type.FLOAT, handle=cudnn_handle)
    X = graph.tensor(name="X", dim=X_gpu.shape, stride=strides_of(X_gpu), data_type=X_gpu.dtype)
    W = graph.tensor(name="W", dim=W_gpu.shape, stride=strides_of(W_gpu), data_type=W_gpu.dtype)
    S = graph.tensor(name="S", dim=scale.shape, stride=strides_of(scale), data_type=scale.dtype)
    B = graph.tensor(name="B", dim=bias.shape, stride=strides_of(bias), data_type=bias.dtype)
    S_OUT = graph.scale(name="scale", input=X, scale=S)
    B_OUT = graph.bias(name="bias", input=S_OUT, bias=B)
    CONV_IN = graph.relu(name="relu", input=B_OUT)
    Y = graph.conv_fprop(image=CONV_IN, weight=W, padding=padding, stride=stride, dilation=dilation)
    Y.set_output(True)
    SUM, SQ_SUM = graph.genstats(name="genstats", input=Y)
    SUM.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    SQ_SUM.set_output(True).set_data_type(cudnn.data_type.FLOAT)

    graph.validate()
    assert SUM.get_dim() == [1, k, 1, 1] and SUM.get_stride() == [k, 1, k, k]  # NHWC, as the frontend infers
    graph.build_operation_graph()
    graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    graph.check_support()
    graph.build_plans()
    # The conv and genstats are one partition: the statistics come from the conv's epilogue.
    assert "partition 1 (conv_epilogue): conv_fprop_3, genstats\n" in graph.explain(), graph.explain()
    sum_dev = np.zeros_like(sum_expected, dtype=np.float32)
    sq_sum_dev = np.zeros_like(sq_sum_expected, dtype=np.float32)
    Y_actual = np.zeros_like(Y_expected)
    workspace = np.empty(max(graph.get_workspace_size(), 1), np.uint8)
    graph.execute({X: X_gpu, W: W_gpu, Y: Y_actual, SUM: sum_dev, SQ_SUM: sq_sum_dev, S: scale, B: bias},
                  workspace, handle=cudnn_handle)
    assert_close(sum_expected, sum_dev, atol=0.5, rtol=1e-2)
    assert_close(sq_sum_expected, sq_sum_dev, atol=1e-3, rtol=1e-3)
    assert_close(Y_expected, Y_actual, atol=1e-3, rtol=1e-3)


def test_conv_genstats_on_every_plan(cudnn_handle):
    # Beyond the original: every plan of the fused partition (the CPU conv engines' epilogues and ref).
    rng = np.random.default_rng(2)
    x = channels_last(randn(rng, (2, 8, 6, 6), np.float16))
    w = channels_last(randn(rng, (16, 8, 3, 3), np.float16))
    graph, X, W, Y, SUM, SQ_SUM = conv_genstats_graph(cudnn_handle, x, w)
    assert SUM.get_data_type() == cudnn.data_type.FLOAT  # FLOAT unless set
    y64 = np.asarray(conv(x, w, padding, stride, dilation), np.float64)
    names = [graph.get_plan_name_at_index(i) for i in range(graph.get_execution_plan_count())]
    assert len(names) > 1, names
    for i in range(len(names)):
        y = channels_last(np.full((2, 16, 6, 6), np.nan, np.float16))
        sums, sq_sums = np.full((1, 16, 1, 1), np.nan, np.float32), np.full((1, 16, 1, 1), np.nan, np.float32)
        graph.execute_plan_at_index({X: x, W: w, Y: y, SUM: sums, SQ_SUM: sq_sums},
                                    np.empty(max(graph.get_workspace_size_plan_at_index(i), 1), np.uint8), i)
        assert_close(y, y64, atol=1e-2, rtol=3e-3)
        # From the unrounded conv values (fused) or the stored HALF Y (ref): within HALF's rounding.
        assert_close(sums.reshape(-1), y64.sum(axis=(0, 2, 3)), atol=0.05, rtol=3e-3)
        assert_close(sq_sums.reshape(-1), np.square(y64).sum(axis=(0, 2, 3)), atol=0.05, rtol=3e-3)


def test_genstats_of_an_input_runs_alone_and_survives_json(cudnn_handle):
    rng = np.random.default_rng(3)
    x = randn(rng, (3, 5, 4, 7), np.float32)
    graph = cudnn.pygraph(io_data_type=cudnn.data_type.FLOAT, handle=cudnn_handle)
    X = graph.tensor_like(x)
    SUM, SQ_SUM = graph.genstats(input=X, name="gs")
    SUM.set_output(True)
    SQ_SUM.set_output(True)
    graph.build([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    again = cudnn.pygraph.from_json(graph.to_json(), handle=cudnn_handle)
    again.build([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    for g in (graph, again):
        g.build_plans(cudnn.build_plan_policy.ALL)
        names = [g.get_plan_name_at_index(i) for i in range(g.get_execution_plan_count())]
        assert any(n.startswith("cpu_pointwise_fused") for n in names), names
        for i in range(len(names)):
            sums, sq_sums = np.full((1, 5, 1, 1), np.nan, np.float32), np.full((1, 5, 1, 1), np.nan, np.float32)
            g.execute_plan_at_index({SUM.get_uid(): sums, SQ_SUM.get_uid(): sq_sums, X.get_uid(): x}, None, i)
            x64 = np.asarray(x, np.float64)
            assert_close(sums.reshape(-1), x64.sum(axis=(0, 2, 3)), atol=1e-4, rtol=1e-5)
            assert_close(sq_sums.reshape(-1), np.square(x64).sum(axis=(0, 2, 3)), atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("what,dims,dtype,out_type,pattern", [
    ("rank 1", [8], cudnn.data_type.FLOAT, None,
     r"node 'gs' \(genstats\), tensor 'X': rank 1 has no channel dim \(genstats reduces X \[N, C, \.\.\.\] over every "
     r"dim but dim 1\)"),
    ("integer X", [2, 4, 3], cudnn.data_type.INT32, None,
     r"node 'gs' \(genstats\), tensor 'X': data type INT32 is not floating point \(genstats sums X and X\*X\)"),
    ("integer SUM", [2, 4, 3], cudnn.data_type.FLOAT, cudnn.data_type.INT32,
     r"node 'gs' \(genstats\), tensor 'gs::SUM': data type INT32 is not floating point \(a sum of X's values\)"),
])
def test_genstats_rules(cudnn_handle, what, dims, dtype, out_type, pattern):
    graph = cudnn.pygraph(io_data_type=cudnn.data_type.FLOAT, handle=cudnn_handle)
    X = graph.tensor(name="X", dim=dims, data_type=dtype)
    SUM, SQ_SUM = graph.genstats(input=X, name="gs")
    SUM.set_output(True)
    SQ_SUM.set_output(True)
    if out_type is not None:
        SUM.set_data_type(out_type)
    with pytest.raises(ValueError, match=pattern):
        graph.validate()


def test_genstats_output_dims_are_checked(cudnn_handle):
    graph = cudnn.pygraph(io_data_type=cudnn.data_type.FLOAT, handle=cudnn_handle)
    X = graph.tensor(name="X", dim=[2, 4, 3])
    SUM, SQ_SUM = graph.genstats(input=X, name="gs")
    SUM.set_output(True).set_dim([1, 4, 3])
    SQ_SUM.set_output(True)
    with pytest.raises(ValueError, match=r"node 'gs' \(genstats\), tensor 'gs::SUM': dims \[1,4,3\] disagree with "
                                         r"the inferred \[1,4,1\]"):
        graph.validate()


def test_conv_genstats_on_every_cuda_plan():
    # On a GPU (skipped without torch and a CUDA device): every plan against the float64 reference,
    # the own CUDA conv engine's fused epilogue sums included.
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    handle = cudnn.create_handle("cuda")
    rng = np.random.default_rng(4)
    x = channels_last(randn(rng, (4, 32, 16, 16), np.float16))
    w = channels_last(randn(rng, (64, 32, 3, 3), np.float16))
    graph, X, W, Y, SUM, SQ_SUM = conv_genstats_graph(handle, x, w)
    y64 = np.asarray(conv(x, w, padding, stride, dilation), np.float64)
    xd = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 2, 3, 1))).cuda().permute(0, 3, 1, 2)
    wd = torch.from_numpy(np.ascontiguousarray(w.transpose(0, 2, 3, 1))).cuda().permute(0, 3, 1, 2)
    for i in range(graph.get_execution_plan_count()):
        yd = torch.full((4, 16, 16, 64), float("nan"), dtype=torch.float16, device="cuda").permute(0, 3, 1, 2)
        sums = torch.full((1, 64, 1, 1), float("nan"), device="cuda")
        sq_sums = torch.full((1, 64, 1, 1), float("nan"), device="cuda")
        ws = torch.empty(max(graph.get_workspace_size_plan_at_index(i), 1), dtype=torch.uint8, device="cuda")
        graph.execute_plan_at_index({X: xd, W: wd, Y: yd, SUM: sums, SQ_SUM: sq_sums}, ws, i)
        torch.cuda.synchronize()
        name = graph.get_plan_name_at_index(i)
        y = yd.permute(0, 2, 3, 1).cpu().numpy().transpose(0, 3, 1, 2)
        np.testing.assert_allclose(y.astype(np.float64), y64, atol=1e-2, rtol=3e-3, err_msg=name)
        np.testing.assert_allclose(sums.cpu().numpy().reshape(-1), y64.sum(axis=(0, 2, 3)), atol=0.1, rtol=3e-3,
                                   err_msg=name)
        np.testing.assert_allclose(sq_sums.cpu().numpy().reshape(-1), np.square(y64).sum(axis=(0, 2, 3)),
                                   atol=0.1, rtol=3e-3, err_msg=name)
