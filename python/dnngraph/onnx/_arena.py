"""One memory arena for the values that pass between a session's pygraphs: each value lives
from the step that writes it to the last step that reads it (or to the end, for the model's
outputs), and values whose lifetimes do not overlap share bytes. Planned once at load; the
arena is one buffer of the session's array library, each value a typed view into it."""
from __future__ import annotations

import dataclasses

ALIGNMENT = 256  # bytes: every engine's alignment needs are met, and vector loads stay aligned


@dataclasses.dataclass(frozen=True)
class Lifetime:
    """A value of `nbytes` written at step `first` and last read at step `last` (inclusive)."""
    name: str
    nbytes: int
    first: int
    last: int


def _aligned(n: int) -> int:
    return -(-max(int(n), 1) // ALIGNMENT) * ALIGNMENT


def plan(lifetimes: list[Lifetime]) -> tuple[dict[str, int], int]:
    """Byte offsets per value and the arena's size: largest values first, each at the lowest
    offset that no value alive at the same time occupies (first fit)."""
    placed: list[tuple[Lifetime, int]] = []
    offsets: dict[str, int] = {}
    for v in sorted(lifetimes, key=lambda v: (-v.nbytes, v.first, v.name)):
        size = _aligned(v.nbytes)
        busy = sorted((off, off + _aligned(o.nbytes)) for o, off in placed if o.first <= v.last and v.first <= o.last)
        offset = 0
        for lo, hi in busy:
            if offset + size <= lo:
                break
            offset = max(offset, hi)
        offsets[v.name] = offset
        placed.append((v, offset))
    total = max((off + _aligned(v.nbytes) for v, off in placed), default=0)
    return offsets, total
