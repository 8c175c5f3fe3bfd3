"""PyTorch beside bench/default_plan.cpp's rows, same machine and run: mode A's plan, the best
plan of dnngraph's list, the best own and cuDNN plans, and PyTorch eager (cudnn.benchmark on) for
the same workload.

    python3 bench/gpu/default_plan_torch.py DEFAULT_PLAN_OUTPUT [--out results.json]
"""
import argparse
import json
import os
import re
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_conv_torch import timed, torch_conv, torch_matmul  # noqa: E402


def conv(n, c, hw, k, r, groups=1, dt=torch.bfloat16, stride=1):
    # tf32 rows: PyTorch's default for fp32 convolutions, cudnn.allow_tf32 on.
    return lambda: torch_conv(n, c, hw, k, r, True, groups, dt, stride)[0]


def conv_exact(n, c, hw, k, r, groups=1):
    # fp32 rows: the graph does not allow TF32, so neither does PyTorch (cudnn.allow_tf32 off).
    return lambda: torch_conv(n, c, hw, k, r, True, groups, torch.float32, 1, tf32=False)[0]


def matmul(batch, m, n, k, epilogue, dt=torch.bfloat16):
    if epilogue != "bias_relu":
        return lambda: torch_matmul(batch, m, n, k, epilogue == "chain")[0]

    def run():
        torch.backends.cuda.matmul.allow_tf32 = False  # PyTorch's default: fp32 matmuls in fp32
        a = torch.rand(m, k, device="cuda").to(dt)
        b = torch.rand(k, n, device="cuda").to(dt)
        bias = torch.rand(n, device="cuda").to(dt)
        return timed(lambda: torch.relu(torch.matmul(a, b) + bias))
    return run


def conv_transposed(n, k, hw, c, r):
    def run():
        dy = (torch.rand(n, k, hw, hw, device="cuda") * 2 - 1).to(torch.bfloat16).to(memory_format=torch.channels_last)
        w = (torch.rand(k, c, r, r, device="cuda") * 2 - 1).to(torch.bfloat16).to(memory_format=torch.channels_last)
        return timed(lambda: F.conv_transpose2d(dy, w, stride=2, padding=(r - 2) // 2))
    return run


def conv3d(n, c, depth, hw, k):
    def run():
        x = (torch.rand(n, c, depth, hw, hw, device="cuda") * 2 - 1).to(torch.bfloat16)
        x = x.to(memory_format=torch.channels_last_3d)
        w = (torch.rand(k, c, 3, 3, 3, device="cuda") * 2 - 1).to(torch.bfloat16).to(memory_format=torch.channels_last_3d)
        b = (torch.rand(1, k, 1, 1, 1, device="cuda") * 2 - 1).to(torch.bfloat16)
        return timed(lambda: torch.relu(F.conv3d(x, w, padding=1) + b))
    return run


def sdpa(b, h, s, d):
    def run():
        q, k, v = (torch.rand(b, h, s, d, device="cuda").to(torch.bfloat16) for _ in range(3))
        return timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
    return run


def pointwise(n, c, hw):
    def run():
        x = torch.rand(n, c, hw, hw, device="cuda").to(torch.bfloat16).to(memory_format=torch.channels_last)
        b = torch.rand(1, c, 1, 1, device="cuda").to(torch.bfloat16)
        return timed(lambda: torch.relu((x + b) * 0.5))
    return run


# The workloads of bench/default_plan.cpp's gpu_workloads(), by name.
TORCH = {
    "conv_tutorial_n32c128_56_k256": conv(32, 128, 56, 256, 3),
    "rn50_3x3_c64_56_k64": conv(32, 64, 56, 64, 3),
    "rn50_3x3_c256_14_k256": conv(32, 256, 14, 256, 3),
    "rn50_1x1_c256_56_k64": conv(32, 256, 56, 64, 1),
    "rn50_3x3_c128_28_k128": conv(32, 128, 28, 128, 3),
    "rn50_3x3_c512_7_k512": conv(32, 512, 7, 512, 3),
    "rn50_3x3_n8_c64_32_k64": conv(8, 64, 32, 64, 3),
    "rn50_3x3_n1_c64_32_k64": conv(1, 64, 32, 64, 3),
    "mbv2_depthwise_3x3_c144_56": conv(32, 144, 56, 144, 3, 144),
    "rn50_stem_7x7s2_c3_224_k64": conv(32, 3, 224, 64, 7, stride=2),
    "convT_4x4s2_c128to64_64_n8": conv_transposed(8, 128, 64, 64, 4),
    "conv3d_3x3x3_c64_16x56_k64_n4": conv3d(4, 64, 16, 56, 64),
    "gemm_8192": matmul(1, 8192, 8192, 8192, "none"),
    "gemm_4096_bias_relu": matmul(1, 4096, 4096, 4096, "bias_relu"),
    "matmul_8x2048_chain": matmul(8, 2048, 2048, 2048, "chain"),
    "matmul_16x512x1024x512_chain": matmul(16, 512, 512, 1024, "chain"),
    "matmul_16x1024x4096x1024_chain": matmul(16, 1024, 4096, 1024, "chain"),
    "sdpa_b4h16s1024d64_causal": sdpa(4, 16, 1024, 64),
    "sdpa_b4h16s4096d128_causal": sdpa(4, 16, 4096, 128),
    "pointwise_bias_scale_relu_n32c256_56": pointwise(32, 256, 56),
    "fp32_conv_tutorial_n32c128_56_k256": conv_exact(32, 128, 56, 256, 3),
    "fp32_rn50_3x3_c64_56_k64": conv_exact(32, 64, 56, 64, 3),
    "fp32_rn50_3x3_c256_14_k256": conv_exact(32, 256, 14, 256, 3),
    "fp32_rn50_1x1_c256_56_k64": conv_exact(32, 256, 56, 64, 1),
    "fp32_rn50_3x3_c512_7_k512": conv_exact(32, 512, 7, 512, 3),
    "fp32_rn50_3x3_n1_c64_32_k64": conv_exact(1, 64, 32, 64, 3),
    "fp32_mbv2_depthwise_3x3_c144_56": conv_exact(32, 144, 56, 144, 3, 144),
    "fp32_gemm_4096_bias_relu": matmul(1, 4096, 4096, 4096, "bias_relu", dt=torch.float32),
    "tf32_conv_tutorial_n32c128_56_k256": conv(32, 128, 56, 256, 3, dt=torch.float32),
    "tf32_rn50_3x3_c64_56_k64": conv(32, 64, 56, 64, 3, dt=torch.float32),
    "tf32_rn50_1x1_c256_56_k64": conv(32, 256, 56, 64, 1, dt=torch.float32),
    "tf32_rn50_3x3_c512_7_k512": conv(32, 512, 7, 512, 3, dt=torch.float32),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("output")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for line in open(args.output):
        if not line.startswith("ROW "):
            continue
        head, _, labels = line.rstrip("\n").partition(" | ")
        f = head.split()
        row = {"case": f[1], "mode_a_ms": float(f[3]), "mode_a_over_best": float(f[4]), "best_ms": float(f[6]),
               "own_ms": f[8], "cudnn_ms": f[10], "cublaslt_ms": f[12], "labels": labels}
        fn = TORCH.get(row["case"])
        row["torch_ms"] = fn() if fn else None
        rows.append(row)
        torch.cuda.empty_cache()
    print(f"\n{torch.cuda.get_device_name(0)}  torch {torch.__version__}  cudnn {torch.backends.cudnn.version()}")
    print("| workload | mode A ms | best in list ms | mode A / best | best own ms | own plans checked | best cuDNN ms | "
          "own speed / best vendor | best cuBLASLt ms | PyTorch ms | PyTorch / mode A |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    fmt = lambda v: "-" if v in ("-", None) else f"{float(v):.4f}"
    for r in rows:
        speed = f"{r['torch_ms'] / r['mode_a_ms']:.2f}" if r["torch_ms"] else "-"
        checked = re.search(r"own_checked=(\S+)", r["labels"])
        vendor = [float(v) for v in (r["cudnn_ms"], r["cublaslt_ms"]) if v != "-"]
        ours = f"{min(vendor) / float(r['own_ms']):.2f}" if vendor and r["own_ms"] != "-" else "-"
        print(f"| {r['case']} | {r['mode_a_ms']:.4f} | {r['best_ms']:.4f} | **{r['mode_a_over_best']:.2f}** | "
              f"{fmt(r['own_ms'])} | {checked.group(1) if checked else '-'} | {fmt(r['cudnn_ms'])} | {ours} | "
              f"{fmt(r['cublaslt_ms'])} | {fmt(r['torch_ms'])} | {speed} |")
    if args.out:
        json.dump(rows, open(args.out, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
