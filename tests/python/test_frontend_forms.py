"""The same graphs built the cuDNN frontend's three ways (pygraph's five steps, graph(...) under
@jit, and the Graph class) give identical plans and identical results: on the CPU with NumPy, and
on a GPU with PyTorch's CUDA tensors (skipped without torch and a CUDA device)."""
import numpy as np
import pytest

import dnngraph
from conftest import rand

F = dnngraph.data_type.FLOAT
MODES = [dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK]


def conv_bias_relu_nodes(g, x, w, b):
    y = g.conv_fprop(image=x, weight=w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv")
    return [g.relu(input=g.bias(input=y, bias=b, name="bias"), name="relu")]


def matmul_scale_gelu_nodes(g, a, b, s):
    return [g.gelu(input=g.scale(input=g.matmul(A=a, B=b, name="mm"), scale=s, name="scale"), name="gelu")]


def layernorm_nodes(g, x, scale, bias):
    y, mean, inv_var = g.layernorm(norm_forward_phase=dnngraph.norm_forward_phase.TRAINING, input=x, scale=scale,
                                   bias=bias, epsilon=1e-5, name="ln")
    return [y, mean, inv_var]


def conv_data(rng):
    return [rand(rng, (2, 8, 9, 9)), rand(rng, (16, 8, 3, 3)), rand(rng, (1, 16, 1, 1))]


def matmul_data(rng):
    return [rand(rng, (3, 17, 24)), rand(rng, (3, 24, 20)), rand(rng, (1, 1, 20))]


def layernorm_data(rng):
    return [rand(rng, (12, 64, 1, 1)), rand(rng, (1, 64, 1, 1)), rand(rng, (1, 64, 1, 1))]


CASES = {
    "conv_bias_relu": (conv_bias_relu_nodes, conv_data),
    "matmul_scale_gelu": (matmul_scale_gelu_nodes, matmul_data),
    "layernorm_training": (layernorm_nodes, layernorm_data),
}


class Device:
    """Arrays where the handle runs: NumPy on the CPU, torch CUDA tensors on a GPU."""

    def __init__(self, name):
        self.name = name
        if name == "cpu":
            self.handle, self.torch = dnngraph.create_handle("cpu"), None
            return
        torch = pytest.importorskip("torch")
        if not torch.cuda.is_available():
            pytest.skip("torch has no CUDA device")
        try:
            self.handle = dnngraph.create_handle("cuda")
        except RuntimeError as e:
            pytest.skip(f"dnngraph has no CUDA device: {e}")
        self.torch = torch

    def array(self, a):
        return a if self.torch is None else self.torch.from_numpy(a).cuda()

    def nan(self, shape):
        if self.torch is None:
            return np.full(shape, np.nan, np.float32)
        return self.torch.full(list(shape), float("nan"), device="cuda")

    def workspace(self, n):
        return np.empty(n, np.uint8) if self.torch is None else self.torch.empty(n, dtype=self.torch.uint8,
                                                                                  device="cuda")

    def host(self, a):
        if self.torch is None:
            return a
        self.torch.cuda.synchronize()
        return a.cpu().numpy()


def plans_of(g):
    return [g.get_plan_name_at_index(i) for i in range(g.get_execution_plan_count())]


def by_pygraph(dev, nodes, arrays):
    g = dnngraph.pygraph(io_data_type=F, intermediate_data_type=F, compute_data_type=F, handle=dev.handle)
    ins = [g.tensor_like(a) for a in arrays]
    outs = nodes(g, *ins)
    for t in outs:
        t.set_output(True)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans(MODES)
    g.check_support()
    g.build_plans()
    results = [dev.nan(t.get_dim()) for t in outs]
    pack = dict(zip(ins, arrays))
    pack.update(zip(outs, results))
    g.execute(pack, dev.workspace(g.get_workspace_size()))
    return plans_of(g), [dev.host(r) for r in results]


@dnngraph.jit(heur_modes=MODES)
def jit_graph(handle, nodes, *arrays):
    with dnngraph.graph(handle, io_data_type=F, intermediate_data_type=F, compute_data_type=F) as (g, _):
        ins = [g.tensor_like(a) for a in arrays]
        outs = nodes(g, *ins)
        for t in outs:
            t.set_output(True)
        return g, ins + outs


def by_jit(handle, nodes, arrays):
    """The graph, its uids (inputs, then outputs) and a pack of the inputs by uid."""
    g, uids = jit_graph(handle, nodes, *arrays)
    return g, uids, dict(zip(uids, arrays)), len(uids) - len(arrays)


def by_class(dev, nodes, arrays):
    with dnngraph.Graph(handle=dev.handle, io_data_type=F, intermediate_data_type=F, compute_data_type=F) as graph:
        for t in nodes(graph, *arrays):
            t.set_output(True)
    results = graph(*arrays)  # allocated as the inputs' kind: NumPy, or torch on the GPU
    results = list(results) if isinstance(results, tuple) else [results]
    return plans_of(graph), [dev.host(r) for r in results]


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_three_forms_give_identical_plans_and_results(case, device, rng):
    dev = Device(device)
    nodes, data = CASES[case]
    arrays = [dev.array(a) for a in data(rng)]
    plans_a, results_a = by_pygraph(dev, nodes, arrays)
    assert plans_a, "pygraph made no plan"

    g, uids, pack, n_out = by_jit(dev.handle, nodes, arrays)
    results_b = [dev.nan(r.shape) for r in results_a]
    pack.update(zip(uids[len(arrays):], results_b))
    g.execute(pack, dev.workspace(g.get_workspace_size()), handle=dev.handle)
    results_b = [dev.host(r) for r in results_b]
    assert plans_of(g) == plans_a
    assert n_out == len(results_a)

    plans_c, results_c = by_class(dev, nodes, arrays)
    assert plans_c == plans_a
    for a, b, c in zip(results_a, results_b, results_c):
        assert not np.isnan(a).any()
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_jit_builds_once_per_input_signature(cpu, rng):
    calls = []

    @dnngraph.jit(heur_modes=dnngraph.heur_mode.A)
    def make(handle, x):
        calls.append(x.shape)
        with dnngraph.graph(handle, io_data_type=F) as (g, _):
            X = g.tensor_like(x)
            Y = g.relu(X).set_output(True)
            return g, [X, Y]

    x1, x2 = rand(rng, (4, 5)), rand(rng, (4, 5))
    g1, uids1 = make(cpu, x1)
    g2, uids2 = make(cpu, x2)  # same dims, strides and dtype: the graph built for x1
    assert g1 is g2 and uids1 == uids2 and len(calls) == 1
    g3, _ = make(cpu, rand(rng, (6, 5)))  # new dims: built again
    assert g3 is not g1 and len(calls) == 2
    g4, _ = make(cpu, np.asfortranarray(rand(rng, (4, 5))))  # new strides: built again
    assert g4 is not g1 and len(calls) == 3
    assert make.__wrapped__ is not make and make.cache_size() == 3
    # __wrapped__ is the undecorated function: re-decorated, it builds with its own modes.
    g5, uids5 = dnngraph.jit(heur_modes=[dnngraph.heur_mode.FALLBACK])(make.__wrapped__)(cpu, x1)
    assert g5 is not g1 and g5.get_execution_plan_count() >= 1 and len(uids5) == 2
    y = np.full((4, 5), np.nan, np.float32)
    g5.execute({uids5[0]: x1, uids5[1]: y}, None)
    np.testing.assert_array_equal(y, np.maximum(x1, 0))


def test_graph_cache_under_jit_builds_once_per_user_key(cpu, rng):
    calls = []

    @dnngraph.jit(heur_modes=[dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
    @dnngraph.graph_cache(key_fn=lambda handle, x: (x.shape, x.strides, x.dtype.str), maxsize=2)
    def make(handle, x):
        calls.append(x.shape)
        with dnngraph.graph(handle, io_data_type=F) as (g, _):
            X = g.tensor_like(x)
            return g, [X, g.relu(X).set_output(True)]

    g1, _ = make(cpu, rand(rng, (2, 3)))
    assert make(cpu, rand(rng, (2, 3)))[0] is g1 and len(calls) == 1
    assert g1.get_execution_plan_count() >= 1

    @dnngraph.graph_cache(key_fn=lambda n: n, maxsize=2)
    def square(n):
        calls.append(n)
        return n * n

    assert [square(2), square(2), square(3), square(4), square(2)] == [4, 4, 9, 16, 4]
    assert calls[1:] == [2, 3, 4, 2]  # maxsize 2: 2 went when 4 came
    with pytest.raises(ValueError, match="maxsize must be at least 1; got 0"):
        dnngraph.graph_cache(key_fn=lambda: 0, maxsize=0)


def test_sm_version_is_taken_and_unused_on_the_cpu(cpu):
    g = dnngraph.pygraph(io_data_type=F, handle=cpu, sm_version=90)
    assert g.handle.device == "cpu"


def test_jit_leaves_a_built_graph_as_it_is(cpu, rng):
    @dnngraph.jit(heur_modes=dnngraph.heur_mode.A)
    def make(handle, x):
        with dnngraph.graph(handle, io_data_type=F) as (g, _):
            X = g.tensor_like(x)
            Y = g.relu(X).set_output(True)
            g.build([dnngraph.heur_mode.FALLBACK], dnngraph.build_plan_policy.ALL)
            return g, [X, Y]

    g, _ = make(cpu, rand(rng, (3, 3)))
    assert g.get_plan_name_at_index(g.get_execution_plan_count() - 1) == "ref (reference, not for speed)"  # FALLBACK's order kept


def test_graph_context_yields_the_frontend_pair(cpu):
    with dnngraph.graph(cpu, name="g1") as (g, extra):
        assert isinstance(g, dnngraph.pygraph) and extra == []
        X = g.tensor(dim=[2, 2])
        g.relu(X).set_output(True)
        g.validate()
        assert g.handle.device == "cpu"
