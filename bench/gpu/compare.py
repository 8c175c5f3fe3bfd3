#!/usr/bin/env python3
"""dnngraph's GPU benchmarks and PyTorch eager on the same cases, on the same machine, in one run.

Runs the dnngraph benchmark program (JSON lines on stdout), times the PyTorch equivalents with CUDA
events (three warm-ups, then the median of timed runs), writes every figure to --out (JSON) and
prints a short table last.

usage: compare.py --bench PATH/dnngraph_gpu_bench --out results.json [--repeats 20]
"""
import argparse
import json
import subprocess
import sys
import time

from torch_timing import median_ms


def torch_cases(torch, repeats):
    F = torch.nn.functional
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(0)

    def rand(shape, dtype):
        return (torch.rand(shape, generator=g, device=dev, dtype=torch.float32) * 4 - 2).to(dtype)

    def timed(fn):
        return median_ms(torch, fn, repeats)

    out = {}
    # copy_1g: 1 GiB copied, bytes read + written.
    a = rand((1 << 28,), torch.float32)
    b = torch.empty_like(a)
    out["copy_1g"] = (timed(lambda: b.copy_(a)), 2.0 * (1 << 30), "x.copy_(y)")
    del a, b
    x = rand((1 << 28,), torch.bfloat16)
    out["scale_bf16"] = (timed(lambda: x * 2), 2.0 * x.numel() * 2, "x * 2")
    del x
    a, b = rand((1 << 26,), torch.float32), rand((1 << 26,), torch.float32)
    out["add_fp32"] = (timed(lambda: a + b), 3.0 * a.numel() * 4, "a + b")
    del a, b
    x, bias = rand((32768, 8192), torch.bfloat16), rand((1, 8192), torch.bfloat16)
    out["bias_gelu_bf16"] = (timed(lambda: F.gelu(x + bias)), 2.0 * x.numel() * 2, "gelu(x + b), 2 kernels")
    del x, bias
    x, b = rand((16384, 8192), torch.bfloat16), rand((1, 8192), torch.bfloat16)
    s1, s2 = rand((1, 1), torch.float32), rand((1, 1), torch.float32)

    def chain():  # eager, op by op: fp32 intermediates (x * s1 promotes), as dnngraph's graph declares
        t = x * s1
        t = t + b
        t = F.gelu(t)
        t = t * s2
        amax = t.abs().amax()
        return t.to(torch.float8_e4m3fn), amax

    out["chain5_amax_fp8"] = (timed(chain), x.numel() * 3.0 + 8, "eager: mul, add, gelu, mul, abs, amax, cast")
    del x, b
    x = rand((16384, 8192), torch.float32)
    out["rowsum_fp32"] = (timed(lambda: x.sum(dim=1, keepdim=True)), x.numel() * 4.0 + 16384 * 4, "x.sum(1)")
    del x
    x = rand((1 << 26,), torch.float32)
    out["amax_fp32"] = (timed(lambda: torch.linalg.vector_norm(x, float("inf"))), x.numel() * 4.0 + 4,
                        "vector_norm(x, inf): one kernel")
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bench", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--repeats", type=int, default=20)
    args = p.parse_args()

    t0 = time.time()
    proc = subprocess.run([args.bench, "--repeats", str(args.repeats)], capture_output=True, text=True)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        print(f"dnngraph benchmark failed (exit {proc.returncode})", file=sys.stderr)
    ours = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            ours[r["case"]] = r
    t1 = time.time()

    import torch
    info = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda}
    theirs = torch_cases(torch, args.repeats)
    t2 = time.time()

    copy_gbps = max(ours.get("copy_1g", {}).get("gbps", 0.0), theirs["copy_1g"][1] / (theirs["copy_1g"][0] * 1e-3) / 1e9)
    rows = []
    for name, (tms, tbytes, tnote) in theirs.items():
        r = ours.get(name)
        row = {"case": name, "torch_ms": tms, "torch_gbps": tbytes / (tms * 1e-3) / 1e9, "torch_note": tnote}
        if r:
            row.update({"dnngraph_ms": r["ms"], "bytes": r["bytes"], "dnngraph_gbps": r["gbps"],
                        "pct_of_copy": 100.0 * r["gbps"] / copy_gbps, "speedup_vs_torch": tms / r["ms"],
                        "note": r["note"], "dnngraph_plans": r.get("plans", "")})
        rows.append(row)
    result = {"info": info, "copy_ceiling_gbps": copy_gbps, "rows": rows,
              "seconds": {"dnngraph": t1 - t0, "torch": t2 - t1}, "bench_exit": proc.returncode}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)

    for row in rows:
        if row.get("dnngraph_plans"):
            print(f"{row['case']}: every built plan: {row['dnngraph_plans']}")
    print(f"\n{info['gpu']}, torch {info['torch']} (CUDA {info['cuda']}); copy ceiling {copy_gbps:.0f} GB/s "
          f"(best of cuMemcpyDtoD and torch copy_, bytes read + written)")
    print(f"{'case':<18}{'dnngraph ms':>12}{'GB/s':>8}{'% copy':>8}{'torch ms':>10}{'GB/s':>8}{'torch/dg':>10}")
    for row in rows:
        if "dnngraph_ms" in row:
            print(f"{row['case']:<18}{row['dnngraph_ms']:>12.3f}{row['dnngraph_gbps']:>8.0f}{row['pct_of_copy']:>7.0f}%"
                  f"{row['torch_ms']:>10.3f}{row['torch_gbps']:>8.0f}{row['speedup_vs_torch']:>9.2f}x")
        else:
            print(f"{row['case']:<18}{'-':>12}{'':>8}{'':>8}{row['torch_ms']:>10.3f}{row['torch_gbps']:>8.0f}")
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
