"""PyTorch's flash-attention backward on bench/gpu/sdpa_backward_bench.cpp's cases, timed the same
way (CUDA events, three warm-ups, the median of timed runs), one JSON line per case."""
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

CASES = [("b4_h16_s4096_d128_causal", 4, 16, 4096, 128, True), ("b4_h16_s1024_d64_causal", 4, 16, 1024, 64, True),
         ("b4_h16_s4096_d128", 4, 16, 4096, 128, False)]


def main(repeats: int = 10) -> None:
    """Times the backward alone: one forward, then backward(dO, retain_graph=True) per run."""
    for name, b, h, s, d, causal in CASES:
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
        d_o = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        times = []
        for i in range(3 + repeats):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            o.backward(d_o, retain_graph=True)
            stop.record()
            torch.cuda.synchronize()
            if i >= 3:
                times.append(start.elapsed_time(stop))
        times.sort()
        ms = times[len(times) // 2]
        flops = 10.0 * b * h * d * s * s / (2 if causal else 1)
        print(json.dumps({"case": name, "plan": "torch_flash_backward", "ms": round(ms, 4),
                          "tflops": round(flops / (ms * 1e-3) / 1e12, 1)}), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
