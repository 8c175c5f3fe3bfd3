"""Tutorial 6: one kernel cache shared by graphs that differ only in batch size. With dynamic
shapes on, sizes are kernel arguments, so later batch sizes reuse the kernels compiled for the first."""
import time

import numpy as np

import dnngraph
from _common import array, check, setup, sync, torch, workspace


def main():
    handle, on_gpu = setup()
    c, k = (256, 512) if on_gpu else (32, 48)
    cache = dnngraph.create_kernel_cache()
    print(f"kernel cache across batch sizes on {handle.device}")
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((1, c, k)) / np.sqrt(c)).astype(np.float32)
    b = rng.standard_normal((1, 1, k), np.float32)
    for batch in (1, 8, 32, 128):
        x = rng.standard_normal((batch, 16, c), np.float32)
        g = dnngraph.pygraph(io_data_type=dnngraph.data_type.FLOAT, compute_data_type=dnngraph.data_type.FLOAT,
                             handle=handle, kernel_cache=cache, is_dynamic_shape_enabled=True)
        X, W, B = g.tensor_like(array(x, on_gpu)), g.tensor_like(array(w, on_gpu)), g.tensor_like(array(b, on_gpu))
        Y = g.relu(g.bias(g.matmul(X, W), B))
        Y.set_output(True)
        t0 = time.perf_counter()
        g.build([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
        built = time.perf_counter() - t0
        y = torch.empty((batch, 16, k), device="cuda") if on_gpu else np.full((batch, 16, k), np.nan, np.float32)
        g.execute({X: array(x, on_gpu), W: array(w, on_gpu), B: array(b, on_gpu), Y: y}, workspace(g, on_gpu))
        sync(on_gpu)
        print(f"  batch {batch:4d}: built in {built * 1e3:7.1f} ms; cache size {cache.size()}, "
              f"hits {cache.hits()}, misses {cache.misses()}")
        check(f"batch {batch}", y, np.maximum(x.astype(np.float64) @ w + b, 0), 1e-2 if on_gpu else 1e-4)


if __name__ == "__main__":
    main()
