"""The listing tables as plain text, byte for byte what rich prints when stdout is not a terminal.

Why: importing rich is ~25 ms of the ~0.3 s that issue 31 allows ``hwbench devices`` on a 2-core
machine, and a table sent to a pipe or a file carries no colour, so it needs none of rich's
machinery. This module reproduces the layout of :func:`hwbench.cli.output.print_table`'s default
table as rich (13 to 15) draws it: ``HEAVY_HEAD`` box, one space of padding left and right of
every cell, columns that ``fold``, rich's column-width reduction when the table is wider than the
console, words wrapped as ``rich._wrap.divide_line`` wraps them, the title centred above.

It covers only output rich would write without styles, at a width it would choose the same way:
not a terminal (and no ``FORCE_COLOR`` / ``TTY_COMPATIBLE`` forcing one), no IPython, a UTF-8
stream, on POSIX; and only text whose width is its length and that rich's markup and emoji codes
leave alone (printable ASCII without ``[``, ``]``, ``\\`` or ``:word:``). Everything else returns
None and rich draws it. ``tests/cli/test_plain_table.py`` compares both on random tables.
"""

from __future__ import annotations

import builtins
import itertools
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, Literal

MIN_WIDTH = 20
"""Narrower consoles are left to rich (degenerate layouts nobody reads)."""

_WORD = re.compile(r"\s*\S+\s*")  # rich._wrap.re_word: a word and the spaces around it
_TRAILING_SPACE = re.compile(r"\s+$")
_RICH_SYNTAX = re.compile(r"[\[\]\\]|:\S*:")  # markup, an escape, or what may be an emoji code

Range = tuple[int, int]


def console_width(stream: Any) -> int | None:
    """The width rich would lay a table out for on ``stream``, or None where rich would style the
    output (a terminal, forced colour, IPython, a live display), use ASCII boxes (not UTF-8) or
    Windows' legacy console."""
    env = os.environ
    if stream is None or sys.platform == "win32" or "FORCE_COLOR" in env or "TTY_COMPATIBLE" in env:
        return None
    if hasattr(builtins, "get_ipython") or hasattr(stream, "rich_proxied_file"):
        return None
    if not (getattr(stream, "encoding", None) or "utf-8").lower().startswith("utf"):
        return None
    try:
        if stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    columns = env.get("COLUMNS")
    width = int(columns) if columns is not None and columns.isdigit() else _terminal_width()
    return width if width >= MIN_WIDTH else None


def _terminal_width() -> int:
    """As rich does: the first of stdin, stdout, stderr that is a terminal gives the width, else 80."""
    for stream, default in ((sys.__stdin__, 0), (sys.__stdout__, 1), (sys.__stderr__, 2)):
        try:
            fd = stream.fileno() if stream is not None else default
        except Exception:
            fd = default
        try:
            return os.get_terminal_size(fd).columns or 80
        except (AttributeError, ValueError, OSError):
            continue
    return 80


def render(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> str | None:
    """The table as rich prints it ``width`` columns wide, or None if its text needs rich."""
    if not all(_is_plain(text) for text in (title, *columns, *(cell for row in rows for cell in row))):
        return None
    if any(len(row) != len(columns) for row in rows) or not columns:
        return None
    extra = len(columns) + 1  # the box's vertical lines
    widths = _column_widths(columns, rows, width - extra)
    if min(widths) < 3:  # a column with no room for text inside its padding: rich's corner cases
        return None
    lines = _wrap(title, sum(widths) + extra, "center") if title else []
    lines.append("┏" + "┳".join("━" * w for w in widths) + "┓")
    lines += _row(columns, widths, "┃", "bottom")
    lines.append("┡" + "╇".join("━" * w for w in widths) + "┩")
    for row in rows:
        lines += _row(row, widths, "│", "top")
    lines.append("└" + "┴".join("─" * w for w in widths) + "┘")
    return "".join(line[:width] + "\n" for line in lines)


def _is_plain(text: str) -> bool:
    return text.isascii() and text.isprintable() and not _RICH_SYNTAX.search(text)


def _row(cells: Sequence[str], widths: list[int], rule: str, vertical: Literal["top", "bottom"]) -> list[str]:
    """One table row: each cell wrapped in its column (padded one space each side), the shorter
    cells filled with blank lines at the bottom (``top``) or the top (``bottom``: the header)."""
    wrapped = [[f" {line} " for line in _wrap(cell, w - 2, "left")] for cell, w in zip(cells, widths)]
    height = max(len(lines) for lines in wrapped)
    for lines, w in zip(wrapped, widths):
        blank = [" " * w] * (height - len(lines))
        lines[:] = lines + blank if vertical == "top" else blank + lines
    return [rule + rule.join(lines[i] for lines in wrapped) + rule for i in range(height)]


def _wrap(text: str, width: int, justify: Literal["left", "center"]) -> list[str]:
    """``rich.text.Text.wrap`` with ``overflow="fold"`` for one line of text: every line exactly
    ``width`` long."""
    bounds = [0, *_divide_line(text, width), len(text)]
    lines = []
    for start, end in itertools.pairwise(bounds):
        line = text[start:end]
        if len(line) > width:  # Text.rstrip_end: drop the spaces that overhang
            trailing = _TRAILING_SPACE.search(line)
            if trailing is not None:
                line = line[: len(line) - min(len(trailing.group()), len(line) - width)]
        if justify == "left":
            line = line[:width].ljust(width)
        else:
            line = line.rstrip()[:width]
            line = (" " * ((width - len(line)) // 2) + line).ljust(width)
        lines.append(line)
    return lines


def _divide_line(text: str, width: int) -> list[int]:
    """``rich._wrap.divide_line(text, width, fold=True)`` for text whose every character is one cell."""
    breaks: list[int] = []
    offset = 0
    match = _WORD.match(text, 0)
    while match is not None:
        start, end = match.span()
        word = match.group()
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:  # fold the word: as many lines of `width` as it takes
            chunks = [word[i : i + width] for i in range(0, len(word), width)]
            for chunk in chunks[:-1]:
                if start:
                    breaks.append(start)
                start += len(chunk)
            if start:
                breaks.append(start)
            offset = len(chunks[-1])
        elif offset and start:
            breaks.append(start)
            offset = len(word)
        match = _WORD.match(text, end)
    return breaks


def _column_widths(columns: Sequence[str], rows: Sequence[Sequence[str]], limit: int) -> list[int]:
    """``rich.table.Table._calculate_column_widths`` (not expanded, no fixed widths, every column
    wrappable): each column as wide as its widest line; if that overflows ``limit``, the widest
    columns shrink first, then all evenly, and each is measured again at its new width."""
    texts = [[header, *(row[i] for row in rows)] for i, header in enumerate(columns)]
    widths = [_column_range(cells, limit)[1] or 1 for cells in texts]
    if sum(widths) > limit:
        widths = _collapse(widths, limit)
        if sum(widths) > limit:
            widths = _ratio_reduce(sum(widths) - limit, [1] * len(widths), widths, widths)
        widths = [_column_range(cells, w)[1] for cells, w in zip(texts, widths)]
    return widths


def _column_range(cells: Sequence[str], limit: int) -> Range:
    """``Table._measure_column``: the widest minimum and the widest maximum of the column's cells."""
    if limit < 1:
        return (0, 0)
    ranges = [_cell_range(text, limit) for text in cells]
    return min(max(r[0] for r in ranges), limit), min(max(r[1] for r in ranges), limit)


def _cell_range(text: str, limit: int) -> Range:
    """``Measurement.get`` of ``Padding(text, (0, 1))``: (longest word, whole text) plus padding."""
    if limit < 1:
        return (0, 0)
    if limit - 2 < 1:
        measured = (limit, limit)
    else:
        words = text.split()
        inner = _measured((max(map(len, words)) if words else len(text), len(text)), limit)
        measured = (min(inner[0] + 2, limit), min(inner[1] + 2, limit))
    return _measured(measured, limit)


def _measured(found: Range, limit: int) -> Range:
    """The tail of ``Measurement.get``: normalised, capped at ``limit``, (0, 0) when nothing fits."""
    low, high = _normalize(found)
    low, high = min(low, limit), min(high, limit)
    return (0, 0) if high < 1 else _normalize((low, high))


def _normalize(found: Range) -> Range:
    low, high = found
    low = min(max(0, low), high)
    return max(0, low), max(0, low, high)


def _collapse(widths: list[int], limit: int) -> list[int]:
    """``Table._collapse_widths``: narrow the widest columns to the next widest until it fits."""
    excess = sum(widths) - limit
    while sum(widths) and excess > 0:
        widest = max(widths)
        second = max((w for w in widths if w != widest), default=0)
        ratios = [1 if w == widest else 0 for w in widths]
        if not widest - second:
            break
        widths = _ratio_reduce(excess, ratios, [min(excess, widest - second)] * len(widths), widths)
        excess = sum(widths) - limit
    return widths


def _ratio_reduce(total: int, ratios: list[int], maximums: list[int], values: list[int]) -> list[int]:
    """``rich._ratio.ratio_reduce``: take ``total`` from ``values`` in proportion to ``ratios``."""
    ratios = [ratio if maximum else 0 for ratio, maximum in zip(ratios, maximums)]
    total_ratio = sum(ratios)
    if not total_ratio:
        return values[:]
    remaining = total
    result = []
    for ratio, maximum, value in zip(ratios, maximums, values):
        if ratio and total_ratio > 0:
            distributed = min(maximum, round(ratio * remaining / total_ratio))
            result.append(value - distributed)
            remaining -= distributed
            total_ratio -= ratio
        else:
            result.append(value)
    return result
