"""PyTorch's layer_norm / rms_norm forward and backward on bench/gpu/norm_bench.cpp's cases (bf16
X, weight and bias; rows of 8192 and a transformer's 4 x 512 x 4096), timed the same way: CUDA
events, three warm-ups, the median of timed calls. Bytes count each tensor read once and written
once, as norm_bench does (forward: X, weight, bias read, Y written; backward: dY, X, weight and the
fp32 statistics read, dX, dweight, dbias written), and a device copy of the same bytes is timed in
the same run. One JSON line per case.

usage: python3 bench/gpu/norm_torch.py [repeats]
"""
import json
import sys

import torch
import torch.nn.functional as F

from torch_timing import median_ms

SHAPES = [("8192x8192", (8192, 8192)), ("4x512x4096", (4, 512, 4096))]


def copy_gbps(nbytes: int, repeats: int) -> float:
    """GB/s of a device copy moving nbytes in all (half read, half written)."""
    src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda").fill_(1)
    dst = torch.empty_like(src)
    ms = median_ms(torch, lambda: dst.copy_(src), repeats)
    return 2 * src.numel() / (ms * 1e-3) / 1e9


def report(case: str, ms: float, nbytes: int, copy: float) -> None:
    gbps = nbytes / (ms * 1e-3) / 1e9
    print(json.dumps({"case": case, "plan": "torch", "ms": round(ms, 4), "bytes": nbytes, "gbps": round(gbps, 1),
                      "copy_gbps": round(copy, 1), "fraction_of_copy": round(gbps / copy, 3)}), flush=True)


def forward_case(name: str, shape, layernorm: bool, repeats: int) -> None:
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    n = shape[-1]
    w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        if layernorm:
            fn = lambda: F.layer_norm(x, (n,), w, b, 1e-5)  # noqa: E731
        else:
            fn = lambda: F.rms_norm(x, (n,), w, 1e-5)  # noqa: E731
        ms = median_ms(torch, fn, repeats)
    nbytes = 2 * x.numel() * 2 + n * 2 * (2 if layernorm else 1)
    report(("layernorm" if layernorm else "rmsnorm") + "_fwd_" + name, ms, nbytes, copy_gbps(nbytes, repeats))


def backward_case(name: str, shape, layernorm: bool, repeats: int) -> None:
    """The backward alone: one forward with autograd, then the gradients of (X, weight[, bias]) per call."""
    n = shape[-1]
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(n, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16, requires_grad=True) if layernorm else None
    y = F.layer_norm(x, (n,), w, b, 1e-5) if layernorm else F.rms_norm(x, (n,), w, 1e-5)
    dy = torch.randn_like(y)
    inputs = (x, w, b) if layernorm else (x, w)
    # autograd.grad returns the gradients: no accumulation into .grad (an extra kernel) is timed.
    ms = median_ms(torch, lambda: torch.autograd.grad(y, inputs, dy, retain_graph=True), repeats)
    rows = x.numel() // n
    stats = (2 if layernorm else 1) * rows * 4
    nbytes = 3 * x.numel() * 2 + n * 2 * (3 if layernorm else 2) + stats
    report(("layernorm" if layernorm else "rmsnorm") + "_bwd_" + name, ms, nbytes, copy_gbps(nbytes, repeats))


def main(repeats: int = 20) -> None:
    print(json.dumps({"torch": torch.__version__, "gpu": torch.cuda.get_device_name()}), flush=True)
    for name, shape in SHAPES:
        for layernorm in (True, False):
            forward_case(name, shape, layernorm, repeats)
            backward_case(name, shape, layernorm, repeats)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
