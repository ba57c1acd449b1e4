"""The audit's run slots: at most one simulating run per core, the costliest waiting run first.

An audit starts its protocols, their baseline groups and their candidates at once, a thread each
(XLA releases the GIL while it executes). Left to the operating system, a first full io-ehh audit
shares two cores among eight runs, and the order they finish in is chance: the longest (the fp64
gold) may be left alone at the end with a core idle, or a short run may wait behind it. With
slots, a run simulates only while it holds one, and a free slot goes to the waiting run with the
highest estimated cost — longest processing time first, the classic greedy rule for spreading
jobs over identical machines (Graham 1969: within 4/3 of the best order). The estimate only
orders the runs: results never depend on it (the report is the same in any order, see
``tests/audit/test_baseline_cache.py``).

Only the simulation holds a slot, not the build before it: builds are short (program cache) or
compile-bound, and a run that waits for a slot would otherwise also delay its own compilation.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["RunSlots", "SlotsClosed"]


class SlotsClosed(RuntimeError):
    """The audit failed or was interrupted while this run waited for a slot: it never starts."""


class RunSlots:
    """``slots`` runs at a time; waiting runs are let in by cost (highest first), ties in arrival order."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError(f"run slots must be at least 1, got {slots}")
        self._free = slots
        self._waiting: list[tuple[float, int]] = []  # heap of (-cost, arrival)
        self._arrivals = itertools.count()
        self._closed = False
        self._cond = threading.Condition()

    @contextmanager
    def hold(self, cost: float) -> Iterator[None]:
        """Wait for a slot (the costliest waiter first), hold it for the ``with`` body, give it back.

        Raises :class:`SlotsClosed` if :meth:`close` is called before this run got a slot."""
        me = (-float(cost), next(self._arrivals))
        with self._cond:
            heapq.heappush(self._waiting, me)
            while not self._closed and not (self._free > 0 and self._waiting[0] == me):
                self._cond.wait()
            if self._closed:
                self._waiting.remove(me)
                heapq.heapify(self._waiting)
                raise SlotsClosed("the audit stopped before this run started")
            heapq.heappop(self._waiting)
            self._free -= 1
            self._cond.notify_all()  # the next waiter may take another free slot
        try:
            yield
        finally:
            with self._cond:
                self._free += 1
                self._cond.notify_all()

    def waiting(self) -> int:
        """How many runs wait for a slot now."""
        with self._cond:
            return len(self._waiting)

    def close(self) -> None:
        """No waiting run will start (runs holding a slot finish): the audit failed or was interrupted."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
