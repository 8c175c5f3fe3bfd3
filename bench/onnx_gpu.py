"""ResNet-50 through dnngraph.onnx on the GPU (issue #20): a dnngraph session with and without the
whole forward pass captured in one CUDA graph, bf16 and fp32, checked against onnxruntime's CPU
provider on the same input.

    PYTHONPATH=build/python python3 bench/onnx_gpu.py [--model resnet50|encoder] [--batch 32] [--iters 20]
                                  [--precisions bfloat16,float32] [--no-ref-variant] [--out FILE.json]

The model is tests/python/onnx_models.resnet50 (onnx.helper, random He-scaled weights, no
download), N x 3 x 224 x 224, BatchNormalization folded, channels-last; `--model encoder` is
onnx_models.transformer_encoder instead (6 layers of BERT-base width, N x 128 x 768, attention
fused to sdpa, the heads' reshapes and transposes as torch copies between graphs). Sessions use
fallback="torch" for what dnngraph has no CUDA engine for (none of ResNet-50's ops since
cuda_pool_direct: its MaxPool runs on dnngraph too); the "ref" variant (bf16 only, without the
fallback) is the same session without that option. Latency: the median of --iters
runs, each timed by CUDA events around session.run with the input already on the device and the
output left there (output_device="cuda"), after 3 warm-ups. Kernels per forward: CUDA kernels
that torch.profiler (CUPTI) saw in one run. Engine shares: each graph's explain(), the chosen
plan's estimate per partition summed by engine (an estimate, not a measurement); the measured
top kernels by GPU time come from the profiler. Prints the machine, one block per variant, and a
summary table; --out writes the figures as JSON."""
import argparse
import json
import os
import platform
import re
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import dnngraph  # noqa: E402
import dnngraph.onnx as dgx  # noqa: E402
import onnx_models  # noqa: E402

# "  plan 0: cuda_gemm_mma_sync[tile_n=128,...]  estimate 0.012 ms  (chosen)"; ref's is "ref (reference, ...)".
_PLAN = re.compile(r"^\s+plan \d+: ([A-Za-z0-9_]+)(?:\[[^\]]*\])?(?: \([^)]*\))?\s+estimate ([0-9.eE+-]+) ms\s+\(chosen\)")


def machine(torch):
    """The GPU, driver-visible name, CPU and library versions, as one line."""
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device"
    return (f"{gpu}; torch {torch.__version__}; dnngraph {dnngraph.__version__}; python {platform.python_version()};"
            f" {os.cpu_count()} CPU cores")


def engine_shares(session):
    """{engine: estimated ms} over every graph's chosen plans (from explain())."""
    shares = {}
    for g in session.graphs:
        for line in g.explain().splitlines():
            m = _PLAN.match(line)
            if m:
                shares[m.group(1)] = shares.get(m.group(1), 0.0) + float(m.group(2))
    return shares


def partitions(session):
    return sum(g.explain().count("(chosen)") for g in session.graphs)


def latency_ms(torch, fn, iters):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times)


def kernels_per_forward(torch, fn):
    """(kernels, memcpys/memsets, top kernels by GPU time) that CUPTI saw in one call of fn."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    kernels, copies, by_name = 0, 0, {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        if e.name.startswith(("Memcpy", "Memset")):
            copies += 1
            continue
        kernels += 1
        by_name[e.name] = by_name.get(e.name, 0.0) + e.device_time_total / 1e3
    top = sorted(by_name.items(), key=lambda kv: -kv[1])[:8]
    return kernels, copies, top


def error(ours, ref):
    ref64 = ref.astype(np.float64)
    return float(np.abs(ours.astype(np.float64) - ref64).max() / max(1.0, np.abs(ref64).max()))


MODEL_NAME = ["ResNet-50"]
KERNELS = dnngraph.create_kernel_cache()  # the variants share compiled kernels (load time is printed)


def run_variant(torch, m, x, ref, precision, fallback, capture, iters):
    t = time.perf_counter()
    s = dgx.load(m, device="cuda", compute_precision=None if precision in ("float32", "tf32") else precision,
                 fallback=fallback, output_device="cuda", kernel_cache=KERNELS, allow_tf32=precision == "tf32")
    load_s = time.perf_counter() - t
    shares = engine_shares(s)
    if "ref" in shares:  # staged through the host: seconds per run at N32, so few runs
        iters = min(iters, 3)
        print(f"  note: {precision} fallback={fallback}: partitions on ref ({shares['ref']:.1f} ms estimated); "
              f"{iters} timed runs")
    if capture:
        s.capture_cuda_graph()
    xd = torch.from_numpy(x).cuda()
    out = s.run(None, {"x": xd})[0]
    err = error(out.float().cpu().numpy(), ref)

    def forward():
        s.run(None, {"x": xd})
    median, least = latency_ms(torch, forward, iters)
    kernels, copies, top = kernels_per_forward(torch, forward)
    return {"precision": precision, "fallback": fallback, "cuda_graph": capture, "load_s": load_s,
            "median_ms": median, "min_ms": least, "max_err_over_peak": err, "kernels": kernels, "copies": copies,
            "graphs": len(s.graphs), "partitions": partitions(s), "steps": [k for k, _ in s.steps],
            "engine_estimate_ms": shares, "top_kernels_ms": top}


def show(r, batch):
    label = (f"{r['precision']} {'captured' if r['cuda_graph'] else 'eager'} "
             f"{'fallback=torch' if r['fallback'] == 'torch' else 'dnngraph only'}")
    print(f"\n== {MODEL_NAME[0]} N{batch} {label}")
    print(f"  latency median {r['median_ms']:.3f} ms (min {r['min_ms']:.3f}); {batch / r['median_ms'] * 1e3:.0f} img/s;"
          f" load {r['load_s']:.1f} s")
    print(f"  max error / peak vs onnxruntime CPU: {r['max_err_over_peak']:.2e}")
    print(f"  per forward: {r['kernels']} CUDA kernels, {r['copies']} memcpy/memset; {r['graphs']} pygraphs, "
          f"{r['partitions']} partitions; steps {' '.join(r['steps'])}")
    total = sum(r["engine_estimate_ms"].values()) or 1.0
    print("  engines (share of the plans' estimates): " + ", ".join(
        f"{k} {v / total:.0%}" for k, v in sorted(r["engine_estimate_ms"].items(), key=lambda kv: -kv[1])))
    print("  top kernels by GPU time (ms): " + "; ".join(f"{n[:60]} {t:.3f}" for n, t in r["top_kernels_ms"]))


def main():
    """Runs the variants and prints them (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=["resnet50", "encoder"], default="resnet50")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--precisions", default="bfloat16,float32",
                    help="comma-separated: bfloat16, float16, float32 (strict fp32), tf32 (fp32 tensors, TF32 allowed)")
    ap.add_argument("--no-ref-variant", action="store_true", help="skip the bf16 session without fallback='torch'")
    ap.add_argument("--out", help="write the figures as JSON here")
    a = ap.parse_args()
    import onnxruntime as ort
    import torch
    print(machine(torch))
    rng = np.random.default_rng(0)
    if a.model == "resnet50":
        m, shape = onnx_models.resnet50(rng, n=a.batch), (a.batch, 3, 224, 224)
    else:
        MODEL_NAME[0] = "encoder 6x768"
        m, shape = onnx_models.transformer_encoder(rng, layers=6, b=a.batch, s=128, e=768, heads=12), (a.batch, 128, 768)
        a.no_ref_variant = True  # no pooling: fallback='torch' changes nothing
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    t = time.perf_counter()
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    print(f"onnxruntime {ort.__version__} CPU reference: {time.perf_counter() - t:.1f} s (one run, with its load)")
    variants = [(p, "torch", c, a.iters) for p in a.precisions.split(",") for c in (False, True)]
    if not a.no_ref_variant:
        variants.append(("bfloat16", "error", False, max(3, a.iters // 5)))
    results = []
    for precision, fallback, capture, iters in variants:
        try:
            results.append(run_variant(torch, m, x, ref, precision, fallback, capture, iters))
        except Exception as e:  # noqa: BLE001 - one variant failing (a ref partition refusing capture) is a row
            print(f"\n== {MODEL_NAME[0]} N{a.batch} {precision} cuda_graph={capture} fallback={fallback}: "
                  f"FAILED: {type(e).__name__}: {e}")
            continue
        show(results[-1], a.batch)
    print("\nprecision  cuda_graph  fallback  median_ms  img/s  kernels  err/peak")
    for r in results:
        print(f"{r['precision']:<10} {str(r['cuda_graph']):<11} {r['fallback']:<9} {r['median_ms']:9.3f} "
              f"{a.batch / r['median_ms'] * 1e3:6.0f} {r['kernels']:8d}  {r['max_err_over_peak']:.1e}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"machine": machine(torch), "model": a.model, "batch": a.batch, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
