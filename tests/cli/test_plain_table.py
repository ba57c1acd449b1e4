"""Tables written without rich are byte for byte what rich writes (``hwbench.cli.plain_table``).

A listing sent to a pipe or a file skips rich's import (issue 31: ``hwbench devices`` within
0.3 s); that is only allowed because the bytes do not change. Random tables (words that fit,
words longer than any column, empty cells, many columns at narrow widths) are rendered both ways
and compared; the listing commands themselves are compared in a fresh interpreter, piped, at 80
and 200 columns, against rich drawing the same rows; and text the plain renderer cannot vouch for
(markup, emoji codes, non-ASCII, a terminal) is left to rich.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from hwbench.cli import output, plain_table

WORD = st.text(alphabet="abcxyz0189-./()%=,;'", min_size=1, max_size=30)
CELL = st.lists(WORD, max_size=8).map(" ".join) | st.sampled_from(["", " ", "a  b", " lead", "trail  "])


def rich_bytes(title: str, columns: list[str], rows: list[list[str]], width: int) -> str:
    """What hwbench printed before: rich's table on a console ``width`` columns wide, not a terminal."""
    buffer = io.StringIO()
    Console(file=buffer, width=width, soft_wrap=False).print(output.rich_table(title, columns, rows))
    return buffer.getvalue()


@st.composite
def tables(draw: st.DrawFn) -> tuple[str, list[str], list[list[str]], int]:
    n = draw(st.integers(1, 7))
    columns = draw(st.lists(WORD, min_size=n, max_size=n))
    rows = draw(st.lists(st.lists(CELL, min_size=n, max_size=n), max_size=6))
    title = draw(st.lists(WORD, min_size=1, max_size=12).map(" ".join))
    return title, columns, rows, draw(st.integers(plain_table.MIN_WIDTH, 240))


@settings(max_examples=400, deadline=None)
@given(tables())
def test_plain_tables_equal_rich_byte_for_byte(table: tuple[str, list[str], list[list[str]], int]) -> None:
    title, columns, rows, width = table
    plain = plain_table.render(title, columns, rows, width)
    if plain is not None:  # None only for layouts left to rich (a column with no room inside its padding)
        assert plain == rich_bytes(title, columns, rows, width)


def test_the_random_tables_mostly_take_the_plain_path() -> None:
    # The property above compares nothing when render() declines: it must not decline typical tables.
    columns, row = ["name", "status", "why"], ["cpu", "real", "host CPU: a long reason " * 5]
    for width in (20, 40, 80, 200):
        assert plain_table.render("Devices", columns, [row], width) == rich_bytes("Devices", columns, [row], width)


@pytest.mark.parametrize(
    "cell",
    ["[bold]x[/bold]", "a \\ b", ":thumbs_up:", "caf\u00e9", "\u5bbd\u5b57", "tab\there", "two\nlines", "[x]"],
)
def test_text_rich_would_interpret_is_left_to_rich(cell: str) -> None:
    assert plain_table.render("T", ["a"], [[cell]], 80) is None


def test_a_terminal_or_forced_colour_is_left_to_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.setenv("COLUMNS", "123")
    assert plain_table.console_width(io.StringIO()) == 123
    assert plain_table.console_width(Tty()) is None
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert plain_table.console_width(io.StringIO()) is None
    monkeypatch.delenv("FORCE_COLOR")
    latin1 = io.TextIOWrapper(io.BytesIO(), encoding="latin-1")
    assert plain_table.console_width(latin1) is None  # rich would draw ASCII boxes


def test_a_console_given_a_width_keeps_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests (and callers) may set the rich console's width: then rich prints, at that width.
    monkeypatch.setattr(output.stdout, "width", 300)
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        output.print_table("T", ["a", "b"], [["x " * 100, "y"]])
    assert max(len(line) for line in buffer.getvalue().splitlines()) > 200


LISTING_SCRIPT = """
import contextlib, io, json, sys
from hwbench.cli import listing
from hwbench.cli.main import main
tables = []
def record(title, columns, rows, **options):
    tables.append([title, list(columns), [["" if v is None else str(v) for v in row] for row in rows]])
listing.print_table = record
with contextlib.redirect_stdout(io.StringIO()):
    for argv in (["devices"], ["kernels"], ["metrics"], ["engines"], ["plugins"], ["protocols"]):
        main(argv)
print(json.dumps(tables))
"""


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("HWBENCH_", "FORCE_COLOR", "TTY_COMPATIBLE"))}


def _hwbench(*argv: str, columns: int) -> subprocess.CompletedProcess[str]:
    env = {**_env(), "COLUMNS": str(columns)}
    command = [sys.executable, "-c", "import sys; from hwbench.cli.main import main; sys.exit(main())", *argv]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)


@pytest.mark.parametrize("columns", [80, 200])
def test_piped_listings_equal_what_rich_printed(columns: int) -> None:
    tables_proc = subprocess.run(  # the rows each listing builds on this host, as rich was given them
        [sys.executable, "-c", LISTING_SCRIPT], capture_output=True, text=True, timeout=120, env=_env(), check=False
    )
    assert tables_proc.returncode == 0, tables_proc.stderr
    tables: list[Any] = json.loads(tables_proc.stdout)
    for name, (title, heads, rows) in zip(("devices", "kernels", "metrics", "engines", "plugins", "protocols"), tables):
        proc = _hwbench(name, columns=columns)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == rich_bytes(title, heads, rows, columns), name


def test_devices_imports_no_rich() -> None:
    # Issue 31's 0.3 s for `hwbench devices`: rich costs ~25 ms of it; a piped table and --json need none.
    script = textwrap.dedent(
        """
        import contextlib, io, json, sys
        from hwbench.cli.main import main
        codes = []
        with contextlib.redirect_stdout(io.StringIO()):
            for argv in (["devices"], ["devices", "--json"]):
                codes.append(main(argv))
        print(json.dumps({"codes": codes, "rich": sorted(m for m in sys.modules if m.split(".")[0] == "rich")[:5]}))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=_env(), check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"codes": [0, 0], "rich": []}
