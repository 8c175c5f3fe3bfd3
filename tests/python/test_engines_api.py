"""The frontend's engine and version API: engines by id and their knobs, plans from (engine, knobs),
behaviour notes, backend_version, the enums and aliases it names, tensor_like of ml_dtypes arrays."""
import re

import numpy as np
import pytest

import dnngraph
from conftest import assert_close, graph, rand

REF = "ref (reference, not for speed)"  # the reference engine's plan name


def conv_relu(cpu, rng):
    g = graph(cpu)
    x, w = rand(rng, (2, 8, 10, 10)), rand(rng, (8, 8, 3, 3))
    X, W = g.tensor_like(x), g.tensor_like(w)
    Y = g.relu(g.conv_fprop(image=X, weight=W, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv"),
               name="relu")
    Y.set_output(True)
    g.validate()
    g.build_operation_graph()
    return g, (X, x), (W, w), Y


def test_every_kernel_cfg_of_every_engine_as_the_frontend_loops(cpu, rng):
    g, (X, x), (W, w), Y = conv_relu(cpu, rng)
    made = 0
    for engine in range(g.get_engine_count()):
        try:
            knobs = g.get_knobs_for_engine(engine)
        except RuntimeError:  # GraphNotSupportedError: this engine cannot run the graph here
            continue
        for knob in knobs:
            if knob.type == dnngraph.knob_type.KERNEL_CFG:
                for cfg in range(knob.min_value, knob.max_value + 1, knob.stride):
                    g.create_execution_plan(engine, {dnngraph.knob_type.KERNEL_CFG: cfg})
                    made += 1
    assert made >= 2 and g.get_execution_plan_count() == made  # ref and at least one CPU conv engine
    g.check_support()
    g.build_plans(dnngraph.build_plan_policy.ALL)
    names = [g.get_plan_name_at_index(i) for i in range(made)]
    assert REF in names and any(n.startswith("cpu_conv") for n in names), names
    results = []
    for i in range(made):
        y = np.full(Y.get_dim(), np.nan, np.float32)
        ws = np.empty(g.get_workspace_size_plan_at_index(i), np.uint8)
        g.execute_plan_at_index({X: x, W: w, Y: y}, ws, i)
        results.append(y)
    for name, y in zip(names, results):
        assert_close(y, results[names.index(REF)], scale=20)


def test_knobs_by_name_and_their_errors(cpu, rng):
    g, *_ = conv_relu(cpu, rng)
    ref = 0
    knobs = g.get_knobs_for_engine(ref)
    assert [(k.name, k.type, k.min_value, k.max_value, k.stride) for k in knobs] == \
        [("kernel_cfg", dnngraph.knob_type.KERNEL_CFG, 0, 0, 1)]
    assert re.match(r'\{"knob_type": "KERNEL_CFG", "name": "kernel_cfg", "max_value": 0', repr(knobs[0]))
    g.create_execution_plan(ref, {"kernel_cfg": 0})
    g.create_execution_plan(ref)  # the same plan: not added twice
    assert g.get_execution_plan_count() == 1
    with pytest.raises(ValueError, match=r"engine 0 \(ref\): knob kernel_cfg=3 is not in 0..0") as e:
        g.create_execution_plan(ref, {dnngraph.knob_type.KERNEL_CFG: 3})
    assert e.value.code == dnngraph.error_code.INVALID_VALUE
    with pytest.raises(ValueError, match=r"ref takes no knobs, got tile_m=64"):
        g.create_execution_plan(ref, {dnngraph.knob_type.TILE_M: 64})
    with pytest.raises(ValueError, match="knob_type.NOT_SET names no knob"):
        g.create_execution_plan(ref, {dnngraph.knob_type.NOT_SET: 1})
    with pytest.raises(ValueError, match="a knob key must be a dnngraph.knob_type or a knob name; got float"):
        g.create_execution_plan(ref, {1.5: 1})
    with pytest.raises(ValueError, match=r"engine id 99 is not an engine's \(ids run 0..\d+\)"):
        g.get_knobs_for_engine(99)
    sdpa = 8
    with pytest.raises(dnngraph.cudnnGraphNotSupportedError,
                       match=r"engine 8 \(cpu_sdpa_flash\) does not support the partition of nodes 'conv', 'relu'"):
        g.create_execution_plan(sdpa, {})


def test_engine_queries_need_the_operation_graph(cpu):
    g = graph(cpu)
    g.relu(g.tensor(dim=[2, 2], data_type=dnngraph.data_type.FLOAT)).set_output(True)
    with pytest.raises(RuntimeError, match=r"get_engine_count: call build_operation_graph\(handle\) first"):
        g.get_engine_count()
    g.validate()
    with pytest.raises(RuntimeError, match=r"get_behavior_notes_for_plan_at_index: call create_execution_plans"):
        g.get_behavior_notes_for_plan_at_index(0)


def test_behaviour_notes_on_the_cpu(cpu, rng):
    g, *_ = conv_relu(cpu, rng)
    g.create_execution_plans([dnngraph.heur_mode.A])
    assert g.get_behavior_notes_for_plan_at_index(0) == []
    with pytest.raises(RuntimeError, match="get_behavior_notes: no plan is chosen yet"):
        g.get_behavior_notes()
    g.check_support()
    g.build_plans()
    assert g.get_behavior_notes() == []  # no runtime compilation, CUDA graphs or cuBLASLt on the CPU
    assert {n.name for n in dnngraph.behavior_note} >= {"RUNTIME_COMPILATION", "SUPPORTS_CUDA_GRAPH_NATIVE_API",
                                                        "CUBLASLT_DEPENDENCY"}


def test_backend_version_is_cudnns_when_loaded_else_dnngraphs():
    v, s = dnngraph.backend_version(), dnngraph.backend_version_string()
    assert isinstance(v, int) and re.fullmatch(r"\d+\.\d+\.\d+", s)
    major, minor, patch = map(int, s.split("."))
    assert v == major * 10000 + minor * 100 + patch
    if major == 0:  # no cuDNN: dnngraph's own version
        assert s == dnngraph.__version__


def test_frontend_names():
    assert dnngraph.cudnnGraphNotSupportedError is dnngraph.GraphNotSupportedError
    assert dnngraph.numerical_note.TENSOR_CORE.name == "TENSOR_CORE"
    assert dnngraph.destroy_handle(dnngraph.create_handle("cpu")) is None
    with pytest.raises(TypeError):
        dnngraph.destroy_handle(5)


def test_sdpa_implementation_keyword(cpu, rng):
    g = graph(cpu)
    q = g.tensor_like(rand(rng, (1, 2, 8, 16)))
    o, _ = g.sdpa(q, q, q, attn_scale=0.25, implementation=dnngraph.attention_implementation.AUTO, name="att")
    assert o.get_name() == "att::O"
    with pytest.raises(ValueError, match=r"sdpa 'att2': implementation attention_implementation.UNIFIED names a "
                                         r"cuDNN kernel family; dnngraph takes AUTO"):
        g.sdpa(q, q, q, implementation=dnngraph.attention_implementation.UNIFIED, name="att2")


@pytest.mark.parametrize("name,dtype", [("bfloat16", dnngraph.data_type.BFLOAT16),
                                        ("float8_e4m3fn", dnngraph.data_type.FP8_E4M3),
                                        ("float8_e5m2", dnngraph.data_type.FP8_E5M2)])
def test_tensor_like_and_packs_take_ml_dtypes_arrays(cpu, rng, name, dtype):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = rand(rng, (4, 6)).astype(getattr(ml_dtypes, name))[:, ::2]  # a strided view too
    g = graph(cpu, io=dtype)
    X = g.tensor_like(x)
    assert X.get_data_type() == dtype and X.get_dim() == [4, 3] and X.get_stride() == [6, 2]
    Y = g.identity(X)
    Y.set_output(True).set_data_type(dnngraph.data_type.FLOAT).set_stride([3, 1])  # else X's [6, 2]
    g.build()
    y = np.full((4, 3), np.nan, np.float32)
    g.execute({X: x, Y: y}, None)
    np.testing.assert_array_equal(y, x.astype(np.float32))
    with pytest.raises(ValueError, match=f"tensor '{X.get_name()}' .* is {dtype.name} but the array is float32"):
        g.execute({X: x.astype(np.float32), Y: y}, None)


def test_an_array_of_an_ml_dtypes_type_without_a_numpy_view_comes_in_through_dlpack(cpu, rng):
    # ml_dtypes arrays are recognised by their dtype's type before DLPack is tried (NumPy's refuse
    # it); another array of those types (JAX's) with no NumPy-style view still takes DLPack.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = rand(rng, (4, 6)).astype(ml_dtypes.bfloat16)

    class Foreign:  # a bf16 dtype, DLPack by a same-width integer array, no view()
        dtype = x.dtype

        def __dlpack__(self, **kwargs):
            return x.view(np.uint16).__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return x.view(np.uint16).__dlpack_device__()

    g = graph(cpu, io=dnngraph.data_type.BFLOAT16)
    X = g.tensor_like(x)
    Y = g.identity(X)
    Y.set_output(True).set_data_type(dnngraph.data_type.FLOAT)
    g.build()
    y = np.full((4, 6), np.nan, np.float32)
    g.execute({X: Foreign(), Y: y}, None)
    np.testing.assert_array_equal(y, x.astype(np.float32))


def test_query_tensor_attributes_of_uid_returns_the_graphs_tensor(cpu):
    # As the frontend's tensor query test (test/cpp/tensor.cpp): a uid set by the user finds the
    # tensor by name; uids validate assigns find theirs; the object itself comes back, so it keys packs.
    g = dnngraph.pygraph(handle=cpu, io_data_type=dnngraph.data_type.HALF,
                         intermediate_data_type=dnngraph.data_type.FLOAT,
                         compute_data_type=dnngraph.data_type.FLOAT)
    x = g.tensor(name="image", dim=[8, 32, 16, 16], stride=[32 * 16 * 16, 1, 32 * 16, 32], uid=1)
    y = g.relu(x)
    y.set_output(True)
    assert g.query_tensor_attributes_of_uid(1) is x and g.query_tensor_attributes_of_uid(1).get_name() == "image"
    with pytest.raises(ValueError, match="no tensor of this graph has uid 7"):
        g.query_tensor_attributes_of_uid(7)
    g.validate()
    assert g.query_tensor_attributes_of_uid(y.get_uid()) is y


def test_numeric_note_filters_on_the_cpu(cpu, rng):
    # cpu_conv_winograd_f4x3 carries WINOGRAD (and WINOGRAD_TILE_6x6); no CPU plan uses tensor cores.
    g, *_ = conv_relu(cpu, rng)
    g.create_execution_plans([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
    names = [g.get_plan_name_at_index(i) for i in range(g.get_execution_plan_count())]
    assert any("cpu_conv_winograd_f4x3" in n for n in names), names
    g.deselect_numeric_notes([dnngraph.numerical_note.WINOGRAD])
    kept = [g.get_plan_name_at_index(i) for i in range(g.get_execution_plan_count())]
    assert kept and not any("winograd" in n for n in kept), kept
    assert "dropped by deselect_numeric_notes(WINOGRAD)" in g.explain()
    g.check_support()

    g, *_ = conv_relu(cpu, rng)
    g.create_execution_plans([dnngraph.heur_mode.A])
    g.select_numeric_notes([dnngraph.numerical_note.TENSOR_CORE])
    assert g.get_execution_plan_count() == 0
    with pytest.raises(dnngraph.cudnnGraphNotSupportedError, match=r"select_numeric_notes\(TENSOR_CORE\)"):
        g.check_support()
