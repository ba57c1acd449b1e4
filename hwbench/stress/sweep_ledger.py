"""Where a sweep's finished cells are kept, so a sweep can be resumed and its results read back.

The sweep driver needs two things of a ledger: the cells already recorded (with their audit
report, to rebuild the table on resume) and a way to record one more. :class:`SweepLedger` is that
protocol; the CLI passes the results store's ledger (``hwbench.cli.sweep``), and
:class:`JsonlLedger` keeps one JSON line per cell in a local file (tests, ``--ledger FILE``, or a
machine without a store). A cell is recorded only once its audit has finished, in one write, so an
interrupted sweep leaves whole records of the cells it finished and nothing of the others.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Protocol

from hwbench.core.errors import UsageError
from hwbench.core.strict_json import dumps


class SweepLedger(Protocol):
    """The record of a sweep's finished cells (keys are :meth:`Cell.key` strings)."""

    def recorded(self) -> dict[str, dict[str, Any]]:
        """Every recorded cell's key with its ``hwbench.audit/1`` report document."""
        ...

    def record(self, key: str, document: dict[str, Any]) -> None:
        """Keep one finished cell (atomically: all of it or nothing)."""
        ...


class JsonlLedger:
    """One JSON object per line, ``{"key": ..., "report": {...}}``; appended with one write + fsync.

    A torn last line (a machine that lost power mid-append) is ignored on reading: that cell is
    simply run again.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def recorded(self) -> dict[str, dict[str, Any]]:
        if not self.path.exists():
            return {}
        out: dict[str, dict[str, Any]] = {}
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{self.path}: cannot read sweep ledger ({exc})") from None
        for line in lines:
            try:
                entry = json.loads(line)
                out[str(entry["key"])] = entry["report"]
            except (json.JSONDecodeError, KeyError, TypeError, RecursionError):
                continue
        return out

    def record(self, key: str, document: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = (dumps({"key": key, "report": document}) + "\n").encode()  # RFC 8259 (old lines: Infinity)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
