"""The checks are not overzealous: values at the edge of every range, and per-cell arrays, are accepted.

Each run is the 64-cell io-ehh network for 1 ms on numpy, in-process.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hwbench.core.kernel import Workload
from hwbench.core.results import RunResult
from hwbench.testing.badinput import run_cli

RUN = ["run", "--engine", "numpy", "--cells", "64", "--ms", "1"]


@pytest.fixture
def here(tmp_path: Path, registry, monkeypatch: pytest.MonkeyPatch) -> Path:
    from hwbench.core import plugins as host

    host._cached = registry
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_per_cell_array_from_the_command_line_reaches_the_workload(here: Path) -> None:
    values = np.linspace(0.5, 1.4, 64)
    outcome = run_cli([*RUN, "--set", f"g_CaL={json.dumps(values.tolist())}", "--save-workload", "w.npz"])
    assert outcome.code == 0, outcome.stderr
    np.testing.assert_array_equal(Workload.load("w.npz").params["g_CaL"], values)


def test_values_at_the_edges_of_their_ranges_are_accepted(here: Path) -> None:
    (here / "old.json").write_text("an earlier result")
    argv = [*RUN, "--seed", "4294967295", "--repeats", "1", "--probe-cells", "1000", "--set", "dt=1", "--ms", "40"]
    outcome = run_cli([*argv, "--set", "p1=0.999", "--set", "g_gj=0", "--out", "old.json"])
    assert outcome.code == 0, outcome.stderr
    # replaced, atomically; at dt = 1 ms the Euler steps diverge: the NaN samples JSON holds as null
    # read back as NaN
    result = RunResult.model_validate_json((here / "old.json").read_text())
    assert result.probe_cells == list(range(64))  # more than the network's cells keeps all
    assert np.isnan(np.asarray(result.traces)).any()
    assert sorted(p.name for p in here.iterdir()) == ["old.json"]  # no temporary file left


def test_a_symlinked_output_is_written_through_the_link(here: Path) -> None:
    (here / "results").mkdir()
    (here / "latest.json").symlink_to("results/run.json")
    assert run_cli([*RUN, "--out", "latest.json"]).code == 0
    assert (here / "latest.json").is_symlink()
    RunResult.model_validate_json((here / "results" / "run.json").read_text())


def test_store_none_records_nothing(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--store none`` turns recording off, whatever HWBENCH_STORE says (``--store ''`` is refused)."""
    monkeypatch.setenv("HWBENCH_STORE", str(here / "store.sqlite"))
    for store in ("none", "NONE"):
        outcome = run_cli([*RUN, "--store", store])
        assert outcome.code == 0 and "recorded as result" not in outcome.stderr, outcome.stderr
    assert not (here / "store.sqlite").exists()
    assert run_cli([*RUN]).code == 0 and (here / "store.sqlite").exists()  # the same run records without it
