#!/usr/bin/env bash
# cuda_pool_direct on a GPU machine: three network poolings (graph JSON in bench/gpu/pool_graphs:
# ResNet-50 N32's stem max pooling, a 2x2 average pooling at C256 56², a 2x bilinear upsampling)
# run by the CLI (CUDA events around each execute, median of 50, checked against ref), and
# PyTorch's max_pool2d / avg_pool2d / interpolate on the same channels-last bf16 tensors beside.
#
#   bash bench/gpu/pool.sh [CLI]        (CLI: the dnngraph tool, default build/tools/dnngraph)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cli=${1:-$root/build/tools/dnngraph}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
rc=0
for g in stem_maxpool_n32 avgpool2_n32_c256_56 bilinear2x_n8_c64_64; do
  echo "== $g"
  "$cli" run "$root/bench/gpu/pool_graphs/$g.json" --device cuda --iters 50 --explain >"/tmp/pool_$g.txt" 2>&1 || rc=1
  grep -E "\(chosen\)|^time|: ok|FAIL|PASS" "/tmp/pool_$g.txt" | head -4
done
python3 - <<'PY' || rc=1
import torch
import torch.nn.functional as F


def median_us(fn, x, runs=50):
    for _ in range(5):
        fn(x)
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(x)
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[runs // 2] * 1e3


def nhwc(*dims):
    return torch.randn(*dims, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)


print("torch", torch.__version__)
print("torch stem_maxpool_n32 %.1f us" % median_us(lambda x: F.max_pool2d(x, 3, 2, 1), nhwc(32, 64, 112, 112)))
print("torch avgpool2_n32_c256_56 %.1f us" % median_us(lambda x: F.avg_pool2d(x, 2, 2), nhwc(32, 256, 56, 56)))
print("torch bilinear2x_n8_c64_64 %.1f us" % median_us(
    lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False), nhwc(8, 64, 64, 64)))
PY
exit $rc
