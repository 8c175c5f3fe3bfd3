#!/usr/bin/env python3
"""Compiles every own CUDA candidate of the GPU bench's workloads for a described H200 (no GPU
needed) and fails if ptxas serialized the wgmma of any (C7515, C7518: the tensor pipe drains every
k step; the stream-K and 128-wide boxed GELU conv kernels did until 2026-12-08). The graphs are
bench/default_plan.cpp's GPU rows, written as graph files; dnngraph_aot_gen --every builds them.

  bench/gpu/wgmma_audit.py [--aot build/dnngraph_aot_gen] [--only SUBSTRING] [--keep DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def channels_last(d):
    """NCHW-ordered dims, NHWC strides (any number of spatial dims)."""
    n, c, *sp = d
    stride, s = [0] * len(d), c
    stride[1] = 1
    for i in range(len(sp) - 1, -1, -1):
        stride[2 + i] = s
        s *= sp[i]
    stride[0] = s
    return stride


def packed(d):
    stride, s = [0] * len(d), 1
    for i in range(len(d) - 1, -1, -1):
        stride[i] = s
        s *= d[i]
    return stride


def graph(name, tensors, nodes):
    return {"format": "dnngraph-graph", "version": 1, "name": name, "io_data_type": "BFLOAT16",
            "intermediate_data_type": "FLOAT", "compute_data_type": "FLOAT", "dynamic_shapes": False,
            "tensors": tensors, "nodes": nodes}


def conv(name, n, c, hw, k, r, groups=1, stride=1, gelu=False, amax=False):
    """conv R x R (pad R/2) + bias + ReLU (or GELU), NHWC / KRSC; `amax`: and the AMAX of Y."""
    sp = [hw, hw] if not isinstance(hw, list) else hw
    filt = [r] * len(sp)
    x, w, b = [n, c] + sp, [k, c // groups] + filt, [1, k] + [1] * len(sp)
    pad = [r // 2] * len(sp)
    t = [{"name": "X", "uid": 1, "dim": x, "stride": channels_last(x)},
         {"name": "W", "uid": 2, "dim": w, "stride": channels_last(w)},
         {"name": "B", "uid": 3, "dim": b, "stride": channels_last(b)},
         {"name": "Y", "uid": 4, "output": True},
         {"name": "conv::Y", "virtual": True}, {"name": "bias::OUT", "virtual": True}]
    nodes = [{"name": "conv", "op": "conv_fprop", "dilation": [1] * len(sp), "pre_padding": pad, "post_padding": pad,
              "stride": [stride] * len(sp), "inputs": {"X": "X", "W": "W"}, "outputs": {"Y": "conv::Y"}},
             {"name": "bias", "op": "pointwise", "mode": "ADD", "inputs": {"IN_0": "conv::Y", "IN_1": "B"},
              "outputs": {"OUT": "bias::OUT"}},
             {"name": "act", "op": "pointwise", "mode": "GELU_FWD" if gelu else "RELU_FWD",
              "inputs": {"IN_0": "bias::OUT"}, "outputs": {"OUT": "Y"}}]
    if amax:
        t.append({"name": "amax", "uid": 5, "dim": [1] * len(x), "data_type": "FLOAT", "output": True})
        nodes.append({"name": "amax", "op": "reduction", "mode": "AMAX", "inputs": {"X": "Y"}, "outputs": {"Y": "amax"}})
    return name, graph(name, t, nodes)


def conv_transposed(name, n, k, hw, c, r):
    """conv_dgrad R x R stride 2: dy [n, k, hw, hw] -> dx [n, c, 2 hw, 2 hw]."""
    pad = (r - 2) // 2
    dy, w, dx = [n, k, hw, hw], [k, c, r, r], [n, c, 2 * hw, 2 * hw]
    t = [{"name": "DY", "uid": 1, "dim": dy, "stride": channels_last(dy)},
         {"name": "W", "uid": 2, "dim": w, "stride": channels_last(w)},
         {"name": "DX", "uid": 3, "dim": dx, "stride": channels_last(dx), "output": True}]
    nodes = [{"name": "dgrad", "op": "conv_dgrad", "dilation": [1, 1], "pre_padding": [pad, pad],
              "post_padding": [pad, pad], "stride": [2, 2], "inputs": {"DY": "DY", "W": "W"}, "outputs": {"DX": "DX"}}]
    return name, graph(name, t, nodes)


def matmul(name, batch, m, n, k, epilogue):
    """(batch x m x k)(batch x k x n), then none, "bias_relu" or "chain" (x 0.125 + bias, GELU, AMAX)."""
    a, b = [batch, m, k], [batch, k, n]
    t = [{"name": "A", "uid": 1, "dim": a, "stride": packed(a)}, {"name": "B", "uid": 2, "dim": b, "stride": packed(b)}]
    nodes = [{"name": "matmul", "op": "matmul", "inputs": {"A": "A", "B": "B"}, "outputs": {"C": "Y" if epilogue == "none" else "matmul::C"}}]
    if epilogue == "none":
        t.append({"name": "Y", "uid": 5, "output": True})
        return name, graph(name, t, nodes)
    t += [{"name": "bias", "uid": 4, "dim": [1, 1, n], "stride": [n, n, 1]}, {"name": "Y", "uid": 5, "output": True},
          {"name": "matmul::C", "virtual": True}, {"name": "bias::OUT", "virtual": True}]
    pw = lambda nm, mode, ins, out: {"name": nm, "op": "pointwise", "mode": mode,
                                     "inputs": {f"IN_{i}": v for i, v in enumerate(ins)}, "outputs": {"OUT": out}}
    if epilogue == "bias_relu":
        nodes += [pw("bias", "ADD", ["matmul::C", "bias"], "bias::OUT"), pw("relu", "RELU_FWD", ["bias::OUT"], "Y")]
        return name, graph(name, t, nodes)
    t += [{"name": "alpha", "uid": 3, "dim": [1, 1, 1], "stride": [1, 1, 1], "data_type": "FLOAT", "value": 0.125},
          {"name": "amax", "uid": 6, "dim": [1, 1, 1], "data_type": "FLOAT", "output": True},
          {"name": "scale::OUT", "virtual": True}]
    nodes += [pw("scale", "MUL", ["matmul::C", "alpha"], "scale::OUT"), pw("bias", "ADD", ["scale::OUT", "bias"], "bias::OUT"),
              pw("gelu", "GELU_FWD", ["bias::OUT"], "Y"),
              {"name": "amax", "op": "reduction", "mode": "AMAX", "inputs": {"X": "Y"}, "outputs": {"Y": "amax"}}]
    return name, graph(name, t, nodes)


def fp8_gemm(name, m, n, k, fmt="FP8_E4M3", fmt_b=None):
    """A [m, k] x B stored [n, k], FP8 (B's format may differ); x descale_a x descale_b, bf16 out, AMAX."""
    scalar = lambda nm, uid: {"name": nm, "uid": uid, "dim": [1, 1, 1], "stride": [1, 1, 1], "data_type": "FLOAT"}
    t = [{"name": "A", "uid": 1, "dim": [1, m, k], "stride": [m * k, k, 1], "data_type": fmt},
         {"name": "B", "uid": 2, "dim": [1, k, n], "stride": [k * n, 1, k], "data_type": fmt_b or fmt},
         scalar("descale_a", 3), scalar("descale_b", 4), {"name": "Y", "uid": 5, "output": True},
         {"name": "amax", "uid": 6, "dim": [1, 1, 1], "data_type": "FLOAT", "output": True},
         {"name": "matmul::C", "virtual": True}, {"name": "da::OUT", "virtual": True}]
    pw = lambda nm, ins, out: {"name": nm, "op": "pointwise", "mode": "MUL",
                               "inputs": {f"IN_{i}": v for i, v in enumerate(ins)}, "outputs": {"OUT": out}}
    nodes = [{"name": "matmul", "op": "matmul", "inputs": {"A": "A", "B": "B"}, "outputs": {"C": "matmul::C"}},
             pw("da", ["matmul::C", "descale_a"], "da::OUT"), pw("db", ["da::OUT", "descale_b"], "Y"),
             {"name": "amax", "op": "reduction", "mode": "AMAX", "inputs": {"X": "Y"}, "outputs": {"Y": "amax"}}]
    return name, graph(name, t, nodes)


def conv_backward(name, op, n, k, hw, c, r):
    """conv_dgrad (DX from DY, W) or conv_wgrad (DW from DY, X): DY [n, k, hw, hw], X / DX
    [n, c, hw, hw], W / DW [k, c, r, r], stride 1, pad r/2, NHWC / KRSC."""
    dy, x, w, pad = [n, k, hw, hw], [n, c, hw, hw], [k, c, r, r], [r // 2] * 2
    other, out = (("W", w), ("DX", x)) if op == "conv_dgrad" else (("X", x), ("DW", w))
    t = [{"name": "DY", "uid": 1, "dim": dy, "stride": channels_last(dy)},
         {"name": other[0], "uid": 2, "dim": other[1], "stride": channels_last(other[1])},
         {"name": out[0], "uid": 3, "dim": out[1], "stride": channels_last(out[1]), "output": True}]
    nodes = [{"name": op, "op": op, "dilation": [1, 1], "pre_padding": pad, "post_padding": pad, "stride": [1, 1],
              "inputs": {"DY": "DY", other[0]: other[0]}, "outputs": {out[0]: out[0]}}]
    return name, graph(name, t, nodes)


def sdpa_backward(name, b, h, s, d):
    """Causal attention's backward: DQ, DK, DV from Q, K, V, O, DO and the forward's STATS."""
    q, st = [b, h, s, d], [b, h, s, 1]
    t = [{"name": n, "uid": i + 1, "dim": q, "stride": packed(q)} for i, n in enumerate(["Q", "K", "V", "O", "DO"])]
    t += [{"name": "STATS", "uid": 6, "dim": st, "stride": packed(st), "data_type": "FLOAT"}]
    t += [{"name": n, "uid": 7 + i, "dim": q, "stride": packed(q), "output": True} for i, n in enumerate(["DQ", "DK", "DV"])]
    ins = {n: n for n in ["Q", "K", "V", "O", "DO", "STATS"]}
    nodes = [{"name": "sdpa_bwd", "op": "sdpa_backward", "attn_scale": d ** -0.5, "causal_mask": True,
              "inputs": ins, "outputs": {"DQ": "DQ", "DK": "DK", "DV": "DV"}}]
    return name, graph(name, t, nodes)


def sdpa(name, b, h, s, d):
    q = [b, h, s, d]
    t = [{"name": n, "uid": i + 1, "dim": q, "stride": packed(q)} for i, n in enumerate("QKV")]
    t += [{"name": "O", "uid": 4, "dim": q, "stride": packed(q), "output": True},
          {"name": "sdpa::STATS", "virtual": True}, {"name": "sdpa::RNG_DUMP", "virtual": True}]
    nodes = [{"name": "sdpa", "op": "sdpa", "attn_scale": d ** -0.5, "causal_mask": True,
              "inputs": {"Q": "Q", "K": "K", "V": "V"}, "outputs": {"O": "O", "STATS": "sdpa::STATS", "RNG_DUMP": "sdpa::RNG_DUMP"}}]
    return name, graph(name, t, nodes)


# bench/default_plan.cpp's bf16 GPU rows, the GELU-chain conv, and FP8 GEMMs (issue #24's row; held
# back as gemm_fp8 until checked on a GPU, so released for the audit below).
WORKLOADS = [
    conv("conv_tutorial_n32c128_56_k256", 32, 128, 56, 256, 3),
    conv("conv_tutorial_gelu", 32, 128, 56, 256, 3, gelu=True),
    conv("conv_tutorial_amax", 32, 128, 56, 256, 3, amax=True),
    conv("rn50_3x3_c64_56_k64", 32, 64, 56, 64, 3),
    conv("rn50_3x3_c256_14_k256", 32, 256, 14, 256, 3),
    conv("rn50_1x1_c256_56_k64", 32, 256, 56, 64, 1),
    conv("rn50_3x3_c128_28_k128", 32, 128, 28, 128, 3),
    conv("rn50_3x3_c512_7_k512", 32, 512, 7, 512, 3),
    conv("rn50_3x3_n8_c64_32_k64", 8, 64, 32, 64, 3),
    conv("rn50_3x3_n1_c64_32_k64", 1, 64, 32, 64, 3),
    conv("mbv2_depthwise_3x3_c144_56", 32, 144, 56, 144, 3, groups=144),
    conv("rn50_stem_7x7s2_c3_224_k64", 32, 3, 224, 64, 7, stride=2),
    conv_transposed("convT_4x4s2_c128to64_64_n8", 8, 128, 64, 64, 4),
    conv("conv3d_3x3x3_c64_16x56_k64_n4", 4, 64, [16, 56, 56], 64, 3),
    matmul("gemm_8192", 1, 8192, 8192, 8192, "none"),
    matmul("gemm_4096_bias_relu", 1, 4096, 4096, 4096, "bias_relu"),
    fp8_gemm("fp8_gemm_8192_descale_amax", 8192, 8192, 8192),
    fp8_gemm("fp8_e5m2_gemm_2048_descale_amax", 2048, 2048, 2048, "FP8_E5M2"),
    fp8_gemm("fp8_e5m2xe4m3_gemm_4096_descale_amax", 4096, 4096, 4096, "FP8_E5M2", "FP8_E4M3"),
    matmul("matmul_8x2048_chain", 8, 2048, 2048, 2048, "chain"),
    matmul("matmul_16x512x1024x512_chain", 16, 512, 512, 1024, "chain"),
    matmul("matmul_16x1024x4096x1024_chain", 16, 1024, 4096, 1024, "chain"),
    sdpa("sdpa_b4h16s1024d64_causal", 4, 16, 1024, 64),
    sdpa("sdpa_b4h16s4096d128_causal", 4, 16, 4096, 128),
    # Training: the backward kernels (wgrad, dgrad, attention backward).
    conv_backward("wgrad_rn50_3x3_c64_56_k64", "conv_wgrad", 32, 64, 56, 64, 3),
    conv_backward("dgrad_rn50_3x3_c256_14_k256", "conv_dgrad", 32, 256, 14, 256, 3),
    sdpa_backward("sdpa_bwd_b4h16s1024d64_causal", 4, 16, 1024, 64),
    sdpa_backward("sdpa_bwd_b4h16s4096d128_causal", 4, 16, 4096, 128),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aot", default="build/dnngraph_aot_gen")
    ap.add_argument("--only", default="", help="workloads whose names contain this")
    ap.add_argument("--keep", default="", help="write the graph files and kernels here (default: a temporary folder)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or tmp
        os.makedirs(out, exist_ok=True)
        files = []
        for name, g in WORKLOADS:
            if args.only in name:
                files.append(os.path.join(out, name + ".json"))
                with open(files[-1], "w") as f:
                    json.dump(g, f, indent=1)
        cmd = [args.aot, "--out-cpp", os.path.join(out, "audit.cpp"), "--out-bin", os.path.join(out, "audit.bin")]
        for f in files:
            cmd += ["--every", os.path.basename(f)]
        return subprocess.call(cmd + files, env=dict(os.environ, DNNGRAPH_UNCHECKED_ENGINES="gemm_fp8"))


if __name__ == "__main__":
    sys.exit(main())
