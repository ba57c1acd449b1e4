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


def print_json(data: Any, **dump: Any) -> None:
    """Data only, on stdout, so ``hwbench X --json | jq`` always works; a pydantic model is dumped by
    alias (``dump``: ``model_dump``'s options, e.g. ``exclude``), as strict RFC 8259 JSON."""
    from pydantic import BaseModel

    from hwbench.core.strict_json import dump_model, dumps

    if sys.stdout is None:  # started with stdout closed (`hwbench devices --json >&-`): as a reader gone away
        raise BrokenPipeError(errno.EPIPE, "stdout is closed")
    text = dump_model(data, indent=2, **dump) if isinstance(data, BaseModel) else dumps(data, indent=2)
    sys.stdout.write(text + "\n")  # RFC 8259: non-finite numbers as strings
    sys.stdout.flush()


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], *, narrow: bool = False) -> None:
    """A rich table on stdout. ``narrow``: the layout that reads at 80 columns (piped output, a small
    terminal): no vertical rules or edges, one space between columns, and no column narrower than its
    longest word, so a cell wraps between words instead of inside one ("referenc/e")."""
    cells = [["" if v is None else str(v) for v in row] for row in rows]
    if not narrow:
        table = Table(title=escape(title), show_lines=False, header_style="bold")
        for col in columns:
            table.add_column(col, overflow="fold")
    else:
        from rich import box

        table = Table(title=escape(title), header_style="bold", box=box.SIMPLE_HEAD, show_edge=False, padding=0)
        for i, col in enumerate(columns):
            words = [w for text in (col, *(row[i] for row in cells)) for w in text.split()]
            table.add_column(col, overflow="fold", min_width=min(max(map(len, words), default=1), 24))
    for row in cells:
        table.add_row(*(escape(v) for v in row))
    stdout.print(table)


def warn(message: str) -> None:
    stderr.print(f"[yellow]warning:[/yellow] {escape(message)}", highlight=False)
