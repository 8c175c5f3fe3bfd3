"""The cuDNN frontend's plan filters and graph key on pygraph: deselect/select_behavior_notes,
deselect_workspace_greater_than and key(), with the frontend's argument names; and a graph with a
partition no selected engine runs, whose plan-0 queries raise instead of reading out of bounds."""
import numpy as np
import pytest

import dnngraph as dg


def conv_graph(c=16):
    g = dg.pygraph(io_data_type=dg.data_type.FLOAT, intermediate_data_type=dg.data_type.FLOAT,
                   compute_data_type=dg.data_type.FLOAT, handle=dg.create_handle("cpu"))
    x = g.tensor(name="X", dim=[1, c, 12, 12], stride=[12 * 12 * c, 1, 12 * c, c])
    w = g.tensor(name="W", dim=[16, c, 3, 3], stride=[9 * c, 1, 3 * c, c])
    y = g.relu(g.conv_fprop(image=x, weight=w, padding=[1, 1], stride=[1, 1], dilation=[1, 1]))
    y.set_output(True)
    g.validate()
    g.build_operation_graph()
    return g


def test_key_is_equal_for_equal_graphs():
    assert conv_graph().key() == conv_graph().key()
    assert conv_graph().key() != conv_graph(32).key()


def test_key_before_build_operation_graph_raises():
    g = dg.pygraph(handle=dg.create_handle("cpu"))
    with pytest.raises(RuntimeError, match="build_operation_graph"):
        g.key()


def test_behavior_note_filters():
    g = conv_graph()
    g.create_execution_plans([dg.heur_mode.A, dg.heur_mode.FALLBACK])
    n = g.get_execution_plan_count()
    g.deselect_behavior_notes(notes=[dg.behavior_note.RUNTIME_COMPILATION])  # no CPU plan compiles
    assert g.get_execution_plan_count() == n
    g.select_behavior_notes([dg.behavior_note.RUNTIME_COMPILATION])
    assert g.get_execution_plan_count() == 0
    with pytest.raises(dg.GraphNotSupportedError, match="dropped by select_behavior_notes"):
        g.check_support()


def test_workspace_limit():
    g = conv_graph(64)
    g.create_execution_plans([dg.heur_mode.A, dg.heur_mode.FALLBACK])
    g.deselect_workspace_greater_than(workspace=0)
    g.check_support()
    g.build_plans()
    assert g.get_workspace_size() == 0
    with pytest.raises(ValueError, match="negative"):
        g.deselect_workspace_greater_than(-1)


def test_partition_without_candidates_has_no_plan_index():
    g = dg.pygraph(io_data_type=dg.data_type.FLOAT, intermediate_data_type=dg.data_type.FLOAT,
                   compute_data_type=dg.data_type.FLOAT, handle=dg.create_handle("cpu"))
    x = g.tensor_like(np.zeros((4, 8), np.float32))
    g.relu(g.transpose(x, [1, 0])).set_output(True)
    g.select_engines(["cpu_pointwise_fused"])
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([dg.heur_mode.A])
    assert g.get_execution_plan_count() == 0
    with pytest.raises(ValueError):
        g.get_plan_name_at_index(0)
