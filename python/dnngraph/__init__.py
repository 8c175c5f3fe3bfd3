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

The frontend's other two forms work too: ``with dnngraph.graph(handle) as (g, _):`` under
``@dnngraph.jit(heur_modes=...)``, and the ``dnngraph.Graph`` class, whose ops take arrays and
whose built graph is called like a function (docs/python.md).

Errors raise ValueError (a bad graph or variant pack), GraphNotSupportedError (no engine supports
the graph; a RuntimeError; also named cudnnGraphNotSupportedError) or RuntimeError, with the
library's message and the code as ``.code``.
"""
from ._dnngraph import (  # noqa: F401
    GraphNotSupportedError,
    Handle,
    KernelCache,
    __version__,
    attention_implementation,
    backend_version,
    backend_version_string,
    behavior_note,
    build_plan_policy,
    create_handle,
    create_kernel_cache,
    data_type,
    destroy_handle,
    diagonal_alignment,
    error_code,
    get_stream,
    heur_mode,
    knob,
    knob_type,
    norm_forward_phase,
    numerical_note,
    pointwise_mode,
    pygraph,
    reduction_mode,
    resample_mode,
    set_stream,
    tensor,
)
from ._padding import padding_mode  # noqa: F401

# The cuDNN frontend's name for the same error.
cudnnGraphNotSupportedError = GraphNotSupportedError  # noqa: N816

from ._context import graph, graph_cache, jit  # noqa: E402,F401
from ._graph_class import Graph  # noqa: E402,F401

__all__ = [
    "Graph", "GraphNotSupportedError", "Handle", "KernelCache", "__version__", "attention_implementation",
    "backend_version", "backend_version_string", "behavior_note", "build_plan_policy", "create_handle",
    "create_kernel_cache", "cudnnGraphNotSupportedError", "data_type", "destroy_handle", "diagonal_alignment",
    "error_code", "get_stream", "graph", "graph_cache", "heur_mode", "jit", "knob", "knob_type", "norm_forward_phase",
    "numerical_note", "padding_mode", "pointwise_mode", "pygraph", "reduction_mode", "resample_mode",
    "set_stream", "tensor",
]
