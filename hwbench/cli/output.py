"""Output helpers: rich on a terminal, plain JSON on stdout with ``--json``, diagnostics on stderr."""

from __future__ import annotations

import errno
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table


class _Console(Console):
    """Rich ends the process with exit 1 when stdout's reader goes away; hwbench's CLI decides instead."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError(errno.EPIPE, "stdout closed by its reader")


stdout = _Console(soft_wrap=False)
stderr = Console(stderr=True, soft_wrap=True)


def print_json(data: Any) -> None:
    """Data only, on stdout, so ``hwbench X --json | jq`` always works."""
    from hwbench.core.strict_json import dumps

    if sys.stdout is None:  # started with stdout closed (`hwbench devices --json >&-`): as a reader gone away
        raise BrokenPipeError(errno.EPIPE, "stdout is closed")
    sys.stdout.write(dumps(data, indent=2) + "\n")  # RFC 8259: non-finite numbers as strings
    sys.stdout.flush()


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    table = Table(title=escape(title), show_lines=False, header_style="bold")
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*("" if v is None else escape(str(v)) for v in row))
    stdout.print(table)


def warn(message: str) -> None:
    stderr.print(f"[yellow]warning:[/yellow] {escape(message)}", highlight=False)
