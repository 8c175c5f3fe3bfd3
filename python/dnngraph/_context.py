"""The cuDNN frontend's ``graph(handle, ...)`` context manager and ``@jit`` decorator.

    @dnngraph.jit(heur_modes=[dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
    def make(handle, x, w):
        with dnngraph.graph(handle, io_data_type=dnngraph.data_type.FLOAT) as (g, _):
            X, W = g.tensor_like(x), g.tensor_like(w)
            Y = g.relu(g.matmul(X, W)).set_output(True)
            return g, [X, W, Y]

    g, (x_uid, w_uid, y_uid) = make(handle, x, w)   # built on the first call for these shapes

Unlike the frontend's (which builds on every call), ``jit`` builds once per input signature:
arrays count by type, shape, strides, dtype and device; other arguments by value (or identity,
for objects such as a handle). A call with an argument that is neither hashable nor an array
(a dict, say) is built afresh, as the frontend does.
"""
from __future__ import annotations

import collections
import contextlib
import functools
from typing import Any, Callable, Iterator, List, Protocol, Sequence, Tuple, cast

from ._dnngraph import data_type, heur_mode, pygraph, tensor

_CACHE_SIZE = 256  # graphs kept per decorated function; the oldest goes first


@contextlib.contextmanager
def graph(handle: Any = None, name: str = "graph", io_data_type: Any = data_type.HALF,
          intermediate_data_type: Any = data_type.FLOAT, compute_data_type: Any = data_type.FLOAT,
          **kwargs: Any) -> Iterator[Tuple[pygraph, list]]:
    """A pygraph on ``handle`` (None: the best device), yielded as ``(graph, [])`` as the frontend does.

    The data type defaults are the frontend's (HALF io, FLOAT intermediates and compute); further
    keywords (kernel_cache, is_dynamic_shape_enabled) go to pygraph.
    """
    g = pygraph(handle=handle, name=name, io_data_type=io_data_type, intermediate_data_type=intermediate_data_type,
                compute_data_type=compute_data_type, **kwargs)
    yield g, []


def graph_cache(key_fn: Callable[..., Any], maxsize: int = 256) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The frontend's ``@graph_cache(key_fn)``: memoizes a graph-making function by ``key_fn(*args,
    **kwargs)`` (which must return something hashable), keeping the ``maxsize`` newest results."""
    if maxsize < 1:
        raise ValueError(f"graph_cache: maxsize must be at least 1; got {maxsize}")

    def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
        cache: collections.OrderedDict[Any, Any] = collections.OrderedDict()

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = key_fn(*args, **kwargs)
            if key in cache:
                cache.move_to_end(key)
                return cache[key]
            result = func(*args, **kwargs)
            cache[key] = result
            if len(cache) > maxsize:
                cache.popitem(last=False)
            return result

        return wrapper

    return decorator


class _Unkeyable(Exception):
    pass


# What a @jit function returns, and what its decorated form returns: (graph, its tensors' uids).
Built = Tuple[pygraph, Sequence[tensor]]
BuiltUids = Tuple[pygraph, List[int]]


class Jitted(Protocol):
    """A function decorated by @jit: called as the function, it returns (graph, uids)."""

    __wrapped__: Callable[..., Built]

    def __call__(self, *args: Any, **kwargs: Any) -> BuiltUids: ...

    def cache_size(self) -> int:
        """The number of graphs kept (one per input signature, at most 256)."""
        ...


def _is_array(obj: object) -> bool:
    return hasattr(obj, "__dlpack__") or (hasattr(obj, "shape") and hasattr(obj, "dtype"))


def _array_key(a: Any) -> tuple:
    strides = getattr(a, "strides", None)
    if callable(strides):  # torch: .stride() in elements
        strides = None
    if strides is None and hasattr(a, "stride") and callable(a.stride):
        strides = a.stride()
    device = getattr(a, "device", "cpu")
    return ("array", type(a).__name__, tuple(a.shape), tuple(strides) if strides is not None else None,
            str(a.dtype), str(device))


def _key(obj: object) -> object:
    if _is_array(obj):
        return _array_key(obj)
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__,) + tuple(_key(o) for o in obj)
    try:
        hash(obj)
    except TypeError:
        raise _Unkeyable() from None
    # Objects go by value when they define equality (numbers, strings, enums) and by identity
    # otherwise (handles); either way the key holds a reference, so an id is never reused.
    return obj


def _signature(args: tuple, kwargs: dict[str, Any]) -> tuple | None:
    try:
        return (tuple(_key(a) for a in args), tuple(sorted((k, _key(v)) for k, v in kwargs.items())))
    except _Unkeyable:
        return None


def jit(heur_modes: heur_mode | Sequence[heur_mode] = heur_mode.A,
        **_options: Any) -> Callable[[Callable[..., Built]], Jitted]:
    """Builds the ``(graph, tensors)`` a function returns with ``heur_modes`` (unless it is built
    already) and returns ``(graph, uids)``; once per input signature. ``__wrapped__`` is the function."""
    modes = list(heur_modes) if isinstance(heur_modes, (list, tuple)) else [heur_modes]

    def decorator(func: Callable[..., Built]) -> Jitted:
        cache: collections.OrderedDict[tuple, BuiltUids] = collections.OrderedDict()

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> BuiltUids:
            key = _signature(args, kwargs)
            if key is not None and key in cache:
                return cache[key]
            g, tensors = func(*args, **kwargs)
            if g.get_execution_plan_count() <= 0:
                g.build(modes)
            result = (g, [t.get_uid() for t in tensors])
            if key is not None:
                cache[key] = result
                if len(cache) > _CACHE_SIZE:
                    cache.popitem(last=False)
            return result

        setattr(wrapper, "cache_size", lambda: len(cache))
        return cast(Jitted, wrapper)

    return decorator
