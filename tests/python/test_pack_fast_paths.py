"""The variant pack's cheap reads: an exact numpy.ndarray is read from its fields, an exact
torch.Tensor through its attributes, instead of a DLPack import. Each check must still refuse each
wrong array, with the message the DLPack import gives the same array (a subclass goes that way),
for either key kind; whatever the reads cannot judge (other dtypes, devices, layouts, a tensor that
requires grad) goes to DLPack as before; and nothing is remembered from one execute to the next, so
an array changed in place between executes is judged as it is now. torch tests skip without torch."""
import re

import numpy as np
import pytest

import dnngraph
from conftest import assert_close, build, graph, poisoned, rand, workspace

code = dnngraph.error_code
M, K, N = 16, 8, 4


class Sub(np.ndarray):
    """An ndarray the probe does not take: it goes through DLPack."""


def matmul_graph(cpu):
    g = graph(cpu)
    A = g.tensor(dim=[1, M, K], name="A")
    B = g.tensor(dim=[1, K, N], name="B")
    Y = g.matmul(A, B, name="mm")
    Y.set_output(True)
    build(g)
    return g, A, B, Y


def error(g, pack, ws):
    with pytest.raises(ValueError) as e:
        g.execute(pack, ws)
    assert e.value.code == code.INVALID_VARIANT_PACK
    return str(e.value)


def same(fast, slow):
    """The messages agree; the value's type, which they may name, is the subclass's in `slow`."""
    return re.sub(r"; got \S+$", "", fast) == re.sub(r"; got \S+$", "", slow)


def keyings(g, A, B, Y):
    return [(A, B, Y), (A.get_uid(), B.get_uid(), Y.get_uid())]


def numpy_bad_packs(rng):
    a, b, y = rand(rng, (1, M, K)), rand(rng, (1, K, N)), poisoned((1, M, N))
    frozen = y.copy()
    frozen.flags.writeable = False
    return [
        ("dtype", (a.astype(np.float16), b, y), r"tensor 'A' \(uid \d+\) is FLOAT but the array is float16"),
        ("int16 dtype", (a.astype(np.int16), b, y), r"is FLOAT but the array is DLPack dtype \(code 0, 16 bits\)"),
        ("bool dtype", (a > 0, b, y), r"is FLOAT but the array is bool"),
        ("extent", (a, b, y[:, : M // 2]), r"tensor 'mm::C' \(uid \d+\) spans 256 bytes but the array holds only 128"),
        ("read-only output", (a, b, frozen), r"'mm::C' \(uid \d+\) is an output but the array is read-only"),
        ("Fortran order", (np.asfortranarray(a), b, y),
         r"tensor 'A' \(uid \d+\) has strides \[128,8,1\] but the array has strides \[1,1,16\] \(in elements\)"),
        ("a transposed view", (rand(rng, (1, K, M)).transpose(0, 2, 1), b, y),
         r"has strides \[128,8,1\] but the array has strides \[128,1,16\]"),
        ("dims", (rand(rng, (1, K, 2 * M))[:, :, ::2], b, y),
         r"tensor 'A' \(uid \d+\) has dims \[1,16,8\] but the array has dims \[1,8,16\]"),
        ("negative strides", (a[:, ::-1], b, y), r"tensor 'A' \(uid \d+\): the array has negative strides"),
    ]


def test_numpy_fast_path_refuses_what_dlpack_refuses_with_the_same_message(cpu, rng):
    g, A, B, Y = matmul_graph(cpu)
    for ka, kb, ky in keyings(g, A, B, Y):
        for what, (a, b, y), pattern in numpy_bad_packs(rng):
            fast = error(g, {ka: a, kb: b, ky: y}, workspace(g))
            slow = error(g, {ka: a.view(Sub), kb: b.view(Sub), ky: y.view(Sub)}, workspace(g).view(Sub))
            assert same(fast, slow), what
            assert re.search(pattern, fast), (what, fast)


def test_numpy_arrays_the_fast_path_leaves_to_dlpack(cpu, rng):
    g, A, B, Y = matmul_graph(cpu)
    a, b, y = rand(rng, (1, M, K)), rand(rng, (1, K, N)), poisoned((1, M, N))
    big_endian = a.astype(">f4")
    odd_strides = np.lib.stride_tricks.as_strided(np.zeros(M * K * 2, np.float32), shape=(1, M, K),
                                                  strides=(M * K * 6, K * 6, 6))  # not a multiple of 4 bytes
    for other in (big_endian, odd_strides, a.astype(np.complex64), a.astype(np.longdouble)):
        fast = error(g, {A: other, B: b, Y: y}, workspace(g))
        slow = error(g, {A: other.view(Sub), B: b, Y: y}, workspace(g))
        assert same(fast, slow)
    # A read-only workspace is refused through the fast path as before.
    frozen = workspace(g)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="workspace: the array is read-only"):
        g.execute({A: a, B: b, Y: y}, frozen)
    g.execute({A: a, B: b, Y: y}, workspace(g))
    assert_close(y, a.astype(np.float64) @ b, scale=10)


def test_arrays_of_more_dims_than_a_tensor_can_have(cpu, rng):
    g, A, B, Y = matmul_graph(cpu)
    deep = rand(rng, (1, M, K)).reshape((1,) * 15 + (1, M, K))
    with pytest.raises(ValueError, match=r"tensor 'A' \(uid \d+\): the array has 18 dims; tensors have at most 16"):
        g.execute({A: deep, B: rand(rng, (1, K, N)), Y: poisoned((1, M, N))}, workspace(g))


# ---- PyTorch


def _torch():
    return pytest.importorskip("torch")


def torch_sub(torch):
    class TorchSub(torch.Tensor):
        """A tensor subclass: the probe leaves it to DLPack."""
    return TorchSub


def test_torch_fast_path_refuses_what_dlpack_refuses_with_the_same_message(cpu, rng):
    torch = _torch()
    Slow = torch_sub(torch)
    g, A, B, Y = matmul_graph(cpu)
    for ka, kb, ky in keyings(g, A, B, Y):
        for what, arrays, pattern in numpy_bad_packs(rng):
            if what in ("read-only output", "negative strides"):
                continue  # torch has neither
            ts = [torch.from_numpy(x) for x in arrays]  # the same dims and strides
            fast = error(g, {ka: ts[0], kb: ts[1], ky: ts[2]}, torch.from_numpy(workspace(g)))
            slow = error(g, {ka: ts[0].as_subclass(Slow), kb: ts[1], ky: ts[2]}, torch.from_numpy(workspace(g)))
            assert same(fast, slow), what
            assert re.search(pattern, fast), (what, fast)


def test_torch_dtypes_read_as_dlpack_names_them(cpu, rng):
    torch = _torch()
    Slow = torch_sub(torch)
    g, A, B, Y = matmul_graph(cpu)
    b, y = torch.from_numpy(rand(rng, (1, K, N))), torch.from_numpy(poisoned((1, M, N)))
    names = ["float16", "bfloat16", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
             "uint64", "bool"]
    for name in names:
        a = torch.zeros(1, M, K, dtype=getattr(torch, name))
        fast = error(g, {A: a, B: b, Y: y}, workspace(g))
        assert same(fast, error(g, {A: a.as_subclass(Slow), B: b, Y: y}, workspace(g))), name
        assert "tensor 'A'" in fast and "is FLOAT but the array is" in fast
    # DLPack refuses fp8 tensors; read through their attributes they are named.
    for name, shown in (("float8_e4m3fn", "float8_e4m3fn"), ("float8_e5m2", "float8_e5m2")):
        a = torch.zeros(1, M, K, dtype=getattr(torch, name))
        assert f"is FLOAT but the array is {shown}" in error(g, {A: a, B: b, Y: y}, workspace(g))


def test_torch_tensors_the_fast_path_leaves_to_dlpack(cpu, rng):
    torch = _torch()
    Slow = torch_sub(torch)
    g, A, B, Y = matmul_graph(cpu)
    b, y = torch.from_numpy(rand(rng, (1, K, N))), torch.from_numpy(poisoned((1, M, N)))
    a = torch.from_numpy(rand(rng, (1, M, K)))
    others = {
        "meta": torch.empty(1, M, K, device="meta"),
        "complex": a.to(torch.complex64),
        "nested": torch.nested.nested_tensor([torch.zeros(M, K), torch.zeros(M, K)]),
    }
    for what, other in others.items():
        fast = error(g, {A: other, B: b, Y: y}, workspace(g))
        slow = error(g, {A: other.as_subclass(Slow), B: b, Y: y}, workspace(g))
        assert same(fast, slow), what
        assert "tensor 'A'" in fast, what
    # Sparse tensors have no subclass form; they have no data_ptr() either, and DLPack refuses them.
    for other in (a.to_sparse(), a[0].to_sparse_csr()):
        assert "tensor 'A' (uid 0): expected an array" in error(g, {A: other, B: b, Y: y}, workspace(g))


def test_torch_tensors_that_require_grad_are_taken_as_before(cpu, rng):
    # __dlpack__ refuses them, but nanobind's import then calls torch.utils.dlpack.to_dlpack,
    # which takes them: the fast path takes them too.
    torch = _torch()
    g, A, B, Y = matmul_graph(cpu)
    a = torch.from_numpy(rand(rng, (1, M, K))).requires_grad_()
    b, y = torch.from_numpy(rand(rng, (1, K, N))), torch.from_numpy(poisoned((1, M, N)))
    g.execute({A: a, B: b, Y: y}, workspace(g))
    assert_close(y.numpy(), a.detach().double().numpy() @ b.numpy(), scale=10)


def test_torch_negative_bit_is_refused(cpu, rng):
    torch = _torch()
    Slow = torch_sub(torch)
    g, A, B, Y = matmul_graph(cpu)
    a = torch.from_numpy(rand(rng, (1, M, K)))
    b, y = torch.from_numpy(rand(rng, (1, K, N))), torch.from_numpy(poisoned((1, M, N)))
    negated = torch._neg_view(a)  # what conj().imag of a complex tensor gives
    assert negated.is_neg()
    for value in (negated, negated.as_subclass(Slow)):
        msg = error(g, {A: value, B: b, Y: y}, workspace(g))
        assert "tensor 'A'" in msg and "negative bit set" in msg and "resolve_neg()" in msg
    g.execute({A: negated.resolve_neg(), B: b, Y: y}, workspace(g))
    assert_close(y.numpy(), -a.double().numpy() @ b.numpy(), scale=10)


def test_torch_views_and_offsets_run_right(cpu, rng):
    torch = _torch()
    g, A, B, Y = matmul_graph(cpu)
    big = torch.from_numpy(rand(rng, (3, M, K)))
    a = big[1:2]  # a storage offset: data_ptr() includes it
    b = torch.from_numpy(rand(rng, (1, K, N)))
    out = torch.full((2, M, N), float("nan"))
    for pack in ({A: a, B: b, Y: out[1:]}, {A.get_uid(): a, B.get_uid(): b, Y.get_uid(): out[1:]}):
        out.fill_(float("nan"))
        g.execute(pack, torch.from_numpy(workspace(g)))
        assert_close(out[1:].numpy(), a.double().numpy() @ b.numpy(), scale=10)
        assert torch.isnan(out[0]).all()


def test_a_tensor_changed_in_place_between_executes_is_judged_as_it_is_now(cpu, rng):
    torch = _torch()
    g, A, B, Y = matmul_graph(cpu)
    a = torch.from_numpy(rand(rng, (1, M, K)))
    b, y = torch.from_numpy(rand(rng, (1, K, N))), torch.full((1, M, N), float("nan"))
    pack = {A: a, B: b, Y: y}
    g.execute(pack, workspace(g))
    y.resize_(1, M // 2, N)  # same object, same data pointer, fewer elements
    assert "tensor 'mm::C'" in error(g, pack, workspace(g))
    y.resize_(1, M, N)
    a.as_strided_((1, M, K), (M * K, 1, M))  # same object: a transposed layout
    assert "has strides [128,8,1] but the array has strides [128,1,16]" in error(g, pack, workspace(g))
    a.as_strided_((1, M, K), (M * K, K, 1))
    a.data = torch.zeros(1, M, K, dtype=torch.float64)  # same object: another dtype and storage
    assert "tensor 'A'" in error(g, pack, workspace(g)) and "is FLOAT but the array is float64" in error(g, pack, workspace(g))
    a.data = torch.from_numpy(rand(rng, (1, M, K)))
    g.execute(pack, workspace(g))
    assert_close(y.numpy(), a.double().numpy() @ b.numpy(), scale=10)


def test_torch_cuda_tensor_on_a_cpu_handle(cpu, rng):
    torch = _torch()
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device for torch")
    Slow = torch_sub(torch)
    g, A, B, Y = matmul_graph(cpu)
    a = torch.from_numpy(rand(rng, (1, M, K))).cuda()
    b, y = torch.from_numpy(rand(rng, (1, K, N))), torch.from_numpy(poisoned((1, M, N)))
    fast = error(g, {A: a, B: b, Y: y}, workspace(g))
    assert same(fast, error(g, {A: a.as_subclass(Slow), B: b, Y: y}, workspace(g)))
    assert "tensor 'A'" in fast and "is a cuda:0 array but the handle is cpu" in fast
