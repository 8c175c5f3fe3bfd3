"""dnngraph.onnx on the CPU beside onnxruntime's CPU provider (issue #20's CPU target): the models
of tests/python/onnx_models.py, timed interleaved in one process, or run in a steady loop for a
profiler to attach to.

    PYTHONPATH=build/python python3 bench/onnx_cpu.py [--models resnet50,mobilenet] [--rounds 5] [--runs 20]
    PYTHONPATH=build/python python3 bench/onnx_cpu.py --models mobilenet --loop 20   # then: perf record -p PID

Timing: per model, `--rounds` alternations of a block of dnngraph runs and a block of onnxruntime
runs (`--runs` each, after 3 warm-ups and a 0.5 s pause: onnxruntime's threads spin for a while
after its runs, and a spinning thread takes half of a 2-core machine); the figure is the median
over all runs of a side, with the load average (`/proc/loadavg`) before and after. `--loop S`
builds the sessions, warms them up, prints `READY <pid>` and runs dnngraph alone for S seconds, so
that `perf record -p` sees only steady-state runs (not the model's construction or the build).
`--partitions N` times every partition of N runs (the library's DNNGRAPH_LOG_LEVEL=3 log, host
time around each plan's execute) and prints the medians, largest first, summed by engine, beside
the session's own time: what the graphs spend outside the partitions (Python, the input's layout
copy, the pack) is the difference.
`--layers N` compares the convolutions class by class with onnxruntime's own profiler: N
alternated runs of both (0.5 s apart, as above), onnxruntime's per-node kernel times (it fuses Conv + BatchNorm + ReLU
under other node names, so classes are keyed by input, weight and output shapes) beside the
partition log's times, summed per class, largest difference first.
`--cpu-time` also gives each side's CPU time per run (`perf stat -e task-clock` attached to this
process around one more block of runs per side and round: every thread, spinning included; this
KVM guest exposes no cycle counters)."""
import argparse
import os
import signal
import subprocess
import sys
import time

import numpy as np

PARTITION_LOG = f"/tmp/onnx_cpu_partitions_{os.getpid()}.log"
if "--partitions" in sys.argv or "--layers" in sys.argv:  # read once by the library, when it is loaded
    os.environ["DNNGRAPH_LOG_LEVEL"] = "3"
    os.environ["DNNGRAPH_LOG_FILE"] = PARTITION_LOG

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import dnngraph.onnx as dgx  # noqa: E402
import onnx_models  # noqa: E402

MODELS = {
    "block": lambda rng: (onnx_models.resnet_block(rng, n=1, c=64, hw=56), (1, 64, 56, 56)),
    "resnet50": lambda rng: (onnx_models.resnet50(rng), (1, 3, 224, 224)),
    "mobilenet": lambda rng: (onnx_models.mobilenet_v2(rng), (1, 3, 224, 224)),
}


def load_average():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def timed_runs(fn, runs):
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e3)
    return out


def cpu_ms_per_run(fn, runs):
    """CPU milliseconds (all threads) per run of `fn` over `runs` runs, from perf stat on this process."""
    out = f"/tmp/onnx_cpu_perf_{os.getpid()}.csv"
    perf = subprocess.Popen(["perf", "stat", "-x,", "-e", "task-clock", "-p", str(os.getpid()), "-o", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)  # perf attaches to every thread meanwhile (a sleeping process counts nothing)
    for _ in range(runs):
        fn()
    perf.send_signal(signal.SIGINT)
    perf.wait()
    ms = float("nan")
    with open(out) as f:
        for line in f:
            fields = line.strip().split(",")
            if len(fields) > 2 and fields[2].startswith("task-clock"):
                ms = float(fields[0])
    os.remove(out)
    return ms / runs


def compare(name, model, x, args):
    import onnxruntime as ort
    ort_session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    session = dgx.load(model, layout_in_numpy=args.layout_in_numpy)
    ref = ort_session.run(None, x)[0]
    err = float(np.abs(session.run(None, x)[0] - ref).max() / max(1.0, np.abs(ref).max()))
    ours, theirs, loads = [], [], [load_average()]
    cpu = ([], [])
    for _ in range(args.rounds):
        sides = ((lambda: session.run(None, x), ours, cpu[0]), (lambda: ort_session.run(None, x), theirs, cpu[1]))
        for fn, sink, cpu_ms in sides:
            time.sleep(0.5)
            timed_runs(fn, 3)
            sink += timed_runs(fn, args.runs)
            if args.cpu_time:
                cpu_ms.append(cpu_ms_per_run(fn, args.runs))
    loads.append(load_average())
    d, o = float(np.median(ours)), float(np.median(theirs))
    print(f"{name}: dnngraph {d:.2f} ms (min {min(ours):.2f}), onnxruntime {o:.2f} ms (min {min(theirs):.2f}), "
          f"ort/dnngraph {o / d:.2f}x; load {loads[0]} -> {loads[1]}; max err / peak {err:.1e}", flush=True)
    if args.cpu_time:
        dc, oc = float(np.median(cpu[0])), float(np.median(cpu[1]))
        print(f"{name}: CPU time per run dnngraph {dc:.2f} ms, onnxruntime {oc:.2f} ms", flush=True)


def partition_times(name, model, x, runs):
    """Median host ms per partition over `runs` runs, from the library's DNNGRAPH_LOG_LEVEL=3 log."""
    import re
    session = dgx.load(model)
    timed_runs(lambda: session.run(None, x), 3)
    start = os.path.getsize(PARTITION_LOG)
    wall = timed_runs(lambda: session.run(None, x), runs)
    times = median_partition_ms(start, runs)
    nodes = dict(re.findall(r"^partition (\d+) \([^)]*\): (.*)$", "\n".join(g.explain() for g in session.graphs), re.M))
    med = sorted(((ms, i, label) for (i, label), ms in times.items()), reverse=True)
    total = sum(t for t, _, _ in med)
    print(f"{name}: session {np.median(wall):.2f} ms, partitions {total:.2f} ms ({len(med)}), load {load_average()}")
    by_engine = {}
    for t, _, label in med:
        by_engine[label.split("[")[0]] = by_engine.get(label.split("[")[0], 0.0) + t
    for engine, t in sorted(by_engine.items(), key=lambda kv: -kv[1]):
        print(f"  {engine}: {t:.2f} ms")
    for t, i, label in med[:15]:
        print(f"  {t:.3f} ms  partition {i} {label}: {nodes.get(str(i), '')[:90]}")


def median_partition_ms(start, runs):
    """{(partition index, plan name): median host ms over the last `runs` executes} from the
    library's DNNGRAPH_LOG_LEVEL=3 log after byte `start`."""
    import re
    with open(PARTITION_LOG) as f:
        f.seek(start)
        found = re.findall(r"execute: partition (\d+) (\S+) host ms ([0-9.eE+-]+)", f.read())
    times = {}
    for i, label, ms in found:
        times.setdefault((int(i), label), []).append(float(ms))
    return {key: float(np.median(v[-runs:])) for key, v in times.items()}


def conv_classes(model):
    """{Conv node name: (input dims, weight dims, output dims)} by ONNX shape inference."""
    import onnx
    inferred = onnx.shape_inference.infer_shapes(model).graph
    dims = {v.name: tuple(d.dim_value for d in v.type.tensor_type.shape.dim)
            for v in list(inferred.value_info) + list(inferred.input) + list(inferred.output)}
    dims.update({t.name: tuple(t.dims) for t in inferred.initializer})
    return {n.name: (dims.get(n.input[0]), dims.get(n.input[1]), dims.get(n.output[0]))
            for n in inferred.node if n.op_type == "Conv"}


def blocked_key(shapes):
    """A conv class's (input, weight, output) shapes with channel counts rounded up to 16: onnxruntime's
    NCHWc convolutions report their blocked tensors (24 channels as 32), ours the model's."""
    up = lambda c: -(-c // 16) * 16  # noqa: E731
    xin, w, y = (list(s) for s in shapes)
    xin[1], y[1], w[0], w[1] = up(xin[1]), up(y[1]), up(w[0]), up(w[1])
    return tuple(xin), tuple(w), tuple(y)


def layer_classes(name, model, x, runs):
    """Per conv class: dnngraph's partitions (keyed by their first node) against onnxruntime's nodes."""
    import json
    import re
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.enable_profiling = True
    opts.profile_file_prefix = f"/tmp/onnx_cpu_ort_{os.getpid()}"
    ort_session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    session = dgx.load(model)
    for _ in range(3):
        ort_session.run(None, x)
        session.run(None, x)
    start = os.path.getsize(PARTITION_LOG)
    for _ in range(runs):
        ort_session.run(None, x)
        time.sleep(0.5)  # onnxruntime's threads spin on after its run, taking a core from ours
        session.run(None, x)
    ours = {i: ms for (i, _), ms in median_partition_ms(start, runs).items()}
    with open(ort_session.end_profiling()) as f:
        events = [e for e in json.load(f) if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    theirs = {}
    for e in events:
        if e["args"].get("op_name") != "Conv":
            continue
        shapes = [tuple(next(iter(d.values()))) for d in e["args"]["input_type_shape"][:2] + e["args"]["output_type_shape"][:1]]
        theirs.setdefault(blocked_key(shapes), {}).setdefault(e["name"], []).append(e["dur"] / 1e3)
    classes = conv_classes(model)
    first_nodes = re.findall(r"^partition (\d+) \([^)]*\): ([^,\n]+)", "\n".join(g.explain() for g in session.graphs), re.M)
    rows = {}
    for index, node in first_nodes:
        key = classes.get(node.strip())
        if key and int(index) in ours:
            ms, count = rows.get(key, (0.0, 0))
            rows[key] = (ms + ours[int(index)], count + 1)
    print(f"{name}: conv classes over {runs} alternated runs (ms per forward), load {load_average()}")
    table = []
    for key, (ms, count) in rows.items():
        ort_ms = sum(float(np.median(v[-runs:])) for v in theirs.get(blocked_key(key), {}).values())
        table.append((ms - ort_ms, ms, ort_ms, count, key))
    for diff, ms, ort_ms, count, (xin, w, y) in sorted(table, reverse=True):
        print(f"  {diff:+.3f}  dnngraph {ms:.3f}  onnxruntime {ort_ms:.3f}  x{count}  in {xin} weight {w} out {y}")


def loop(models, seconds, layout_in_numpy):
    sessions = []
    for model, x in models:
        s = dgx.load(model, layout_in_numpy=layout_in_numpy)
        timed_runs(lambda: s.run(None, x), 5)
        sessions.append((s, x))
    print(f"READY {os.getpid()}", flush=True)
    until, count = time.perf_counter() + seconds, 0
    while time.perf_counter() < until:
        for s, x in sessions:
            s.run(None, x)
            count += 1
    print(f"DONE {count} runs", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet50,mobilenet")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--loop", type=float, default=0.0, help="run dnngraph alone for this many seconds")
    ap.add_argument("--layout-in-numpy", action="store_true")
    ap.add_argument("--partitions", type=int, default=0, help="time each partition over this many runs")
    ap.add_argument("--cpu-time", action="store_true", help="also CPU time per run (perf stat task-clock)")
    ap.add_argument("--layers", type=int, default=0, help="conv classes against onnxruntime's profiler, this many runs")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    models = []
    for name in args.models.split(","):
        model, shape = MODELS[name](rng)
        models.append((name, model, {"x": rng.uniform(-1, 1, shape).astype(np.float32)}))
    if args.partitions > 0:
        for name, model, x in models:
            partition_times(name, model, x, args.partitions)
        return
    if args.layers > 0:
        for name, model, x in models:
            layer_classes(name, model, x, args.layers)
        return
    if args.loop > 0:
        loop([(m, x) for _, m, x in models], args.loop, args.layout_in_numpy or None)
        return
    for name, model, x in models:
        compare(name, model, x, args)


if __name__ == "__main__":
    main()
