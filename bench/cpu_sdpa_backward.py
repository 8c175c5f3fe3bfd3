"""CPU timing of sdpa_backward: cpu_sdpa_backward_flash beside ref on one causal fp32 case (the
forward through dnngraph makes O and Stats). Prints ms per execute (mean of 5; ref: 1) and GFLOP/s
at FlashAttention's count, 10 b h s^2 d / 2. usage: PYTHONPATH=build/python python3 bench/cpu_sdpa_backward.py"""
import time
from typing import Any, Dict, List, Tuple

import numpy as np

import dnngraph

B, H, S, D = 1, 4, 512, 64
F32 = dnngraph.data_type.FLOAT


def new_graph() -> Any:
    """An fp32 graph on the CPU."""
    return dnngraph.pygraph(io_data_type=F32, intermediate_data_type=F32, compute_data_type=F32,
                            handle=dnngraph.create_handle(device="cpu"))


def build(g: Any) -> None:
    """The five build steps, mode A."""
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([dnngraph.heur_mode.A])
    g.check_support()
    g.build_plans()


def forward(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """O and Stats of the causal forward."""
    g = new_graph()
    Q, K, V = g.tensor_like(q), g.tensor_like(k), g.tensor_like(v)
    O, ST = g.sdpa(q=Q, k=K, v=V, generate_stats=True, use_causal_mask=True)
    O.set_output(True)
    ST.set_output(True).set_data_type(F32)
    build(g)
    o, st = np.empty((B, H, S, D), np.float32), np.empty((B, H, S, 1), np.float32)
    g.execute({Q: q, K: k, V: v, O: o, ST: st}, None)
    return o, st


def main() -> None:
    """Times each engine's backward on the same inputs."""
    rng = np.random.default_rng(0)
    q, k, v, d_o = (rng.uniform(-1, 1, (B, H, S, D)).astype(np.float32) for _ in range(4))
    o, st = forward(q, k, v)
    for engine in ("cpu_sdpa_backward_flash", "ref"):
        g = new_graph()
        g.select_engines([engine])
        Q, K, V, O, DO, ST = (g.tensor_like(x) for x in (q, k, v, o, d_o, st))
        grads = g.sdpa_backward(q=Q, k=K, v=V, o=O, dO=DO, stats=ST, use_causal_mask=True)
        outs: List[np.ndarray] = [np.empty_like(x) for x in (q, k, v)]
        for t in grads:
            t.set_output(True)
        build(g)
        pack: Dict[Any, np.ndarray] = {Q: q, K: k, V: v, O: o, DO: d_o, ST: st}
        pack.update(dict(zip(grads, outs)))
        g.execute(pack, None)
        runs = 1 if engine == "ref" else 5
        start = time.perf_counter()
        for _ in range(runs):
            g.execute(pack, None)
        ms = (time.perf_counter() - start) / runs * 1e3
        print(f"{engine}: {ms:.1f} ms, {10.0 * B * H * D * S * S / 2 / (ms * 1e-3) / 1e9:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
