#!/usr/bin/env python3
"""cuda_sdpa_flash beside PyTorch's SDPA backends, on the same cases, on the same machine, in one run.

Runs bench/gpu/sdpa_bench.cpp's program (JSON lines: one per case and plan), times
torch.nn.functional.scaled_dot_product_attention under sdpa_kernel(FLASH_ATTENTION),
sdpa_kernel(CUDNN_ATTENTION) and sdpa_kernel(EFFICIENT_ATTENTION) with CUDA events (three warm-ups,
then the median of timed runs), measures a bf16 matmul ceiling, writes everything to --out (JSON)
and prints a short table last. FLOPs: 4 b h s^2 d, halved for causal masks.

usage: sdpa_compare.py --bench PATH/dnngraph_sdpa_bench [--out results.json] [--repeats 20]
"""
import argparse
import json
import subprocess
import sys


def median_ms(torch, fn, repeats):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ms = []
    for _ in range(repeats):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        ms.append(start.elapsed_time(stop))
    ms.sort()
    return ms[len(ms) // 2]


def torch_rows(cases, repeats):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    rows = []
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn((8192, 8192), generator=g, device="cuda", dtype=torch.bfloat16)
    b = torch.randn((8192, 8192), generator=g, device="cuda", dtype=torch.bfloat16)
    mm = median_ms(torch, lambda: a @ b, repeats)
    ceiling = 2 * 8192**3 / (mm * 1e-3) / 1e12
    del a, b
    for c in cases:
        shape = (c["b"], c["h"], c["s"], c["d"])
        q, k, v = (torch.rand(shape, generator=g, device="cuda", dtype=torch.float32) * 3 - 1.5 for _ in range(3))
        q, k, v = q.bfloat16(), k.bfloat16(), v.bfloat16()
        for name, backend in (("torch_flash", SDPBackend.FLASH_ATTENTION), ("torch_cudnn", SDPBackend.CUDNN_ATTENTION),
                              ("torch_efficient", SDPBackend.EFFICIENT_ATTENTION)):
            try:
                with sdpa_kernel(backend):
                    fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=c["causal"])
                    ms = median_ms(torch, fn, repeats)
                rows.append({"case": c["case"], "plan": name, "ms": ms, "tflops": c["flops"] / (ms * 1e-3) / 1e12})
            except RuntimeError as e:  # a backend that does not take the case says why
                rows.append({"case": c["case"], "plan": name, "error": str(e).splitlines()[0][:120]})
        del q, k, v
    info = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cudnn": torch.backends.cudnn.version()}
    return rows, ceiling, info


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--out", default="sdpa-results.json")
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    proc = subprocess.run([args.bench, "--repeats", str(args.repeats)], capture_output=True, text=True)
    sys.stderr.write(proc.stderr)
    ours = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    cases, seen = [], set()
    for r in ours:
        if r["case"] not in seen:
            seen.add(r["case"])
            f = 4.0 * r["b"] * r["h"] * r["s"] * r["s"] * r["d"] / (2 if r["causal"] else 1)
            cases.append({**{k: r[k] for k in ("case", "b", "h", "s", "d", "causal")}, "flops": f})
    theirs, ceiling, info = torch_rows(cases, args.repeats)
    json.dump({"info": info, "matmul_ceiling_tflops": ceiling, "rows": ours + theirs}, open(args.out, "w"), indent=1)
    print(f"\n{info['gpu']}  torch {info['torch']}  cudnn {info['cudnn']}  bf16 matmul ceiling {ceiling:.0f} TFLOP/s")
    print(f"{'case':<26}{'plan':<38}{'ms':>9}{'TFLOP/s':>9}{'vs flash':>9}{'max_err':>9}")
    for c in cases:
        rows = [r for r in ours + theirs if r["case"] == c["case"]]
        flash = next((r["ms"] for r in rows if r["plan"] == "torch_flash" and "ms" in r), None)
        for r in rows:
            if "ms" not in r:
                print(f"{c['case']:<26}{r['plan']:<38}  {r['error']}")
                continue
            ratio = f"{flash / r['ms']:.2f}x" if flash else "-"
            err = f"{r['max_err']:.1e}" if "max_err" in r else ""
            print(f"{c['case']:<26}{r['plan']:<38}{r['ms']:>9.3f}{r['tflops']:>9.1f}{ratio:>9}{err:>9}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
