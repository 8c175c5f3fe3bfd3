"""Leaves: the values of a lowered partition that PyTorch computes at every call and the dnngraph
graph reads as inputs. They are the partition's inputs, views of them (free in PyTorch; a reshape
or transpose inside a dnngraph graph would be a copy), and tensors derived from parameters (the
inverse standard deviation of a batch norm, a convolution's weight with the batch norm folded in),
which are computed once and kept while their sources are unchanged."""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

import torch

# Set while a call runs under torch's CUDA graph trees: a derived leaf computed there lives in the
# graph's memory pool, which must hold no tensor past the call but the outputs, so it is not kept.
_KEEP_DERIVED = contextvars.ContextVar("dnngraph_keep_derived", default=True)


@contextlib.contextmanager
def derived_leaves_not_kept() -> Iterator[None]:
    """Derived leaves computed inside are used for the call and not cached (those already cached
    are still reused)."""
    token = _KEEP_DERIVED.set(False)
    try:
        yield
    finally:
        _KEEP_DERIVED.reset(token)


class Unsupported(Exception):
    """A node (or a partition) that dnngraph cannot take here; the message is the reason."""


# A leaf computes its tensor from the partition's call inputs and the leaves computed before it.
LeafFn = Callable[[Sequence[torch.Tensor], List[torch.Tensor]], torch.Tensor]


def _source_key(tensors: Sequence[torch.Tensor]) -> Tuple[Tuple[int, int, Tuple[int, ...]], ...]:
    """What identifies the sources of a derived leaf: storage, version counter (in-place writes
    bump it) and layout. The leaf keeps its sources alive, so a pointer cannot be reused."""
    return tuple((t.data_ptr(), t._version, tuple(t.stride())) for t in tensors)


@dataclass
class Leaf:
    """One leaf: `fn` computes it; `sources` (indices of earlier leaves) name what a derived
    leaf is a function of, so its value is reused while they are unchanged."""

    index: int
    fn: LeafFn
    derived_from: Optional[List[int]] = None
    cached_key: Any = None
    cached_sources: List[torch.Tensor] = field(default_factory=list)
    cached_value: Optional[torch.Tensor] = None

    def compute(self, inputs: Sequence[torch.Tensor], done: List[torch.Tensor]) -> torch.Tensor:
        """This leaf's tensor for one call (`done` holds the leaves before it)."""
        if self.derived_from is None:
            return self.fn(inputs, done)
        sources = [done[i] for i in self.derived_from]
        key = _source_key(sources)
        if self.cached_value is None or key != self.cached_key:
            with torch.no_grad():
                value = self.fn(inputs, done)
            if not _KEEP_DERIVED.get():
                return value
            self.cached_value, self.cached_key, self.cached_sources = value, key, sources
        return self.cached_value


class Leaves:
    """The ordered leaves of one partition, with their values for the call being lowered."""

    def __init__(self, inputs: Sequence[torch.Tensor]) -> None:
        self.inputs = list(inputs)
        self.items: List[Leaf] = []
        self.examples: List[torch.Tensor] = []

    def add(self, fn: LeafFn, derived_from: Optional[List[int]] = None) -> int:
        """Appends a leaf and computes its value for the call being lowered; returns its index."""
        leaf = Leaf(len(self.items), fn, derived_from)
        self.items.append(leaf)
        self.examples.append(leaf.compute(self.inputs, self.examples))
        return leaf.index

    def input(self, position: int) -> int:
        """The leaf of the partition's input at `position`."""
        return self.add(lambda inputs, _done: inputs[position])

    def view(self, source: int, fn: Callable[[torch.Tensor], torch.Tensor]) -> int:
        """A leaf that is `fn` (a view op) of leaf `source`."""
        return self.add(lambda _inputs, done: fn(done[source]))

    def derived(self, sources: List[int], fn: Callable[..., torch.Tensor]) -> int:
        """A leaf computed by `fn` from leaves `sources`, kept while they are unchanged."""
        return self.add(lambda _inputs, done: fn(*(done[i] for i in sources)), derived_from=list(sources))

    def run(self, inputs: Sequence[torch.Tensor]) -> List[torch.Tensor]:
        """Every leaf's tensor for one call."""
        done: List[torch.Tensor] = []
        for leaf in self.items:
            done.append(leaf.compute(inputs, done))
        return done
