"""``benchmarks/function_audit.py --quick``: the three measurements run and print their ratios, and the
io-ehh function's bits are the kernel's (the benchmark compares the same work). No time is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "function_audit.py"


def test_quick_run_reports_every_ratio_and_the_same_bits() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--json"], capture_output=True, text=True, cwd=ROOT,
                          timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    plain = out["emulated_vs_plain"]
    assert plain["device"] == "tpu-v3:default" and plain["ratio"] > 0 and plain["plain_s"] > 0
    io = out["io_ehh_function_vs_kernel"]
    assert io["device"] == "groq:default" and io["bit_identical"] is True and io["ratio"] > 0
    traces = out["trace_and_transform"]
    assert [t["device"] for t in traces] == ["cpu", "tpu-v3:default", "groq"]
    assert all(t["equations"] == 1000 and t["transformed_equations"] >= 1000 for t in traces)
