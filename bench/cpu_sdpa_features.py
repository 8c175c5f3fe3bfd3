"""CPU timing of sdpa's optional inputs on cpu_sdpa_flash and cpu_sdpa_backward_flash: the same fp32
causal problem plain, with a full bias, ALiBi, dropout (with and without rng_dump), packed ragged
rows, and paged K/V, forward and backward. Prints ms per execute (best of 9) and the ratio to the
plain case. usage: PYTHONPATH=build/python python3 bench/cpu_sdpa_features.py [b h s d]"""
import sys
import time
from typing import Any, Callable, Dict, List

import numpy as np

import dnngraph
from cpu_sdpa_backward import build, new_graph  # the fp32 CPU graph and the five build steps

F32 = dnngraph.data_type.FLOAT
I32, I64 = dnngraph.data_type.INT32, dnngraph.data_type.INT64


def best_ms(run: Callable[[], None], n: int = 9) -> float:
    """Least wall time of n runs after one warm-up: on a machine shared with other work the least
    is the steadiest figure."""
    run()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1e3)
    return float(min(times))


def case(name: str, b: int, h: int, s: int, d: int, backward: bool) -> float:
    """ms per execute of one variant (name: plain, bias, alibi, dropout, dropout+dump, ragged, paged)."""
    rng = np.random.default_rng(0)
    q, k, v, d_o = (rng.uniform(-1, 1, (b, s, h, d)).astype(np.float32).transpose(0, 2, 1, 3) for _ in range(4))
    lens = np.full((b, 1, 1, 1), s, np.int32)
    g = new_graph()
    Q, K, V = g.tensor_like(q), g.tensor_like(k), g.tensor_like(v)
    pack: Dict[Any, np.ndarray] = {Q: q, K: k, V: v}
    kw: Dict[str, Any] = dict(attn_scale=0.125, use_causal_mask=True)
    if name in ("ragged", "paged"):
        SQ, SKV = g.tensor_like(lens), g.tensor_like(lens)
        kw.update(use_padding_mask=True, seq_len_q=SQ, seq_len_kv=SKV)
        pack.update({SQ: lens, SKV: lens})
    if name == "ragged":
        off = (np.arange(b + 1, dtype=np.int64) * s * h * d).reshape(-1, 1, 1, 1)
        R = g.tensor_like(off)
        for t in (Q, K, V):
            t.set_ragged_offset(R)
        pack[R] = off
    if name == "paged":
        block = 64
        pages = s // block
        kc, vc = (np.ascontiguousarray(x.reshape(b, h, pages, block, d).transpose(0, 2, 1, 3, 4)
                                       .reshape(b * pages, h, block, d)) for x in (k, v))
        table = np.arange(b * pages, dtype=np.int32).reshape(b, 1, pages, 1)
        KC, VC, T = g.tensor_like(kc), g.tensor_like(vc), g.tensor_like(table)
        del pack[K], pack[V]
        K, V = KC, VC
        pack.update({KC: kc, VC: vc, T: table})
        kw.update(paged_attention_k_table=T, paged_attention_v_table=T, paged_attention_max_seq_len_kv=s)
    if name == "bias":
        bias = rng.uniform(-1, 1, (1, h, s, s)).astype(np.float32)
        BIAS = g.tensor_like(bias)
        kw["bias"] = BIAS
        pack[BIAS] = bias
    if name == "alibi":
        kw["use_alibi_mask"] = True
    if name.startswith("dropout"):
        seed, offset = np.full((1, 1, 1, 1), 1, np.int64), np.full((1, 1, 1, 1), 2, np.int64)
        SEED, OFF = g.tensor_like(seed), g.tensor_like(offset)
        kw["dropout"] = (0.1, SEED, OFF)
        pack.update({SEED: seed, OFF: offset})
    dump = np.empty((b, h, s, s), np.float32) if name == "dropout+dump" else None
    DUMP = g.tensor_like(dump) if dump is not None else None
    O, ST = g.sdpa(q=Q, k=K, v=V, generate_stats=True, rng_dump=DUMP, **kw)
    o, st = np.empty_like(q), np.empty((b, h, s, 1), np.float32)
    O.set_output(True).set_dim(list(q.shape)).set_stride([x // 4 for x in q.strides])
    ST.set_output(True).set_data_type(F32)
    if name == "ragged":
        O.set_ragged_offset(R)
    build(g)
    pack.update({O: o, ST: st})
    if DUMP is not None:
        pack[DUMP] = dump
    forward_ms = best_ms(lambda: g.execute(pack, None))
    if not backward or name == "paged":  # paged attention has no backward
        return forward_ms
    gb = new_graph()
    # Re-declare the inputs in the backward graph from the same arrays and keyword arguments.
    Qb, Kb, Vb = gb.tensor_like(q), gb.tensor_like(k), gb.tensor_like(v)
    Ob, DOb, STb = gb.tensor_like(o), gb.tensor_like(d_o), gb.tensor_like(st)
    packb: Dict[Any, np.ndarray] = {Qb: q, Kb: k, Vb: v, Ob: o, DOb: d_o, STb: st}
    kwb = {kk: vv for kk, vv in kw.items() if kk not in ("seq_len_q", "seq_len_kv", "bias", "dropout")}
    for key, arr in (("seq_len_q", lens), ("seq_len_kv", lens)):
        if key in kw:
            t = gb.tensor_like(arr)
            kwb[key] = t
            packb[t] = arr
    if "bias" in kw:
        bias_t, dbias = gb.tensor_like(pack[kw["bias"]]), np.empty_like(pack[kw["bias"]])
        dbias_t = gb.tensor_like(dbias)
        kwb.update(bias=bias_t, dBias=dbias_t)
        packb.update({bias_t: pack[kw["bias"]], dbias_t: dbias})
    if "dropout" in kw:
        seed_t, off_t = gb.tensor_like(np.full((1, 1, 1, 1), 1, np.int64)), gb.tensor_like(np.full((1, 1, 1, 1), 2, np.int64))
        kwb["dropout"] = (0.1, seed_t, off_t)
        packb.update({seed_t: np.full((1, 1, 1, 1), 1, np.int64), off_t: np.full((1, 1, 1, 1), 2, np.int64)})
    if name == "ragged":
        off = (np.arange(b + 1, dtype=np.int64) * s * h * d).reshape(-1, 1, 1, 1)
        Rb = gb.tensor_like(off)
        for t in (Qb, Kb, Vb, Ob, DOb):
            t.set_ragged_offset(Rb)
        packb[Rb] = off
    DQ, DK, DV = gb.sdpa_backward(q=Qb, k=Kb, v=Vb, o=Ob, dO=DOb, stats=STb, **kwb)
    grads: List[np.ndarray] = [np.empty_like(x) for x in (q, k, v)]
    for t, arr in zip((DQ, DK, DV), grads):
        t.set_output(True).set_dim(list(arr.shape)).set_stride([x // 4 for x in arr.strides])
        if name == "ragged":
            t.set_ragged_offset(Rb)
        packb[t] = arr
    build(gb)
    return best_ms(lambda: gb.execute(packb, None))


def main() -> None:
    """Prints each variant's forward and backward time beside the plain case's."""
    b, h, s, d = (int(x) for x in sys.argv[1:5]) if len(sys.argv) > 4 else (1, 8, 1024, 64)
    print(f"b={b} h={h} s={s} d={d} fp32 causal, ms per execute (best of 9), ratio to plain")
    base_f, base_b = case("plain", b, h, s, d, False), case("plain", b, h, s, d, True)
    for name in ("plain", "bias", "alibi", "dropout", "dropout+dump", "ragged", "paged"):
        f = base_f if name == "plain" else case(name, b, h, s, d, False)
        bw = base_b if name == "plain" else case(name, b, h, s, d, True)
        back = "n/a (no paged backward)" if name == "paged" else f"{bw:8.1f} ms ({bw / base_b:4.2f}x)"
        print(f"{name:13s} forward {f:8.1f} ms ({f / base_f:4.2f}x)   backward {back}")


if __name__ == "__main__":
    main()
