"""Lowering a run of ONNX nodes into one dnngraph pygraph: the values each node reads become
graph tensors (runtime inputs, or constants whose arrays the session binds at every run), and
each node's translator (in _ops_*.py) adds its ops. A translator raises Unsupported, before it
adds anything, when dnngraph has no op for the node or cannot take its shapes."""
import numpy as np

import dnngraph

FLOAT_TYPES = {np.dtype(np.float32): dnngraph.data_type.FLOAT, np.dtype(np.float16): dnngraph.data_type.HALF,
               np.dtype(np.float64): dnngraph.data_type.DOUBLE}


class Unsupported(Exception):
    """A node this importer cannot lower; the message is the reason."""


def dims(shape):
    """dnngraph dims of an ONNX shape: a scalar is a tensor of one element."""
    return [int(d) for d in shape] or [1]


def row_major(dim):
    strides, step = [], 1
    for d in reversed(dim):
        strides.append(step)
        step *= max(int(d), 1)
    return list(reversed(strides))


def channels_last_strides(dim):
    """NHWC strides for NCHW dims: dnngraph's CPU convolutions run about 2x faster on them."""
    n, c, h, w = (max(int(d), 1) for d in dim)
    return [h * w * c, 1, w * c, c]


def in_layout(array, channels_last):
    """A view of `array` with the strides the session declares for it (the data copied once)."""
    if channels_last and array.ndim == 4:
        return np.ascontiguousarray(array.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    return np.ascontiguousarray(array)


def empty_in_layout(shape, dtype, channels_last):
    if channels_last and len(shape) == 4:
        n, c, h, w = shape
        return np.empty((n, h, w, c), dtype).transpose(0, 3, 1, 2)
    return np.empty(shape, dtype)


def data_type(dtype, what):
    if np.dtype(dtype) not in FLOAT_TYPES:
        raise Unsupported(f"{what} has dtype {np.dtype(dtype)}; dnngraph graphs here take float32, float16, float64")
    return FLOAT_TYPES[np.dtype(dtype)]


class Lowering:
    """One pygraph being built from ONNX nodes. `tensors` maps ONNX value names to graph tensors;
    `bound` holds (tensor, array) for the constants; `inputs` the runtime inputs by name."""

    def __init__(self, prepared, handle, name, channels_last=False):
        self.prepared, self.channels_last = prepared, channels_last
        self.graph = dnngraph.pygraph(name=name, io_data_type=dnngraph.data_type.FLOAT,
                                      intermediate_data_type=dnngraph.data_type.FLOAT,
                                      compute_data_type=dnngraph.data_type.FLOAT, handle=handle)
        self.tensors, self.bound, self.inputs = {}, [], {}

    # -- what a translator asks about its node's values --------------------------------------
    def shape(self, name):
        v = self.prepared.values.get(name)
        if v is None:
            raise Unsupported(f"value '{name}' has no static shape (shape inference could not fix it)")
        return v.shape

    def dtype(self, name):
        self.shape(name)  # a value shape inference could not fix is reported as such
        return self.prepared.values[name].dtype

    def is_const(self, name):
        return name in self.prepared.constants

    def const(self, name, what):
        if name not in self.prepared.constants:
            raise Unsupported(f"{what} ('{name}') must be a constant (an initializer or folded at load)")
        return self.prepared.constants[name]

    # -- graph tensors ------------------------------------------------------------------------
    def strides(self, dim):
        return channels_last_strides(dim) if self.channels_last and len(dim) == 4 else row_major(dim)

    def declare_input(self, name):
        """A value produced outside this graph: a runtime input of it, bound by the session."""
        shape = dims(self.shape(name))
        t = self.graph.tensor(dim=shape, stride=self.strides(shape), data_type=data_type(self.dtype(name), f"'{name}'"),
                              name=name)
        self.tensors[name] = t
        self.inputs[name] = t
        return t

    def array_tensor(self, array, name):
        """A constant tensor holding `array` (kept, and bound at every run)."""
        array = in_layout(np.asarray(array), self.channels_last)
        data_type(array.dtype, f"constant '{name}'")
        if array.ndim == 0:
            array = array.reshape(1)
        t = self.graph.tensor_like(array, name=name)
        self.bound.append((t, array))
        return t

    def tensor(self, name):
        if name in self.tensors:
            return self.tensors[name]
        if self.is_const(name):
            t = self.array_tensor(self.prepared.constants[name], name)
            self.tensors[name] = t
            return t
        return self.declare_input(name)

    def at_rank(self, name, rank):
        """The value as a tensor of `rank` dims, size-1 dims in front (NumPy broadcasting)."""
        shape = list(self.shape(name))
        if len(shape) == rank and shape:
            return self.tensor(name)
        padded = [1] * (rank - len(shape)) + shape
        if self.is_const(name):
            return self.array_tensor(self.prepared.constants[name].reshape(padded or [1]), f"{name}@rank{rank}")
        return self.graph.reshape(self.tensor(name), dim=dims(padded))

    def set(self, name, tensor):
        self.tensors[name] = tensor
