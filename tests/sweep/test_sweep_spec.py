"""Sweep specs, cells, per-cell profiles, the sensitivity answer and the ledger (no cluster: fast)."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwbench.accuracy.numerics.formats import RoundingMode
from hwbench.accuracy.verdict import Verdict
from hwbench.cli.main import main
from hwbench.core.errors import UsageError
from hwbench.core.ops import OpClass
from hwbench.core.plugins import get_registry
from hwbench.stress.sensitivity import sensitivity
from hwbench.stress.sweep_cell import CellOutcome, candidate, cell_profile
from hwbench.stress.sweep_ledger import JsonlLedger
from hwbench.stress.sweep_spec import Cell, SweepSpec, parse_grid, parse_ints

OPS = [c.value for c in OpClass]


def test_grid_shorthand_each_alone_or_together():
    alone = parse_grid("exp,div:7..9")
    assert alone.groups() == [(OpClass.EXP,), (OpClass.DIV,)] and alone.bits == [7, 8, 9]
    together = parse_grid("exp+div:10,16")
    assert together.groups() == [(OpClass.EXP, OpClass.DIV)] and together.bits == [10, 16]
    assert parse_ints("7..23/4", what="w") == [7, 11, 15, 19, 23]


@pytest.mark.parametrize(
    "text, message",
    [
        ("exp", "OPS:WIDTHS"),
        ("exp:0", "values must be integers from 1 to 23, got 0"),
        ("exp:24", "values must be integers from 1 to 23, got 24"),
        ("exp,div+add:8", "not both"),
        ("sin:8", "unknown op class 'sin'"),
        ("exp:9..7", "A..B"),
    ],
)
def test_bad_grid_is_one_usage_error(text, message):
    with pytest.raises(UsageError, match=message):
        parse_grid(text)


@settings(max_examples=200)
@given(
    ops=st.lists(st.sampled_from(OPS), min_size=1, max_size=3, unique=True),
    bits=st.lists(st.integers(1, 23), min_size=1, max_size=4, unique=True),
    seeds=st.lists(st.integers(0, 2**31), min_size=1, max_size=3, unique=True),
    rounding=st.lists(st.sampled_from(list(RoundingMode)), min_size=1, max_size=2, unique=True),
    dts=st.lists(st.integers(1, 100), min_size=1, max_size=2, unique=True),
    together=st.booleans(),
)
def test_grid_expands_to_every_combination_once(ops, bits, seeds, rounding, dts, together):
    joined = ("+" if together else ",").join(ops)
    spec = SweepSpec(grid=[parse_grid(f"{joined}:{','.join(map(str, bits))}")], seeds=seeds, rounding=rounding, dt=dts)
    cells = spec.expand()
    groups = 1 if together else len(ops)
    assert len(cells) == groups * len(bits) * len(seeds) * len(rounding) * len(dts)
    assert len({c.key() for c in cells}) == len(cells)
    assert [c.key() for c in SweepSpec.model_validate_json(spec.model_dump_json()).expand()] == [c.key() for c in cells]
    want = set(itertools.product(bits, seeds, dts))
    assert {(c.bits, c.seed, c.dt) for c in cells} == want


def test_spec_file_and_its_errors(tmp_path):
    good = tmp_path / "s.toml"
    good.write_text(
        'devices = ["groq"]\nprotocols = ["stress"]\nquick = true\nseeds = [1, 2]\n'
        "[sets]\nreduced_mantissa_bits = [12, 16]\n"
    )
    cells = SweepSpec.load(good).expand()
    assert [c.key() for c in cells] == [
        "groq|reduced_mantissa_bits=12|seed=1|dt/1",
        "groq|reduced_mantissa_bits=16|seed=1|dt/1",
        "groq|reduced_mantissa_bits=12|seed=2|dt/1",
        "groq|reduced_mantissa_bits=16|seed=2|dt/1",
    ]
    bad = tmp_path / "b.toml"
    bad.write_text('protocols = ["sprint"]\n')
    with pytest.raises(UsageError, match=r"unknown protocol sprint; choose from: validation, stress"):
        from hwbench.cli.sweep_io import preflight

        sprint = SweepSpec.load(bad)
        preflight(sprint, sprint.expand())
    listed = SweepSpec.parse({"cells": [{"device": "cpu", "ops": ["exp"], "bits": 9}]})
    assert [c.key() for c in listed.expand()] == ["cpu|exp@m9/nearest-even|seed=42|dt/1"]
    with pytest.raises(UsageError, match="'ops' and 'bits' go together"):
        SweepSpec.parse({"cells": [{"device": "cpu", "ops": ["exp"]}]})


def test_cell_profile_changes_only_the_chosen_op_classes():
    registry = get_registry()
    cell = Cell(
        device="groq",
        overrides={"reduced_mantissa_bits": 12},
        ops=(OpClass.EXP,),
        bits=9,
        rounding=RoundingMode.TOWARD_ZERO,
    )
    device = registry.device("groq")
    base = device.numerics("default", {"reduced_mantissa_bits": 12})
    profile = cell_profile(device, "default", cell)
    exp = profile.op(OpClass.EXP)
    assert exp.resolved_format().mantissa_bits == 9 and exp.resolved_format().emin == -126
    assert exp.rounding is RoundingMode.TOWARD_ZERO and exp.confidence.value == "assumed"
    assert {k: v for k, v in profile.ops.items() if k is not OpClass.EXP} == {
        k: v for k, v in base.ops.items() if k is not OpClass.EXP
    }
    cpu = cell_profile(registry.device("cpu"), "fp32", Cell(device="cpu", ops=(OpClass.DIV,), bits=7))
    assert set(cpu.ops) >= {OpClass.DIV} and cpu.op(OpClass.DIV).resolved_format().mantissa_bits == 7
    assert cpu.carrier == "float32"
    with pytest.raises(UsageError, match="settable: reduced_compare"):
        candidate(registry, Cell(device="groq", overrides={"nope": 1}))


def _outcome(bits: int, verdict: Verdict, seed: int = 0) -> CellOutcome:
    cell = Cell(device="cpu", mode="fp32", ops=(OpClass.EXP,), bits=bits, seed=seed)
    return CellOutcome(key=cell.key(), cell=cell, status="done", verdict=verdict, reason=f"reason {bits}/{seed}")


def test_sensitivity_threshold_is_the_lowest_width_above_which_all_pass():
    # non-monotone: 10 fails but 8 passes; 12 only WARNs for one seed
    rows = [(8, "PASS"), (10, "FAIL"), (12, "PASS"), (14, "PASS"), (16, "PASS")]
    outcomes = [_outcome(b, Verdict(v)) for b, v in rows] + [_outcome(12, Verdict.WARN, seed=1)]
    (row,) = sensitivity(outcomes)
    assert row.verdicts == {8: Verdict.PASS, 10: Verdict.FAIL, 12: Verdict.WARN, 14: Verdict.PASS, 16: Verdict.PASS}
    assert row.min_pass_bits == 14
    assert row.first_fail_bits == 10 and row.first_fail_reason == "reason 10/0"


def test_ledger_skips_a_torn_last_line(tmp_path):
    ledger = JsonlLedger(tmp_path / "cells.jsonl")
    ledger.record("a", {"schema": "hwbench.audit/1", "x": 1})
    with open(ledger.path, "a") as fh:
        fh.write('{"key": "b", "report": {"sch')  # a writer that died mid-append
    assert ledger.recorded() == {"a": {"schema": "hwbench.audit/1", "x": 1}}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--grid", "exp:30"], "--grid widths: values must be integers from 1 to 23, got 30"),
        (["--device", "nope", "--grid", "exp:8"], "unknown device 'nope'"),
        (["--device", "groq", "--set", "bogus=1"], "settable: reduced_compare"),
        (["--seeds", "1,x"], "--seeds: 'x' is not an integer"),
        (["--rounding", "up"], "give a --grid too"),
        (["--resume", "nosuch"], "no sweep 'nosuch'"),
        (["--id", "../x"], "may use only letters"),
        (["--scheduler", "tcp://127.0.0.1:1", "--workers", "2"], "--workers applies to the local cluster only"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, args, message):
    assert main(["sweep", "--dir", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not any(tmp_path.iterdir()), "a refused sweep must leave nothing behind"


def test_sweep_schema_is_published(capsys):
    assert main(["schema", "sweep"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["properties"]["schema"]["const"] == "hwbench.sweep/1"


def test_cells_of_one_seed_share_their_base_runs_and_judge_alike():
    """A worker runs the reference, gold and ensemble of a scenario once; a later cell that reuses
    them sees the very same floor (the runs are deterministic and do not depend on the candidate)."""
    from hwbench.stress.sweep_cell import BaseRunCache, CellSettings, run_cell

    cache = BaseRunCache()
    settings = CellSettings(kernel="io-ehh", protocols=("stress",), quick=True)
    first = run_cell(Cell(device="cpu", mode="fp32", ops=(OpClass.EXP,), bits=20), settings, base_runs=cache)
    second = run_cell(Cell(device="cpu", mode="fp32", ops=(OpClass.EXP,), bits=8), settings, base_runs=cache)
    assert "base_runs_reused_from_earlier_audit" not in first.report["settings"]
    assert second.report["settings"]["base_runs_reused_from_earlier_audit"] == ["stress"]
    (p1,), (p2,) = first.report["protocols"], second.report["protocols"]
    assert p1["floor"] == p2["floor"] and p1["regime"] == p2["regime"]
    assert [r for r in p1["runs"] if r["role"] != "candidate"] == [r for r in p2["runs"] if r["role"] != "candidate"]
    assert (first.verdict, second.verdict) == (Verdict.PASS, Verdict.FAIL)


def test_a_dt_cell_is_judged_by_its_refined_run():
    from types import SimpleNamespace as NS

    from hwbench.stress.sweep_cell import judged_verdicts

    verdicts = [NS(mode="default", verdict=Verdict.FAIL), NS(mode="default dt/10", verdict=Verdict.PASS)]
    report = NS(protocols=[NS(name="stress", verdicts=verdicts)])
    assert judged_verdicts(report, 1)["stress"].verdict is Verdict.FAIL
    assert judged_verdicts(report, 10)["stress"].verdict is Verdict.PASS
    assert judged_verdicts(report, 100) == {}


def test_verdicts_split_over_seeds():
    from hwbench.stress.sensitivity import seed_distribution

    outcomes = [_outcome(12, Verdict.PASS, seed=s) for s in (1, 2, 3)] + [_outcome(12, Verdict.FAIL, seed=4)]
    (split,) = seed_distribution(outcomes)
    assert split.bits == 12 and split.group == "exp"
    assert split.counts == {Verdict.PASS: 3, Verdict.WARN: 0, Verdict.FAIL: 1}
    assert split.seeds == {1: Verdict.PASS, 2: Verdict.PASS, 3: Verdict.PASS, 4: Verdict.FAIL}
    (row,) = sensitivity(outcomes)
    assert row.verdicts == {12: Verdict.FAIL} and row.min_pass_bits is None and row.first_fail_reason == "reason 12/4"


def test_a_sweep_audits_the_kernel_its_spec_names_or_says_why_not() -> None:
    """The spec's ``kernel`` (default: hwbench's default kernel) must declare every swept protocol."""
    from hwbench.cli.sweep_io import preflight

    ring = SweepSpec(kernel="leaky-ring", protocols=["validation", "stress"], dt=[1, 2])
    preflight(ring, ring.expand())  # declares both, and has a dt parameter
    lif = SweepSpec(kernel="lif", protocols=["stress"])
    with pytest.raises(UsageError, match="kernel 'lif' has no stress protocol: its input is the seeded Poisson"):
        preflight(lif, lif.expand())
