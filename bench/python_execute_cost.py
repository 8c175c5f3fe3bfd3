"""Host cost of one pygraph.execute() from Python, by what the variant pack holds (issue #16).

    PYTHONPATH=build/python python3 bench/python_execute_cost.py [--device cpu|cuda] [--rounds 15]

The graph is the issue's: conv 3x3 pad 1 + bias + ReLU, NHWC, four arrays in the pack (X, W, B, Y).
On the CPU it is fp32 and tiny (N1 C8 4x4 -> 8) so that the kernels cost little next to the host
work; on CUDA it is bf16 N1 C64 32x32 -> 64, as in bench/gpu/frontend_launch.py. Rows:
  C++ execute        Graph::execute in a C++ loop, pack resolved once (pygraph._time_execute)
  int pointers       the floor from Python: raw data pointers as ints (no array is read)
  numpy / torch / cupy arrays, keyed by tensor object or by uid
Each row: `calls` executes back to back (on CUDA enqueued, then one synchronize), its time per call
in microseconds; rounds interleave the rows (the machine may be shared) and the median is printed,
with the spread (min-max) and the row's cost over the int-pointer floor of the same key kind.
"""
import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

import dnngraph


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} logical CPUs, Python {platform.python_version()}, NumPy {np.__version__}"


def build(handle, io, x, w, b, y_shape, y_stride):
    g = dnngraph.pygraph(io_data_type=io, intermediate_data_type=dnngraph.data_type.FLOAT,
                         compute_data_type=dnngraph.data_type.FLOAT, handle=handle)
    X, W, B = g.tensor_like(x, name="X"), g.tensor_like(w, name="W"), g.tensor_like(b, name="B")
    conv = g.conv_fprop(image=X, weight=W, padding=[1, 1], stride=[1, 1], dilation=[1, 1])
    Y = g.relu(input=g.bias(input=conv, bias=B))
    Y.set_output(True).set_dim(list(y_shape)).set_stride(list(y_stride))
    g.build([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
    return g, (X, W, B, Y)


def nhwc_strides(n, c, h, w):
    return (h * w * c, 1, w * c, c)


class Row:
    def __init__(self, name, call, floor=None):
        self.name, self.call, self.floor, self.times = name, call, floor, []


def measure(rows, calls, rounds, sync):
    for row in rows:  # warm: the first calls pay for caches and first-touch
        for _ in range(20):
            row.call(1) if row.name.startswith("C++") else row.call()
        sync()
    for _ in range(rounds):
        for row in rows:
            # A few untimed calls first: the row before may have left the caches and the engine's
            # worker threads in another state.
            if row.name.startswith("C++"):
                row.call(20)
                sync()
                row.times.append(row.call(calls))
                sync()
                continue
            for _ in range(20):
                row.call()
            sync()
            t0 = time.perf_counter()
            for _ in range(calls):
                row.call()
            row.times.append((time.perf_counter() - t0) / calls * 1e6)
            sync()


def numpy_arrays(shapes, dtype):
    rng = np.random.default_rng(1)
    out = []
    for shape, stride in shapes:
        dense = rng.uniform(-1, 1, size=[shape[0], shape[2], shape[3], shape[1]]).astype(dtype)
        out.append(dense.transpose(0, 3, 1, 2))  # NCHW dims over NHWC memory
        assert out[-1].strides == tuple(s * out[-1].itemsize for s in stride)
    return out


def torch_arrays(torch, shapes, dtype, device):
    out = []
    for shape, _ in shapes:
        t = torch.rand(*shape, device=device).to(dtype)
        out.append(t.to(memory_format=torch.channels_last) if t.shape[2] * t.shape[3] > 1 else t)
    return out


def pack_rows(prefix, g, keys, arrays, ws, floor_uid, floor_tensor):
    uids = [k.get_uid() for k in keys]
    by_tensor, by_uid = dict(zip(keys, arrays)), dict(zip(uids, arrays))
    return [Row(f"{prefix}, tensor keys", lambda: g.execute(by_tensor, ws), floor_tensor),
            Row(f"{prefix}, uid keys", lambda: g.execute(by_uid, ws), floor_uid)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default=None, help="default: cuda when usable, else cpu")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    device = args.device
    if device is None:
        device = "cuda" if torch is not None and torch.cuda.is_available() else "cpu"
    handle = dnngraph.create_handle(device)
    cuda = device == "cuda"
    n, c, hw, k = (1, 64, 32, 64) if cuda else (1, 8, 4, 8)
    shapes = [((n, c, hw, hw), nhwc_strides(n, c, hw, hw)), ((k, c, 3, 3), nhwc_strides(k, c, 3, 3)),
              ((1, k, 1, 1), (k, 1, k, k)), ((n, k, hw, hw), nhwc_strides(n, k, hw, hw))]
    print("machine:", machine())
    print(f"device: {device}; torch {torch.__version__ if torch else 'absent'}; dnngraph handle {handle}")

    if cuda:
        if torch is None:
            sys.exit("--device cuda needs torch for the arrays")
        dnngraph.set_stream(handle, torch.cuda.current_stream().cuda_stream)
        arrays = torch_arrays(torch, shapes, torch.bfloat16, "cuda")
        g, keys = build(handle, dnngraph.data_type.BFLOAT16, *arrays[:3], shapes[3][0], shapes[3][1])
        ws = torch.empty(max(1, g.get_workspace_size()), dtype=torch.uint8, device="cuda")
        ptrs, ws_ptr = [a.data_ptr() for a in arrays], ws.data_ptr()
        sync = torch.cuda.synchronize
    else:
        arrays = numpy_arrays(shapes, np.float32)
        g, keys = build(handle, dnngraph.data_type.FLOAT, *arrays[:3], shapes[3][0], shapes[3][1])
        ws = np.empty(max(1, g.get_workspace_size()), dtype=np.uint8)
        ptrs, ws_ptr = [a.ctypes.data for a in arrays], ws.ctypes.data
        sync = lambda: None
    print("plan:", g.get_plan_name_at_index(0), f"workspace {g.get_workspace_size()} bytes")

    uids = [key.get_uid() for key in keys]
    int_by_tensor, int_by_uid = dict(zip(keys, ptrs)), dict(zip(uids, ptrs))
    floor_t = Row("int pointers, tensor keys", lambda: g.execute(int_by_tensor, ws_ptr))
    floor_u = Row("int pointers, uid keys", lambda: g.execute(int_by_uid, ws_ptr))
    rows = [Row("C++ execute (pack resolved once)", lambda calls: g._time_execute(int_by_uid, ws_ptr, calls)),
            floor_u, floor_t]
    if not cuda:
        rows += pack_rows("numpy arrays", g, keys, arrays, ws, floor_u, floor_t)
    if torch is not None:
        if cuda:
            t_arrays, t_ws = arrays, ws
        else:
            t_arrays = [torch.from_numpy(a) for a in arrays]
            t_ws = torch.from_numpy(ws)
        rows += pack_rows("torch tensors", g, keys, t_arrays, t_ws, floor_u, floor_t)
    if cuda:
        try:
            import cupy
            c_arrays = [cupy.from_dlpack(a) for a in arrays]
            rows += pack_rows("cupy arrays", g, keys, c_arrays, cupy.from_dlpack(ws), floor_u, floor_t)
        except ImportError:
            pass

    measure(rows, args.calls, args.rounds, sync)
    print(f"{args.calls} executes per round, median of {args.rounds} rounds, us per execute")
    # On a shared machine the minimum is the steadier figure; both are printed.
    print(f"| {'pack':34s} | median |   min  |    max | over the floor (median / min) |")
    print("|" + "-" * 36 + "|--------|--------|--------|-------------------------------|")
    for row in rows:
        med, low = statistics.median(row.times), min(row.times)
        over = ""
        if row.floor:
            over = f"{med - statistics.median(row.floor.times):+.2f} / {low - min(row.floor.times):+.2f}"
        print(f"| {row.name:34s} | {med:6.2f} | {low:6.2f} | {max(row.times):6.2f} | {over:>29s} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
