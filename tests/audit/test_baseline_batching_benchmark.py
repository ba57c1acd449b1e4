"""``benchmarks/baseline_batching.py``: the measurement behind "batch the fp32 baseline members
where that is faster" (issue 31; docs/audit.md). Its batched contenders must give each member's
own results bit for bit, or its timings would compare different work."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "baseline_batching.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT)


def test_batched_members_equal_their_own_runs_and_are_timed_against_two_runs() -> None:
    proc = _run("--cells", "64", "--ms", "30", "--repeat", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    rows = {r["contender"]: r for r in out["rows"]}
    assert set(rows) == {"two runs", "union network", "vmap"}
    assert all(r["bit_identical"] for r in rows.values())
    assert rows["two runs"]["cpu_vs_two_runs"] == 1.0
    assert all(r["cpu_s"] > 0 and r["wall_s"] > 0 for r in rows.values())


def test_a_zero_duration_is_a_usage_error() -> None:
    proc = _run("--ms", "0")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].endswith("--ms and --repeat must be at least 1")
