"""Layouts of a connection list (an index of targets), computed once on the host.

A kernel's scatter-add sums, per target, the values of the connections that point at it. How an
engine can do that fast depends on the order the connections are stored in, and every engine
must sum each target's terms in the same order (left to right through the list, as
``np.add.at`` does) so float results agree bit for bit. Two host-side views give that order
without a data-dependent loop:

* :func:`neighbour_table`: per target, the positions of its connections (a padded table);
* :class:`PassPlan` / :func:`pass_plan`: the connections grouped into passes, pass ``k`` holding
  every target's ``k``-th connection, targets ranked by descending count so each pass covers a
  prefix of that ranking. A list stored in this *pass-major* order needs no gather at all to be
  summed (contiguous slices, added pass by pass) and the target of every entry is a contiguous
  slice of the ranked targets. Network generators store their lists this way (see
  :func:`pass_major_order`); any other order still works, through one permutation.

numpy only: this module is imported by kernels and engines alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

from hwbench.core.errors import UsageError

__all__ = ["PassPlan", "check_index", "neighbour_table", "pass_major_order", "pass_plan"]


def check_index(index: np.ndarray, size: int) -> None:
    """Concrete indices must address ``0..size-1``: compiled gathers do not clamp them."""
    if index.size and (index.min() < 0 or index.max() >= size):
        raise UsageError(f"gather/scatter index out of range: {index.min()}..{index.max()} for size {size}")


def neighbour_table(index: np.ndarray, size: int) -> np.ndarray:
    """(size, max count) positions into ``values`` per target, padded with ``len(index)``.

    Row i lists, in ascending order, the positions j with ``index[j] == i``; padding points at
    one extra zero appended to the values, so a plain row sum gives the scatter-add with no mask.
    """
    import numpy as np

    index = np.asarray(index, dtype=np.int64).reshape(-1)
    check_index(index, size)
    order = np.argsort(index, kind="stable")
    counts = np.bincount(index, minlength=size)
    width = int(counts.max(initial=0))
    starts = np.cumsum(counts) - counts
    slot = np.arange(len(index)) - np.repeat(starts, counts)
    table = np.full((size, width), len(index), dtype=np.int32)
    table[index[order], slot] = order
    return table


@dataclass(frozen=True)
class PassPlan:
    """A connection list seen as passes: pass ``k`` = every target's ``k``-th connection.

    ``ranked``: targets by descending connection count (ties by ascending id); ``counts[k]``:
    how many targets have more than ``k`` connections, so pass ``k`` covers ``ranked[:counts[k]]``;
    ``order``: positions of the list in pass-major order (pass 0 first, within a pass in
    ``ranked`` order; None: the list is stored so, the identity, not kept). Summing pass by pass
    adds each target's terms in list order.
    """

    ranked: np.ndarray
    counts: tuple[int, ...]
    order: np.ndarray | None

    @property
    def offsets(self) -> tuple[int, ...]:
        """Where each pass starts in the pass-major list."""
        import numpy as np

        return tuple(int(o) for o in np.cumsum((0, *self.counts[:-1]))) if self.counts else ()

    @property
    def inverse(self) -> np.ndarray:
        """Rank of each target: ``x_ranked[inverse]`` puts ranked values back in target order."""
        import numpy as np

        inv = np.empty_like(self.ranked)
        inv[self.ranked] = np.arange(len(self.ranked), dtype=self.ranked.dtype)
        return inv

    @property
    def in_rank_order(self) -> bool:
        """Whether targets are already numbered by rank (``ranked`` is the identity)."""
        import numpy as np

        return bool(np.array_equal(self.ranked, np.arange(len(self.ranked))))

    @property
    def is_pass_major(self) -> bool:
        """Whether the list is already stored in pass-major order (no permutation needed)."""
        import numpy as np

        return self.order is None or bool(np.array_equal(self.order, np.arange(len(self.order))))


def pass_plan(index: np.ndarray, size: int) -> PassPlan:
    """The :class:`PassPlan` of a target index over ``size`` targets.

    Per-connection temporaries are int32 where the list fits (a million io-ehh cells have ten
    million connections: each int64 copy is 80 MB, and the engines plan while a workload is held).
    """
    import numpy as np

    index = np.asarray(index).reshape(-1)
    check_index(index, size)
    narrow = np.int32 if max(len(index), size) < 2**31 else np.int64
    index = index.astype(narrow, copy=False)
    count = np.bincount(index, minlength=size)
    ranked = np.argsort(-count, kind="stable").astype(np.int32)
    depth = int(count.max(initial=0))
    counts = tuple(int(c) for c in np.searchsorted(-count[ranked], -np.arange(depth), side="left"))
    # k-th occurrence of each target, in list order
    by_target = np.argsort(index, kind="stable")
    starts = (np.cumsum(count) - count).astype(narrow)
    occurrence = np.empty(len(index), dtype=narrow)
    ranks = np.arange(len(index), dtype=narrow)
    np.subtract(ranks, np.repeat(starts, count), out=ranks)
    occurrence[by_target] = ranks
    del by_target, ranks
    rank = np.empty(size, dtype=narrow)
    rank[ranked] = np.arange(size, dtype=narrow)
    order = np.lexsort((rank[index], occurrence)).astype(np.int64, copy=False)
    return PassPlan(ranked=ranked, counts=counts, order=order)


def pass_major_order(index: np.ndarray, size: int) -> np.ndarray:
    """The permutation that stores a connection list in pass-major order (see the module doc).

    Each target's connections keep their relative order, so per-target sums are unchanged.
    """
    order = pass_plan(index, size).order
    assert order is not None
    return order
