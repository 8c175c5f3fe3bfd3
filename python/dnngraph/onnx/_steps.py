"""The steps a session runs in order: a Segment (one pygraph built from a run of nodes), an
ArrayStep (a layout op done by the session's array library: a view, or one copy), and a
TorchStep (a node run as torch ops under fallback="torch"), and a HostStep (a node run with NumPy
under fallback="numpy"; on a CUDA session its inputs come to the host and its outputs go back). Each reads and writes the session's `env` by ONNX name."""
import numpy as np

import dnngraph
from . import _numpy_ops
from ._arrays import NumpyLike, itemsize
from ._lower import Lowering, Unsupported, dims, storage

_HOST = NumpyLike()


def node_name(node):
    """The node's ONNX name, or op->first output for a nameless node."""
    return node.name or f"{node.op_type}->{node.output[0]}"


def lower_node(L, node, translators, attention_op):
    """Lowers one node; the reason it cannot be, or None."""
    # The rewrites' own nodes are keyed "domain.op", so ONNX's ops of the same name do not reach them.
    default_domain = node.domain in ("", "ai.onnx")
    if not default_domain and (node.domain, node.op_type) != attention_op:
        return f"domain '{node.domain}' is not ONNX's default domain"
    fn = translators.get(node.op_type if default_domain else f"{node.domain}.{node.op_type}")
    if fn is None:
        return f"dnngraph has no op for ONNX's {node.op_type}"
    try:
        fn(L, node, _numpy_ops.attributes(node))
    except Unsupported as e:
        return str(e)
    except (ValueError, RuntimeError) as e:  # the library refused the op's shapes or attributes
        return f"dnngraph: {e}"
    return None


class BuildContext:
    """What every Segment of a session is built with."""

    def __init__(self, prepared, handle, arrays, channels_last, precision, translators, attention_op, refused,
                 kernel_cache=None, allow_tf32=False, images=None):
        self.prepared, self.handle, self.arrays, self.kernel_cache = prepared, handle, arrays, kernel_cache
        self.allow_tf32, self.images = allow_tf32, images
        self.channels_last, self.precision = channels_last, precision
        self.translators, self.attention_op, self.refused = translators, attention_op, refused


class Segment:
    """One pygraph: its runtime inputs and outputs by ONNX name, its constants (bound once)."""

    def __init__(self, ctx, nodes, needed, index):
        p = ctx.prepared
        L = Lowering(p, ctx.handle, f"onnx:{index}", ctx.channels_last, ctx.arrays, ctx.precision, ctx.kernel_cache,
                     ctx.images)
        self.channels_last, self.index = ctx.channels_last, index
        if ctx.allow_tf32:
            L.graph.set_allow_tf32(True)
        for node in nodes:
            reason = lower_node(L, node, ctx.translators, ctx.attention_op)
            if reason is not None:
                raise ctx.refused([(node_name(node), node.op_type, reason)])
        producer = {o: node_name(node) for node in nodes for o in node.output if o}
        produced = set(producer)
        self.graph, self.inputs = L.graph, L.inputs
        self.input_storage = {n: storage(p.values[n].dtype, ctx.precision) for n in L.inputs}
        self.input_nhwc = {n: L.nhwc(n) for n in L.inputs}
        self.aliases, self.outputs = {}, {}
        by_id = {id(t): n for n, t in list(L.inputs.items())}
        by_id.update({id(t): n for n, t in L.tensors.items() if n not in produced})
        for name in sorted(produced & needed):
            t = L.tensors[name]
            if id(t) in by_id:  # Identity of an input or a constant: no op produces it
                self.aliases[name] = by_id[id(t)]
                continue
            shape = dims(p.values[name].shape)
            t.set_output(True)
            t.set_stride(L.strides_of(name, shape))
            t.set_data_type(L.dg_type(p.values[name].dtype, f"output '{name}'"))
            self.outputs[name] = (t, shape, L.strides_of(name, shape), storage(p.values[name].dtype, ctx.precision))
        self.pack = dict(L.bound)
        self.views, self.workspace, self.checked, self.keep = {}, None, False, []
        if self.outputs:
            self._build(producer, p)

    def _build(self, producer, p):
        try:
            self.graph.build([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
        except (ValueError, RuntimeError) as e:  # the library's message names the node (its ONNX name)
            err = type(e)(f"onnx: building dnngraph graph {self.index} of the model: {e}")
            if hasattr(e, "code"):
                err.code = e.code
            raise err from e
        for name, (t, *_rest) in self.outputs.items():
            if list(t.get_dim()) != dims(p.values[name].shape):
                raise ValueError(f"onnx: value '{name}' (node '{producer[name]}'): dnngraph made dims "
                                 f"{list(t.get_dim())}, ONNX's shape inference {list(p.values[name].shape)}")

    @property
    def workspace_size(self):
        """Bytes of workspace the graph's plans need (0 for a segment that only aliases)."""
        return self.graph.get_workspace_size() if self.outputs else 0

    def output_bytes(self, name):
        """Bytes an output spans in its layout."""
        _, shape, strides, store = self.outputs[name]
        return (1 + sum((d - 1) * s for d, s in zip(shape, strides))) * itemsize(store)

    def reads(self):
        """The ONNX values this step reads."""
        return list(self.inputs) + list(self.aliases.values())

    def bind(self, views, workspace):
        """The arena views the outputs are written to, and the session's shared workspace."""
        self.views, self.workspace = views, workspace
        for name, (t, *_rest) in self.outputs.items():
            self.pack[t] = views[name]

    def _fixed_as_pointers(self, arrays):
        """After the first execute has checked them, the constants and arena views (which never
        change) go to the pack as int pointers, which it takes unchecked: a run then resolves
        only its runtime inputs. The arrays are kept alive here."""
        self.keep = list(self.pack.values()) + [self.workspace]
        self.pack = {t: arrays.pointer(a) for t, a in self.pack.items()}
        self.workspace = arrays.pointer(self.workspace)  # its size was checked with the array
        self.checked = True

    def run(self, env, arrays, constants):
        """Executes the graph on env's values; puts its outputs (and aliases) in env."""
        pack = dict(self.pack)
        for name, t in self.inputs.items():
            value = arrays.accept(env[name] if name in env else constants[name])
            pack[t] = arrays.in_layout(arrays.convert(value, self.input_storage[name]), self.input_nhwc[name])
        if self.outputs:
            self.graph.execute(pack, self.workspace)
            if not self.checked:
                self._fixed_as_pointers(arrays)
        env.update(self.views)
        for name, src in self.aliases.items():
            env[name] = env[src] if src in env else constants[src]


# Ops that only move or relabel elements: with layout_in_numpy they run on the session's array
# library (NumPy on the CPU, torch or CuPy on CUDA) between graphs, as views or one copy, where
# dnngraph runs them as copies on its reference engine.
LAYOUT_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose"}


class ArrayStep:
    """A layout op on the session's arrays: a reshape to the output's static dims, or a transpose."""

    def __init__(self, node, prepared):
        self.node = node
        self.perm = None
        if node.op_type == "Transpose":
            rank = len(prepared.values[node.input[0]].shape)
            self.perm = [int(p) for p in _numpy_ops.attributes(node).get("perm", list(reversed(range(rank))))]
        self.shape = [int(d) for d in prepared.values[node.output[0]].shape]

    def reads(self):
        return [self.node.input[0]]

    def run(self, env, arrays, constants):
        name = self.node.input[0]
        x = env[name] if name in env else arrays.accept(constants[name])
        env[self.node.output[0]] = arrays.permute(x, self.perm) if self.perm is not None else arrays.reshape(
            x, self.shape)


class TorchStep:
    """A node run as torch ops on the session's device arrays (fallback="torch")."""

    def __init__(self, node, fn, inputs, shape):
        self.node, self.fn, self.inputs = node, fn, list(inputs)
        self.shape = tuple(int(d) for d in shape)

    def reads(self):
        return list(self.inputs)

    def run(self, env, arrays, constants):
        xs = [env[n] if n in env else arrays.accept(constants[n]) for n in self.inputs]
        y = self.fn(*xs)
        if tuple(y.shape) != self.shape:  # torch's rules (ceil_mode) differ from ONNX's shape inference
            raise RuntimeError(f"onnx: node '{node_name(self.node)}' ({self.node.op_type}) made dims {list(y.shape)} "
                               f"in torch; ONNX's shape inference says {list(self.shape)}")
        if any(y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr() for x in xs):
            y = y.clone()  # a view of its input (a Slice, a pad of zeros): the arena's bytes, reused later
        env[self.node.output[0]] = y


class HostStep:
    """A node run with NumPy (fallback="numpy"), its inputs as the model's dtypes on the host."""

    def __init__(self, node, prepared):
        self.node, self.prepared = node, prepared

    def reads(self):
        return [n for n in self.node.input if n]

    def _host(self, name, env, arrays, constants):
        if name not in env:
            return constants[name]
        x = env[name]
        if not isinstance(x, np.ndarray):
            x = arrays.to_host(arrays.accept(x))
        value = self.prepared.values.get(name)
        return _HOST.convert(x, str(value.dtype)) if value is not None else x

    def run(self, env, arrays, constants):
        item = self.node
        args = [self._host(n, env, arrays, constants) if n else None for n in item.input]
        try:
            outputs = _numpy_ops.evaluate(item, args)
        except Exception as e:  # noqa: BLE001 - NumPy's own errors, given the node they came from
            raise RuntimeError(f"onnx: node '{node_name(item)}' ({item.op_type}) failed in NumPy: {e}") from e
        # A NumPy result may be a view of an input (Slice, Reshape, Identity), and an input may be
        # a view of the arena, whose bytes later values reuse: such results are copied.
        outputs = [np.array(o, copy=True) if any(isinstance(a, np.ndarray) and np.may_share_memory(o, a)
                                                 for a in args) else o for o in outputs]
        env.update(zip(item.output, outputs))
