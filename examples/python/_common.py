"""Helpers shared by the tutorial scripts: pick the device, make arrays there, check against a
reference (NumPy, or PyTorch when present), time against PyTorch on a GPU."""
import sys
import time

import numpy as np

import dnngraph

try:
    import torch
except ImportError:  # the scripts run on NumPy alone
    torch = None


def setup():
    """(handle, on_gpu): a CUDA handle when both dnngraph and PyTorch can use the GPU, else the CPU."""
    if torch is not None and torch.cuda.is_available():
        try:
            return dnngraph.create_handle("cuda"), True
        except RuntimeError as e:
            print(f"note: dnngraph cannot use the GPU ({e}); running on the CPU")
    return dnngraph.create_handle("cpu"), False


def io_types(on_gpu, gpu_type):
    """(torch dtype, dnngraph data type) of a tutorial's inputs and outputs: gpu_type ("float16" or
    "bfloat16") on a GPU; on the CPU float32 NumPy arrays, so the torch dtype is None."""
    if not on_gpu:
        return None, dnngraph.data_type.FLOAT
    io = {"float16": dnngraph.data_type.HALF, "bfloat16": dnngraph.data_type.BFLOAT16}[gpu_type]
    return getattr(torch, gpu_type), io


def array(a, on_gpu, dtype=None):
    """A NumPy array moved to the GPU as a torch tensor when on_gpu."""
    if on_gpu:
        t = torch.from_numpy(np.ascontiguousarray(a))
        if a.ndim == 4 and not a.flags.c_contiguous:  # keep an NHWC layout
            t = t.contiguous(memory_format=torch.channels_last)
        t = t.cuda()
        return t if dtype is None else t.to(dtype)
    return a


def empty_like_dims(dims, strides, on_gpu, dtype=np.float32):
    """A NaN-filled output with these dims and (element) strides."""
    size = 1 + sum((d - 1) * s for d, s in zip(dims, strides))
    if on_gpu:
        tdtype = {np.float32: torch.float32, np.float16: torch.float16}[dtype]
        return torch.full((size,), float("nan"), dtype=tdtype, device="cuda").as_strided(dims, strides)
    buf = np.full(size, np.nan, dtype)
    return np.lib.stride_tricks.as_strided(buf, shape=dims, strides=[s * buf.itemsize for s in strides])


def workspace(g, on_gpu, size=None):
    n = max(size if size is not None else g.get_workspace_size(), 1)
    return torch.empty(n, dtype=torch.uint8, device="cuda") if on_gpu else np.empty(n, np.uint8)


def to_numpy(a):
    if torch is not None and isinstance(a, torch.Tensor):
        return a.detach().float().cpu().numpy()
    return np.asarray(a, dtype=np.float64)


def check(name, actual, expected, tol):
    actual, expected = to_numpy(actual), np.asarray(expected, np.float64)
    err = np.max(np.abs(actual - expected) / (np.abs(expected) + 1))
    ok = np.isfinite(actual).all() and err <= tol
    print(f"  {name}: max relative error {err:.2e} (tolerance {tol:.0e}) {'OK' if ok else 'FAILED'}")
    if not ok:
        sys.exit(1)


def sync(on_gpu):
    if on_gpu:
        torch.cuda.synchronize()


def seconds(fn, on_gpu, iters=20):
    """Median time of fn() over iters runs, after a warm-up."""
    fn()
    sync(on_gpu)
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        sync(on_gpu)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def compare_times(ours, theirs, what):
    print(f"  time: dnngraph {ours * 1e6:.1f} us, PyTorch {theirs * 1e6:.1f} us ({what}); "
          f"ratio PyTorch/dnngraph = {theirs / ours:.2f}")


def pending(e):
    """True (after printing a note) when the library says the feature is not there yet."""
    if "pending" in str(e):
        print(f"  note: skipped, the library says this is pending ({e})")
        return True
    return False
