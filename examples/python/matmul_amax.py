"""Tutorial 3: a matmul epilogue (scale, bias, GELU) that also reports AMAX = max |C|, as an FP8
recipe needs, in one graph."""
import math

import numpy as np

import dnngraph
from _common import array, check, compare_times, io_types, seconds, setup, sync, torch, workspace


def main():
    handle, on_gpu = setup()
    m, k, n = (4096, 4096, 4096) if on_gpu else (96, 128, 64)
    print(f"matmul -> scale -> bias -> gelu -> amax on {handle.device}: [{m},{k}] x [{k},{n}]")
    rng = np.random.default_rng(2)
    a_np = rng.standard_normal((1, m, k), np.float32)
    b_np = rng.standard_normal((1, k, n), np.float32) / math.sqrt(k)
    bias_np = rng.standard_normal((1, 1, n), np.float32)
    dt, io = io_types(on_gpu, "bfloat16")
    a, b, bias = array(a_np, on_gpu, dt), array(b_np, on_gpu, dt), array(bias_np, on_gpu, dt)

    g = dnngraph.pygraph(io_data_type=io, intermediate_data_type=dnngraph.data_type.FLOAT,
                         compute_data_type=dnngraph.data_type.FLOAT, handle=handle)
    A, B, BIAS = g.tensor_like(a, name="A"), g.tensor_like(b, name="B"), g.tensor_like(bias, name="bias")
    scale = g.tensor(name="scale", dim=[1, 1, 1], data_type=dnngraph.data_type.FLOAT, value=0.5)
    C = g.gelu(g.bias(input=g.scale(input=g.matmul(A=A, B=B), scale=scale), bias=BIAS))
    C.set_output(True)
    AMAX = g.reduction(input=C, mode=dnngraph.reduction_mode.AMAX)
    AMAX.set_output(True).set_dim([1, 1, 1]).set_stride([1, 1, 1]).set_data_type(dnngraph.data_type.FLOAT)
    g.build([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
    print(f"  plan: {g.get_plan_name_at_index(0)}")

    if on_gpu:
        c, amax = torch.empty((1, m, n), dtype=dt, device="cuda"), torch.empty((1, 1, 1), device="cuda")
    else:
        c, amax = np.full((1, m, n), np.nan, np.float32), np.full((1, 1, 1), np.nan, np.float32)
    ws = workspace(g, on_gpu)
    pack = {A: a, B: b, BIAS: bias, C: c, AMAX: amax}
    g.execute(pack, ws)
    sync(on_gpu)
    if on_gpu:
        ref = torch.nn.functional.gelu(torch.matmul(a.float(), b.float()) * 0.5 + bias.float()).cpu().numpy()
    else:
        z = a_np.astype(np.float64) @ b_np * 0.5 + bias_np
        ref = 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))
    check("C", c, ref, 2e-2 if on_gpu else 1e-4)
    check("AMAX", amax, np.abs(ref).max(keepdims=True), 2e-2 if on_gpu else 1e-4)
    if on_gpu:
        def torch_version():
            out = torch.nn.functional.gelu(torch.matmul(a, b) * 0.5 + bias)
            return out, out.abs().amax()
        compare_times(seconds(lambda: g.execute(pack, ws), on_gpu), seconds(torch_version, on_gpu),
                      "bf16 in/out, fp32 accumulate")


if __name__ == "__main__":
    main()
