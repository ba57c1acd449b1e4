"""Output helpers: rich on a terminal, plain JSON on stdout with ``--json``, diagnostics on stderr.

rich is imported when something needs it: ``stdout`` and ``stderr`` (the rich consoles) are made
on first use, and a table going to a pipe or a file is written as plain text with the same bytes
(:mod:`hwbench.cli.plain_table`), so ``hwbench devices`` and every ``--json`` answer skip rich's
~25 ms import (issue 31: ``hwbench devices`` within 0.3 s).
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def __getattr__(name: str) -> Console:
    """``stdout`` / ``stderr``: the rich consoles, made (and kept) on first use."""
    if name in ("stdout", "stderr"):
        return _console(name)  # type: ignore[arg-type]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _console(name: Literal["stdout", "stderr"]) -> Console:
    made: Console | None = globals().get(name)
    if made is None:
        from rich.console import Console

        class _Console(Console):
            """Rich ends the process with exit 1 when stdout's reader goes away; hwbench's CLI decides instead."""

            def on_broken_pipe(self) -> None:
                raise BrokenPipeError(errno.EPIPE, "stdout closed by its reader")

        made = _Console(soft_wrap=False) if name == "stdout" else Console(stderr=True, soft_wrap=True)
        globals()[name] = made
    return made


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
    longest word, so a cell wraps between words instead of inside one ("referenc/e").

    The default layout going to a pipe or a file is written without rich, byte for byte as rich
    writes it (unless the ``stdout`` console exists already: it may have been given a width)."""
    cells = [["" if v is None else str(v) for v in row] for row in rows]
    if not narrow and "stdout" not in globals():
        from hwbench.cli import plain_table

        width = plain_table.console_width(sys.stdout)
        text = None if width is None else plain_table.render(title, columns, cells, width)
        if text is not None:
            sys.stdout.write(text)
            sys.stdout.flush()
            return
    _console("stdout").print(rich_table(title, columns, cells, narrow=narrow))


def rich_table(title: str, columns: Sequence[str], cells: list[list[str]], *, narrow: bool = False) -> Table:
    """The rich table :func:`print_table` prints (cells as strings; rich markup in them is escaped)."""
    from rich.markup import escape
    from rich.table import Table

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
    return table


VERDICT_COLOR = {"PASS": "green", "WARN": "yellow", "FAIL": "red"}
"""The rich colour of each verdict, wherever one is printed."""


def print_overall(verdict: str, elapsed_s: float) -> None:
    """An audit's last line: ``Overall: FAIL  (19.4 s)``, in the verdict's colour."""
    color = VERDICT_COLOR[verdict]
    _console("stdout").print(f"\n[bold {color}]Overall: {verdict}[/bold {color}]  ({elapsed_s:.1f} s)", highlight=False)


def warn(message: str) -> None:
    from rich.markup import escape

    _console("stderr").print(f"[yellow]warning:[/yellow] {escape(message)}", highlight=False)
