"""Tutorial 1: a fused conv -> bias -> ReLU in NHWC, checked against a reference and timed
against PyTorch on a GPU."""
import numpy as np

import dnngraph
from _common import (array, check, compare_times, empty_like_dims, io_types, seconds, setup, to_numpy, torch,
                     workspace)


def conv_reference(x, w, pad):
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    y = np.zeros((n, k, h + 2 * pad - r + 1, wd + 2 * pad - s + 1))
    for i in range(r):
        for j in range(s):
            y += np.einsum("nchw,kc->nkhw", xp[:, :, i:i + y.shape[2], j:j + y.shape[3]], w[:, :, i, j])
    return y


def main():
    handle, on_gpu = setup()
    n, c, h, w, k = (32, 64, 56, 56, 128) if on_gpu else (2, 16, 14, 14, 32)
    print(f"fused conv -> bias -> relu on {handle.device}: N={n} C={c} H=W={h} K={k}, NHWC")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, h, w, c), np.float32).transpose(0, 3, 1, 2)  # NCHW dims, NHWC memory
    wt = (rng.standard_normal((k, 3, 3, c), np.float32) * 0.1).transpose(0, 3, 1, 2)
    b = rng.standard_normal((1, k, 1, 1), np.float32)
    half, io = io_types(on_gpu, "float16")
    xs, ws_, bs = array(x, on_gpu, half), array(wt, on_gpu, half), array(b, on_gpu, half)

    g = dnngraph.pygraph(io_data_type=io, intermediate_data_type=dnngraph.data_type.FLOAT,
                         compute_data_type=dnngraph.data_type.FLOAT, handle=handle)
    X, W, B = g.tensor_like(xs, name="X"), g.tensor_like(ws_, name="W"), g.tensor_like(bs, name="B")
    conv = g.conv_fprop(image=X, weight=W, padding=[1, 1], stride=[1, 1], dilation=[1, 1])
    Y = g.relu(input=g.bias(input=conv, bias=B))
    Y.set_output(True)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans(dnngraph.build_plan_policy.HEURISTICS_CHOICE)
    print(f"  plan: {g.get_plan_name_at_index(0)}")

    y = empty_like_dims(Y.get_dim(), Y.get_stride(), on_gpu, np.float16 if on_gpu else np.float32)
    ws = workspace(g, on_gpu)
    pack = {X: xs, W: ws_, B: bs, Y: y}
    g.execute(pack, ws)
    if torch is not None:
        ref = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(to_numpy(xs)).float(),
                                                    torch.from_numpy(to_numpy(ws_)).float(), padding=1)
                         + torch.from_numpy(to_numpy(bs)).float()).numpy()
    else:
        ref = np.maximum(conv_reference(x, wt, 1) + b, 0)
    check("Y", y, ref, 1e-2 if on_gpu else 1e-4)

    if on_gpu:
        ours = seconds(lambda: g.execute(pack, ws), on_gpu)
        theirs = seconds(lambda: torch.relu(torch.nn.functional.conv2d(xs, ws_, padding=1) + bs), on_gpu)
        compare_times(ours, theirs, "fp16 NHWC, fp32 accumulate")


if __name__ == "__main__":
    main()
