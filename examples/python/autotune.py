"""Tutorial 2: build every plan of a matmul -> bias -> GELU graph, time each one, let autotune pick
the fastest, and check every plan's result."""
import math
import time

import numpy as np

import dnngraph
from _common import array, check, compare_times, pending, seconds, setup, sync, torch, workspace


def main():
    handle, on_gpu = setup()
    b, m, k, n = (8, 1024, 1024, 1024) if on_gpu else (2, 64, 128, 96)
    print(f"autotune matmul -> bias -> gelu on {handle.device}: [{b},{m},{k}] x [{b},{k},{n}]")
    rng = np.random.default_rng(1)
    a_np = rng.standard_normal((b, m, k), np.float32) / math.sqrt(k)
    b_np = rng.standard_normal((b, k, n), np.float32)
    bias_np = rng.standard_normal((1, 1, n), np.float32)
    a, bb, bias = array(a_np, on_gpu), array(b_np, on_gpu), array(bias_np, on_gpu)

    g = dnngraph.pygraph(io_data_type=dnngraph.data_type.FLOAT, compute_data_type=dnngraph.data_type.FLOAT,
                         handle=handle)
    A, B, BIAS = g.tensor_like(a), g.tensor_like(bb), g.tensor_like(bias)
    C = g.gelu(g.bias(g.matmul(A, B), BIAS))
    C.set_output(True)
    # The five build steps of tutorial 1 in one call, building every plan instead of the first.
    g.build([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK], dnngraph.build_plan_policy.ALL)

    count = g.get_execution_plan_count()
    need = max([g.get_workspace_size()] + [g.get_workspace_size_plan_at_index(i) for i in range(count)])
    ws = workspace(g, on_gpu, need)
    c = torch.empty((b, m, n), device="cuda") if on_gpu else np.empty((b, m, n), np.float32)
    pack = {A: a, B: bb, BIAS: bias, C: c}
    z = a_np.astype(np.float64) @ b_np + bias_np
    ref = 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))
    tol = 1e-2 if on_gpu else 1e-4  # tf32 on GPUs
    print(f"  {count} plans:")
    for i in range(count):
        c[...] = float("nan")
        g.execute_plan_at_index(pack, ws, i)
        sync(on_gpu)
        check(g.get_plan_name_at_index(i), c, ref, tol)
        t = seconds(lambda: g.execute_plan_at_index(pack, ws, i), on_gpu, iters=5)
        print(f"    plan {i}: {t * 1e6:.1f} us")

    t0 = time.perf_counter()
    try:
        g.autotune(pack, ws)
        print(f"  autotune took {time.perf_counter() - t0:.2f} s; the default plan is now the fastest")
    except (RuntimeError, ValueError) as e:
        if not pending(e):
            raise
    c[...] = float("nan")
    g.execute(pack, ws)
    sync(on_gpu)
    check("default plan after autotune", c, ref, tol)
    if on_gpu:
        ours = seconds(lambda: g.execute(pack, ws), on_gpu)
        theirs = seconds(lambda: torch.nn.functional.gelu(torch.matmul(a, bb) + bias), on_gpu)
        compare_times(ours, theirs, "fp32 (tf32 allowed)")


if __name__ == "__main__":
    main()
