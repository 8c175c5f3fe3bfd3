"""Variant packs are checked against the tensors the plans were built for, however the graph was
made (builder, from_json, deserialize) and however the pack is keyed (tensor, uid): device, data
type, span, writability and layout. A wrong array is a ValueError naming the tensor and both
layouts, never a crash or a wrong result. Also: messages that are not UTF-8 and bad device names."""
import numpy as np
import pytest

import dnngraph
from conftest import assert_close, build, graph, poisoned, rand, workspace

code = dnngraph.error_code
M, K, N = 64, 32, 16


def matmul_graph(cpu):
    """Y[1, M, N] = A[1, M, K] @ B[1, K, N], every tensor row-major by tensor()'s default."""
    g = graph(cpu)
    A = g.tensor(dim=[1, M, K], name="A")
    B = g.tensor(dim=[1, K, N], name="B")
    Y = g.matmul(A, B, name="mm")
    Y.set_output(True)
    build(g)
    return g, A, B, Y


def sources(cpu):
    """(name, graph, key of A, key of B, key of Y) for each way a graph is made and a pack keyed."""
    g, A, B, Y = matmul_graph(cpu)
    uids = (A.get_uid(), B.get_uid(), Y.get_uid())
    from_json = dnngraph.pygraph.from_json(g.to_json(), handle=cpu)
    from_json.build()
    deserialized = dnngraph.pygraph(handle=cpu)
    deserialized.deserialize(cpu, g.serialize())
    return [("builder, by tensor", g, A, B, Y), ("builder, by uid", g, *uids),
            ("from_json, by uid", from_json, *uids), ("deserialize, by uid", deserialized, *uids)]


def bad_packs(rng):
    """(what, the pack's arrays for A, B, Y, the message it must raise)."""
    a, b, y = rand(rng, (1, M, K)), rand(rng, (1, K, N)), poisoned((1, M, N))
    frozen = y.copy()
    frozen.flags.writeable = False
    big = rand(rng, (1, M, 2 * K))
    return [
        ("dtype", (a.astype(np.float16), b, y), r"tensor 'A' \(uid \d+\) is FLOAT but the array is float16"),
        ("extent", (a, b, y[:, : M // 2]), r"tensor 'mm::C' \(uid \d+\) spans 4096 bytes but the array holds only 2048"),
        ("read-only output", (a, b, frozen), r"tensor 'mm::C' \(uid \d+\) is an output but the array is read-only"),
        ("Fortran order", (np.asfortranarray(a), b, y),
         r"tensor 'A' \(uid \d+\) has strides \[2048,32,1\] but the array has strides \[1,1,64\] \(in elements\)"),
        ("a slice", (big[:, :, :K], b, y),
         r"tensor 'A' \(uid \d+\) has strides \[2048,32,1\] but the array has strides \[4096,64,1\]"),
        ("a transposed view", (rand(rng, (1, K, M)).transpose(0, 2, 1), b, y),
         r"tensor 'A' \(uid \d+\) has strides \[2048,32,1\] but the array has strides \[2048,1,64\]"),
        ("a transposed output", (a, b, poisoned((1, N, M)).transpose(0, 2, 1)),
         r"tensor 'mm::C' \(uid \d+\) has strides \[1024,16,1\] but the array has strides \[1024,1,64\]"),
        ("a strided view of other dims", (rand(rng, (1, K, 2 * M))[:, :, ::2], b, y),
         r"tensor 'A' \(uid \d+\) has dims \[1,64,32\] but the array has dims \[1,32,64\] \(an array of other "
         r"dims is taken as the tensor's memory only when it is dense, without gaps\)"),
    ]


def test_every_source_and_key_kind_checks_type_span_writability_and_layout(cpu, rng):
    for source, g, ka, kb, ky in sources(cpu):
        for what, (a, b, y), pattern in bad_packs(rng):
            with pytest.raises(ValueError, match=pattern) as e:
                g.execute({ka: a, kb: b, ky: y}, workspace(g))
            assert e.value.code == code.INVALID_VARIANT_PACK, (source, what)
        # The same graph runs right on arrays of its layout.
        a, b, y = rand(rng, (1, M, K)), rand(rng, (1, K, N)), poisoned((1, M, N))
        g.execute({ka: a, kb: b, ky: y}, workspace(g))
        assert_close(y, a.astype(np.float64) @ b, scale=10)


def test_a_short_output_of_a_json_graph_is_refused_before_the_heap_is(cpu, rng):
    # Issue 17: a 4-element array for an [8, 64, 16] output of a from_json graph was accepted.
    g = graph(cpu)
    X = g.tensor(dim=[8, 64, 16], name="X")
    g.relu(X, name="r").set_output(True)
    g.validate()
    again = dnngraph.pygraph.from_json(g.to_json(), handle=cpu)
    again.build()
    with pytest.raises(ValueError, match=r"'r::OUT' \(uid 1\) spans 32768 bytes but the array holds only 16"):
        again.execute({0: rand(rng, (8, 64, 16)), 1: np.empty(4, np.float32)}, workspace(again))


def test_hints_say_how_to_get_the_arrays_own_layout(cpu, rng):
    fortran = np.asfortranarray(rand(rng, (M, K)))
    g = graph(cpu)
    A = g.tensor(dim=[M, K], name="A")                             # row-major by default
    L = g.tensor_like(rand(rng, (M, K)), name="L")                 # the strides of a C-order array
    G = g.tensor(dim=[M, K], stride=[K, 1], name="G")              # given
    Y = g.add(g.add(A, L), G, name="sum")                          # inferred by validate
    Y.set_output(True)
    build(g)
    ok = {A: rand(rng, (M, K)), L: rand(rng, (M, K)), G: rand(rng, (M, K)), Y: poisoned((M, K))}
    cases = [
        (A, fortran, r"tensor\(\) made its strides row-major: pass np.ascontiguousarray\(array\).*"
                     r"g.tensor_like\(array\), which keeps the array's strides"),
        (L, fortran, r"tensor_like\(\) took its strides from the array it was given"),
        (Y, np.asfortranarray(poisoned((M, K))), r"validate\(\) inferred the strides.*set_stride\(\)"),
    ]
    for tensor, array, hint in cases:
        with pytest.raises(ValueError, match=hint):
            g.execute({**ok, tensor: array}, workspace(g))
    with pytest.raises(ValueError, match=r"has strides \[32,1\] but the array has strides \[1,64\] \(in elements\)$"):
        g.execute({**ok, G: fortran}, workspace(g))
    # tensor_like of the Fortran array itself keeps its layout, and the output follows it.
    h = graph(cpu)
    F = h.tensor_like(fortran, name="F")
    R = h.relu(F)
    R.set_output(True)
    build(h)
    assert R.get_stride() == [1, M]
    with pytest.raises(ValueError, match=r"has strides \[1,64\] but the array has strides \[32,1\]"):
        h.execute({F: fortran, R: poisoned((M, K))}, workspace(h))  # would have been read transposed
    r = np.asfortranarray(poisoned((M, K)))
    h.execute({F: fortran, R: r}, workspace(h))
    assert_close(r, np.maximum(fortran, 0))


def test_size_one_dims_strides_do_not_matter(cpu, rng):
    g = graph(cpu)
    X = g.tensor(dim=[1, 8, 1, 4], name="X")
    Bias = g.tensor(dim=[1, 8, 1, 1], name="Bias")
    Y = g.bias(X, Bias)
    Y.set_output(True)
    build(g)
    x = rand(rng, (8, 4))[None, :, None, :]    # NumPy gives the new dims stride 0
    assert x.strides == (0, 16, 0, 4)
    bias = rand(rng, (8,))                     # the size-1 dims may be left out
    y = poisoned((1, 8, 1, 4))
    g.execute({X: x, Bias: bias, Y: y}, workspace(g))
    assert_close(y, x + bias.reshape(1, 8, 1, 1))


def test_strides_that_overflow_are_refused(cpu, rng):
    g, A, B, Y = matmul_graph(cpu)
    huge = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=(2, 2, 2), strides=(2**62, 2**62, 4))
    with pytest.raises(ValueError, match=r"the array's dims \[2,2,2\] and strides .* reach past 2\^63 bytes"):
        g.execute({A: huge, B: rand(rng, (1, K, N)), Y: poisoned((1, M, N))}, workspace(g))
    with pytest.raises(ValueError, match=r"dims \[1099511627776,1099511627776,1099511627776\] have no row-major"):
        graph(cpu).tensor(dim=[2**40, 2**40, 2**40])


def test_uids_beyond_int64_and_unknown_uids(cpu, rng):
    g, A, B, Y = matmul_graph(cpu)
    arrays = {A.get_uid(): rand(rng, (1, M, K)), B.get_uid(): rand(rng, (1, K, N)), Y.get_uid(): poisoned((1, M, N))}
    with pytest.raises(ValueError, match=r"uid 1180591620717411303424 is outside int64") as e:
        g.execute({**arrays, 2**70: poisoned((1, M, N))}, workspace(g))
    assert e.value.code == code.INVALID_VARIANT_PACK
    with pytest.raises(ValueError, match=r"uid 99, which no tensor of this graph has"):
        g.execute({**arrays, 99: poisoned((1, M, N))}, workspace(g))


def test_a_tensor_changed_after_build_plans_stops_execute(cpu, rng):
    g, A, B, Y = matmul_graph(cpu)
    A.set_dim([2, M, K]).set_stride([M * K, K, 1])
    with pytest.raises(RuntimeError, match="'A' was changed after the plans were built") as e:
        g.execute({A: rand(rng, (1, M, K)), B: rand(rng, (1, K, N)), Y: poisoned((1, M, N))}, workspace(g))
    assert e.value.code == code.INVALID_CALL_ORDER
    # An array of the new dims is checked against the dims the plans were built for.
    with pytest.raises(ValueError, match=r"tensor 'A' \(uid 0\) has dims \[1,64,32\] but the array has dims \[2,64,32\]"):
        g.execute({A: rand(rng, (2, M, 2 * K))[:, :, ::2], B: rand(rng, (1, K, N)), Y: poisoned((1, M, N))},
                  workspace(g))


def test_messages_that_are_not_utf8_keep_their_code(cpu):
    # The JSON reader quotes the byte it stopped at; the message reaches Python with it escaped.
    with pytest.raises(ValueError) as e:
        dnngraph.pygraph.from_json(b'{"format": "\xff\xfe"}', handle=cpu)
    assert e.value.code == code.INVALID_VALUE
    assert "ill-formed UTF-8" in str(e.value) and "\\xff" in str(e.value)
    with pytest.raises(ValueError, match="from_json: expected a str or bytes; got int"):
        dnngraph.pygraph.from_json(12)


def test_device_names_out_of_range_are_value_errors():
    for name in ("cuda:99999999999999999999", "gpu:3000000000"):
        with pytest.raises(ValueError, match=f"device '{name}': the index is beyond any device") as e:
            dnngraph.create_handle(name)
        assert e.value.code == code.INVALID_VALUE
    for name in ("cuda:-1", "cuda:+1", "cuda:1x", "cuda:"):
        with pytest.raises(ValueError, match="is not \"cpu\", \"cuda\" or \"cuda:N\""):
            dnngraph.create_handle(name)


@pytest.mark.parametrize("by_uid", [False, True])
def test_a_none_key_is_passed_over_as_in_the_frontend(cpu, rng, by_uid):
    # The frontend's rmsnorm test packs `bias: None-array` with bias None when it built no bias.
    g = graph(cpu)
    x = rand(rng, (3, 4))
    X = g.tensor_like(x)
    Y = g.relu(X).set_output(True)
    g.build([dnngraph.heur_mode.A])
    y = poisoned((3, 4))
    keys = (X.get_uid(), Y.get_uid()) if by_uid else (X, Y)
    g.execute({keys[0]: x, None: None, keys[1]: y}, None)
    np.testing.assert_array_equal(y, np.maximum(x, 0))
