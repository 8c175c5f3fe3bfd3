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

from torch_timing import median_ms


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


def torch_check(bench):
    """Runs `bench --dump` and compares every plan's output with PyTorch's flash and cuDNN backends
    on the same inputs, each against a float64 reference (PyTorch's math backend on upcast inputs).
    A plan passes when its error is within twice the larger of the two backends' own errors."""
    import tempfile

    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    rows, passed = [], True
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([bench, "--dump", tmp], capture_output=True, text=True)
        sys.stderr.write(proc.stderr)
        if proc.returncode:
            return rows, False
        for line in proc.stdout.splitlines():
            c = json.loads(line)
            dt = torch.bfloat16 if c["type"] == "bf16" else torch.float16

            def load(ext, heads, s):
                t = torch.from_numpy(np.fromfile(c["dump"] + ext, dtype=np.int16)).cuda().view(dt)
                if c["bshd"]:
                    return t.view(c["b"], s, heads, c["d"]).transpose(1, 2)
                return t.view(c["b"], heads, s, c["d"])

            q, k, v = load(".q", c["h"], c["sq"]), load(".k", c["hk"], c["skv"]), load(".v", c["hk"], c["skv"])
            group = c["h"] // c["hk"]
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
            with sdpa_kernel(SDPBackend.MATH):
                ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=c["causal"])

            def rel(x, y):
                return ((x.double() - y.double()).norm() / y.double().norm()).item()

            theirs = {}
            for name, backend in (("torch_flash", SDPBackend.FLASH_ATTENTION), ("torch_cudnn", SDPBackend.CUDNN_ATTENTION)):
                try:
                    with sdpa_kernel(backend):
                        theirs[name] = F.scaled_dot_product_attention(q, k, v, is_causal=c["causal"])
                except RuntimeError:
                    pass
            bound = 2 * max([rel(t, ref) for t in theirs.values()] + [1e-4])
            case = c["dump"].rsplit("/", 1)[-1]
            for name, t in theirs.items():
                rows.append({"case": case, "plan": name, "err_vs_fp64": rel(t, ref)})
            for i, plan in enumerate(c["plans"]):
                o = load(".o%d" % i, c["h"], c["sq"])
                err = rel(o, ref) if not torch.isnan(o).any() else float("inf")
                row = {"case": case, "plan": plan, "err_vs_fp64": err, "pass": err <= bound}
                if "torch_flash" in theirs:
                    row["diff_vs_torch_flash"] = rel(o, theirs["torch_flash"])
                rows.append(row)
                passed = passed and row["pass"]
    return rows, passed


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
    checks, passed = torch_check(args.bench)
    json.dump({"info": info, "matmul_ceiling_tflops": ceiling, "rows": ours + theirs, "torch_check": checks},
              open(args.out, "w"), indent=1)
    print(f"\nOutputs on the same inputs against float64 ({'all plans pass' if passed else 'FAILED'}: within 2x "
          "of PyTorch's own error)")
    print(f"{'case':<18}{'plan':<38}{'err vs fp64':>12}{'vs flash':>10}")
    for r in checks:
        flag = "" if r.get("pass", True) else "  FAIL"
        diff = f"{r['diff_vs_torch_flash']:.1e}" if "diff_vs_torch_flash" in r else ""
        print(f"{r['case']:<18}{r['plan']:<38}{r['err_vs_fp64']:>12.2e}{diff:>10}{flag}")
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
    return proc.returncode or (0 if passed else 1)


if __name__ == "__main__":
    sys.exit(main())
