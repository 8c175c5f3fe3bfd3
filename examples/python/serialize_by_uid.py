"""Tutorial 5: build a graph once, serialize its plans to bytes, and in a fresh graph (as a later
process would) deserialize them and execute with a variant pack keyed by uid -- no recompilation."""
import os
import tempfile
import time

import numpy as np

import dnngraph
from _common import array, check, pending, setup, sync, torch, workspace

X_UID, W_UID, B_UID, Y_UID = 1, 2, 3, 4


def build_and_save(handle, path, m, k, n):
    g = dnngraph.pygraph(io_data_type=dnngraph.data_type.FLOAT, compute_data_type=dnngraph.data_type.FLOAT,
                         handle=handle)
    X = g.tensor(name="X", dim=[1, m, k], stride=[m * k, k, 1], uid=X_UID)
    W = g.tensor(name="W", dim=[1, k, n], stride=[k * n, n, 1], uid=W_UID)
    B = g.tensor(name="B", dim=[1, 1, n], stride=[n, n, 1], uid=B_UID)
    Y = g.relu(g.bias(g.matmul(X, W), B))
    Y.set_output(True).set_uid(Y_UID)
    t0 = time.perf_counter()
    g.build([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
    print(f"  built in {(time.perf_counter() - t0) * 1e3:.1f} ms: {g.get_plan_name_at_index(0)}")
    blob = g.serialize()
    with open(path, "wb") as f:
        f.write(blob)
    print(f"  serialized {len(blob)} bytes to {path}")


def main():
    handle, on_gpu = setup()
    m, k, n = (2048, 2048, 2048) if on_gpu else (64, 96, 48)
    print(f"serialize and execute by uid on {handle.device}")
    path = os.path.join(tempfile.mkdtemp(), "plan.dnngraph")
    try:
        build_and_save(handle, path, m, k, n)
        with open(path, "rb") as f:
            blob = f.read()
        g = dnngraph.pygraph(handle=handle)  # a fresh graph: nothing declared, nothing built
        t0 = time.perf_counter()
        g.deserialize(handle, blob)
        print(f"  deserialized in {(time.perf_counter() - t0) * 1e3:.1f} ms")
    except (RuntimeError, ValueError) as e:
        if pending(e):
            return
        raise
    rng = np.random.default_rng(4)
    x, w, b = (rng.standard_normal(s, np.float32) for s in ((1, m, k), (1, k, n), (1, 1, n)))
    y = torch.empty((1, m, n), device="cuda") if on_gpu else np.full((1, m, n), np.nan, np.float32)
    pack = {X_UID: array(x, on_gpu), W_UID: array(w, on_gpu), B_UID: array(b, on_gpu), Y_UID: y}
    g.execute(pack, workspace(g, on_gpu))
    sync(on_gpu)
    check("Y", y, np.maximum(x.astype(np.float64) @ w + b, 0), 1e-2 if on_gpu else 1e-4)


if __name__ == "__main__":
    main()
