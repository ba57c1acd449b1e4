"""The classes of bad input behind issue 43's cases, swept over every command rather than case by case.

* **Empty values**: every option (and argument) of every built-in command, enumerated from the
  click command tree, refuses ``''`` and blanks with exit 2 and one error line naming it, before any
  work; :data:`hwbench.cli.command.EMPTY_ALLOWED` lists the exceptions with their reasons.
* **Integers out of a documented range reaching a worker**: a sweep's seeds, dt divisors and grid
  widths outside their ranges are refused before a cluster starts, however they are written.
* **A user's file that breaks a database constraint**: an export with any one field replaced by a
  hostile value is imported whole (and then listed, shown and reported) or refused with exit 2 and
  nothing stored; never exit 3.
* **An option that does not apply to the chosen kernel**: every ``bench`` option is classified as
  common, DL-only or time-stepped-only, and each kind-specific one is refused with the other kind;
  every built-in audit protocol declares the options it takes, so the auditor refuses the others.

Everything runs in-process in the arena of hostile files (``conftest.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hwbench.cli.bench import DL_ONLY, STEPPED_ONLY
from hwbench.cli.command import EMPTY_ALLOWED, Command, Group
from hwbench.cli.main import cli
from hwbench.testing.badinput import judge, run_cli, snapshot

CLI_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def commands() -> list[tuple[str, click.Command]]:
    """Every built-in command, a group's sub-commands as 'group sub' (``results list``)."""
    out: list[tuple[str, click.Command]] = []
    for name, command in cli.commands.items():
        out.append((name, command))
        if isinstance(command, click.Group):
            out += [(f"{name} {sub}", c) for sub, c in command.commands.items()]
    return out


def label(param: click.Parameter) -> str:
    return max(param.opts, key=len) if isinstance(param, click.Option) else (param.name or "").upper()


def takes_value(param: click.Parameter) -> bool:
    return not (isinstance(param, click.Option) and (param.is_flag or param.count)) and "--help" not in param.opts


def refused(argv: list[str], folder: Path, code: int = 2) -> str:
    """``argv`` ends in exit ``code`` with one error line, no traceback, nothing on stdout or in ``folder``."""
    before = snapshot(folder)
    outcome = run_cli(argv)
    verdict = judge(outcome)
    assert not verdict.traceback and not verdict.internal_error, outcome.stderr
    assert outcome.code == code, (argv, outcome.stderr)
    assert verdict.one_line and outcome.stdout == "", (argv, outcome.stderr)
    assert snapshot(folder) == before, argv
    return outcome.error_lines[0]


# ----------------------------------------------------------------------------------- empty values
# Enough for each command to parse (a required option, an existing input file), and nothing else wrong.
PREFIX = {"probe": ["probe", "-d", "h100:fp16"], "report": ["report", "history"]}
PREFIX |= {"results import": ["results", "import", "existing.json"]}
PREFIX |= {"results export": ["results", "export", "--out", "x"]}


def empty_cases() -> list[Any]:
    cases = []
    for path, command in commands():
        for param in command.params:
            if not takes_value(param) or f"{path} {label(param)}" in EMPTY_ALLOWED:
                continue
            words = path.split()
            if isinstance(param, click.Argument):
                argv = [*words, ""]
            elif isinstance(command, click.Group):
                argv = [*words, label(param), "", "list"]
            else:
                argv = [*PREFIX.get(path, words), label(param), ""]
            cases.append(pytest.param(argv, param, id=f"{path} {label(param)}"))
    return cases


def test_every_builtin_command_is_one_that_refuses_empty_values() -> None:
    """New commands inherit the rule by being a hwbench Command (or Group), not by remembering it."""
    assert not [p for p, c in commands() if not isinstance(c, (Command, Group))]
    assert [p for p in cli.params if takes_value(p)] == []  # the top level has flags only


@pytest.mark.parametrize(("argv", "param"), empty_cases())
@pytest.mark.parametrize("blank", ["", "  "])
def test_every_option_refuses_an_empty_value(argv: list[str], param: click.Parameter, blank: str, in_arena) -> None:
    argv = [blank if a == "" else a for a in argv]
    line = refused(argv, in_arena)
    assert any(f"'{name}" in line for name in (*param.opts, label(param), f"[{label(param)}]")), line


def test_the_empty_allow_list_names_real_options_with_reasons() -> None:
    known = {f"{path} {label(p)}" for path, c in commands() for p in c.params if takes_value(p)}
    for key, reason in EMPTY_ALLOWED.items():
        assert key in known and len(reason.split()) >= 3, key


# ------------------------------------------------------------------- integers reaching a worker
bad_seed = st.integers(max_value=-1) | st.integers(min_value=2**32)
bad_width = st.integers(max_value=0) | st.integers(min_value=24)
good = st.integers(1, 23)  # within every one of the three ranges


@st.composite
def sweep_lists(draw: st.DrawFn) -> str:
    """A sweep option whose list holds at least one value outside its range, as a value or a range end."""
    options = [("--seeds", bad_seed), ("--dt", st.integers(max_value=0)), ("--grid", bad_width)]
    option, bad = draw(st.sampled_from(options))
    value = draw(bad)
    parts = [str(v) for v in draw(st.lists(good, max_size=3))]
    item = draw(st.sampled_from([str(value), f"{min(value, 1)}..{max(value, 1)}"]))
    parts.insert(draw(st.integers(0, len(parts))), item)
    text = ",".join(parts)
    return f"{option}=exp:{text}" if option == "--grid" else f"{option}={text}"


@CLI_SETTINGS
@given(option=sweep_lists())
def test_sweep_integer_lists_out_of_range_are_refused_before_a_cluster(option: str, in_arena) -> None:
    line = refused(["sweep", "--dir", "sweeps", option], in_arena)
    assert "must be integers" in line or "at most 100,000 cells" in line, line


@pytest.mark.parametrize(
    ("option", "fragment"),
    [("--dt=820", "takes dt divisors from 1 to 819"), ("--seeds=4294967295,4294967296", "from 0 to 4294967295")],
)
def test_sweep_limits_are_exact(option: str, fragment: str, in_arena) -> None:
    assert fragment in refused(["sweep", "--dir", "sweeps", option], in_arena)


# ---------------------------------------------------------------- a user's file vs the database
@pytest.fixture(scope="module")
def record(registry, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One exported record of a real run (64 cells, 1 ms), as ``results export`` writes it."""
    folder = tmp_path_factory.mktemp("record")
    store = str(folder / "store.sqlite")
    run = ["run", "--engine", "numpy", "--cells", "64", "--ms", "1", "--repeats", "2", "--store", store]
    assert run_cli(run).code == 0
    assert run_cli(["results", "--store", store, "export", "--out", str(folder / "export.json")]).code == 0
    found: dict[str, Any] = json.loads((folder / "export.json").read_text())["records"][0]
    return found


def _leaves(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(data, dict):
        return [path] + [p for k, v in data.items() for p in _leaves(v, (*path, k))]
    if isinstance(data, list):
        return [path] + [p for i, v in enumerate(data) for p in _leaves(v, (*path, i))]
    return [path]


hostile = st.sampled_from(
    [2**63, -(2**63) - 1, 2**31, int("9" * 400), 1e308, -1, 0, True, None, "", "x" * 300, "a,b", "\x00", "Infinity",
     "9999-12-31T23:00-14:00", [], {}, [1, "x"], {"schema": 5}, "nested"]
)  # fmt: skip


def _nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


@CLI_SETTINGS
@given(data=st.data(), value=hostile, twice=st.booleans())
def test_an_export_with_a_hostile_field_is_imported_whole_or_refused(
    data: st.DataObject, value: Any, twice: bool, record: dict[str, Any], in_arena, tmp_path_factory
) -> None:
    path = data.draw(st.sampled_from(_leaves(record)[1:]))
    record = json.loads(json.dumps(record))
    target = record
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = _nested(150) if value == "nested" else value
    folder = tmp_path_factory.mktemp("import")
    export = folder / "export.json"
    export.write_text(json.dumps({"schema": "hwbench.store-export/1", "records": [record] * (1 + twice)}))
    store = str(folder / "store.sqlite")
    outcome = run_cli(["results", "--store", store, "import", str(export)])
    verdict = judge(outcome)
    assert not verdict.traceback and not verdict.internal_error, outcome.stderr
    assert outcome.code in (0, 2), outcome.stderr
    listed = run_cli(["results", "--store", store, "list", "--json"])
    assert listed.code == 0, listed.stderr
    stored = json.loads(listed.stdout)
    if outcome.code == 2:
        assert verdict.one_line and stored == [], outcome.stderr  # one transaction: nothing imported
        return
    assert len(stored) == 1 and not twice
    for argv in (["show", str(stored[0]["id"]), "--json"], ["compare", "1", "1"]):
        shown = run_cli(["results", "--store", store, *argv])
        assert shown.code in (0, 2) and not judge(shown).internal_error, shown.stderr
    page = run_cli(["report", "1", "--store", store, "--out", str(folder / "page.html")])
    assert page.code in (0, 2) and not judge(page).internal_error, page.stderr  # 2: not a well-formed run


# ------------------------------------------------------------ options that do not apply to a kernel
COMMON = {"kernel", "devices", "engines", "repeats", "seed", "out", "as_json", "store", "no_store", "tags"}
VALUES = {"dl_config": "gemm_k1", "dl_precision": "fp32", "max_gflop": "1", "mode": "fp32", "sizes": "4"}
VALUES |= {"cells_list": "64", "ms": "2", "shard": "1"}


def bench_options() -> dict[str, click.Parameter]:
    return {p.name or "": p for p in dict(commands())["bench"].params if "--help" not in p.opts}


def test_every_bench_option_is_classified() -> None:
    assert set(bench_options()) == COMMON | set(DL_ONLY) | set(STEPPED_ONLY)
    assert not COMMON & set(DL_ONLY) and not COMMON & set(STEPPED_ONLY) and not set(DL_ONLY) & set(STEPPED_ONLY)


@pytest.mark.parametrize(
    ("name", "kernel"), [(n, "io-ehh") for n in DL_ONLY] + [(n, "gemm") for n in STEPPED_ONLY], ids=lambda x: x
)
def test_a_bench_option_of_the_other_kind_of_kernel_is_refused(name: str, kernel: str, in_arena) -> None:
    param = bench_options()[name]
    flag = label(param)
    given_option = [flag] if isinstance(param, click.Option) and param.is_flag else [flag, VALUES[name]]
    line = refused(["bench", "-k", kernel, *given_option], in_arena)
    assert f"error: {flag} " in line and kernel in line, line


def test_every_builtin_protocol_declares_the_options_it_takes(registry) -> None:
    """The auditor refuses --config / --dt-refine only where every protocol run declares what it takes."""
    undeclared = [name for name, p in registry.protocols.items() if p.takes() is None]
    assert undeclared == []


@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "--quick", "-d", "groq", "--config", "gemm_k1"],
        ["audit", "--quick", "-k", "lif", "-d", "loihi", "--config", "x"],
        ["audit", "--quick", "-k", "gemm", "-d", "tpu-v3", "--dt-refine"],
        ["audit", "--quick", "-k", "lif", "-d", "loihi", "--dt-refine"],
    ],
    ids=lambda a: " ".join(a[2:]),
)
def test_an_audit_option_no_protocol_takes_is_refused(argv: list[str], in_arena) -> None:
    assert "does not apply to kernel" in refused(argv, in_arena)
