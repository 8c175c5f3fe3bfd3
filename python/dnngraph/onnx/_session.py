"""The session: the model's nodes classified (lowered to dnngraph, run by the array library as
layout ops, run with NumPy under fallback="numpy", or reported), cut into steps (each run of
dnngraph nodes one pygraph, built at load), the values between steps placed in one arena, and
run() calling the steps in order, or replaying them as one captured CUDA graph."""
import contextlib
import dataclasses

import dnngraph
from . import _arena, _model, _numpy_ops, _rewrite, _torch_ops
from ._arrays import TorchArrays, backend_for, dtype_name
from ._lower import PRECISIONS, Lowering, Unsupported, image_values
from ._ops_elementwise import TRANSLATORS as _ELEMENTWISE
from ._ops_nn import TRANSLATORS as _NN
from ._steps import LAYOUT_OPS, ArrayStep, BuildContext, HostStep, Segment, TorchStep, lower_node, node_name

TRANSLATORS = {**_ELEMENTWISE, **_NN}
FALLBACKS = ("error", "numpy", "torch")
OUTPUT_DEVICES = ("cpu", "cuda")


@dataclasses.dataclass(frozen=True)
class Options:
    """How load() imports a model (docs/onnx.md says what each one does and what it costs)."""
    fallback: str = "error"            # "error": refuse what dnngraph cannot run; "numpy"/"torch": run it so
    fold_batchnorm: bool = True        # BatchNormalization after a constant-weight Conv into the conv
    channels_last: bool = True         # 4-D tensors with NHWC strides inside the graphs
    fuse_attention: bool = True        # MatMul-Softmax-MatMul to one sdpa
    layout_in_numpy: bool | None = None  # layout ops on the array library between graphs (None: on CUDA only)
    compute_precision: str | None = None  # "bfloat16" / "float16": float tensors stored so (None: the model's)
    output_device: str = "cpu"         # run()'s default: "cpu" NumPy results, "cuda" device arrays
    arrays: str | None = None          # the array library of a CUDA session: "torch", "cupy" (None: torch if present)
    allow_tf32: bool = False           # FLOAT convolutions and matmuls may round their inputs to TF32

    def check(self):
        """Raises ValueError naming the option that has a value outside its choices."""
        if self.fallback not in FALLBACKS:
            raise ValueError(f"onnx.load: fallback must be one of {FALLBACKS}; got {self.fallback!r}")
        if self.compute_precision is not None and self.compute_precision not in PRECISIONS:
            raise ValueError(f"onnx.load: compute_precision must be None or one of {PRECISIONS}; "
                             f"got {self.compute_precision!r}")
        if self.output_device not in OUTPUT_DEVICES:
            raise ValueError(f"onnx.load: output_device must be one of {OUTPUT_DEVICES}; got {self.output_device!r}")


class UnsupportedModelError(ValueError):
    """The model has nodes this importer cannot run; `.problems` lists (node, op, reason)."""

    def __init__(self, problems):
        self.problems = list(problems)
        lines = [f"  node '{n}' ({op}): {why}" for n, op, why in self.problems]
        super().__init__(f"onnx: {len(lines)} node(s) cannot run on dnngraph:\n" + "\n".join(lines))


def _fallback_kind(node, prepared, options):
    """Where a node dnngraph refuses runs under the fallback: 'torch', 'numpy' or None."""
    if options.fallback == "torch" and _torch_ops.evaluator(node, prepared) is not None:
        return "torch"
    if options.fallback in ("numpy", "torch") and node.op_type in _numpy_ops.EVALUATORS:
        return "numpy"
    return None


def classify(prepared, handle, options, layout_in_arrays, precision):
    """'dnngraph', 'array', 'torch' or 'numpy' per node, and the problems, found on a throwaway graph."""
    probe = Lowering(prepared, handle, "probe", precision=precision)
    kinds, problems = [], list(prepared.problems)
    for node in prepared.nodes:
        static = node.output and node.output[0] in prepared.values
        default_domain = node.domain in ("", "ai.onnx")
        if layout_in_arrays and node.op_type in LAYOUT_OPS and default_domain and static:
            kinds.append("array")
        elif (options.fallback == "torch" and node.op_type in _torch_ops.NO_CUDA_ENGINE and default_domain
              and _torch_ops.evaluator(node, prepared) is not None):
            kinds.append("torch")
        else:
            reason = lower_node(probe, node, TRANSLATORS, _rewrite.ATTENTION)
            if reason is None:
                kinds.append("dnngraph")
                continue
            kinds.append(_fallback_kind(node, prepared, options))
            if kinds[-1] is None:
                problems.append((node_name(node), node.op_type, reason))
        for out in node.output:  # later nodes see the outputs as inputs, so their problems are found too
            if out and out in prepared.values and out not in probe.tensors:
                try:
                    probe.declare_input(out)
                except Unsupported:
                    pass
    return kinds, problems


class InferenceSession:
    """Runs an ONNX model on dnngraph: run(output_names, {input_name: array}) -> [arrays]."""

    def __init__(self, model, handle=None, input_shapes=None, options=Options(), device=None, kernel_cache=None):
        options.check()
        self.options = options
        self.handle = handle if handle is not None else dnngraph.create_handle(device or "cpu")
        if options.output_device == "cuda" and not self.handle.is_cuda:
            raise ValueError("onnx.load: output_device='cuda' needs a CUDA session (device='cuda' or a CUDA handle)")
        self.arrays = backend_for(self.handle, options.arrays)
        if options.fallback == "torch" and not isinstance(self.arrays, TorchArrays):
            raise ValueError(f"onnx.load: fallback='torch' needs a CUDA session on PyTorch arrays; this one runs on "
                             f"{self.handle.device} with {self.arrays.name}")
        self.precision = options.compute_precision
        self._p = _model.prepare(model, input_shapes)
        self.channels_last = options.channels_last
        self.folded_pads = _rewrite.fold_pad_into_conv(self._p)
        self.folded_batchnorms = _rewrite.fold_batchnorm_into_conv(self._p) if options.fold_batchnorm else 0
        self.fused_attentions = _rewrite.fuse_attention(self._p) if options.fuse_attention else 0
        in_arrays = self.handle.is_cuda if options.layout_in_numpy is None else options.layout_in_numpy
        kinds, problems = classify(self._p, self.handle, options, in_arrays, self.precision)
        if problems:
            raise UnsupportedModelError(problems)
        self.node_kinds = {node_name(n): k for n, k in zip(self._p.nodes, kinds)}
        ctx = BuildContext(self._p, self.handle, self.arrays, self.channels_last, self.precision, TRANSLATORS,
                           _rewrite.ATTENTION, UnsupportedModelError, kernel_cache, options.allow_tf32,
                           image_values(self._p))
        self._steps = self._cut(kinds, ctx)
        self._place_values()
        self._replay = None

    def _cut(self, kinds, ctx):
        runs, current = [], []
        for node, kind in zip(self._p.nodes, kinds):
            if kind in ("numpy", "array", "torch"):
                if current:
                    runs.append(current)
                runs.append((node, kind))
                current = []
            else:
                current.append(node)
        if current:
            runs.append(current)
        steps, later = [], set(self._p.outputs)
        for i in reversed(range(len(runs))):  # what each run must hand on: what the runs after it read
            item = runs[i]
            if isinstance(item, list):
                steps.append(Segment(ctx, item, set(later), i))
                later.update(n for node in item for n in node.input)
            else:
                node, kind = item
                if kind == "array":
                    steps.append(ArrayStep(node, self._p))
                elif kind == "torch":
                    steps.append(TorchStep(node, _torch_ops.evaluator(node, self._p), _torch_ops.inputs(node),
                                           self._p.values[node.output[0]].shape))
                else:
                    steps.append(HostStep(node, self._p))
                later.update(node.input)
        return steps[::-1]

    def _place_values(self):
        """One arena for every segment output, sized by their lifetimes; one shared workspace."""
        root, last, produced = {}, {}, []
        for i, step in enumerate(self._steps):
            for name in step.reads():
                r = root.get(name, name)
                last[r] = max(last.get(r, i), i)
            if isinstance(step, Segment):
                produced += [(name, i) for name in step.outputs]
                root.update({a: root.get(s, s) for a, s in step.aliases.items()})
            elif isinstance(step, ArrayStep):  # a view keeps its source's bytes in use
                root[step.node.output[0]] = root.get(step.node.input[0], step.node.input[0])
        for name in self._p.outputs:
            last[root.get(name, name)] = len(self._steps)
        seg_of = {name: s for s in self._steps if isinstance(s, Segment) for name in s.outputs}
        lifetimes = [_arena.Lifetime(n, seg_of[n].output_bytes(n), i, last.get(n, i)) for n, i in produced]
        offsets, self.arena_bytes = _arena.plan(lifetimes)
        self.arena = self.arrays.empty_bytes(self.arena_bytes)
        self.workspace_bytes = max([s.workspace_size for s in self._steps if isinstance(s, Segment)], default=0)
        self.workspace = self.arrays.empty_bytes(self.workspace_bytes)
        for s in self._steps:
            if isinstance(s, Segment):
                s.bind({n: self.arrays.view(self.arena, offsets[n], shape, store, strides)
                        for n, (_t, shape, strides, store) in s.outputs.items()}, self.workspace)

    @property
    def graphs(self):
        """The pygraphs the model was cut into (explain() on each says how dnngraph runs it)."""
        return [s.graph for s in self._steps if isinstance(s, Segment) and s.outputs]

    @property
    def steps(self):
        """What run() does in order: ("graph", index), or ("array" | "torch" | "numpy", node name)."""
        out = []
        for s in self._steps:
            if isinstance(s, Segment):
                if s.outputs:
                    out.append(("graph", s.index))
            else:
                kind = {ArrayStep: "array", TorchStep: "torch"}.get(type(s), "numpy")
                out.append((kind, node_name(s.node)))
        return out

    def explain(self):
        """What run() does, step by step: each pygraph's explain() (its partitions and engines) and
        each step run by the array library, torch or NumPy, by node name and op."""
        lines = [f"onnx session on {self.handle.device} ({self.arrays.name} arrays, precision "
                 f"{self.precision or 'of the model'}): {len(self._steps)} steps, arena {self.arena_bytes} bytes, "
                 f"workspace {self.workspace_bytes} bytes"]
        for i, s in enumerate(self._steps):
            if isinstance(s, Segment):
                if s.outputs:
                    lines += [f"step {i}: dnngraph graph {s.index} ({len(s.outputs)} outputs)", s.graph.explain()]
                continue
            kind = {ArrayStep: f"{self.arrays.name} layout op", TorchStep: "torch"}.get(type(s), "NumPy on the host")
            lines.append(f"step {i}: node '{node_name(s.node)}' ({s.node.op_type}) by {kind}")
        return "\n".join(lines)

    def get_inputs(self):
        """The model's runtime inputs (name, shape, dtype), as onnxruntime's get_inputs()."""
        return [self._p.values[n] for n in self._p.inputs]

    def get_outputs(self):
        """The model's outputs (name, shape, dtype), as onnxruntime's get_outputs()."""
        return [self._p.values.get(n, _model.Value(n, None, None)) for n in self._p.outputs]

    def _feed(self, feeds):
        env = {}
        for name in self._p.inputs:
            if name not in feeds:
                raise ValueError(f"onnx: run() was not given the model's input '{name}'")
            a, want = self.arrays.accept(feeds[name]), self._p.values[name]
            have = self.arrays.storage_of(a)
            if tuple(a.shape) != want.shape or have != dtype_name(want.dtype):
                raise ValueError(f"onnx: input '{name}' is {have}{list(a.shape)}; the session was loaded for "
                                 f"{want.dtype}{list(want.shape)}")
            env[name] = a
        unknown = sorted(set(feeds) - set(self._p.inputs))
        if unknown:
            raise ValueError(f"onnx: run() was given {unknown}, which are not inputs of the model "
                             f"(inputs: {self._p.inputs})")
        return env

    @contextlib.contextmanager
    def _on_stream(self):
        """The handle runs on the array library's current stream (torch's or CuPy's) meanwhile."""
        if not self.arrays.on_gpu:
            yield
            return
        before = dnngraph.get_stream(self.handle)
        dnngraph.set_stream(self.handle, self.arrays.stream())
        try:
            yield
        finally:
            dnngraph.set_stream(self.handle, before)

    def _forward(self, env):
        with self._on_stream():
            for step in self._steps:
                step.run(env, self.arrays, self._p.constants)

    def _result(self, env, name):
        """A model output as the model's dtype (on the session's device)."""
        value = env[name] if name in env else self._p.constants[name]
        return self.arrays.convert(self.arrays.accept(value), dtype_name(self._p.values[name].dtype))

    def _output_names(self, output_names):
        return list(output_names) if output_names else list(self._p.outputs)

    def run(self, output_names, input_feed, *, output_device=None):
        """The outputs named (all of the model's for None) for `input_feed` {input name: array}.
        output_device: "cpu" (NumPy arrays, C-contiguous) or "cuda" (new device arrays of the
        session's array library); None takes the session's output_device option."""
        where = output_device or self.options.output_device
        if where not in OUTPUT_DEVICES or (where == "cuda" and not self.arrays.on_gpu):
            raise ValueError(f"onnx: output_device {where!r}: this session on {self.handle.device} returns 'cpu'"
                             + (" or 'cuda'" if self.arrays.on_gpu else "") + " results")
        names = self._output_names(output_names)
        if self._replay is not None:
            results = self._replayed(input_feed, names)
        else:
            env = self._feed(input_feed)
            self._forward(env)
            not_kept = [n for n in names if n not in env and n not in self._p.constants]
            if not_kept:
                raise ValueError(f"onnx: {not_kept} are not outputs of the model (outputs: {self._p.outputs})")
            results = [self._result(env, n) for n in names]
        if where == "cpu":
            return [self.arrays.to_host(r) for r in results]
        return [self.arrays.contiguous_copy(r) for r in results]

    # -- CUDA graphs ------------------------------------------------------------------------
    def capture_cuda_graph(self):
        """Captures the whole forward pass (input conversion, every pygraph's execute, the layout
        steps, output conversion) in one CUDA graph; later run() calls copy their inputs into the
        captured buffers and replay it. Needs a CUDA session on PyTorch (its CUDAGraph and memory
        pool). Raises RuntimeError for a CPU or CuPy session, ValueError naming the NumPy steps or
        the graphs with a partition on `ref` (which stages through the host and cannot be captured)."""
        if not isinstance(self.arrays, TorchArrays):
            raise RuntimeError(f"onnx: capture_cuda_graph needs a CUDA session on PyTorch; this one runs on "
                               f"{self.handle.device} with {self.arrays.name} arrays")
        host = [node_name(s.node) for s in self._steps if isinstance(s, HostStep)]
        if host:
            raise ValueError(f"onnx: capture_cuda_graph: nodes {host} run with NumPy on the host (fallback="
                             "'numpy'), which a CUDA graph cannot hold")
        native = dnngraph.behavior_note.SUPPORTS_CUDA_GRAPH_NATIVE_API
        on_ref = [s.index for s in self._steps if isinstance(s, Segment) and s.outputs
                  and native not in s.graph.get_behavior_notes()]
        if on_ref:
            raise ValueError(f"onnx: capture_cuda_graph: dnngraph graphs {on_ref} have a partition on the ref "
                             "engine, which stages through the host (explain() names it)")
        torch, device = self.arrays.torch, self.arrays.device
        static_in = {n: torch.empty(self._p.values[n].shape, dtype=self.arrays.dtypes[str(self._p.values[n].dtype)],
                                    device=device).normal_() for n in self._p.inputs}
        static_out = {}

        def forward():
            env = dict(static_in)
            self._forward(env)
            static_out.update({n: self._result(env, n) for n in self._p.outputs})

        replay = self.arrays.capture(forward)
        self._replay = (replay, static_in, static_out)

    def _replayed(self, feeds, names):
        replay, static_in, static_out = self._replay
        env = self._feed(feeds)
        for name, buf in static_in.items():
            buf.copy_(env[name])
        missing = [n for n in names if n not in static_out]
        if missing:
            raise ValueError(f"onnx: {missing} are not outputs of the model (outputs: {self._p.outputs})")
        replay()
        return [static_out[n] for n in names]
