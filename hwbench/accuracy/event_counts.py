"""Per-step event counters that cost elementwise work, not a reduction per operation.

Counting overflow / underflow / non-finite events of every rounded operation with one
reduction per event per operation would put hundreds of reductions into each step; XLA then
re-computes the rounded values feeding each reduction inside its own fused loop, and the
emulated kernel slows down by two orders of magnitude. Instead, each operation adds its event
flags, packed into one int32 per element (10 bits per event), to an accumulator for its op class
and result shape. Those adds fuse with the operation itself; :meth:`EventTally.totals` reduces
each accumulator once per step. A field never wraps: an accumulator is reduced early when it has
taken ``FIELD_MAX`` records.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EventTally"]

FIELD_BITS = 10
FIELD_MAX = (1 << FIELD_BITS) - 1  # records an accumulator takes before it must be reduced


class EventTally:
    """Accumulates event masks for a fixed list of counter names (numpy or jax.numpy arrays)."""

    def __init__(self, xp: Any, names: tuple[str, ...]) -> None:
        self.xp = xp
        self.names = names
        self._acc: dict[tuple[tuple[str, ...], tuple[int, ...]], tuple[Any, int]] = {}
        self._totals: dict[str, Any] = {}

    def reset(self) -> None:
        self._acc = {}
        self._totals = {}

    def record(self, names: tuple[str, ...], masks: tuple[Any, ...], shape: tuple[int, ...]) -> None:
        """Add one operation's event masks (at most three; None where an event cannot occur)."""
        xp = self.xp
        packed = None
        for i, mask in enumerate(masks):
            if mask is None:
                continue
            field = xp.where(mask, xp.asarray(1 << (FIELD_BITS * i), dtype=xp.int32), xp.asarray(0, dtype=xp.int32))
            packed = field if packed is None else packed + field
        if packed is None:
            return
        packed = xp.broadcast_to(packed, shape)
        key = (names, shape)
        acc, uses = self._acc.get(key, (None, 0))
        acc = packed if acc is None else acc + packed
        if uses + 1 == FIELD_MAX:
            self._reduce(names, acc)
            self._acc.pop(key, None)
        else:
            self._acc[key] = (acc, uses + 1)

    def totals(self) -> Any:
        """This step's counts as an int32 vector ordered as ``names``; starts the next step."""
        xp = self.xp
        for (names, _), (acc, _) in self._acc.items():
            self._reduce(names, acc)
        counts = [self._totals.get(name) for name in self.names]
        self.reset()
        if not counts:
            return xp.zeros((0,), dtype=xp.int32)
        zero = xp.asarray(0, dtype=xp.int32)
        return xp.stack([zero if c is None else xp.asarray(c, dtype=xp.int32) for c in counts])

    def _reduce(self, names: tuple[str, ...], acc: Any) -> None:
        xp = self.xp
        for i, name in enumerate(names):
            field = (acc >> (FIELD_BITS * i)) & FIELD_MAX
            total = xp.sum(field, dtype=xp.int32)
            prev = self._totals.get(name)
            self._totals[name] = total if prev is None else prev + total
