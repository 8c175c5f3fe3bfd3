#!/usr/bin/env python3
"""Whole networks through torch.compile(backend="dnngraph") beside PyTorch on the same run.

On CUDA (default when present): ResNet-50 N32 bf16 channels-last and the 6-layer BERT-base-width
encoder (B8 x S512 bf16), each as PyTorch eager (cudnn.benchmark=True), torch.compile(mode=
"max-autotune") with --max-autotune (slow to compile), torch.compile(backend="dnngraph"), and the
same with options={"cuda_graphs": True} (the forward recorded as CUDA graphs; --no-cuda-graphs).
Per variant: median latency (CUDA events), kernels launched per forward (torch.profiler), the
largest difference from eager over eager's peak (PASS within the precision's tolerance); for
dnngraph also the share of GPU time by engine (kernels inside each dnngraph graph's profiler
range: dnngraph's own kernels by name, vendor kernels by the graph's chosen engines), the time
left in PyTorch, and every partition that fell back with its reason. --device cpu runs small
sizes in fp32 (a smoke test). Prints the GPU/CPU it ran on.

    python3 bench/networks_torch.py                      # CUDA, both models
    python3 bench/networks_torch.py --max-autotune       # adds torch.compile max-autotune
    python3 bench/networks_torch.py --device cpu         # smoke test
"""
from __future__ import annotations

import argparse
import collections
import logging
import pathlib
import platform
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import torch_models  # noqa: E402

import dnngraph  # noqa: E402
import dnngraph.torch as dt  # noqa: E402

TOLERANCE = {torch.float32: 1e-3, torch.bfloat16: 3e-2, torch.float16: 1e-2}
# dnngraph's own CUDA kernels (src/engines/cuda), by the name prefix of their entry points.
OWN_KERNELS = [("dg_conv_depthwise", "cuda_conv_depthwise_direct"), ("dg_conv", "cuda_conv_implicit_gemm"),
               ("dg_gemm_wgmma", "cuda_gemm_wgmma_tma"), ("dg_gemm_mma_sync", "cuda_gemm_mma_sync"),
               ("dg_gemm", "cuda_gemm (finalize/transpose)"), ("dg_sdpa", "cuda_sdpa_flash"),
               ("dg_pointwise", "cuda_pointwise_jit"), ("dg_finalize", "cuda_pointwise_jit"),
               ("dg_norm", "cuda_norm_rowwise"), ("dg_pool", "cuda_pool_direct")]


def machine(device: torch.device) -> str:
    """The GPU (or CPU) and the software versions of this run."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "none"
    return (f"GPU: {gpu}; CPU: {cpu}; torch {torch.__version__}; dnngraph {dnngraph.__version__}; "
            f"cuDNN (torch) {torch.backends.cudnn.version() if device.type == 'cuda' else '-'}")


def time_ms(fn: Callable[[], Any], device: torch.device, warmup: int, iters: int) -> float:
    """Median milliseconds of fn() (CUDA events per call on a GPU, the wall clock on the CPU)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def summary(engines: List[str]) -> str:
    """Engine names (knobs left out) with how many of the graph's partitions each runs."""
    counts = collections.Counter(e.split("[")[0] for e in engines)
    return ", ".join(f"{name} x{n}" if n > 1 else name for name, n in counts.most_common())


def _vendor_of(name: str) -> str:
    """The vendor library a kernel name belongs to ('' for neither)."""
    if any(k in name for k in ("cudnn", "xmma", "cutlass", "fort_native")):
        return "cudnn"
    if name.startswith("nvjet") or "gemm" in name.lower():
        return "cublaslt"
    return ""


def _engine_of_kernel(name: str, graph_engines: List[str]) -> str:
    """The engine of a kernel that dnngraph launched: its own by name, else the graph's vendor engine."""
    for prefix, engine in OWN_KERNELS:
        if name.startswith(prefix):
            return engine
    if name.startswith("dg_"):
        return f"own kernel {name.split('(')[0][:40]}"
    vendors = sorted({e.split("[")[0] for e in graph_engines} & {"cudnn", "cublaslt"})
    if len(vendors) > 1 and _vendor_of(name) in vendors:
        return _vendor_of(name)
    return vendors[0] if len(vendors) == 1 else ("|".join(vendors) or "unattributed") + " (vendor kernel)"


def _by_name(name: str, engines: List[str]) -> str:
    """Where a kernel the profiler tied to no op ran (a CUDA graph's replay, or a launch linked to
    no op): PyTorch's by its names, dnngraph's own by theirs, a vendor kernel to dnngraph's engine
    of that vendor where the variant's graphs use one."""
    if name.startswith(("triton_", "void at::", "at::")) or "at::native" in name:
        return "pytorch"
    if name.startswith("dg_"):
        return _engine_of_kernel(name, engines)
    vendor = _vendor_of(name)
    used = {e.split("[")[0] for e in engines}
    return vendor if vendor and vendor in used else f"pytorch ({vendor or 'other'})"


def _is_annotation(e: Any) -> bool:
    """A record_function range's span on the GPU timeline (dnngraph's graphs), not a kernel."""
    return bool(getattr(e, "is_user_annotation", False)) or e.name.startswith("dnngraph:")


def profile(fn: Callable[[], Any], device: torch.device,
            by_name: Dict[str, List[float]]) -> Tuple[int, Dict[str, float]]:
    """Kernels launched by one forward, and device (or CPU) microseconds by where they ran:
    'pytorch' for PyTorch's kernels, else dnngraph's engine. `by_name` gets each kernel's durations."""
    engines_of = {p.partition_name: [e for b in p.builds.values() for e in b.engines] for p in dt.partitions()}
    all_engines = [e for es in engines_of.values() for e in es]
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
    share: Dict[str, float] = collections.defaultdict(float)
    events = prof.events()
    if device.type == "cpu":
        for evt in events:
            if evt.name.startswith("dnngraph:"):
                share[f"{evt.name} ({summary(engines_of.get(evt.name[9:], []))})"] += evt.cpu_time_total
        return 0, dict(share)
    # Device kernels (copies, memsets and the ranges' own GPU spans left out: counted as kernels,
    # the spans had made half of the time "linked to no CPU op"), each linked by the profiler to
    # the innermost op or record_function range that launched it; walk up to a dnngraph range or
    # a PyTorch op. The rest (a CUDA graph's replay, launches tied to no op) go by their names.
    on_device = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA
                 and not e.name.startswith(("Memcpy", "Memset")) and not _is_annotation(e)]
    left: Dict[str, float] = collections.defaultdict(float)
    for e in on_device:
        by_name.setdefault(e.name, []).append(e.time_range.elapsed_us())
        left[e.name] += e.time_range.elapsed_us()
    for evt in events:
        for k in evt.kernels:
            if k.name not in left:
                continue
            owner, aten = evt, False
            while owner is not None and not owner.name.startswith("dnngraph:"):
                aten |= owner.name.startswith("aten::")
                owner = owner.cpu_parent
            if owner is None and not aten:
                continue  # tied to a launch call only: by its name below
            where = "pytorch" if owner is None else _engine_of_kernel(k.name, engines_of.get(owner.name[9:], []))
            share[where] += k.duration
            left[k.name] -= k.duration
    for name, us in left.items():
        if us > 0.05:
            share[_by_name(name, all_engines)] += us
    return len(on_device), dict(share)


def print_kernels(by_name: Dict[str, List[float]], top: int) -> None:
    """The `top` kernels of one forward by device time: launches, total and mean microseconds."""
    rows = sorted(by_name.items(), key=lambda kv: -sum(kv[1]))
    for name, times in rows[:top]:
        print(f"      {len(times):4d} x {sum(times) / len(times):8.1f} us = {sum(times):9.1f} us  {name[:110]}")
    if len(rows) > top:
        print(f"      ... {len(rows) - top} more kernel names, {sum(sum(t) for _, t in rows[top:]):.1f} us")


def compare(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype) -> str:
    """The largest difference over the reference's peak, with PASS/FAIL at the dtype's tolerance."""
    err = ((out.float() - ref.float()).abs().max() / ref.float().abs().max().clamp_min(1e-12)).item()
    return f"{err:.2e} {'PASS' if err <= TOLERANCE[dtype] else 'FAIL'}"


def run_model(name: str, model: torch.nn.Module, x: torch.Tensor, args: argparse.Namespace,
              device: torch.device) -> None:
    """One network: every variant's latency, kernels, accuracy; dnngraph's engine shares."""
    print(f"\n== {name}: input {list(x.shape)} {x.dtype} on {device}")
    with torch.no_grad():
        ref = model(x)
        variants: List[Tuple[str, Callable[[], Any]]] = [("eager", lambda: model(x))]
        if args.inductor:
            inductor = torch.compile(model)
            variants.append(("compile inductor", lambda: inductor(x)))
        before = set(dt.partitions())
        tune = {"autotune": True} if args.dnngraph_autotune else {}
        lowered = torch.compile(model, backend="dnngraph", options=tune or None)
        variants.append(("compile dnngraph", lambda: lowered(x)))
        if device.type == "cuda" and not args.no_cuda_graphs:
            graphed = torch.compile(model, backend="dnngraph", options={"cuda_graphs": True, **tune})
            variants.append(("dnngraph + CUDA graphs", lambda: graphed(x)))
        if args.max_autotune:  # last: its compile takes minutes
            autotuned = torch.compile(model, mode="max-autotune")
            variants.append(("compile max-autotune", lambda: autotuned(x)))
        eager_ms = None
        for label, call in variants:
            try:
                t0 = time.perf_counter()
                # A copy: outputs of CUDA graph trees (max-autotune's, ours) are overwritten by the next replay.
                out = call().clone()
                first_s = time.perf_counter() - t0
                accuracy = compare(out, ref, x.dtype)
                ms = time_ms(call, device, args.warmup, args.iters)
                by_name: Dict[str, List[float]] = {}
                kernels, share = profile(call, device, by_name)
            except Exception as e:  # noqa: BLE001 - one variant's failure is reported, the others still run
                print(f"{label:22s} FAILED: {type(e).__name__}: {str(e)[:300]}")
                continue
            eager_ms = eager_ms or ms
            print(f"{label:22s} {ms:9.3f} ms  ({eager_ms / ms:5.2f}x eager)  kernels/forward {kernels:5d}  "
                  f"first call {first_s:7.1f} s  vs eager {accuracy}")
            if label in ("compile dnngraph", "dnngraph + CUDA graphs"):
                total = sum(share.values()) or 1.0
                for where, us in sorted(share.items(), key=lambda kv: -kv[1]):
                    print(f"    {100 * us / total:5.1f}%  {us / 1e3:8.3f} ms  {where}")
            if args.kernels:
                print_kernels(by_name, args.kernels)
        for p in (p for p in dt.partitions() if p not in before):
            for b in p.builds.values():
                if b.graph is None:
                    print(f"    fallback {p.partition_name} ({len(p.node_names)} nodes): {b.fallback_reason[:300]}")


def main() -> int:
    """Runs the networks named by --models on --device."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--models", default="resnet50,encoder", help="resnet50, mobilenet_v2, encoder")
    ap.add_argument("--batch", type=int, default=None, help="default 32 (resnet) / 8 (encoder) on CUDA, 1 on CPU")
    ap.add_argument("--seq", type=int, default=None, help="encoder sequence length (512 on CUDA, 32 on CPU)")
    ap.add_argument("--inductor", action="store_true", help="also torch.compile with its default backend")
    ap.add_argument("--max-autotune", action="store_true", help='also torch.compile(mode="max-autotune")')
    ap.add_argument("--no-cuda-graphs", action="store_true",
                    help='leave out torch.compile(backend="dnngraph", options={"cuda_graphs": True})')
    ap.add_argument("--dnngraph-autotune", action="store_true",
                    help='dnngraph variants with options={"autotune": True} (every plan timed on the first call)')
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--kernels", type=int, default=0, metavar="N",
                    help="print each variant's N kernels of most device time (launches, mean and total us)")
    ap.add_argument("--verbose", action="store_true", help="dnngraph.torch's log at INFO")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    torch.backends.cudnn.benchmark = True
    dtype = torch.bfloat16 if cuda else torch.float32
    torch._dynamo.config.cache_size_limit = 64
    print(machine(device))
    gen = torch.Generator().manual_seed(0)
    for name in args.models.split(","):
        if name in ("resnet50", "mobilenet_v2"):
            n = args.batch or (32 if cuda else 1)
            model = (torch_models.resnet50() if name == "resnet50" else torch_models.mobilenet_v2())
            size = 224 if cuda else 64
            model = model.to(device=device, dtype=dtype, memory_format=torch.channels_last)
            x = torch.randn(n, 3, size, size, generator=gen).to(device=device, dtype=dtype,
                                                                 memory_format=torch.channels_last)
        elif name == "encoder":
            b, s = args.batch or (8 if cuda else 1), args.seq or (512 if cuda else 32)
            model = torch_models.transformer_encoder() if cuda else torch_models.transformer_encoder(layers=2)
            model = model.to(device=device, dtype=dtype)
            x = torch.randn(b, s, 768, generator=gen).to(device=device, dtype=dtype)
        else:
            print(f"unknown model '{name}'", file=sys.stderr)
            return 64
        torch._dynamo.reset()
        run_model(name, model, x, args, device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
