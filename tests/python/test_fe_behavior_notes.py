"""Behaviour notes say what a plan is, engine by engine (the frontend's test_matmul_bias_relu asserts
that plan 0 of a bf16/fp16 matmul + bias carries RUNTIME_COMPILATION, which holds for cuDNN's
runtime-fusion plan 0 and for no cuBLASLt plan).

RUNTIME_COMPILATION: a plan of dnngraph's own CUDA engines (kernels generated per graph and
compiled by NVRTC; a kernel cache or the library's ahead-of-time kernels may serve the binary, as
cuDNN's kernel cache serves its runtime-compiled engines), or a cuDNN plan whose engine cuDNN's
heuristics report as runtime-compiled. Never a cuBLASLt plan (CUBLASLT_DEPENDENCY) or a CPU plan.
The GPU test skips without a CUDA device.
"""
import pytest

import dnngraph

note = dnngraph.behavior_note


def matmul_bias_graph(handle):
    g = dnngraph.pygraph(intermediate_data_type=dnngraph.data_type.FLOAT, compute_data_type=dnngraph.data_type.FLOAT,
                         handle=handle)
    X = g.tensor(name="X", dim=[1, 128, 768], stride=[128 * 768, 768, 1], data_type=dnngraph.data_type.BFLOAT16)
    W = g.tensor(name="W", dim=[1, 768, 3072], stride=[768 * 3072, 3072, 1], data_type=dnngraph.data_type.BFLOAT16)
    B = g.tensor(name="B", dim=[1, 1, 3072], stride=[3072, 3072, 1], data_type=dnngraph.data_type.BFLOAT16)
    Y = g.bias(name="bias", input=g.matmul(name="matmul", A=X, B=W), bias=B)
    Y.set_output(True).set_data_type(dnngraph.data_type.BFLOAT16)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
    return g


def test_cpu_plans_carry_no_runtime_compilation(cpu):
    g = matmul_bias_graph(cpu)
    for i in range(g.get_execution_plan_count()):
        assert note.RUNTIME_COMPILATION not in g.get_behavior_notes_for_plan_at_index(i), g.get_plan_name_at_index(i)


def test_cuda_plans_say_whether_they_compile_at_run_time():
    try:
        handle = dnngraph.create_handle("cuda")
    except RuntimeError:
        pytest.skip("no CUDA device")
    g = matmul_bias_graph(handle)
    seen = []
    for i in range(g.get_execution_plan_count()):
        name, notes = g.get_plan_name_at_index(i), g.get_behavior_notes_for_plan_at_index(i)
        seen.append((name, note.RUNTIME_COMPILATION in notes))
        if name.startswith("cublaslt"):
            assert note.RUNTIME_COMPILATION not in notes and note.CUBLASLT_DEPENDENCY in notes, name
        elif name.startswith("cuda_"):
            assert note.RUNTIME_COMPILATION in notes, name
        elif name.startswith("ref"):
            assert note.RUNTIME_COMPILATION not in notes, name
    # What the frontend's test asserts of plan 0 holds here exactly when plan 0 compiles at run time.
    print("plans (engine, RUNTIME_COMPILATION):", seen)
