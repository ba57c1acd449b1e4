"""docs/cli.md's option table and kernel-parameter table agree with the CLI and the kernels.

* every option of every built-in command is in the table, and every row names a real option;
* an option with a range type states exactly that type's ``describe()`` text;
* every documented range is enforced: a value just outside each end is refused with exit 2
  (parsed from the documentation, so a wrong table or a lax check both fail here);
* every kernel parameter range in the docs is the kernel's declared one, and enforced the same way.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np
import pytest

from hwbench.cli.main import cli
from hwbench.core.kernel import describe_choices
from hwbench.testing.badinput import run_cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
BASE_ARGV = {  # enough for the command to reach the option under test, and nothing else wrong
    "run": ["run", "--engine", "numpy", "--cells", "64", "--ms", "2"],
    "bench": ["bench", "--engine", "numpy", "--cells", "64", "--ms", "2", "--repeats", "1"],
    "audit": ["audit", "--quick", "-d", "groq"],
}
KERNEL_ARGV = {"io-ehh": ["--cells", "64"], "leaky-ring": ["--cells", "10"]}  # lif*: --cells 10 too


@dataclass(frozen=True)
class Row:
    command: str
    option: str
    text: str


def table(heading: str) -> list[list[str]]:
    """The cells of the first markdown table after ``heading``."""
    lines = DOC.read_text().splitlines()
    start = lines.index(heading)
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
        elif rows:
            break
    return [r for r in rows[2:]]  # header and separator off


def option_rows() -> list[Row]:
    out = []
    for command, option, text in table("## Options and their valid values"):
        command = command.strip("`")
        name = re.match(r"`([^`]+)`", option).group(1)
        out.append(Row(command, name, text))
    return out


def click_options(command: click.Command) -> dict[str, click.Parameter]:
    out = {}
    for p in command.params:
        if isinstance(p, click.Argument):
            out[p.name.upper()] = p
        elif "--help" not in p.opts:
            out[max(p.opts, key=len)] = p
    return out


def test_every_option_is_documented_and_every_row_is_an_option() -> None:
    rows = option_rows()
    documented: dict[str, set[str]] = {}
    for r in rows:
        documented.setdefault(r.command, set()).add(r.option)
    assert documented.pop("(all)") == set(click_options(cli))
    commands = {name: cmd for name, cmd in all_commands() if click_options(cmd)}
    assert set(documented) == set(commands), "a command without rows (or rows of no command)"
    for name, command in commands.items():
        assert documented[name] == set(click_options(command)), name


def all_commands() -> list[tuple[str, click.Command]]:
    """Every command, a group's sub-commands as 'group sub' (``results list``)."""
    out: list[tuple[str, click.Command]] = []
    for name, cmd in cli.commands.items():
        out.append((name, cmd))
        if isinstance(cmd, click.Group):
            out += [(f"{name} {sub}", c) for sub, c in cmd.commands.items()]
    return out


def test_range_types_state_their_range() -> None:
    commands = dict(all_commands())
    for r in option_rows():
        if r.command == "(all)":
            continue
        param = click_options(commands[r.command])[r.option]
        describe = getattr(param.type, "describe", None)
        if describe is not None:
            assert describe() in r.text, (r, describe())


def just_outside(text: str) -> list[str]:
    """Values just outside the range a row states (empty if it states none)."""
    m = re.search(r"an integer from (-?\d+) to (-?\d+)", text)
    if m:
        return [str(int(m.group(1)) - 1), str(int(m.group(2)) + 1)]
    m = re.search(r"an integer >= (-?\d+)", text)
    if m:
        return [str(int(m.group(1)) - 1)]
    m = re.search(r"a finite number((?: (?:and )?(?:>=|>|<=|<) -?[\d.e+]+)*)", text)
    if not m:
        return []
    values = ["nan", "inf"]
    for op, bound in re.findall(r"(>=|>|<=|<) (-?[\d.e+]+)", m.group(1)):
        b = float(bound)
        toward = -math.inf if op.startswith(">") else math.inf
        values.append(repr(b if op in (">", "<") else float(np.nextafter(b, toward))))
    return values


@dataclass(frozen=True)
class RangeCase:
    argv: list[str]
    what: str


def range_cases() -> list[pytest.param]:
    """Every command's numeric options (a range is checked while parsing, so the command's own words
    are enough to reach it; ``report`` needs its TARGET)."""
    cases = []
    for r in option_rows():
        if r.command == "(all)" or not r.text.startswith(("an integer", "a finite number")):
            continue
        base = BASE_ARGV.get(r.command) or (["report", "history"] if r.command == "report" else r.command.split())
        for value in just_outside(r.text):
            case = RangeCase([*base, r.option, value], r.option)
            cases.append(pytest.param(case, id=f"{r.command}{r.option}={value}"))
    return cases


@pytest.mark.parametrize("case", range_cases())
def test_each_documented_range_is_enforced(case: RangeCase, in_arena: Path) -> None:
    outcome = run_cli(case.argv)
    assert outcome.code == 2, outcome.stderr
    assert len(outcome.error_lines) == 1 and f"'{case.what}'" in outcome.error_lines[0], outcome.stderr


def kernel_rows() -> list[Row]:
    return [Row(k.strip("`"), p.strip("`"), t) for k, p, t in table("### Kernel parameters")]


def test_kernel_parameter_table_is_the_declared_ranges(registry) -> None:
    rows = kernel_rows()
    for name, kernel in registry.kernels.items():
        mine = {r.option: r.text for r in rows if r.command == name}
        assert set(mine) == set(kernel.parameter_ranges) | set(kernel.parameter_choices), name
        for key, spec in kernel.parameter_ranges.items():
            assert mine[key] == spec.describe() + (" or one per cell" if spec.per_cell else ""), (name, key)
        for key, choices in kernel.parameter_choices.items():
            assert mine[key] == describe_choices(choices), (name, key)


def settable(argv: list[str]) -> set[str]:
    """The parameters a kernel names when ``--set`` gives it one it does not have."""
    line = run_cli([*argv, "--set", "no_such_parameter=1"]).error_lines[0]
    names = re.search(r"(?:choose from|settable): (.*)$", line)
    assert names is not None, line
    return {n.strip() for n in names.group(1).split(",")}


def test_every_kernel_parameter_is_in_the_table(registry, in_arena: Path) -> None:
    """What each kernel accepts (it lists them when given an unknown one) is what the table lists;
    the DL primitives, whose parameters are a configuration and a shape, are described under it."""
    rows = kernel_rows()
    for name, kernel in registry.kernels.items():
        if kernel.info.family == "dl":
            assert "`config=NAME`" in DOC.read_text()
            continue
        if kernel.info.family == "model":  # a model's parameters are its file: --model, no --set
            assert not kernel.parameter_ranges and not kernel.parameter_choices
            continue
        documented = {r.option for r in rows if r.command == name}
        assert settable(["run", "-k", name, *KERNEL_ARGV.get(name, ["--cells", "10"])]) == documented, name


def test_a_word_parameter_outside_its_choices_is_refused(registry, in_arena: Path) -> None:
    for name, kernel in registry.kernels.items():
        for key, choices in kernel.parameter_choices.items():
            outcome = run_cli(["run", "-k", name, "--cells", "10", "--set", f"{key}=none-of-these"])
            assert outcome.code == 2 and describe_choices(choices) in outcome.error_lines[0], outcome.stderr


def commands_table() -> set[str]:
    """The commands the table of '## Commands' names (``hwbench results list|show`` -> ``results``)."""
    return {re.match(r"`hwbench ([\w-]+)", row[0]).group(1) for row in table("## Commands")}


def test_the_commands_table_lists_every_command() -> None:
    assert commands_table() == set(cli.list_commands(click.Context(cli)))


def test_the_unknown_command_example_is_what_hwbench_prints(in_arena: Path) -> None:
    text = DOC.read_text()
    shown = text[text.index("$ hwbench devics\n") :].splitlines()[1]
    assert run_cli(["devics"]).stderr.strip() == shown


def kernel_cases() -> list[pytest.param]:
    out = []
    for r in kernel_rows():
        for value in just_outside(r.text):
            argv = [
                "run",
                "-k",
                r.command,
                *KERNEL_ARGV.get(r.command, ["--cells", "10"]),
                "--set",
                f"{r.option}={value}",
            ]
            out.append(pytest.param(argv, r.option, id=f"{r.command}:{r.option}={value}"))
    return out


@pytest.mark.parametrize(("argv", "key"), kernel_cases())
def test_each_kernel_parameter_range_is_enforced(argv: list[str], key: str, in_arena: Path) -> None:
    outcome = run_cli(argv)
    assert outcome.code == 2, outcome.stderr
    line = outcome.error_lines[0]
    assert f"'{key}' must be" in line or "must be finite" in line, line
