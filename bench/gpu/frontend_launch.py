"""Host cost per execute of the same cuDNN plan run by NVIDIA's cudnn frontend and by dnngraph's
cudnn engine, same process and GPU (issue #16: ours within 2%). Also dnngraph's own conv engine.

    python3 bench/gpu/frontend_launch.py      # needs `cudnn` (nvidia-cudnn-frontend), torch, dnngraph

The graph: conv 3x3 pad 1 + bias + ReLU, bf16 NHWC, N1 C64 32x32 -> 64 (the issue's), heuristics A.
Host us: 200 executes enqueued back to back from Python, the median of 9 rounds; GPU ms: CUDA events.
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def host_us(fn, calls=200, rounds=9):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls * 1e6)
        torch.cuda.synchronize()
    return statistics.median(out)


def gpu_ms(fn, calls=200):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    times = []
    for _ in range(5):
        start.record()
        for _ in range(calls):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / calls)
    return statistics.median(times)


def tensors(n=1):
    bf = torch.bfloat16
    x = torch.rand(n, 64, 32, 32, device="cuda").to(bf).to(memory_format=torch.channels_last)
    w = torch.rand(64, 64, 3, 3, device="cuda").to(bf).to(memory_format=torch.channels_last)
    b = torch.rand(1, 64, 1, 1, device="cuda").to(bf)
    return x, w, b, torch.empty_like(x)


def build(mod, handle, x, w, b, y, engines=None):
    g = mod.pygraph(io_data_type=mod.data_type.BFLOAT16, intermediate_data_type=mod.data_type.FLOAT,
                    compute_data_type=mod.data_type.FLOAT, handle=handle)
    if engines:
        g.select_engines(engines)
    X, W, B = g.tensor_like(x), g.tensor_like(w), g.tensor_like(b)
    Y = g.relu(input=g.bias(input=g.conv_fprop(image=X, weight=W, padding=[1, 1], stride=[1, 1], dilation=[1, 1]), bias=B))
    Y.set_output(True).set_stride(list(y.stride()))
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([mod.heur_mode.A])
    g.check_support()
    g.build_plans()
    ws = torch.empty(max(1, g.get_workspace_size()), dtype=torch.uint8, device="cuda")
    return g, {X: x, W: w, B: b, Y: y}, ws


def main():
    x, w, b, y = tensors()
    ref = torch.relu(F.conv2d(x.float(), w.float(), padding=1) + b.float())
    rows = []
    stream = torch.cuda.current_stream().cuda_stream
    try:
        import cudnn
        h = cudnn.create_handle()
        cudnn.set_stream(handle=h, stream=stream)
        g, pack, ws = build(cudnn, h, x, w, b, y)
        run = lambda: g.execute(pack, ws, handle=h)
        run()
        torch.cuda.synchronize()
        err = (y.float() - ref).abs().max().item()
        rows.append(("cudnn frontend " + cudnn.backend_version_string(), host_us(run), gpu_ms(run), err, "heuristics A, plan 0"))
    except Exception as e:  # report and go on: the dnngraph rows still stand on their own
        print(f"cudnn frontend: {type(e).__name__}: {e}")
    import dnngraph
    dh = dnngraph.create_handle("cuda")
    dnngraph.set_stream(dh, stream)
    for engines in (["cudnn"], ["cuda_conv_implicit_gemm"]):
        y.fill_(float("nan"))
        try:
            g, pack, ws = build(dnngraph, dh, x, w, b, y, engines)
        except Exception as e:
            print(f"dnngraph {engines[0]}: {type(e).__name__}: {e}")
            continue
        run = lambda: g.execute(pack, ws)
        run()
        torch.cuda.synchronize()
        err = (y.float() - ref).abs().max().item()
        rows.append((f"dnngraph {engines[0]}", host_us(run), gpu_ms(run), err, g.get_plan_name_at_index(0)))
    print("| who | host us per execute (Python) | GPU ms | max error vs fp32 | plan |")
    print("|---|---|---|---|---|")
    for who, us, ms, err, plan in rows:
        print(f"| {who} | {us:.2f} | {ms:.4f} | {err:.3g} | {plan} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
