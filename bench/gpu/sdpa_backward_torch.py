"""PyTorch's attention backward on bench/gpu/sdpa_backward_bench.cpp's cases, timed the same way
(CUDA events, three warm-ups, the median of timed runs), one JSON line per (case, backend): the
flash backend (FlashAttention-2's kernels) and the cuDNN backend (cuDNN's fused attention through
the cuDNN frontend's C++ API), each where this PyTorch build has it."""
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

CASES = [("b4_h16_s4096_d128_causal", 4, 16, 4096, 128, True), ("b4_h16_s1024_d64_causal", 4, 16, 1024, 64, True),
         ("b4_h16_s4096_d128", 4, 16, 4096, 128, False)]
BACKENDS = [("torch_flash_backward", SDPBackend.FLASH_ATTENTION), ("torch_cudnn_backward", SDPBackend.CUDNN_ATTENTION)]


def time_backward(b: int, h: int, s: int, d: int, causal: bool, backend, repeats: int) -> float:
    """The backward alone: one forward, then torch.autograd.grad(dO) per run (no .grad accumulation)."""
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    d_o = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
    with sdpa_kernel(backend):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    times = []
    for i in range(3 + repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.autograd.grad(o, (q, k, v), d_o, retain_graph=True)
        stop.record()
        torch.cuda.synchronize()
        if i >= 3:
            times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def main(repeats: int = 10) -> None:
    for name, b, h, s, d, causal in CASES:
        for plan, backend in BACKENDS:
            try:
                ms = time_backward(b, h, s, d, causal, backend, repeats)
            except RuntimeError as e:  # a backend this build or GPU lacks
                print(json.dumps({"case": name, "plan": plan, "error": str(e).splitlines()[0]}), flush=True)
                continue
            flops = 10.0 * b * h * d * s * s / (2 if causal else 1)
            print(json.dumps({"case": name, "plan": plan, "ms": round(ms, 4),
                              "tflops": round(flops / (ms * 1e-3) / 1e12, 1)}), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
