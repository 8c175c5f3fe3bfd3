"""Tutorial 4: causal scaled dot-product attention (with grouped K/V heads), checked against a
reference and timed against torch.nn.functional.scaled_dot_product_attention on a GPU."""
import math

import numpy as np

import dnngraph
from _common import array, check, compare_times, io_types, seconds, setup, sync, torch, workspace


def reference(q, k, v, scale):
    h, hk = q.shape[1], k.shape[1]
    k, v = np.repeat(k, h // hk, axis=1).astype(np.float64), np.repeat(v, h // hk, axis=1).astype(np.float64)
    s = np.einsum("bhid,bhjd->bhij", q.astype(np.float64), k) * scale
    sq, skv = s.shape[-2:]
    s = np.where(np.arange(skv)[None, :] <= np.arange(sq)[:, None], s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("bhij,bhjd->bhid", p / p.sum(-1, keepdims=True), v)


def main():
    handle, on_gpu = setup()
    b, h, hk, s, d = (4, 16, 4, 2048, 128) if on_gpu else (1, 4, 2, 64, 32)
    print(f"causal sdpa on {handle.device}: b={b} h={h} kv_heads={hk} s={s} d={d}")
    rng = np.random.default_rng(3)
    q_np = rng.standard_normal((b, h, s, d), np.float32)
    k_np = rng.standard_normal((b, hk, s, d), np.float32)
    v_np = rng.standard_normal((b, hk, s, d), np.float32)
    dt, io = io_types(on_gpu, "float16")
    q, k, v = array(q_np, on_gpu, dt), array(k_np, on_gpu, dt), array(v_np, on_gpu, dt)
    scale = 1 / math.sqrt(d)

    g = dnngraph.pygraph(io_data_type=io, intermediate_data_type=dnngraph.data_type.FLOAT,
                         compute_data_type=dnngraph.data_type.FLOAT, handle=handle)
    Q, K, V = g.tensor_like(q, name="Q"), g.tensor_like(k, name="K"), g.tensor_like(v, name="V")
    O, _ = g.sdpa(q=Q, k=K, v=V, is_inference=True, attn_scale=scale, use_causal_mask=True)
    O.set_output(True).set_dim([b, h, s, d]).set_stride([h * s * d, s * d, d, 1])
    g.build([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
    print(f"  plan: {g.get_plan_name_at_index(0)}")

    o = torch.empty((b, h, s, d), dtype=dt, device="cuda") if on_gpu else np.full((b, h, s, d), np.nan, np.float32)
    ws = workspace(g, on_gpu)
    pack = {Q: q, K: k, V: v, O: o}
    g.execute(pack, ws)
    sync(on_gpu)
    if on_gpu:
        kr, vr = k.repeat_interleave(h // hk, dim=1), v.repeat_interleave(h // hk, dim=1)
        ref = torch.nn.functional.scaled_dot_product_attention(q.float(), kr.float(), vr.float(), is_causal=True,
                                                               scale=scale).cpu().numpy()
    else:
        ref = reference(q_np, k_np, v_np, scale)
    check("O", o, ref, 3e-3 if on_gpu else 1e-4)
    if on_gpu:
        kr, vr = k.repeat_interleave(h // hk, dim=1), v.repeat_interleave(h // hk, dim=1)
        theirs = seconds(lambda: torch.nn.functional.scaled_dot_product_attention(q, kr, vr, is_causal=True,
                                                                                  scale=scale), on_gpu)
        compare_times(seconds(lambda: g.execute(pack, ws), on_gpu), theirs, "fp16, PyTorch's best SDPA backend")


if __name__ == "__main__":
    main()
