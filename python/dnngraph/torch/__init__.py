"""dnngraph for PyTorch programs (docs/torch.md).

- ``torch.compile(model, backend="dnngraph")``: the aten graph's convolutions, matmuls, norms,
  poolings, attention and pointwise ops become dnngraph graphs (one per partition and input
  signature); what dnngraph does not take runs in PyTorch. Importing this package registers the
  backend; the ``torch_dynamo_backends`` entry point does it for an installed dnngraph.
- ``dnngraph.torch.op(graph, inputs, outputs, name="ns::name")``: a built pygraph as a torch
  custom op (eager, torch.compile, CUDA graphs).
- ``dnngraph.torch.partitions()``: the lowered partitions, with their builds, engines and
  fallback reasons.

Importing it needs PyTorch.
"""
from ._backend import DnngraphSupport, backend, lower_graph_module, register
from ._leaves import Unsupported
from ._op import op
from ._partition import LoweredPartition, partitions

register()

__all__ = ["DnngraphSupport", "LoweredPartition", "Unsupported", "backend", "lower_graph_module", "op",
           "partitions", "register"]
