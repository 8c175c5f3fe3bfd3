"""dnngraph: deep-learning kernels described as graphs.

The API mirrors the cuDNN frontend's Python module: a program written for ``import cudnn``
ports by changing the import and the handle creation::

    import dnngraph
    handle = dnngraph.create_handle()          # "cpu", "cuda", "cuda:N", or None for the best device
    g = dnngraph.pygraph(io_data_type=dnngraph.data_type.FLOAT, handle=handle)
    X = g.tensor_like(x)                        # any DLPack array: NumPy, PyTorch, CuPy, JAX
    Y = g.relu(g.bias(X, g.tensor_like(b)))
    Y.set_output(True)
    g.build([dnngraph.heur_mode.A, dnngraph.heur_mode.FALLBACK])
    g.execute({X: x, ...: b, Y: y}, workspace)

Errors raise ValueError (a bad graph or variant pack), GraphNotSupportedError (no engine supports
the graph; a RuntimeError) or RuntimeError, with the library's message and the code as ``.code``.
"""
from ._dnngraph import (  # noqa: F401
    GraphNotSupportedError,
    Handle,
    KernelCache,
    __version__,
    build_plan_policy,
    create_handle,
    create_kernel_cache,
    data_type,
    diagonal_alignment,
    error_code,
    get_stream,
    heur_mode,
    norm_forward_phase,
    pointwise_mode,
    pygraph,
    reduction_mode,
    resample_mode,
    set_stream,
    tensor,
)
from ._padding import padding_mode  # noqa: F401

__all__ = [
    "GraphNotSupportedError", "Handle", "KernelCache", "__version__", "build_plan_policy", "create_handle",
    "create_kernel_cache", "data_type", "diagonal_alignment", "error_code", "get_stream", "heur_mode",
    "norm_forward_phase", "padding_mode", "pointwise_mode", "pygraph", "reduction_mode", "resample_mode",
    "set_stream", "tensor",
]
