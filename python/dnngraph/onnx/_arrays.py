"""The array library a session keeps its tensors in: NumPy on the CPU handle; on a CUDA handle
PyTorch when it is installed, else CuPy (dnngraph itself allocates nothing for a session). Each
backend answers the same few questions (upload, layout, dtype conversion, views into one arena
buffer, the stream to run on), so the session code does not branch on the library.

Storage dtypes are named by strings: "float32", "float16", "float64", "bfloat16", "int32". NumPy
and CuPy have no bfloat16: there it is stored as uint16 bit patterns (which dnngraph's variant
packs accept for BFLOAT16 tensors), converted with round-to-nearest-even."""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from ._arena import ALIGNMENT as BUFFER_ALIGNMENT  # the arena's placement unit, a multiple of a cache line

STORAGES = ("float32", "float16", "float64", "bfloat16", "int32")
_ITEMSIZE = {"float32": 4, "float16": 2, "float64": 8, "bfloat16": 2, "int32": 4}
_XP_DTYPE = {"float32": np.float32, "float16": np.float16, "float64": np.float64, "bfloat16": np.uint16,
             "int32": np.int32}


@functools.cache
def _dnngraph_types() -> dict:
    """The dnngraph data type of each NumPy storage dtype (uint16: bfloat16's bits)."""
    import dnngraph  # the package imports this module: not at module level

    t = dnngraph.data_type
    return {np.dtype(np.float32): t.FLOAT, np.dtype(np.float16): t.HALF, np.dtype(np.float64): t.DOUBLE,
            np.dtype(np.uint16): t.BFLOAT16, np.dtype(np.int32): t.INT32}


@functools.lru_cache(maxsize=None)
def dtype_name(d: np.dtype) -> str:
    """str(d), cached: NumPy builds a dtype's name in Python on every str() (~5 us, five times a
    run: most of a small graph's session overhead)."""
    return str(d)


@functools.lru_cache(maxsize=None)
def _storage_name(d: np.dtype) -> str:
    return "bfloat16" if d == np.uint16 else str(d)


def itemsize(storage: str) -> int:
    """Bytes per element of a storage dtype."""
    return _ITEMSIZE[storage]


def row_major(shape: Sequence[int]) -> list[int]:
    """Row-major strides (in elements) of `shape`."""
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(int(d), 1)
    return list(reversed(strides))


# The ranks of images (N, C, spatial...) that get channels-last strides: 1-D, 2-D and 3-D ones.
IMAGE_RANKS = (3, 4, 5)


def channels_last(shape: Sequence[int]) -> list[int]:
    """Channels-last strides (in elements: NWC, NHWC, NDHWC) for channels-first dims (N, C, ...)."""
    sizes = [max(int(d), 1) for d in shape]
    strides, step = [0] * len(sizes), sizes[1]
    strides[1] = 1
    for i in range(len(sizes) - 1, 1, -1):
        strides[i] = step
        step *= sizes[i]
    strides[0] = step
    return strides


def to_channels_last(rank: int) -> tuple:
    """The transpose of a channels-first array's dims that puts its channels last."""
    return (0, *range(2, rank), 1)


def from_channels_last(rank: int) -> tuple:
    """The transpose back: a channels-last array's dims in channels-first order."""
    return (0, rank - 1, *range(1, rank - 1))


def layout_strides(shape: Sequence[int], nhwc: bool) -> list[int]:
    """The strides a session declares for a tensor of `shape`: channels-last for images when `nhwc`."""
    return channels_last(shape) if nhwc and len(shape) in IMAGE_RANKS else row_major(shape)


def _same_strides(shape: Sequence[int], have: Sequence[int], want: Sequence[int]) -> bool:
    # Size-1 dims address nothing, so their strides may be anything.
    return all(d == 1 or h == w for d, h, w in zip(shape, have, want))


def _bf16_bits(xp: Any, a: Any) -> Any:
    """float -> bfloat16 bit patterns (uint16), rounding to nearest even; NaN and inf stay so."""
    bits = a.astype(xp.float32).view(xp.uint32)
    return ((bits + xp.uint32(0x7FFF) + ((bits >> 16) & xp.uint32(1))) >> 16).astype(xp.uint16)


def _bf16_value(xp: Any, bits: Any) -> Any:
    return (bits.astype(xp.uint32) << 16).view(xp.float32)


class NumpyLike:
    """NumPy on the CPU; CuPy (the same API, on the GPU) derives from it. `handle`: the CPU handle
    that moves large feature maps between NCHW and NHWC (in_layout, to_host)."""
    name = "numpy"
    on_gpu = False

    def __init__(self, handle: Any = None) -> None:
        self.xp: Any = np
        self._handle = handle
        self._copies: dict[tuple, Callable[[Any, Any], None]] = {}

    # -- dtypes ---------------------------------------------------------------------------
    def storage_of(self, a: Any) -> str:
        """The storage name of an array of this library (uint16 reads as bfloat16)."""
        return _storage_name(a.dtype)

    def convert(self, a: Any, storage: str) -> Any:
        """`a` as `storage` (the same array when it is that already)."""
        have = self.storage_of(a)
        if have == storage:
            return a
        if storage == "bfloat16":
            return _bf16_bits(self.xp, a)
        if have == "bfloat16":
            a = _bf16_value(self.xp, a)
        return a.astype(_XP_DTYPE[storage])

    # -- arrays ---------------------------------------------------------------------------
    def from_host(self, a: np.ndarray) -> Any:
        """A device copy of a host array (NumPy: the array itself)."""
        return a

    def to_host(self, a: Any) -> np.ndarray:
        """A C-contiguous host copy."""
        if not a.flags.c_contiguous and self._tiled_copy_pays(a):
            out = np.empty(a.shape, a.dtype)
            self._copy_by_dnngraph(a, out)
            return out
        return np.array(a, order="C", copy=True)

    def _tiled_copy_pays(self, a: Any) -> bool:
        """Whether a layout copy of `a` goes through _copy_by_dnngraph: NumPy images of 2 or more
        channels and 64K or more elements (a conv's NHWC result in NCHW: NumPy's strided copy of a
        1x64x112x112 float32 took 4.6 ms, 0.7 GB/s; a 1x3x224x224 input to NHWC 0.16 ms against
        dnngraph's 0.016), on a session with a CPU handle."""
        return (self._handle is not None and type(a) is np.ndarray and a.ndim in IMAGE_RANKS and a.shape[1] >= 2
                and a.size >= (1 << 16) and a.dtype in _dnngraph_types())

    def _copy_by_dnngraph(self, a: Any, out: np.ndarray) -> None:
        """Copies `a` into `out` (the same shape and dtype, other strides; _tiled_copy_pays(a)) with a
        dnngraph transpose on the session's CPU handle, which moves the plane in cache-sized tiles.
        One small graph per pair of layouts, kept."""
        key = (a.shape, a.strides, out.strides, a.dtype.str)
        if key not in self._copies:
            import dnngraph

            t = _dnngraph_types()[a.dtype]
            g = dnngraph.pygraph(io_data_type=t, intermediate_data_type=t, compute_data_type=dnngraph.data_type.FLOAT,
                                 handle=self._handle)
            x = g.tensor(dim=list(a.shape), stride=self.strides(a), data_type=t, name="source")
            y = g.transpose(x, permutation=list(range(a.ndim)))
            y.set_output(True).set_stride(self.strides(out))
            g.validate()
            g.build_operation_graph()
            g.create_execution_plans([dnngraph.heur_mode.A])
            g.check_support()
            g.build_plans()
            workspace = np.empty(max(g.get_workspace_size(), 1), np.uint8)
            self._copies[key] = lambda v, w: g.execute({x: v, y: w}, workspace)
        self._copies[key](a, out)

    def accept(self, a: Any) -> Any:
        """A feed (NumPy, or any DLPack array) as an array of this library on its device."""
        if isinstance(a, np.ndarray):
            return a
        if hasattr(a, "__dlpack__"):
            return np.from_dlpack(a)
        return np.asarray(a)

    def strides(self, a: Any) -> list[int]:
        """Strides in elements."""
        return [s // a.itemsize for s in a.strides]

    def in_layout(self, a: Any, nhwc: bool) -> Any:
        """`a` with the strides the session declares (copied only when it has others, into a
        256-byte aligned buffer as the arena's tensors are)."""
        want = layout_strides(a.shape, nhwc)
        if _same_strides(a.shape, self.strides(a), want):
            return a
        image = nhwc and a.ndim in IMAGE_RANKS
        src = a.transpose(to_channels_last(a.ndim)) if image else a
        back = from_channels_last(a.ndim) if image else tuple(range(a.ndim))
        if src.size == 0:
            return self.xp.ascontiguousarray(src).transpose(back)
        out = self.empty_bytes(src.size * src.itemsize).view(src.dtype).reshape(src.shape)
        if image and self._tiled_copy_pays(a):
            self._copy_by_dnngraph(a, out.transpose(back))
            return out.transpose(back)
        if image and a.shape[1] <= 4 and self.xp is np:
            # An image's few channels: one strided copy per channel ran 2.9x faster than NumPy's
            # 4-D transpose copy (1x3x224x224: 0.072 against 0.209 ms); at 16 channels it is slower.
            for c in range(a.shape[1]):
                out[..., c] = a[:, c]
        else:
            out[...] = src
        return out.transpose(back)

    def contiguous_copy(self, a: Any) -> Any:
        """A C-contiguous copy on the same device."""
        return self.xp.array(a, order="C", copy=True)

    def pointer(self, a: Any) -> int:
        """The address of the array's first element."""
        return int(a.ctypes.data)

    def empty_bytes(self, nbytes: int) -> Any:
        """An uninitialised byte buffer (an arena or a workspace) whose first byte is 256-byte
        aligned: NumPy's large buffers start 16 bytes into a page (the C allocator's header), which
        put every 64-byte vector of every tensor in an arena across two cache lines."""
        size = max(int(nbytes), 1)
        raw = self.xp.empty(size + BUFFER_ALIGNMENT, self.xp.uint8)
        skip = -self.pointer(raw) % BUFFER_ALIGNMENT
        return raw[skip:skip + size]

    def view(self, buf: Any, offset: int, shape: Sequence[int], storage: str, strides: Sequence[int]) -> Any:
        """A typed, strided view of `buf` from byte `offset`."""
        size = itemsize(storage)
        return np.ndarray(tuple(shape), _XP_DTYPE[storage], buffer=buf, offset=offset,
                          strides=tuple(s * size for s in strides))

    def reshape(self, a: Any, shape: Sequence[int]) -> Any:
        """The elements of `a` in row-major order with dims `shape` (a view where it can be)."""
        return a.reshape(tuple(shape))

    def permute(self, a: Any, perm: Sequence[int]) -> Any:
        """A transposed view."""
        return a.transpose(tuple(perm))

    # -- execution ------------------------------------------------------------------------
    def stream(self) -> int | None:
        """The stream dnngraph should run on (None: the handle's own / the CPU)."""
        return None

    def synchronize(self) -> None:
        """Waits for the device."""


class CupyArrays(NumpyLike):
    """CuPy device arrays; its current stream is the one dnngraph runs on."""
    name = "cupy"
    on_gpu = True

    def __init__(self) -> None:
        import cupy
        super().__init__()
        self.xp = cupy

    def from_host(self, a: np.ndarray) -> Any:
        return self.xp.asarray(np.ascontiguousarray(a))

    def to_host(self, a: Any) -> np.ndarray:
        return np.ascontiguousarray(self.xp.asnumpy(a))

    def accept(self, a: Any) -> Any:
        if isinstance(a, self.xp.ndarray):
            return a
        if isinstance(a, np.ndarray) or not hasattr(a, "__dlpack__"):
            return self.from_host(np.asarray(a))
        return self.xp.from_dlpack(a)

    def pointer(self, a: Any) -> int:
        return int(a.data.ptr)

    def view(self, buf: Any, offset: int, shape: Sequence[int], storage: str, strides: Sequence[int]) -> Any:
        size = itemsize(storage)
        return self.xp.ndarray(tuple(shape), _XP_DTYPE[storage], memptr=buf.data + offset,
                               strides=tuple(s * size for s in strides))

    def stream(self) -> int | None:
        return int(self.xp.cuda.get_current_stream().ptr)

    def synchronize(self) -> None:
        self.xp.cuda.get_current_stream().synchronize()


class TorchArrays:
    """PyTorch CUDA tensors; torch's current stream is the one dnngraph runs on."""
    name = "torch"
    on_gpu = True

    def __init__(self, device: str) -> None:
        import torch
        self.torch = torch
        self.device = torch.device(device)
        self.dtypes = {"float32": torch.float32, "float16": torch.float16, "float64": torch.float64,
                       "bfloat16": torch.bfloat16, "int32": torch.int32}
        self.names = {v: k for k, v in self.dtypes.items()}

    def storage_of(self, a: Any) -> str:
        return self.names.get(a.dtype, str(a.dtype))

    def convert(self, a: Any, storage: str) -> Any:
        return a if a.dtype == self.dtypes[storage] else a.to(self.dtypes[storage])

    def from_host(self, a: np.ndarray) -> Any:
        if a.dtype == np.uint16:  # bfloat16 bits from the host
            return self.torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).to(self.device).view(
                self.torch.bfloat16)
        return self.torch.from_numpy(np.ascontiguousarray(a)).to(self.device)

    def to_host(self, a: Any) -> np.ndarray:
        if a.dtype == self.torch.bfloat16:
            return a.contiguous().view(self.torch.int16).cpu().numpy().view(np.uint16)
        return np.ascontiguousarray(a.detach().cpu().numpy())

    def accept(self, a: Any) -> Any:
        if isinstance(a, self.torch.Tensor):  # detached: DLPack does not export tensors that require grad
            a = a.detach()
            return a if a.device == self.device else a.to(self.device)
        if isinstance(a, np.ndarray) or not hasattr(a, "__dlpack__"):
            return self.from_host(np.asarray(a))
        t = self.torch.from_dlpack(a)
        return t if t.device == self.device else t.to(self.device)

    def strides(self, a: Any) -> list[int]:
        return list(a.stride())

    def in_layout(self, a: Any, nhwc: bool) -> Any:
        if _same_strides(a.shape, a.stride(), layout_strides(a.shape, nhwc)):
            return a
        if nhwc and a.dim() in IMAGE_RANKS:
            return a.permute(to_channels_last(a.dim())).contiguous().permute(from_channels_last(a.dim()))
        return a.contiguous()

    def contiguous_copy(self, a: Any) -> Any:
        return a.clone(memory_format=self.torch.contiguous_format)

    def pointer(self, a: Any) -> int:
        return int(a.data_ptr())

    def empty_bytes(self, nbytes: int) -> Any:
        return self.torch.empty(max(int(nbytes), 1), dtype=self.torch.uint8, device=self.device)

    def view(self, buf: Any, offset: int, shape: Sequence[int], storage: str, strides: Sequence[int]) -> Any:
        size = itemsize(storage)
        span = 1 + sum((int(d) - 1) * int(s) for d, s in zip(shape, strides)) if all(shape) else 0
        flat = buf[offset:offset + max(span, 1) * size].view(self.dtypes[storage])
        return flat.as_strided(tuple(int(d) for d in shape), tuple(int(s) for s in strides))

    def reshape(self, a: Any, shape: Sequence[int]) -> Any:
        return a.reshape(tuple(int(d) for d in shape))

    def permute(self, a: Any, perm: Sequence[int]) -> Any:
        return a.permute(*perm)

    def stream(self) -> int | None:
        return int(self.torch.cuda.current_stream(self.device).cuda_stream)

    def synchronize(self) -> None:
        self.torch.cuda.synchronize(self.device)

    def capture(self, forward: Callable[[], None], warmups: int = 2) -> Callable[[], None]:
        """`forward` captured in one CUDA graph (after warm-up runs on a side stream); returns replay."""
        torch = self.torch
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(warmups):  # lazy loading, first-call allocations: outside the capture
                forward()
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=side):
            forward()
        self.graph = graph  # kept alive with its memory pool
        return graph.replay


def backend_for(handle: Any, prefer: str | None = None) -> Any:
    """The array library for a session on `handle`: NumPy on the CPU; on CUDA `prefer` ("torch",
    "cupy") or the first of them that imports. RuntimeError when neither does."""
    if not handle.is_cuda:
        return NumpyLike(handle)
    errors = []
    for name in ([prefer] if prefer else ["torch", "cupy"]):
        try:
            if name == "torch":
                return TorchArrays(handle.device)
            if name == "cupy":
                return CupyArrays()
            raise ValueError(f"onnx.load: arrays={name!r} is not 'torch' or 'cupy'")
        except ImportError as e:
            errors.append(f"{name}: {e}")
    raise RuntimeError("onnx.load: a CUDA session keeps its constants and results as device arrays and needs "
                       "PyTorch or CuPy for them (pip install torch, or cupy-cuda12x); " + "; ".join(errors))
