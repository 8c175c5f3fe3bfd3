"""The session: the model's nodes classified (lowered to dnngraph, run with NumPy under
fallback="numpy", or reported), cut into runs of dnngraph nodes, each run built as one pygraph
at load (dnngraph partitions it across engines), and run() calling them in order."""
import dataclasses

import numpy as np

import dnngraph
from . import _model, _numpy_ops, _rewrite
from ._lower import Lowering, Unsupported, data_type, dims, empty_in_layout, in_layout
from ._ops_elementwise import TRANSLATORS as _ELEMENTWISE
from ._ops_nn import TRANSLATORS as _NN

TRANSLATORS = {**_ELEMENTWISE, **_NN}
FALLBACKS = ("error", "numpy")


@dataclasses.dataclass(frozen=True)
class Options:
    """How load() imports a model (docs/onnx.md says what each one does and what it costs)."""
    fallback: str = "error"            # "error": refuse what dnngraph cannot run; "numpy": run it with NumPy
    fold_batchnorm: bool = True        # BatchNormalization after a constant-weight Conv into the conv
    channels_last: bool = True         # 4-D tensors with NHWC strides inside the graphs
    fuse_attention: bool = True        # MatMul-Softmax-MatMul to one sdpa
    layout_in_numpy: bool = False      # Reshape/Flatten/Squeeze/Unsqueeze/Transpose with NumPy between graphs

    def check(self):
        if self.fallback not in FALLBACKS:
            raise ValueError(f"onnx.load: fallback must be one of {FALLBACKS}; got {self.fallback!r}")


class UnsupportedModelError(ValueError):
    """The model has nodes this importer cannot run; `.problems` lists (node, op, reason)."""

    def __init__(self, problems):
        self.problems = list(problems)
        lines = [f"  node '{n}' ({op}): {why}" for n, op, why in self.problems]
        super().__init__(f"onnx: {len(lines)} node(s) cannot run on dnngraph:\n" + "\n".join(lines))


def node_name(node):
    return node.name or f"{node.op_type}->{node.output[0]}"


def _lower_node(L, node):
    """Lowers one node; the reason it cannot be, or None."""
    # The rewrites' own nodes are keyed "domain.op", so ONNX's ops of the same name do not reach them.
    default_domain = node.domain in ("", "ai.onnx")
    if not default_domain and (node.domain, node.op_type) != _rewrite.ATTENTION:
        return f"domain '{node.domain}' is not ONNX's default domain"
    fn = TRANSLATORS.get(node.op_type if default_domain else f"{node.domain}.{node.op_type}")
    if fn is None:
        return f"dnngraph has no op for ONNX's {node.op_type}"
    try:
        fn(L, node, _numpy_ops.attributes(node))
    except Unsupported as e:
        return str(e)
    except (ValueError, RuntimeError) as e:  # the library refused the op's shapes or attributes
        return f"dnngraph: {e}"
    return None


# Ops that only move or relabel elements: with layout_in_numpy they run as NumPy views (and one
# copy where the next graph needs it) between dnngraph graphs, where dnngraph copies them on its
# reference engine.
LAYOUT_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose"}


def classify(prepared, handle, options):
    """'dnngraph' or 'numpy' per node, and the problems, found on a throwaway graph."""
    probe = Lowering(prepared, handle, "probe")
    kinds, problems = [], list(prepared.problems)
    for node in prepared.nodes:
        if options.layout_in_numpy and node.op_type in LAYOUT_OPS and node.domain in ("", "ai.onnx"):
            kinds.append("numpy")
        else:
            reason = _lower_node(probe, node)
            if reason is None:
                kinds.append("dnngraph")
                continue
            if options.fallback == "numpy" and node.op_type in _numpy_ops.EVALUATORS:
                kinds.append("numpy")
            else:
                kinds.append(None)
                problems.append((node_name(node), node.op_type, reason))
        for out in node.output:  # later nodes see the outputs as inputs, so their problems are found too
            if out and out in prepared.values and out not in probe.tensors:
                try:
                    probe.declare_input(out)
                except Unsupported:
                    pass
    return kinds, problems


class _Segment:
    """One pygraph: its runtime inputs and outputs by ONNX name, constants, workspace."""

    def __init__(self, prepared, handle, nodes, needed, index, channels_last):
        L = Lowering(prepared, handle, f"onnx:{index}", channels_last)
        self.channels_last = channels_last
        for node in nodes:
            reason = _lower_node(L, node)
            if reason is not None:
                raise UnsupportedModelError([(node_name(node), node.op_type, reason)])
        producer = {o: node_name(node) for node in nodes for o in node.output if o}
        produced = set(producer)
        self.graph, self.bound, self.inputs = L.graph, L.bound, L.inputs
        self.aliases, self.outputs = {}, {}
        by_id = {id(t): n for n, t in list(L.inputs.items())}
        by_id.update({id(t): n for n, t in L.tensors.items() if n not in produced})
        for name in sorted(produced & needed):
            t = L.tensors[name]
            if id(t) in by_id:  # Identity of an input or a constant: no op produces it
                self.aliases[name] = by_id[id(t)]
                continue
            shape = dims(prepared.values[name].shape)
            t.set_output(True)
            t.set_stride(L.strides(shape))
            t.set_data_type(data_type(prepared.values[name].dtype, f"output '{name}'"))
            self.outputs[name] = (t, prepared.values[name])
        self.workspace = None
        if self.outputs:
            try:
                self.graph.build([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
            except (ValueError, RuntimeError) as e:  # the library's message names the node (its ONNX name)
                err = type(e)(f"onnx: building dnngraph graph {index} of the model: {e}")
                if hasattr(e, "code"):
                    err.code = e.code
                raise err from e
            for name, (t, v) in self.outputs.items():
                if list(t.get_dim()) != dims(v.shape):
                    raise ValueError(f"onnx: value '{name}' (node '{producer[name]}'): dnngraph made dims "
                                     f"{list(t.get_dim())}, ONNX's shape inference {list(v.shape)}")
            self.workspace = np.empty(max(self.graph.get_workspace_size(), 1), np.uint8)

    def run(self, env, constants):
        pack = dict(self.bound)
        for name, t in self.inputs.items():
            pack[t] = in_layout(np.asarray(env[name] if name in env else constants[name]), self.channels_last)
        results = {}
        for name, (t, v) in self.outputs.items():
            results[name] = pack[t] = empty_in_layout(v.shape, v.dtype, self.channels_last)
        if self.outputs:
            self.graph.execute(pack, self.workspace)
        env.update(results)
        for name, src in self.aliases.items():
            env[name] = env[src] if src in env else constants[src]


class InferenceSession:
    """Runs an ONNX model on dnngraph: run(output_names, {input_name: array}) -> [np.ndarray]."""

    def __init__(self, model, handle=None, input_shapes=None, options=Options()):
        options.check()
        self.options = options
        self.handle = handle if handle is not None else dnngraph.create_handle("cpu")
        if self.handle.is_cuda:
            raise ValueError("onnx.load: this version runs sessions on the CPU handle (its constants and "
                             "results are NumPy arrays); pass handle=None or dnngraph.create_handle('cpu')")
        self._p = _model.prepare(model, input_shapes)
        self.channels_last = options.channels_last
        self.folded_pads = _rewrite.fold_pad_into_conv(self._p)
        self.folded_batchnorms = _rewrite.fold_batchnorm_into_conv(self._p) if options.fold_batchnorm else 0
        self.fused_attentions = _rewrite.fuse_attention(self._p) if options.fuse_attention else 0
        kinds, problems = classify(self._p, self.handle, options)
        if problems:
            raise UnsupportedModelError(problems)
        self.node_kinds = {node_name(n): k for n, k in zip(self._p.nodes, kinds)}
        self._items = self._cut(kinds)

    def _cut(self, kinds):
        runs, current = [], []
        for node, kind in zip(self._p.nodes, kinds):
            if kind == "numpy":
                if current:
                    runs.append(current)
                runs.append(node)
                current = []
            else:
                current.append(node)
        if current:
            runs.append(current)
        items, later = [], set(self._p.outputs)
        for i in reversed(range(len(runs))):  # what each run must hand on: what the runs after it read
            item = runs[i]
            if isinstance(item, list):
                items.append(_Segment(self._p, self.handle, item, set(later), i, self.channels_last))
            else:
                items.append(item)
            later.update(n for node in (item if isinstance(item, list) else [item]) for n in node.input)
        return items[::-1]

    @property
    def graphs(self):
        """The pygraphs the model was cut into (explain() on each says how dnngraph runs it)."""
        return [item.graph for item in self._items if isinstance(item, _Segment) and item.outputs]

    def get_inputs(self):
        return [self._p.values[n] for n in self._p.inputs]

    def get_outputs(self):
        return [self._p.values.get(n, _model.Value(n, None, None)) for n in self._p.outputs]

    def _feed(self, feeds):
        env = {}
        for name in self._p.inputs:
            if name not in feeds:
                raise ValueError(f"onnx: run() was not given the model's input '{name}'")
            a = feeds[name]
            if not isinstance(a, np.ndarray) and hasattr(a, "__dlpack__"):
                a = np.from_dlpack(a)
            a, want = np.asarray(a), self._p.values[name]
            if tuple(a.shape) != want.shape or a.dtype != want.dtype:
                raise ValueError(f"onnx: input '{name}' is {a.dtype}{list(a.shape)}; the session was loaded for "
                                 f"{want.dtype}{list(want.shape)}")
            env[name] = a
        unknown = sorted(set(feeds) - set(self._p.inputs))
        if unknown:
            raise ValueError(f"onnx: run() was given {unknown}, which are not inputs of the model "
                             f"(inputs: {self._p.inputs})")
        return env

    def run(self, output_names, input_feed):
        env = self._feed(input_feed)
        constants = self._p.constants
        for item in self._items:
            if isinstance(item, _Segment):
                item.run(env, constants)
            else:
                args = [(env[n] if n in env else constants[n]) if n else None for n in item.input]
                try:
                    outputs = _numpy_ops.evaluate(item, args)
                except Exception as e:  # noqa: BLE001 - NumPy's own errors, given the node they came from
                    raise RuntimeError(f"onnx: node '{node_name(item)}' ({item.op_type}) failed in NumPy: {e}") from e
                env.update(zip(item.output, outputs))
        names = list(output_names) if output_names else self._p.outputs
        missing = [n for n in names if n not in env and n not in constants]
        if missing:
            raise ValueError(f"onnx: {missing} are not outputs of the model (outputs: {self._p.outputs})")
        return [np.ascontiguousarray(env[n] if n in env else constants[n]) for n in names]
