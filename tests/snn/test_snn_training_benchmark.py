"""``benchmarks/snn_training.py --against REF``: the before/after of the hand-written BPTT in one process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "snn_training.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "HWBENCH_SNNTORCH_PYTHON"}  # hwbench only
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, cwd=ROOT)


def test_against_a_revision_without_the_module_is_a_usage_error() -> None:
    proc = _run("--against", "no-such-revision-anywhere", "--batch", "4", "--repeats", "1", "--rounds", "1")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("snn_training.py: error: --against no-such-revision")
    assert "Traceback" not in proc.stderr


def test_against_head_times_both_steps_round_robin() -> None:
    if subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True).returncode != 0:
        pytest.skip("not a git checkout")
    proc = _run("--against", "HEAD", "--batch", "8", "--repeats", "1", "--rounds", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(out["images_per_s"]) == {"hwbench", "hwbench_one_shard", "hwbench_against"}
    assert all(v > 0 for v in out["images_per_s"].values())
    assert out["ratios"]["hwbench / hwbench at HEAD"] > 0
    assert out["ratios"]["hwbench / hwbench in one shard (data parallel on threads)"] > 0
