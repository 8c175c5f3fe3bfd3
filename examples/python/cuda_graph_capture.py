"""Tutorial 7: run a graph on a PyTorch stream and capture it into a CUDA graph, then replay it
with new inputs. Without a GPU it runs once on the CPU and says so."""
import numpy as np

import dnngraph
from _common import check, compare_times, seconds, setup, sync, torch, workspace


def build(handle, n, d):
    g = dnngraph.pygraph(io_data_type=dnngraph.data_type.FLOAT, compute_data_type=dnngraph.data_type.FLOAT,
                         handle=handle)
    X = g.tensor(name="X", dim=[n, d], stride=[d, 1])
    S = g.tensor(name="S", dim=[1, d], stride=[d, 1])
    B = g.tensor(name="B", dim=[1, d], stride=[d, 1])
    Y = g.gelu(g.add(g.mul(X, S), B))
    Y.set_output(True)
    g.build([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
    return g, X, S, B, Y


def main():
    handle, on_gpu = setup()
    n, d = (8192, 1024) if on_gpu else (64, 32)
    print(f"CUDA-graph capture on {handle.device}")
    g, X, S, B, Y = build(handle, n, d)
    rng = np.random.default_rng(6)
    x, s, b = (rng.standard_normal(sh, np.float32) for sh in ((n, d), (1, d), (1, d)))
    gelu = np.vectorize(lambda z: 0.5 * z * (1 + __import__("math").erf(z / 2 ** 0.5)))
    if not on_gpu:
        y = np.full((n, d), np.nan, np.float32)
        g.execute({X: x, S: s, B: b, Y: y}, workspace(g, False))
        check("Y (CPU, no capture)", y, gelu(x.astype(np.float64) * s + b), 1e-4)
        print("  note: no GPU here; the capture and replay run only on a CUDA device")
        return

    xs, ss, bs = (torch.from_numpy(a).cuda() for a in (x, s, b))
    y = torch.empty((n, d), device="cuda")
    ws = workspace(g, True)
    pack = {X: xs, S: ss, B: bs, Y: y}
    stream = torch.cuda.Stream()
    dnngraph.set_stream(handle, stream)  # the handle's kernels go to the capturing stream
    with torch.cuda.stream(stream):
        g.execute(pack, ws)  # warm up outside the capture (lazy loading, allocations)
    stream.synchronize()
    cuda_graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(cuda_graph, stream=stream):
        g.execute(pack, ws)
    for trial in range(2):
        x2 = rng.standard_normal((n, d), np.float32)
        xs.copy_(torch.from_numpy(x2))  # new inputs in the captured buffers
        y.fill_(float("nan"))
        cuda_graph.replay()
        sync(True)
        check(f"replay {trial}", y, gelu(x2.astype(np.float64) * s + b), 1e-4)
    dnngraph.set_stream(handle, None)
    compare_times(seconds(cuda_graph.replay, True),
                  seconds(lambda: torch.nn.functional.gelu(xs * ss + bs), True), "replayed graph vs eager")


if __name__ == "__main__":
    main()
