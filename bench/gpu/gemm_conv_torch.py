"""Side by side, same run: dnngraph's GEMM / implicit-GEMM conv engines (the C++ program
bench/gpu/gemm_conv.cpp) and PyTorch eager (cuDNN / cuBLAS underneath, cudnn.benchmark on).

    python3 bench/gpu/gemm_conv_torch.py --bench path/to/dnngraph_gemm_conv_bench [--out results.json]

PyTorch runs the unfused chains an eager user writes: conv, then + bias, then ReLU; matmul, then
* alpha, + bias, GELU, and amax. Prints a table last; every figure also goes to --out.
"""
import argparse
import json
import subprocess
import sys

import torch
import torch.nn.functional as F
from torch_timing import repeated_ms


def timed(fn, reps=7):
    """Median milliseconds of one call (torch_timing.repeated_ms)."""
    return repeated_ms(torch, fn, reps)


def torch_conv(n, c, hw, k, r, fused, groups=1, dt=torch.bfloat16, stride=1, tf32=None):
    dev = "cuda"
    # The tf32_ workloads: TF32 on both sides (tf32=False: exact fp32, the fp32_ workloads).
    torch.backends.cudnn.allow_tf32 = dt == torch.float32 if tf32 is None else tf32
    x = (torch.rand(n, c, hw, hw, device=dev) * 2 - 1).to(dt).to(memory_format=torch.channels_last)
    w = (torch.rand(k, c // groups, r, r, device=dev) * 2 - 1).to(dt).to(memory_format=torch.channels_last)
    b = (torch.rand(1, k, 1, 1, device=dev) * 2 - 1).to(dt)
    pad = r // 2
    conv = lambda: F.conv2d(x, w, stride=stride, padding=pad, groups=groups)
    if fused:
        return timed(lambda: torch.relu(conv() + b)), timed(conv)
    return timed(conv), None


def torch_matmul(batch, m, n, k, chain, dt=torch.bfloat16, b_k_major=False):
    dev = "cuda"
    torch.backends.cuda.matmul.allow_tf32 = dt == torch.float32
    a = (torch.rand(batch, m, k, device=dev) * 2 - 1).to(dt)
    if b_k_major:  # stored [n, k]
        b = (torch.rand(batch, n, k, device=dev) * 2 - 1).to(dt).transpose(-1, -2)
    else:
        b = (torch.rand(batch, k, n, device=dev) * 2 - 1).to(dt)
    bias = (torch.rand(1, 1, n, device=dev) * 2 - 1).to(dt)
    if batch == 1:
        a, b = a[0], b[0]
    if chain:
        def run():
            y = F.gelu(torch.matmul(a, b) * 0.125 + bias)
            return y, y.abs().amax()
        return timed(run), timed(lambda: torch.matmul(a, b))
    return timed(lambda: torch.matmul(a, b)), None


WORKLOADS = [
    # name, kind, args, flops
    ("gemm_8192_plain", "mm", (1, 8192, 8192, 8192, False)),
    ("gemm_8x2048_chain", "mm", (8, 2048, 2048, 2048, True)),
    ("gemm_16x1024x4096x1024_chain", "mm", (16, 1024, 4096, 1024, True)),
    ("conv_tutorial_n32c128_56_k256", "conv", (32, 128, 56, 256, 3, True)),
    ("conv_tutorial_alone", "conv", (32, 128, 56, 256, 3, False)),
    ("rn50_3x3_c64_56_k64", "conv", (32, 64, 56, 64, 3, True)),
    ("rn50_3x3_c256_14_k256", "conv", (32, 256, 14, 256, 3, True)),
    ("rn50_3x3_n8_c64_32_k64", "conv", (8, 64, 32, 64, 3, True)),
    ("rn50_1x1_c256_56_k64", "conv", (32, 256, 56, 64, 1, True)),
    ("rn50_3x3_c128_28_k128", "conv", (32, 128, 28, 128, 3, True)),
    ("rn50_3x3_c512_7_k512", "conv", (32, 512, 7, 512, 3, True)),
    ("rn50_3x3_n1_c64_32_k64", "conv", (1, 64, 32, 64, 3, True)),
    ("depthwise_3x3_c256_28", "conv", (32, 256, 28, 256, 3, True, 256)),
    # FLOAT in and out, TF32 tensor cores (Graph::set_allow_tf32; torch's allow_tf32 flags)
    ("tf32_gemm_8192_plain", "mm", (1, 8192, 8192, 8192, False, torch.float32)),
    ("tf32_gemm_8192_bt", "mm", (1, 8192, 8192, 8192, False, torch.float32, True)),
    ("tf32_conv_tutorial_n32c128_56_k256", "conv", (32, 128, 56, 256, 3, True, 1, torch.float32)),
    # skinny-deep bf16 (split-K)
    ("gemm_splitk_1024x1024x16384_plain", "mm", (1, 1024, 1024, 16384, False)),
    ("gemm_splitk_2048x1024x8192_chain", "mm", (1, 2048, 1024, 8192, True)),
]


def flops(kind, args):
    if kind == "mm":
        b, m, n, k = args[:4]
        return 2.0 * b * m * n * k
    n, c, hw, k, r, _ = args[:6]
    groups = args[6] if len(args) > 6 else 1
    return 2.0 * n * k * hw * hw * (c // groups) * r * r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--out", default="")
    ap.add_argument("--plans", default="2")
    ap.add_argument("--only", default="", help="comma-separated workload name substrings (default: all)")
    args = ap.parse_args()
    only = [w for w in args.only.split(",") if w]
    workloads = [w for w in WORKLOADS if not only or any(o in w[0] for o in only)]
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    info = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cudnn": torch.backends.cudnn.version()}
    print(info, flush=True)

    cmd = [args.bench, "--plans", args.plans] + (["--only", args.only] if only else [])
    proc = subprocess.run(cmd, capture_output=True, text=True)
    print(proc.stdout, proc.stderr[-3000:], flush=True)
    ours = {}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            parts = line.split(maxsplit=4)
            ours[parts[1]] = {"ms": float(parts[2]), "tflops": float(parts[3]), "plan": parts[4] if len(parts) > 4 else ""}

    rows = []
    for name, kind, wargs in workloads:
        try:
            t, alone = torch_matmul(*wargs) if kind == "mm" else torch_conv(*wargs)
        except Exception as e:  # keep going: report what ran
            print(f"torch {name}: {e}", file=sys.stderr)
            continue
        row = {"case": name, "torch_ms": t, "torch_anchor_alone_ms": alone, "flops": flops(kind, wargs)}
        if name in ours:
            row.update({"dnngraph_ms": ours[name]["ms"], "plan": ours[name]["plan"]})
            row["speedup_vs_torch"] = t / ours[name]["ms"]
        rows.append(row)
        torch.cuda.empty_cache()

    result = {"info": info, "rows": rows, "bench_rc": proc.returncode}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    print(f"\n{info['gpu']}  torch {info['torch']}  cudnn {info['cudnn']}")
    print(f"{'case':<31}{'dnngraph ms':>12}{'TFLOP/s':>9}{'torch ms':>10}{'TFLOP/s':>9}{'anchor ms':>10}{'torch/dg':>9}")
    for r in rows:
        dg_ms = r.get("dnngraph_ms")
        alone = r["torch_anchor_alone_ms"]
        dg_s = f"{dg_ms:.4f}" if dg_ms else "-"
        dg_tf = f"{r['flops'] / dg_ms * 1e-9:.0f}" if dg_ms else "-"
        alone_s = f"{alone:.4f}" if alone else "-"
        ratio = f"{r['speedup_vs_torch']:.2f}x" if dg_ms else "-"
        print(f"{r['case']:<31}{dg_s:>12}{dg_tf:>9}{r['torch_ms']:>10.4f}"
              f"{r['flops'] / r['torch_ms'] * 1e-9:>9.0f}{alone_s:>10}{ratio:>9}")
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
