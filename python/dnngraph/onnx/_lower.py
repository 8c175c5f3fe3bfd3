"""Lowering a run of ONNX nodes into one dnngraph pygraph: the values each node reads become
graph tensors (runtime inputs, or constants whose arrays the session binds at every run), and
each node's translator (in _ops_*.py) adds its ops. A translator raises Unsupported, before it
adds anything, when dnngraph has no op for the node or cannot take its shapes."""
import numpy as np

import dnngraph
from ._arrays import IMAGE_RANKS, layout_strides

FLOAT_TYPES = {np.dtype(np.float32): dnngraph.data_type.FLOAT, np.dtype(np.float16): dnngraph.data_type.HALF,
               np.dtype(np.float64): dnngraph.data_type.DOUBLE}
# What a session stores each tensor as (compute_precision may store float32/float16 ones narrower).
STORAGE_TYPES = {"float32": dnngraph.data_type.FLOAT, "float16": dnngraph.data_type.HALF,
                 "float64": dnngraph.data_type.DOUBLE, "bfloat16": dnngraph.data_type.BFLOAT16,
                 "int32": dnngraph.data_type.INT32}
PRECISIONS = ("float32", "float16", "bfloat16")


class Unsupported(Exception):
    """A node this importer cannot lower; the message is the reason."""


def dims(shape):
    """dnngraph dims of an ONNX shape: a scalar is a tensor of one element."""
    return [int(d) for d in shape] or [1]


def data_type(dtype, what):
    """The dnngraph type of a float dtype; Unsupported (naming `what`) for any other."""
    if np.dtype(dtype) not in FLOAT_TYPES:
        raise Unsupported(f"{what} has dtype {np.dtype(dtype)}; dnngraph graphs here take float32, float16, float64")
    return FLOAT_TYPES[np.dtype(dtype)]


def storage(dtype, precision):
    """The storage name of a model dtype in a session of `precision` (None: the model's own)."""
    d = np.dtype(dtype)
    if precision is not None and d in (np.dtype(np.float32), np.dtype(np.float16)):
        return precision
    return str(d)


# Ops whose 3-D to 5-D values are images (N, C, W), (N, C, H, W), (N, C, D, H, W): channels-last
# strides are for these, and for the values that elementwise ops pass between them. Other values of
# those ranks (attention's [b, h, s, d], batched matmul operands) stay row-major, as the attention
# and GEMM kernels want them.
SPATIAL_OPS = {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
               "BatchNormalization", "InstanceNormalization", "Resize", "Upsample"}
PASS_OPS = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Gelu", "HardSwish", "Erf", "Exp", "Log", "Sqrt", "Neg", "Abs",
            "Reciprocal", "Floor", "Ceil", "Clip", "Cast", "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min",
            "Identity", "Dropout", "Concat", "Pad", "Slice"}


def image_values(prepared):
    """The 3-D to 5-D values that are images: read or written by a spatial op, or joined to one
    through elementwise ops (to a fixed point)."""
    def is_image_rank(n):
        return bool(n) and n in prepared.values and len(prepared.values[n].shape) in IMAGE_RANKS

    images = {n for node in prepared.nodes if node.op_type in SPATIAL_OPS
              for n in list(node.input[:2]) + list(node.output[:1]) if is_image_rank(n)}
    changed = True
    while changed:
        changed = False
        for node in prepared.nodes:
            if node.op_type in PASS_OPS:
                names = [n for n in list(node.input) + list(node.output) if is_image_rank(n)]
                if any(n in images for n in names) and not all(n in images for n in names):
                    images.update(names)
                    changed = True
    return images


class Lowering:
    """One pygraph being built from ONNX nodes. `tensors` maps ONNX value names to graph tensors;
    `bound` holds (tensor, array) for the constants; `inputs` the runtime inputs by name."""

    def __init__(self, prepared, handle, name, channels_last=False, arrays=None, precision=None, kernel_cache=None,
                 images=None):
        # arrays: the session's array library, which holds the constants; None for a probe graph
        # that is never run (nothing is uploaded for it).
        self.prepared, self.channels_last, self.arrays, self.precision = prepared, channels_last, arrays, precision
        self.images = images  # image_values(prepared); None: every 4-D value is one
        io = STORAGE_TYPES[precision] if precision else dnngraph.data_type.FLOAT
        self.graph = dnngraph.pygraph(name=name, io_data_type=io,
                                      intermediate_data_type=io,
                                      compute_data_type=dnngraph.data_type.FLOAT, handle=handle,
                                      kernel_cache=kernel_cache)
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
        return layout_strides(dim, self.channels_last)

    def nhwc(self, name):
        """Whether value `name` gets channels-last strides (a 4-D image in a channels-last session)."""
        return self.channels_last and (self.images is None or name in self.images)

    def strides_of(self, name, dim):
        return layout_strides(dim, self.nhwc(name))

    def _constant_nhwc(self, name):
        # Constants made from a value ("w@bn:...", "b@nchw") follow the value they came from.
        if not self.channels_last or self.images is None:
            return self.channels_last
        for key in (name, name.split("@")[0]):
            if key in self.prepared.values:
                return key in self.images
        return True

    def dg_type(self, dtype, what):
        """The dnngraph type a value of model dtype `dtype` is stored as (Unsupported if not float)."""
        data_type(dtype, what)
        return STORAGE_TYPES[storage(dtype, self.precision)]

    def declare_input(self, name):
        """A value produced outside this graph: a runtime input of it, bound by the session."""
        shape = dims(self.shape(name))
        t = self.graph.tensor(dim=shape, stride=self.strides_of(name, shape),
                              data_type=self.dg_type(self.dtype(name), f"'{name}'"),
                              name=name)
        self.tensors[name] = t
        self.inputs[name] = t
        return t

    def array_tensor(self, array, name):
        """A constant tensor holding `array`, uploaded once (in the session's layout and storage)
        and bound at every run."""
        array = np.asarray(array)
        kind = self.dg_type(array.dtype, f"constant '{name}'")
        return self._bound_tensor(array.reshape(array.shape or (1,)), storage(array.dtype, self.precision), kind, name)

    def int32_tensor(self, array, name):
        """A constant INT32 tensor (sdpa's sequence lengths), row-major."""
        array = np.ascontiguousarray(array, np.int32)
        return self._bound_tensor(array, "int32", dnngraph.data_type.INT32, name, nhwc=False)

    def _bound_tensor(self, array, store, kind, name, nhwc=None):
        nhwc = self._constant_nhwc(name) if nhwc is None else nhwc
        shape = [int(d) for d in array.shape]
        t = self.graph.tensor(dim=shape, stride=layout_strides(shape, nhwc), data_type=kind, name=name)
        # The session uploads it once and binds that array at every run: engines may pack it once
        # (CPU convolutions and GEMMs keep their packed weights per plan and pointer).
        t.set_is_constant(True)
        if self.arrays is not None:
            a = self.arrays
            self.bound.append((t, a.in_layout(a.convert(a.from_host(array), store), nhwc)))
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
        # An image made inside the graph gets the session's channels-last strides: the library
        # infers an intermediate's layout from its op (a reshape's output is row-major), and one
        # NCHW image carries NCHW through every conv after it, each gathering its channels per
        # pixel (a U-Net's convs ran ~5x slower behind the reshape after its 3-D stem).
        shape = self.prepared.values[name].shape if name in self.prepared.values else None
        if shape is not None and len(shape) in IMAGE_RANKS and self.channels_last and self.nhwc(name) \
                and not self._made_outside(tensor):
            tensor.set_stride(self.strides_of(name, dims(shape)))
        # A float64 model's values stay float64 inside the graph (intermediates are float32 by
        # default: a ReLU -> MaxPool of doubles came out 5.6e-8 off onnxruntime's).
        value = self.prepared.values.get(name)
        if self.precision is None and value is not None and value.dtype == np.float64 and not self._made_outside(tensor):
            tensor.set_data_type(dnngraph.data_type.DOUBLE)
        self.tensors[name] = tensor

    def _made_outside(self, tensor):
        """Whether `tensor` is a runtime input or a bound constant (their layouts are the session's)."""
        return any(tensor is t for t in self.inputs.values()) or any(tensor is t for t, _ in self.bound)
