"""A sweep's cells in the results store: each finished cell one stored audit, tagged ``sweep:<id>``
with a uid derived from ``<id>:<cell key>`` (:func:`cell_uid`), so ``hwbench results list --tag
sweep:<id>`` shows a sweep and ``hwbench sweep --resume <id>`` skips the cells the store already holds.

The sweep also keeps its JSON-lines ledger in its folder (:class:`BothLedgers`): the store is
the shared, queryable record; the file lets a sweep resume even where the store is off or
unreachable. A store that cannot be written never stops a sweep (as for every command): the cell
is kept in the file and one warning line is printed.
"""

from __future__ import annotations

import hashlib
from typing import Any

from hwbench.cli.output import warn
from hwbench.stress.sweep_cell import cell_profile
from hwbench.stress.sweep_ledger import JsonlLedger
from hwbench.stress.sweep_spec import Cell


def cell_uid(sweep_id: str, key: str) -> str:
    """A cell's store uid: 32 hex digits of SHA-256 over ``<id>:<cell key>`` (the uid column holds 32
    characters, which PostgreSQL enforces; a cell key alone can be longer)."""
    return hashlib.sha256(f"{sweep_id}:{key}".encode()).hexdigest()[:32]


class StoreLedger:
    """The :class:`~hwbench.stress.sweep_ledger.SweepLedger` protocol over a results store.

    ``pending`` is the command's opened store (:func:`hwbench.cli.record.opened_store`); ``cells``
    maps each cell key to its cell, so a record carries the profile the cell really ran under.
    """

    def __init__(self, pending: Any, sweep_id: str, cells: dict[str, Cell]) -> None:
        self.pending = pending
        self.store = pending.store
        self.sweep_id = sweep_id
        self.cells = cells
        self.tags = (f"sweep:{sweep_id}", *pending.tags)

    def recorded(self) -> dict[str, dict[str, Any]]:
        from hwbench.store.db import Filters

        prefix = f"{self.sweep_id}:"  # the uids of stores written before cell_uid (SQLite kept them whole)
        keys = {cell_uid(self.sweep_id, key): key for key in self.cells}
        rows = self.store.list(Filters(tag=f"sweep:{self.sweep_id}", limit=None))
        found = {}
        for r in rows:
            key = keys.get(r.uid) or (r.uid[len(prefix) :] if r.uid.startswith(prefix) else None)
            if key is not None:
                found[key] = self.store.get(r.id).document
        return found

    def record(self, key: str, document: dict[str, Any]) -> None:
        from hwbench.cli.record import environment_of

        environment = environment_of(self.pending, document, self._profile(key))
        self.store.record(document, environment, self.tags, uid=cell_uid(self.sweep_id, key))

    def _profile(self, key: str) -> Any:
        cell = self.cells.get(key)
        if cell is None or not cell.ops:
            return None
        from hwbench.core.plugins import get_registry
        from hwbench.core.runner import resolve_mode

        device = get_registry().device(cell.device)
        return cell_profile(device, resolve_mode(device, cell.mode), cell)


class BothLedgers:
    """The sweep folder's JSON-lines file, and the store when it is on (see the module docstring)."""

    def __init__(self, file: JsonlLedger, store: StoreLedger | None) -> None:
        self.file = file
        self.store = store

    def recorded(self) -> dict[str, dict[str, Any]]:
        found = dict(self.file.recorded())
        if self.store is not None:
            try:
                found.update(self.store.recorded())
            except Exception as exc:
                warn(f"sweep: cannot read the store's cells ({exc}); resuming from the sweep's own file")
        return found

    def record(self, key: str, document: dict[str, Any]) -> None:
        self.file.record(key, document)
        if self.store is not None:
            try:
                self.store.record(key, document)
            except Exception as exc:
                warn(f"sweep: cell {key} not recorded in the store ({exc}); it is in the sweep's own file")
