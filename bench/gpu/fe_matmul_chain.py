"""NVIDIA's cudnn frontend on the matmul workloads of bench/default_plan.cpp (issue #24's peer):
(batch x m x k) x (batch x k x n) bf16, x 0.125 + bias, GELU, AMAX, fp32 accumulation. Every plan
the frontend offers (heuristics A then FALLBACK, build policy ALL) is timed with CUDA events, and
PyTorch's eager chain beside it, in the same process:

    python3 bench/gpu/fe_matmul_chain.py [--only SUBSTRING]   # needs cudnn (nvidia-cudnn-frontend), torch

Prints per workload `FE <name> build_plans(ALL) <s>` (issue #16's build time; the first workload's
is the process's first), `FE <name> plans <n> first <ms> best <ms> (index <i>)` and `TORCH <name> <ms>`,
each the median of 7 repeats of ~20 ms; the outputs of the frontend's first plan are checked
against PyTorch's (bf16 tolerance).
"""
import argparse
import time

import cudnn
import torch
from torch_timing import repeated_ms

WORKLOADS = [  # name, batch, m, n, k (default_plan.cpp's matmul rows with the "chain" epilogue)
    ("matmul_8x2048_chain", 8, 2048, 2048, 2048),
    ("matmul_16x512x1024x512_chain", 16, 512, 512, 1024),
    ("matmul_16x1024x4096x1024_chain", 16, 1024, 4096, 1024),
]


def median_ms(fn):
    """Median milliseconds of one call (torch_timing.repeated_ms: repeats of ~20 ms)."""
    return repeated_ms(torch, fn)


def run(handle, name, batch, m, n, k):
    torch.manual_seed(0)
    a = torch.randn(batch, m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(batch, k, n, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(1, 1, n, device="cuda", dtype=torch.bfloat16)
    alpha = torch.full((1, 1, 1), 0.125, dtype=torch.float32)
    graph = cudnn.pygraph(handle=handle, io_data_type=cudnn.data_type.BFLOAT16,
                          intermediate_data_type=cudnn.data_type.FLOAT, compute_data_type=cudnn.data_type.FLOAT)
    A, B, BIAS = graph.tensor_like(a), graph.tensor_like(b), graph.tensor_like(bias)
    ALPHA = graph.tensor(name="alpha_value", dim=alpha.size(), stride=alpha.stride(), is_pass_by_value=True,
                         data_type=alpha.dtype)
    c = graph.matmul(name="matmul", A=A, B=B)
    c = graph.mul(name="alpha", a=c, b=ALPHA)
    c = graph.bias(name="bias", input=c, bias=BIAS)
    c = graph.gelu(name="gelu", input=c)
    c.set_output(True).set_data_type(cudnn.data_type.BFLOAT16)
    amax = graph.reduction(name="amax", input=c, mode=cudnn.reduction_mode.AMAX)
    amax.set_output(True).set_data_type(cudnn.data_type.FLOAT).set_dim([1, 1, 1]).set_stride([1, 1, 1])
    graph.validate()
    graph.build_operation_graph()
    graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    graph.check_support()
    t0 = time.perf_counter()
    graph.build_plans(cudnn.build_plan_policy.ALL)
    print(f"FE {name} build_plans(ALL) {time.perf_counter() - t0:.2f} s", flush=True)
    y = torch.empty(batch, m, n, device="cuda", dtype=torch.bfloat16)
    amax_out = torch.empty(1, 1, 1, device="cuda", dtype=torch.float32)
    pack = {A: a, B: b, BIAS: bias, ALPHA: alpha, c: y, amax: amax_out}
    count = graph.get_execution_plan_count()
    times = []
    for i in range(count):
        try:
            ws = torch.empty(max(1, graph.get_workspace_size_plan_at_index(i)), device="cuda", dtype=torch.uint8)
            times.append((median_ms(lambda: graph.execute_plan_at_index(pack, ws, i, handle=handle)), i))
        except Exception as e:  # a plan that did not build
            print(f"FE {name} plan {i} failed: {e}", flush=True)
        if i == 0:
            want = torch.nn.functional.gelu(torch.baddbmm(bias.float(), a.float(), b.float(), alpha=0.125))
            err = ((y.float() - want).abs() / (want.abs() + 1)).max().item()
            print(f"FE {name} plan 0 max rel err {err:.2e} amax {amax_out.item():.4f} vs {want.abs().max().item():.4f}")
    best = min(times)
    first = next(t for t, i in times if i == 0) if times and times[0][1] == 0 else float("nan")
    print(f"FE {name} plans {count} first {first:.4f} best {best[0]:.4f} (index {best[1]})", flush=True)

    def torch_chain():
        out = torch.nn.functional.gelu(torch.baddbmm(bias, a, b, alpha=0.125))
        return out, out.abs().amax()

    print(f"TORCH {name} {median_ms(torch_chain):.4f}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--only", default="")
    args = p.parse_args()
    print(f"GPU {torch.cuda.get_device_name()} cudnn frontend {cudnn.__version__} backend {cudnn.backend_version()}")
    handle = cudnn.create_handle()
    for w in WORKLOADS:
        if args.only in w[0]:
            run(handle, *w)


if __name__ == "__main__":
    main()
