"""Option types that refuse a bad value while the command line is parsed, before any work.

Each type knows its valid range and says it (``describe()``), so the same text appears in the
error message, in ``--help`` and in the option table of docs/cli.md (tests/cli checks that table
against these types). A refused value is a click ``BadParameter``: ``main`` prints it as one
``error:`` line and exits 2.

New options should use these rather than bare ``int``/``float``/``click.Path``:

* :class:`FiniteFloat` / :class:`BoundedInt` for numbers (NaN, inf and out-of-range refused);
* :class:`OutFile` / :class:`OutDir` for outputs (checked writable, never a device or FIFO);
* :class:`InFile` for inputs (an existing regular file: a FIFO would block the read);
* :class:`SizeList` for comma-separated size lists;
* :func:`refuse_together` for options that cannot combine.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import click

from hwbench.cli.command import given
from hwbench.core.audit_protocol import MAX_SEED
from hwbench.core.errors import UsageError
from hwbench.core.files import check_input_file, check_output_dir, check_output_file


def _fmt(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else f"{x:,}".replace(",", "")


class FiniteFloat(click.ParamType[float]):
    """A finite float within [low, high] (either end open on request)."""

    name = "number"

    def __init__(
        self, low: float = -math.inf, high: float = math.inf, *, low_open: bool = False, high_open: bool = False
    ) -> None:
        self.low, self.high, self.low_open, self.high_open = low, high, low_open, high_open

    def describe(self) -> str:
        parts = []
        if self.low > -math.inf:
            parts.append(f"{'>' if self.low_open else '>='} {_fmt(self.low)}")
        if self.high < math.inf:
            parts.append(f"{'<' if self.high_open else '<='} {_fmt(self.high)}")
        return "a finite number" + (" " + " and ".join(parts) if parts else "")

    def contains(self, v: float) -> bool:
        low_ok = v > self.low if self.low_open else v >= self.low
        high_ok = v < self.high if self.high_open else v <= self.high
        return math.isfinite(v) and low_ok and high_ok

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            v = float(value)
        except (TypeError, ValueError, OverflowError):
            self.fail(f"must be {self.describe()}, got {str(value)[:40]!r}", param, ctx)
        if not self.contains(v):
            self.fail(f"must be {self.describe()}, got {str(value)[:40]!r}", param, ctx)
        return v


class BoundedInt(click.ParamType[int]):
    """An integer within [low, high] (``None``: unbounded on that side)."""

    name = "integer"

    def __init__(self, low: int | None = None, high: int | None = None) -> None:
        self.low, self.high = low, high

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            return f"an integer from {_fmt(self.low)} to {_fmt(self.high)}"
        if self.low is not None:
            return f"an integer >= {_fmt(self.low)}"
        if self.high is not None:
            return f"an integer <= {_fmt(self.high)}"
        return "an integer"

    def contains(self, v: int) -> bool:
        return (self.low is None or v >= self.low) and (self.high is None or v <= self.high)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            v = value
        else:
            text = str(value).strip()
            if not re.fullmatch(r"[+-]?[0-9]{1,40}", text):  # ASCII digits: str.isdigit() takes '²'
                self.fail(f"must be {self.describe()}, got {str(value)[:40]!r}", param, ctx)
            v = int(text)
        if not self.contains(v):
            self.fail(f"must be {self.describe()}, got {str(value)[:40]!r}", param, ctx)
        return v


class SizeList(click.ParamType[list[int]]):
    """Comma-separated positive integers and ranges ``lo..hi`` (``cube``: grid edges n, cells n^3)."""

    name = "list"

    def __init__(self, *, cube: bool) -> None:
        self.cube = cube

    def describe(self) -> str:
        what = "grid edges n (cells n^3)" if self.cube else "cell counts"
        return f"a non-empty comma-separated list of positive integer {what}, ranges like 4..20 allowed"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> list[int]:
        if isinstance(value, list):
            return value
        from hwbench.cli.common import parse_sizes

        try:
            return parse_sizes(str(value), cube=self.cube)
        except UsageError as exc:
            self.fail(str(exc), param, ctx)


class OutFile(click.ParamType[str]):
    """A file path hwbench may create or replace (checked before any work; see core.files)."""

    name = "file"

    def describe(self) -> str:
        return "a file path in a writable folder (created if missing); not a folder, device or FIFO"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            check_output_file(value, "file")
        except UsageError as exc:
            self.fail(str(exc), param, ctx)
        return str(value)


class OutDir(click.ParamType[str]):
    """A folder hwbench may create or write into (checked before any work)."""

    name = "folder"

    def describe(self) -> str:
        return "a writable folder (created if missing); not a file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            check_output_dir(value, "folder")
        except UsageError as exc:
            self.fail(str(exc), param, ctx)
        return str(value)


class InFile(click.ParamType[str]):
    """An existing, readable regular file."""

    name = "file"

    def describe(self) -> str:
        return "an existing readable regular file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            check_input_file(Path(value), "file")
        except UsageError as exc:
            self.fail(str(exc), param, ctx)
        return str(value)


class Coordinator(click.ParamType[str]):
    """``HOST:PORT`` of a multi-process run's process 0 (``[v6-address]:PORT`` for IPv6)."""

    name = "host:port"

    def describe(self) -> str:
        return "HOST:PORT with a port from 1 to 65535"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from hwbench.core.distributed import parse_coordinator

        try:
            parse_coordinator(str(value))
        except UsageError:
            self.fail(f"must be {self.describe()}, got {str(value)[:40]!r}", param, ctx)
        return str(value)


def _flag(ctx: click.Context, name: str) -> str:
    for p in ctx.command.params:
        if p.name == name and isinstance(p, click.Option):
            return max(p.opts, key=len)
    return name


class Tag(click.ParamType[str]):
    """A tag for a stored result (:func:`hwbench.store.tags.tag_problem`)."""

    name = "tag"

    def describe(self) -> str:
        from hwbench.store.tags import MAX_TAG

        return f"a word of 1 to {MAX_TAG} characters, without a comma or control character"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from hwbench.store.tags import tag_problem

        problem = tag_problem(str(value))
        if problem is not None:
            self.fail(problem, param, ctx)
        return str(value)


def refuse_together(ctx: click.Context, option: str, others: list[str], why: str = "") -> None:
    """Refuse ``option`` given together with any of ``others`` (a UsageError naming both)."""
    if not given(ctx, option):
        return
    for other in others:
        if given(ctx, other):
            reason = f": {why}" if why else ""
            raise UsageError(f"{_flag(ctx, option)} cannot be combined with {_flag(ctx, other)}{reason}")


def refuse_given(ctx: click.Context, options: tuple[str, ...], why: str) -> None:
    """Refuse the first of ``options`` the user gave: it does not apply here (``why`` says so)."""
    for option in options:
        if given(ctx, option):
            raise UsageError(f"{_flag(ctx, option)} {why}")


# The ranges shared by the commands (docs/cli.md lists them; tests/cli checks both agree).
SEED = BoundedInt(0, MAX_SEED)
REPEATS = BoundedInt(1, 10_000)
POSITIVE_MS = FiniteFloat(0.0, low_open=True)
CELLS = BoundedInt(1, None)
SHARDS = BoundedInt(1, 4096)
PROCESSES = BoundedInt(1, 65536)
PROCESS_ID = BoundedInt(0, 65535)
COORDINATOR = Coordinator()
