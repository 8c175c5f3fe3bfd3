"""NVIDIA's cudnn frontend building every plan of the tutorial's conv and SDPA graphs
(examples/graphs/tutorial_conv_bias_relu*.json, tutorial_sdpa_causal*.json), issue #16's peer for
`build_plans(ALL)`; dnngraph's side is `dnngraph_bench_plan_build_time --gpu --all` on the same files.

    python3 bench/gpu/fe_build_all.py [--each] [--only NAME,...]   # needs cudnn (nvidia-cudnn-frontend) and torch

Per workload: `FE <name> first-heuristic-build <ms> (plan 0 of <n>)` in a fresh graph (heuristics A,
build_plans(HEURISTICS_CHOICE)), then `FE <name> build_plans(ALL) <ms> (<n> plans)` in another fresh
graph (heuristics A + FALLBACK); with --each, instead of ALL, `FE-EACH <name> <i> <plan name> <ms>` for
build_plan_at_index of every plan one after another (the peer of plan_build_time's --each). The first workload's figures include the process's first use of
cuDNN. bf16 I/O, fp32 intermediates and compute, as the JSON files say.
"""
import argparse
import time

import cudnn
import torch

CONVS = [  # name, n, c, hw, k
    ("tutorial_conv_bias_relu", 32, 128, 56, 256),
    ("tutorial_conv_bias_relu_small", 2, 16, 8, 32),
]
SDPAS = [  # name, b, h, s, d
    ("tutorial_sdpa_causal", 4, 16, 1024, 64),
    ("tutorial_sdpa_causal_small", 1, 2, 32, 16),
]


def new_graph(handle):
    return cudnn.pygraph(handle=handle, io_data_type=cudnn.data_type.BFLOAT16,
                         intermediate_data_type=cudnn.data_type.FLOAT, compute_data_type=cudnn.data_type.FLOAT)


def conv_graph(handle, n, c, hw, k):  # 3x3, padding 1, + bias + ReLU
    g = new_graph(handle)
    x = g.tensor(name="X", dim=[n, c, hw, hw], stride=[c * hw * hw, 1, c * hw, c])
    w = g.tensor(name="W", dim=[k, c, 3, 3], stride=[c * 9, 1, c * 3, c])
    b = g.tensor(name="B", dim=[1, k, 1, 1], stride=[k, 1, k, k])
    y = g.conv_fprop(image=x, weight=w, padding=[1, 1], stride=[1, 1], dilation=[1, 1])
    y = g.relu(input=g.bias(input=y, bias=b))
    y.set_output(True)
    return g


def sdpa_graph(handle, b, h, s, d):
    g = new_graph(handle)
    dims, strides = [b, h, s, d], [h * s * d, d, h * d, 1]  # BSHD memory, as the JSON files
    q, k, v = (g.tensor(name=n, dim=dims, stride=strides) for n in "QKV")
    o, _ = g.sdpa(q=q, k=k, v=v, attn_scale=d ** -0.5, generate_stats=False, use_causal_mask=True)
    o.set_output(True).set_dim(dims).set_stride(strides)
    return g


def planned(make, handle, modes):
    """A fresh graph, validated, planned by `modes` and checked: ready for its builds."""
    g = make(handle)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans(modes)
    g.check_support()
    return g


def timed_build(make, handle, modes, policy):
    """A fresh graph planned by `modes`; seconds of build_plans(policy) and the plan count."""
    g = planned(make, handle, modes)
    t0 = time.perf_counter()
    g.build_plans(policy)
    return time.perf_counter() - t0, g.get_execution_plan_count()


def each_build(name, make, handle):
    """Every plan of a fresh A + FALLBACK graph built one after another, each timed."""
    g = planned(make, handle, [cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    total = 0.0
    for i in range(g.get_execution_plan_count()):
        t0 = time.perf_counter()
        try:
            g.build_plan_at_index(i)
            err = ""
        except Exception as e:  # a config cuDNN refuses at build: printed, the rest still timed
            err = f" error: {str(e)[:80]}"
        ms = (time.perf_counter() - t0) * 1e3
        total += ms
        print(f"  FE-EACH {name} {i} {g.get_plan_name_at_index(i)} {ms:.2f} ms{err}", flush=True)
    print(f"  FE-EACH {name} total {total:.1f} ms", flush=True)


def timed_builds(name, make, each):
    handle = cudnn.create_handle()
    first_s, count = timed_build(make, handle, [cudnn.heur_mode.A], cudnn.build_plan_policy.HEURISTICS_CHOICE)
    print(f"FE {name} first-heuristic-build {first_s * 1e3:.1f} ms (plan 0 of {count})", flush=True)
    if each:
        return each_build(name, make, handle)
    all_s, count = timed_build(make, handle, [cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK],
                               cudnn.build_plan_policy.ALL)
    print(f"FE {name} build_plans(ALL) {all_s * 1e3:.1f} ms ({count} plans)", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--each", action="store_true", help="time build_plan_at_index of each plan instead of ALL")
    ap.add_argument("--only", default="", help="comma-separated workload names (default: all four)")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    torch.cuda.init()
    print(f"cuDNN {cudnn.backend_version()}, frontend {cudnn.__version__}, {torch.cuda.get_device_name()}")
    for name, *shape in CONVS:
        if not only or name in only:
            timed_builds(name, lambda h, shape=shape: conv_graph(h, *shape), args.each)
    for name, *shape in SDPAS:
        if not only or name in only:
            timed_builds(name, lambda h, shape=shape: sdpa_graph(h, *shape), args.each)


if __name__ == "__main__":
    main()
