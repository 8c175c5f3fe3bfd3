"""Does dnngraph slow other libraries' kernels in the same process? (issue #16)

    python3 bench/gpu/coexistence.py [--dnngraph-first]

Times PyTorch's own small ops (conv + ReLU N8 C64 32x32 and N1, bf16 channels-last with
cudnn.benchmark; a 512^3 matmul) before dnngraph runs anything, then after dnngraph built and
executed a conv graph on the same GPU (its default plan, then its own conv engine's), and prints
the cuDNN libraries the process holds and the threads that burn CPU while the process sleeps.
--dnngraph-first: dnngraph runs its graph before PyTorch's first convolution (PyTorch's cuDNN not
yet loaded), the order in which a second cuDNN could come in.
"""
import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_conv_torch import timed  # noqa: E402


def torch_rows():
    dev, bf = "cuda", torch.bfloat16
    out = {}
    for n in (8, 1):
        x = torch.rand(n, 64, 32, 32, device=dev).to(bf).to(memory_format=torch.channels_last)
        w = torch.rand(64, 64, 3, 3, device=dev).to(bf).to(memory_format=torch.channels_last)
        b = torch.rand(1, 64, 1, 1, device=dev).to(bf)
        out[f"torch conv+relu N{n} C64 32^2"] = timed(lambda: torch.relu(F.conv2d(x, w, padding=1) + b))
    a = torch.rand(512, 512, device=dev).to(bf)
    out["torch matmul 512^3"] = timed(lambda: a @ a)
    return out


def cudnn_libraries():
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "libcudnn" in path:
                libs.add(path)
    return sorted(libs)


def busy_threads(seconds=0.5):
    """Threads that used more than 5 ms of CPU while this thread slept `seconds`."""
    def cpu():
        out = {}
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/self/task/{tid}/comm") as f:
                    name = f.read().strip()
                out[tid] = (name, int(fields[11]) + int(fields[12]))  # utime + stime, clock ticks
            except OSError:
                pass
        return out
    tick = os.sysconf("SC_CLK_TCK")
    a = cpu()
    time.sleep(seconds)
    b = cpu()
    busy = [(b[t][0], (b[t][1] - a[t][1]) / tick) for t in b if t in a and (b[t][1] - a[t][1]) / tick > 0.005]
    return len(b), busy


def dnngraph_conv(engines=None):
    import dnngraph
    handle = dnngraph.create_handle("cuda")
    dev, bf = "cuda", torch.bfloat16
    x = torch.rand(8, 64, 32, 32, device=dev).to(bf).to(memory_format=torch.channels_last)
    w = torch.rand(64, 64, 3, 3, device=dev).to(bf).to(memory_format=torch.channels_last)
    b = torch.rand(1, 64, 1, 1, device=dev).to(bf)
    y = torch.empty_like(x)
    g = dnngraph.pygraph(io_data_type=dnngraph.data_type.BFLOAT16, intermediate_data_type=dnngraph.data_type.FLOAT,
                         compute_data_type=dnngraph.data_type.FLOAT, handle=handle)
    if engines:
        g.select_engines(engines)
    X, W, B = g.tensor_like(x), g.tensor_like(w), g.tensor_like(b)
    Y = g.relu(input=g.bias(input=g.conv_fprop(image=X, weight=W, padding=[1, 1], stride=[1, 1], dilation=[1, 1]), bias=B))
    Y.set_output(True).set_stride(list(y.stride()))
    g.build([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
    ws = torch.empty(max(1, g.get_workspace_size()), dtype=torch.uint8, device=dev)
    for _ in range(50):
        g.execute({X: x, W: w, B: b, Y: y}, ws)
    torch.cuda.synchronize()
    ref = torch.relu(F.conv2d(x.float(), w.float(), padding=1) + b.float())
    err = (y.float() - ref).abs().max().item()
    return g.get_plan_name_at_index(0), err, handle, g


def report(stage, rows, base=None):
    for k, v in rows.items():
        extra = f"  ({v / base[k]:.2f}x of before)" if base else ""
        print(f"COEXIST {stage:<34} {k:<28} {v:.4f} ms{extra}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dnngraph-first", action="store_true")
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.zeros(1, device="cuda")
    keep = []
    if args.dnngraph_first:
        plan, err, *held = dnngraph_conv()
        keep.append(held)
        print(f"dnngraph first: plan {plan}, max error vs torch fp32 {err:.3g}")
    before = torch_rows()
    report("before" if not args.dnngraph_first else "after dnngraph (it ran first)", before)
    print("cuDNN libraries:", cudnn_libraries())
    if args.dnngraph_first:
        return 0
    for engines, stage in ((None, "after dnngraph default plan"), (["cuda_conv_implicit_gemm"], "after dnngraph own conv")):
        plan, err, *held = dnngraph_conv(engines)
        keep.append(held)
        print(f"dnngraph plan {plan}: max error vs torch fp32 {err:.3g}")
        report(stage, torch_rows(), before)
        print("cuDNN libraries:", cudnn_libraries())
    threads, busy = busy_threads()
    print(f"threads: {threads}; burning CPU while idle: {busy or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
