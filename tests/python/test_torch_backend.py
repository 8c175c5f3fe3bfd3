"""torch.compile(backend="dnngraph") on the CPU: each op family against PyTorch eager (fp32), the
partitions it makes, its refusals with their reasons, the fallback of a partition dnngraph
refuses at build, and the registration (import and the torch_dynamo_backends entry point)."""
import pathlib
import re
import sys

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import dnngraph.torch as dt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]


_NEW = []  # the partitions the last _compiled call made


def _compiled(fn, *args):
    torch._dynamo.reset()
    before = set(dt.partitions())
    with torch.no_grad():
        out = torch.compile(fn, backend="dnngraph")(*args)
    _NEW[:] = [p for p in dt.partitions() if p not in before]
    return out


def _close(out, ref, rtol=2e-5):
    outs, refs = (out, ref) if isinstance(out, tuple) else ((out,), (ref,))
    for o, r in zip(outs, refs):
        assert o.shape == r.shape
        scale = max(r.abs().max().item(), 1e-6)
        assert (o - r).abs().max().item() <= rtol * scale, f"max diff {(o - r).abs().max().item()} of {scale}"


def _lowered_nodes():
    """Names of the call_function nodes in partitions that built a dnngraph graph."""
    names = []
    for p in _NEW:
        if any(b.graph is not None for b in p.builds.values()):
            names += p.node_names
    return names


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("channels_last", [False, True])
def test_conv_batchnorm_relu_pool_match_eager(channels_last):
    g = _gen()
    conv = torch.nn.Conv2d(4, 8, 3, padding=1)
    dw = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
    up = torch.nn.ConvTranspose2d(8, 4, 2, stride=2)
    bn = torch.nn.BatchNorm2d(8)
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(8, generator=g))
        bn.running_var.copy_(torch.rand(8, generator=g) + 0.5)
    model = torch.nn.Sequential(conv, bn, torch.nn.ReLU6(), dw, torch.nn.Sigmoid(), up).eval()

    def fn(x):
        y = model(x)
        return F.max_pool2d(y, 3, 2, 1), F.avg_pool2d(y, 2), F.adaptive_avg_pool2d(y, 1)

    x = torch.randn(2, 4, 8, 8, generator=g)
    if channels_last:
        model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    with torch.no_grad():
        ref = fn(x)
    _close(_compiled(fn, x), ref)
    lowered = _lowered_nodes()
    for op in ("convolution", "_native_batch_norm_legit_no_training", "hardtanh", "sigmoid",
               "max_pool2d_with_indices", "avg_pool2d", "mean"):
        assert op in lowered, f"{op} was not lowered: {lowered}"


def test_linear_layernorm_gelu_and_scalars_match_eager():
    g = _gen(1)
    lin, ln = torch.nn.Linear(16, 32), torch.nn.LayerNorm(32)

    def fn(x, y):
        h = F.gelu(lin(x)) * 0.5 + 1.0
        h = ln(h - y / 3.0)
        return torch.tanh(h), F.silu(h), F.gelu(h, approximate="tanh"), torch.cat([h, y], 1), torch.mm(h, y.t())

    x, y = torch.randn(4, 16, generator=g), torch.randn(4, 32, generator=g)
    with torch.no_grad():
        ref = fn(x, y)
    _close(_compiled(fn, x, y), ref)
    for op in ("addmm", "gelu", "native_layer_norm", "silu", "tanh", "cat", "mm"):
        assert op in _lowered_nodes()


@pytest.mark.parametrize("causal", [False, True])
def test_attention_and_bmm_match_eager(causal):
    g = _gen(2)
    q, k, v = (torch.randn(2, 4, 16, 8, generator=g) for _ in range(3))

    def fn(q, k, v):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return o, torch.bmm(q.reshape(8, 16, 8), k.reshape(8, 16, 8).transpose(1, 2))

    with torch.no_grad():
        ref = fn(q, k, v)
    _close(_compiled(fn, q, k, v), ref)
    assert any("scaled_dot_product" in n for n in _lowered_nodes())
    assert "bmm" in _lowered_nodes()


def test_layernorm_of_a_3d_intermediate_and_broadcast_operands():
    g = _gen(3)
    ln = torch.nn.LayerNorm(8)

    def fn(x, b):
        return ln(torch.relu(x) + b)  # b [8] broadcast against x [2, 5, 8]

    x, b = torch.randn(2, 5, 8, generator=g), torch.randn(8, generator=g)
    with torch.no_grad():
        ref = fn(x, b)
    _close(_compiled(fn, x, b), ref)
    assert "native_layer_norm" in _lowered_nodes()
    # One layernorm node, X folded to [10, 8] and Y back by layout copies.
    engines = [e.split("[")[0] for p in _NEW for b in p.builds.values() for e in b.engines]
    assert engines.count("cpu_norm_rowwise") == 1 and engines.count("cpu_layout_copy") == 2, engines


def test_a_new_input_signature_builds_a_second_graph():
    lin = torch.nn.Linear(8, 8)
    fn = torch.compile(lambda x: torch.relu(lin(x)), backend="dnngraph", dynamic=False)
    torch._dynamo.reset()
    with torch.no_grad():
        a, b = torch.randn(3, 8), torch.randn(5, 8)
        _close(fn(a), torch.relu(lin(a)))
        _close(fn(b), torch.relu(lin(b)))


def test_batchnorm_parameters_changed_in_place_are_seen():
    conv, bn = torch.nn.Conv2d(3, 4, 1), torch.nn.BatchNorm2d(4)
    model = torch.nn.Sequential(conv, bn).eval()
    x = torch.randn(1, 3, 4, 4)
    torch._dynamo.reset()
    fn = torch.compile(model, backend="dnngraph")
    with torch.no_grad():
        _close(fn(x), model(x))
        bn.running_var.mul_(4.0)  # the folded weight is derived from it: recomputed, not stale
        bn.weight.add_(1.0)
        _close(fn(x), model(x))


def test_refused_nodes_carry_their_reasons():
    support = dt.DnngraphSupport()

    def fn(x, i, m):
        return (F.scaled_dot_product_attention(x, x, x, attn_mask=m), i + 1, torch.exp(x), torch.add(x, x, alpha=2),
                torch.div(x, x, rounding_mode="floor"), F.max_pool2d(x, 2, dilation=2), x.mean([3]))

    gm = torch.fx.experimental.proxy_tensor.make_fx(fn, tracing_mode="fake")(
        torch.randn(1, 2, 4, 8), torch.ones(3, dtype=torch.int64), torch.zeros(4, 4))
    for node in gm.graph.nodes:
        support.reason(node)
    reasons = "\n".join(support.refused.values())
    assert "an attention mask or bias" in reasons
    assert "dtype torch.int64" in reasons
    assert "aten.exp.default: no dnngraph translation" in reasons
    assert "aten.add.Tensor: alpha=2: only 1" in reasons
    assert "aten.div.Tensor_mode" in reasons  # div with a rounding mode is its own overload
    assert "dilation [2, 2]: dnngraph's pooling has none" in reasons
    assert "keepdim=False (the reduced dims would need a reshape)" in reasons


def test_a_partition_refused_at_build_runs_in_pytorch_with_its_reason():
    # addmm's bias computed in the same partition (relu of it): dnngraph takes the bias only as
    # an input, so the lowering refuses the partition and PyTorch runs it.
    b, x, w = torch.randn(6), torch.randn(3, 4), torch.randn(4, 6)

    def fn(b, x, w):
        return torch.addmm(torch.relu(b), x, w)

    _close(_compiled(fn, b, x, w), fn(b, x, w))
    reasons = [bl.fallback_reason for p in _NEW for bl in p.builds.values() if bl.graph is None]
    assert any("addmm's bias ('relu') is computed inside the partition" in r for r in reasons), reasons


def test_training_graphs_lower_the_forward_and_backpropagate_in_pytorch():
    lin = torch.nn.Linear(8, 4)
    x = torch.randn(2, 8)
    torch._dynamo.reset()
    out = torch.compile(lambda x: torch.relu(lin(x)).sum(), backend="dnngraph")(x)
    out.backward()
    grad = lin.weight.grad.clone()
    lin.weight.grad = None
    torch.relu(lin(x)).sum().backward()
    _close(grad, lin.weight.grad)


def test_registered_on_import_and_through_the_entry_point():
    from torch._dynamo.backends import registry

    assert registry.lookup_backend("dnngraph") is dt.backend
    text = (ROOT / "pyproject.toml").read_text()
    assert '[project.entry-points.torch_dynamo_backends]\ndnngraph = "dnngraph.torch:backend"' in text
    # What torch does for an installed dnngraph: the entry point is found before dnngraph.torch is
    # imported, and loading it must not register the name twice.
    from importlib.metadata import EntryPoint

    saved = registry._COMPILER_FNS.pop("dnngraph")
    try:
        registry._BACKENDS["dnngraph"] = EntryPoint("dnngraph", "dnngraph.torch:backend", "torch_dynamo_backends")
        dt.register()  # what the package's import does while the entry point loads: nothing
        assert "dnngraph" not in registry._COMPILER_FNS
        assert registry.lookup_backend("dnngraph") is dt.backend
    finally:
        registry._COMPILER_FNS["dnngraph"] = saved
        registry._BACKENDS["dnngraph"] = None


def test_models_match_eager_on_the_cpu():
    sys.path.insert(0, str(ROOT / "bench"))
    import torch_models as tm

    cases = [(tm.resnet50(layers=(1, 1, 1, 1), base=8, num_classes=10), torch.randn(2, 3, 32, 32)),
             (tm.mobilenet_v2(width=0.25, num_classes=10), torch.randn(1, 3, 32, 32)),
             (tm.transformer_encoder(layers=2, hidden=32, heads=4, ffn=64), torch.randn(2, 8, 32))]
    for model, x in cases:
        with torch.no_grad():
            ref = model(x)
        _close(_compiled(model, x), ref, rtol=1e-4)
        assert _NEW and all(bl.graph is not None for p in _NEW for bl in p.builds.values()), [
            bl.fallback_reason for p in _NEW for bl in p.builds.values()]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_bf16_channels_last_models_match_eager_without_the_reference_engine():
    sys.path.insert(0, str(ROOT / "bench"))
    import torch_models as tm

    cases = [(tm.resnet50(layers=(1, 1, 1, 1), base=16, num_classes=16), torch.randn(4, 3, 64, 64), True),
             (tm.transformer_encoder(layers=2, hidden=128, heads=2, ffn=256), torch.randn(2, 64, 128), False)]
    for model, x, channels_last in cases:
        fmt = torch.channels_last if channels_last else torch.contiguous_format
        model = model.to(device="cuda", dtype=torch.bfloat16, memory_format=fmt)
        x = x.to(device="cuda", dtype=torch.bfloat16, memory_format=fmt)
        with torch.no_grad():
            ref = model(x)
        _close(_compiled(model, x), ref, rtol=3e-2)
        engines = [e for p in _NEW for b in p.builds.values() for e in b.engines]
        assert engines and not any(e.startswith("ref") for e in engines), engines
        assert all(b.graph is not None for p in _NEW for b in p.builds.values()), [
            b.fallback_reason for p in _NEW for b in p.builds.values()]


def test_cuda_graphs_option_on_the_cpu_runs_without_them_and_unknown_options_are_refused():
    lin = torch.nn.Linear(8, 8)
    x = torch.randn(3, 8)
    torch._dynamo.reset()
    with torch.no_grad():
        out = torch.compile(lambda x: torch.relu(lin(x)), backend="dnngraph", options={"cuda_graphs": True})(x)
        _close(out, torch.relu(lin(x)))
    torch._dynamo.reset()
    with pytest.raises(Exception, match=r"unknown option\(s\) \['tile'\]; it takes 'cuda_graphs', 'autotune'"):
        with torch.no_grad():
            torch.compile(lambda x: torch.relu(lin(x)), backend="dnngraph", options={"tile": 1})(x)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_graphs_option_replays_the_lowered_forward():
    sys.path.insert(0, str(ROOT / "bench"))
    import torch_models as tm

    model = tm.resnet50(layers=(1, 1, 1, 1), base=16, num_classes=16).to(
        device="cuda", dtype=torch.bfloat16, memory_format=torch.channels_last)
    torch._dynamo.reset()
    fn = torch.compile(model, backend="dnngraph", options={"cuda_graphs": True})
    with torch.no_grad():
        for seed in range(4):  # warm-up, recording, then replays with new inputs
            x = torch.randn(4, 3, 64, 64, generator=_gen(seed)).to(
                device="cuda", dtype=torch.bfloat16, memory_format=torch.channels_last)
            _close(fn(x).clone(), model(x), rtol=3e-2)


def test_dynamic_shapes_stay_in_pytorch_with_the_reason():
    lin = torch.nn.Linear(8, 8)
    torch._dynamo.reset()
    support_reasons = []
    real = dt.DnngraphSupport.reason

    def spy(self, node):
        why = real(self, node)
        support_reasons.append(why)
        return why

    fn = torch.compile(lambda x: torch.relu(lin(x)), backend="dnngraph", dynamic=True)
    with torch.no_grad():
        try:
            dt.DnngraphSupport.reason = spy
            for rows in (5, 7):
                x = torch.randn(rows, 8)
                _close(fn(x), torch.relu(lin(x)))
        finally:
            dt.DnngraphSupport.reason = real
    assert any(r and "symbolic (dynamic) shapes" in r for r in support_reasons), support_reasons


def test_autotune_option_times_the_plans_and_matches_eager():
    conv = torch.nn.Conv2d(8, 8, 3, padding=1)
    x = torch.randn(1, 8, 8, 8, generator=_gen(5))
    torch._dynamo.reset()
    before = set(dt.partitions())
    with torch.no_grad():
        fn = torch.compile(lambda x: torch.relu(conv(x)), backend="dnngraph", options={"autotune": True})
        _close(fn(x), torch.relu(conv(x)))
        _close(fn(x), torch.relu(conv(x)))
    new = [p for p in dt.partitions() if p not in before]
    built = [b for p in new for b in p.builds.values()]
    assert built and all(b.graph is not None and b.tuned for b in built)
    assert all(b.graph.get_execution_plan_count() > 1 for b in built)  # ALL plans were built to be timed


def test_on_cuda_poolings_and_concatenations_are_taken():
    # Fake CUDA tensors need no GPU: the support decision reads their metadata only.
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(2, 3, 8, 8, device="cuda")
    gm = torch.fx.experimental.proxy_tensor.make_fx(
        lambda x: (F.max_pool2d(torch.relu(x), 2), torch.cat([x, x], 1), F.avg_pool2d(x, 2)), tracing_mode="fake")(x)
    support = dt.DnngraphSupport()
    taken = [n.name for n in gm.graph.nodes if support.reason(n) is None]
    assert "relu" in taken
    assert "avg_pool2d" in taken  # cuda_pool_direct runs the poolings; this max_pool2d's trace uses its indices
    assert "cat" in taken  # cuda_layout_copy runs concatenations
    assert "on CUDA" not in support.refused.get("max_pool2d_with_indices", "")


def test_views_between_linear_layers_are_sunk_so_epilogues_join_the_matmuls():
    sys.path.insert(0, str(ROOT / "bench"))
    import torch_models as tm

    layers = 2
    model = tm.transformer_encoder(layers=layers, hidden=32, heads=4, ffn=64)
    x = torch.randn(2, 8, 32, generator=_gen(6))
    with torch.no_grad():
        ref = model(x)
    _close(_compiled(model, x), ref, rtol=1e-4)
    # Per layer: the QKV projection, the attention, and one graph for the rest (without the
    # rewrite: 8, as each view [B*S, N] -> [B, S, N] ended a partition).
    assert len(_NEW) <= 3 * layers, [p.node_names for p in _NEW]
    assert any("gelu_default" in p.node_names and any(n.startswith("addmm") for n in p.node_names) for p in _NEW)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_encoder_on_cuda_runs_its_layer_norms_on_own_kernels_and_attention_fused():
    sys.path.insert(0, str(ROOT / "bench"))
    import torch_models as tm

    model = tm.transformer_encoder(layers=2, hidden=64, heads=4, ffn=128).to(device="cuda", dtype=torch.bfloat16)
    x = torch.randn(2, 64, 64, generator=_gen(7)).to(device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        ref = model(x)
    _close(_compiled(model, x), ref, rtol=3e-2)
    engines = [e.split("[")[0] for p in _NEW for b in p.builds.values() for e in b.engines]
    assert engines.count("cuda_norm_rowwise") == 4, engines  # two layer norms a layer, each one kernel
    assert not any(e.startswith("ref") for e in engines), engines
    # One fused attention a layer, a partition the own flash kernel takes; mode A runs it on that
    # kernel or on cuDNN's, whichever its calibrated cost ranks first.
    blocks = [blk for p in _NEW for b in p.builds.values() if b.graph is not None
              for blk in re.split(r"\n(?=partition \d+ )", b.graph.explain()) if "cuda_sdpa_flash: accepted" in blk]
    assert len(blocks) == 2, blocks
    for blk in blocks:
        assert re.search(r"plan \d+: (cuda_sdpa_flash|cudnn)\b.*\(chosen\)", blk), blk


def test_sink_views_moves_a_view_below_gelu_and_drops_the_round_trip():
    from dnngraph.torch._rewrite import sink_views

    def fn(a, b):
        return torch.mm(F.gelu(torch.mm(a, b).view(2, 3, 4)).view(6, 4), b.t())

    a, b = torch.randn(6, 5), torch.randn(5, 4)
    gm = torch.fx.experimental.proxy_tensor.make_fx(fn, tracing_mode="fake")(a, b)
    assert sink_views(gm) >= 2
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    gelu = next(n for n in gm.graph.nodes if n.target is torch.ops.aten.gelu.default)
    assert gelu.args[0].target is torch.ops.aten.mm.default, targets  # gelu reads the matmul directly
    torch.testing.assert_close(gm(a, b), fn(a, b))


def test_derived_leaves_are_not_kept_inside_cuda_graph_calls():
    # Under torch's CUDA graph trees a derived leaf (a folded weight) lives in the graph's pool,
    # which may hold nothing past the call but outputs: computed, used, not cached; a value cached
    # outside (the eager first call) is still reused.
    from dnngraph.torch._leaves import Leaves, derived_leaves_not_kept

    calls = []

    def double(t):
        calls.append(1)
        return t * 2

    w = torch.ones(3)
    leaves = Leaves([w])
    src = leaves.input(0)
    folded = leaves.derived([src], double)
    assert len(calls) == 1 and leaves.items[folded].cached_value is not None
    fresh = torch.full((3,), 3.0)
    with derived_leaves_not_kept():
        out = leaves.run([fresh])
        assert torch.equal(out[folded], torch.full((3,), 6.0)) and len(calls) == 2
        assert torch.equal(leaves.items[folded].cached_value, torch.full((3,), 2.0))  # not replaced
        assert leaves.run([w])[folded] is leaves.items[folded].cached_value and len(calls) == 2
