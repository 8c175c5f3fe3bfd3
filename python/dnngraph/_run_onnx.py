"""``dnngraph run MODEL.onnx``: the console script (dnngraph._cli) hands ONNX models to dnngraph.onnx,
since the C++ program reads graph JSON files only. The same steps as ``run GRAPH.json``: load the
model (on the CPU, or with --device cuda on the GPU, optionally in bf16/fp16 and replayed as one CUDA
graph), run it on seeded random inputs, time it, and check every output against onnxruntime's CPU
provider (when installed), with the exit codes of docs/errors.md:
0 pass, 1 an output disagreed, 2 a model that does not load or run, 64 a usage error."""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Sequence

EXIT_MISMATCH, EXIT_FAILED, EXIT_USAGE = 1, 2, 64
# Options of `dnngraph` and `dnngraph run` that take a value, skipped when looking for the model.
_VALUE_OPTIONS = {"--log-level", "--device", "--seed", "--engines", "--plan", "--iters", "--rtol", "--input-shape",
                  "--fallback", "--precision"}
# The C++ run's tolerances by precision (tools/dnngraph/reference_check.cpp's fp32 one; bf16 and fp16
# as the project's test tolerances, scaled for whole networks).
_DEFAULT_RTOL = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}


def onnx_model_of(args: Sequence[str]) -> str | None:
    """The model path when `args` are ``[options] run [options] PATH.onnx ...``, else None."""
    command = None
    i = 0
    while i < len(args):
        a = args[i]
        if a in _VALUE_OPTIONS:
            i += 2
            continue
        if not a.startswith("-"):
            if command is not None:
                return a if a.endswith(".onnx") else None
            if a != "run":
                return None
            command = a
        i += 1
    return None


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit 2, which here means a failed model
        raise _UsageError(message)


def _parser() -> _Parser:
    p = _Parser(prog="dnngraph run", description="Run an ONNX model with dnngraph.onnx on random inputs, "
                "time it, check it against onnxruntime")
    p.add_argument("command", choices=["run"], help=argparse.SUPPRESS)
    p.add_argument("model", help="ONNX model file (docs/onnx.md)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)")
    p.add_argument("--precision", choices=sorted(_DEFAULT_RTOL), default="float32",
                   help="store the model's float tensors as this type (computed in float32; default: float32)")
    p.add_argument("--tf32", action="store_true", help="float32 convolutions and matmuls may run as TF32")
    p.add_argument("--cuda-graph", action="store_true",
                   help="capture the whole forward pass in one CUDA graph and time its replay (--device cuda)")
    p.add_argument("--seed", type=int, default=1, help="seed of the random inputs (default: 1)")
    p.add_argument("--iters", type=int, default=5, help="timed runs (the median is printed; default: 5)")
    p.add_argument("--no-check", dest="check", action="store_false", help="skip the comparison with onnxruntime")
    p.add_argument("--rtol", type=float, default=None,
                   help="relative tolerance of the check, 0 to 1 (default: " +
                        ", ".join(f"{v:g} for {k}" for k, v in _DEFAULT_RTOL.items()) + ")")
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=D0,D1,...",
                   help="dims for an input's symbolic dims (repeatable)")
    p.add_argument("--fallback", choices=["error", "numpy"], default="error",
                   help="numpy: run the nodes dnngraph cannot lower with NumPy (default: error)")
    p.add_argument("--explain", action="store_true", help="print how dnngraph runs each graph of the model")
    p.add_argument("--log-level", type=int, help="as DNNGRAPH_LOG_LEVEL")
    # Options of `run GRAPH.json` that an ONNX model does not take: refused by name, not mistaken for the model.
    p.add_argument("--engines", help=argparse.SUPPRESS)
    p.add_argument("--plan", help=argparse.SUPPRESS)
    return p


def _input_shapes(specs: Sequence[str]) -> dict[str, list[int]]:
    shapes = {}
    for spec in specs:
        name, sep, dims = spec.partition("=")
        try:
            shapes[name] = [int(d) for d in dims.split(",")]
        except ValueError:
            sep = ""
        if not sep or not name:
            raise _UsageError(f"--input-shape {spec!r} is not NAME=D0,D1,...")
    return shapes


def _random_inputs(session: Any, seed: int) -> dict[str, Any]:
    import numpy as np
    rng = np.random.default_rng(seed)
    feeds = {}
    for v in session.get_inputs():
        if np.issubdtype(v.dtype, np.floating):
            feeds[v.name] = rng.uniform(-1, 1, v.shape).astype(v.dtype)
        elif v.dtype == np.bool_:
            feeds[v.name] = rng.integers(0, 2, v.shape).astype(np.bool_)
        else:  # indices and sizes: small non-negative values stay in range of most models' tables
            feeds[v.name] = rng.integers(0, 2, v.shape).astype(v.dtype)
    return feeds


def _median_min_s(run: Any, iters: int, sync: Any) -> tuple[float, float]:
    run()  # the first run allocates; it is not timed
    sync()
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        run()
        sync()  # a GPU run is timed to its end, not to its enqueueing
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2], times[0]


def _check(path: str, feeds: dict[str, Any], names: list[str], ours: list[Any], rtol: float) -> bool:
    import numpy as np
    try:
        import onnxruntime as ort
    except ImportError:
        print("check against onnxruntime: skipped (pip install onnxruntime)")
        return True
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(names, feeds)
    print("check against onnxruntime (cpu):")
    ok = True
    for name, a, r in zip(names, ours, ref):
        r64, a64 = np.asarray(r).astype(np.float64), np.asarray(a).astype(np.float64)
        if a64.shape != r64.shape:
            print(f"  '{name}' MISMATCH: dims {list(a64.shape)}, onnxruntime's {list(r64.shape)}")
            ok = False
            continue
        peak = max(1.0, float(np.abs(r64).max())) if r64.size else 1.0
        err = float(np.abs(a64 - r64).max() / peak) if r64.size else 0.0
        good = bool(err <= rtol)  # NaN fails
        ok = ok and good
        print(f"  '{name}' max error {err:.3g} of the peak {peak:.3g} (rtol {rtol:g}){'' if good else ' MISMATCH'}")
    return ok


def _check_options(o: argparse.Namespace) -> None:
    for option in ("engines", "plan"):
        if getattr(o, option) is not None:
            raise _UsageError(f"--{option} is for graph JSON files; dnngraph.onnx picks the plans of an ONNX model")
    if o.iters < 1:
        raise _UsageError(f"--iters {o.iters}: at least 1")
    if o.rtol is None:  # TF32 rounds inputs to 10 mantissa bits, as float16 does
        o.rtol = _DEFAULT_RTOL["float16" if o.tf32 and o.precision == "float32" else o.precision]
    if not 0 <= o.rtol <= 1:
        raise _UsageError(f"--rtol {o.rtol}: 0 to 1")
    if o.seed < 0:
        raise _UsageError(f"--seed {o.seed}: at least 0")
    if not os.path.isfile(o.model):
        raise _UsageError(f"model: file does not exist: {o.model}")
    if o.device != "cpu" and o.device != "cuda" and not o.device.startswith("cuda:"):
        raise _UsageError(f"--device {o.device}: cpu, cuda or cuda:N")
    if o.cuda_graph and o.device == "cpu":
        raise _UsageError("--cuda-graph needs --device cuda")


def _load_and_time(o: argparse.Namespace, shapes: dict[str, list[int]]) -> tuple[Any, dict[str, Any], list[str],
                                                                                 list[Any], float, float]:
    import dnngraph.onnx as dgx
    precision = None if o.precision == "float32" else o.precision
    session = dgx.load(o.model, input_shapes=shapes or None, fallback=o.fallback, device=o.device,
                       compute_precision=precision, allow_tf32=o.tf32)
    kinds = list(session.node_kinds.values())
    print(f"model: {o.model} ({len(kinds)} nodes, {len(session.graphs)} dnngraph graphs, "
          f"{kinds.count('numpy')} nodes in NumPy, {kinds.count('array')} layout nodes on {session.arrays.name})")
    print(f"device: {session.handle.device}, precision {o.precision}{' (tf32 allowed)' if o.tf32 else ''}"
          + (f", arrays {session.arrays.name}" if session.arrays.on_gpu else ""))
    if o.explain:
        print(session.explain())
    feeds = _random_inputs(session, o.seed)
    names = [v.name for v in session.get_outputs()]
    if o.cuda_graph:
        session.capture_cuda_graph()
        print("cuda graph: the forward pass is captured and replayed")
    median, least = _median_min_s(lambda: session.run(names, feeds), o.iters, session.arrays.synchronize)
    return session, feeds, names, session.run(names, feeds), median, least


def _run(o: argparse.Namespace) -> int:
    _check_options(o)
    shapes = _input_shapes(o.input_shape)
    if o.log_level is not None:
        os.environ["DNNGRAPH_LOG_LEVEL"] = str(o.log_level)
    try:
        _session, feeds, names, ours, median, least = _load_and_time(o, shapes)
    except Exception as e:  # noqa: BLE001 - a model that does not load or run is exit 2, with its message
        print(f"error: run: {o.model}: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_FAILED
    print(f"time: median {median * 1e3:.3f} ms, min {least * 1e3:.3f} ms over {o.iters} runs")
    if not o.check:
        return 0
    try:
        ok = _check(o.model, feeds, names, ours, o.rtol)
    except Exception as e:  # noqa: BLE001 - onnxruntime refusing the model is not a dnngraph mismatch
        print(f"error: run: onnxruntime could not run {o.model}: {e}", file=sys.stderr)
        return EXIT_FAILED
    print("PASS" if ok else "FAIL")
    return 0 if ok else EXIT_MISMATCH


def main(args: Sequence[str]) -> int:
    """Runs ``dnngraph run MODEL.onnx [options]``; returns the exit code."""
    try:
        return _run(_parser().parse_args(list(args)))
    except _UsageError as e:
        print(f"error: run: {e} (dnngraph run MODEL.onnx --help)", file=sys.stderr)
        return EXIT_USAGE
