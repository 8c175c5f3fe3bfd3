"""Reading an ONNX model for import: static shapes for every value (the graph inputs' symbolic
dims pinned by the caller), and constant folding, so that what reaches the lowering is a list
of nodes whose non-constant inputs all have known dims and dtypes."""
import dataclasses

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

from . import _numpy_ops

MAX_FOLD_ROUNDS = 16  # each round folds at least one node, and shape-only chains are short


@dataclasses.dataclass
class Value:
    name: str
    shape: tuple
    dtype: np.dtype


@dataclasses.dataclass
class Prepared:
    nodes: list            # NodeProtos left after folding, in topological order
    constants: dict        # name -> np.ndarray: initializers and folded values
    values: dict           # name -> Value, for every value whose type shape inference knows
    inputs: list           # the model's runtime inputs (names), in order
    outputs: list          # the model's outputs (names), in order
    opset: int             # the default domain's opset
    problems: list         # (node name, op, reason) found while reading


def read_model(model):
    if isinstance(model, onnx.ModelProto):
        return model
    return onnx.load(str(model))


def _opset(model):
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 1


def _pin_inputs(model, input_shapes, problems):
    """Replaces symbolic dims of the graph's inputs by the sizes input_shapes gives."""
    initializers = {t.name for t in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in initializers:
            continue
        dims = vi.type.tensor_type.shape.dim
        given = (input_shapes or {}).get(vi.name)
        if given is not None:
            if len(given) != len(dims):
                problems.append((vi.name, "input", f"input_shapes gives {len(given)} dims, the model {len(dims)}"))
                continue
            for d, size in zip(dims, given):
                d.dim_value = int(size)
        elif any(not d.HasField("dim_value") for d in dims):
            names = [d.dim_param or "?" for d in dims if not d.HasField("dim_value")]
            problems.append((vi.name, "input", f"dims {names} are symbolic: pass load(..., input_shapes="
                                               f"{{'{vi.name}': [...]}}) to fix them"))


def _infer(model):
    inferred = shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    values = {}
    for vi in list(inferred.graph.input) + list(inferred.graph.value_info) + list(inferred.graph.output):
        tt = vi.type.tensor_type
        if not tt.HasField("shape") or tt.elem_type == 0:
            continue
        if any(not d.HasField("dim_value") for d in tt.shape.dim):
            continue
        values[vi.name] = Value(vi.name, tuple(d.dim_value for d in tt.shape.dim),
                                np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type)))
    return values


def _fold_round(nodes, constants, values):
    """One pass of folding; returns the nodes left. A node folds when all its inputs are
    constants, or when it is a Shape of a value with static dims."""
    left = []
    for node in nodes:
        present = [n for n in node.input if n]
        foldable = node.op_type in _numpy_ops.EVALUATORS and all(n in constants for n in present)
        if node.op_type in _numpy_ops.SHAPE_ONLY and node.input[0] in values:
            inputs = [np.zeros(values[node.input[0]].shape, np.float32)]
        elif foldable:
            inputs = [constants[n] if n else None for n in node.input]
        else:
            left.append(node)
            continue
        try:
            outputs = _numpy_ops.evaluate(node, inputs)
        except Exception:  # noqa: BLE001 - an attribute form the evaluator does not read: left to the lowering,
            left.append(node)  # which lowers the node or reports it by name
            continue
        for name, out in zip(node.output, outputs):
            constants[name] = np.asarray(out)
    return left


def _topological(graph, known):
    """The graph's nodes in an order where each node follows its inputs' producers."""
    ready, order, pending = set(known), [], list(graph.node)
    while pending:
        progressed = []
        for node in pending:
            if all((not n) or n in ready for n in node.input):
                order.append(node)
                ready.update(node.output)
            else:
                progressed.append(node)
        if len(progressed) == len(pending):
            names = [f"'{n.name or n.output[0]}' ({n.op_type})" for n in progressed]
            raise ValueError(f"onnx: nodes {names} use values nothing produces (a cycle or a missing input)")
        pending = progressed
    return order


def _rebuilt(model, nodes, constants):
    """A model with the folded values as initializers, for the next round of shape inference."""
    graph = model.graph
    used = {n for node in nodes for n in node.input} | {o.name for o in graph.output}
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in constants.items() if k in used]
    initializer_names = {t.name for t in graph.initializer}
    inputs = [vi for vi in graph.input if vi.name not in initializer_names]
    g = helper.make_graph(nodes, graph.name, inputs, list(graph.output), inits)
    m = helper.make_model(g, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    return m


def prepare(model, input_shapes=None):
    model = read_model(model)
    m = onnx.ModelProto()
    m.CopyFrom(model)  # the caller's proto is left as it was
    problems = []
    _pin_inputs(m, input_shapes, problems)
    constants = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    inputs = [vi.name for vi in m.graph.input if vi.name not in constants]
    nodes = _topological(m.graph, list(constants) + inputs)
    values = _infer(m)
    for _ in range(MAX_FOLD_ROUNDS):
        left = _fold_round(nodes, constants, values)
        if len(left) == len(nodes):
            break
        nodes = left
        values = _infer(_rebuilt(m, nodes, constants))
    for name, arr in constants.items():
        values.setdefault(name, Value(name, tuple(arr.shape), arr.dtype))
    return Prepared(nodes, constants, values, inputs, [o.name for o in m.graph.output], _opset(m), problems)
