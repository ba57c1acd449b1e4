"""``benchmarks/io_ehh_scaling.py --quick``: the scaling study runs and prints every ratio the
issue asks for (strong and weak scaling, the halo exchange's share, connected over unconnected,
peak memory, the model and its GPU extrapolation, the goals). No absolute time is asserted: the
machine is shared; the figures are quoted from a full run in docs/scaling.md."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "io_ehh_scaling.py"


def test_quick_study_reports_every_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--json"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    strong = {r["contender"]: r for r in report["strong"]}
    assert set(strong) == {"unsharded", "1 device(s)", "2 device(s)", "2 device(s), no exchange"}
    assert strong["2 device(s)"]["halo_bytes"] > 0 and strong["1 device(s)"]["halo_bytes"] == 0
    assert math.isfinite(strong["2 device(s)"]["exchange_share"])
    assert [r["devices"] for r in report["weak"]] == [1, 2] and report["weak"][0]["efficiency"] == 1.0
    assert all(r["ratio"] > 0 for r in report["unconnected"])
    assert [m["sharded"] for m in report["memory"]] == [False, True]
    assert all(m["peak_bytes"] > 0 for m in report["memory"])
    model = report["model"]
    assert model["exchange"]["latency_s"] >= 0 and model["exchange"]["s_per_byte"] >= 0
    assert {c["contender"] for c in model["checks"]} == {"2 device(s)", "2 device(s), 4,096 cells"}
    assert [g["cells"] for g in model["gpu"]] == [125_000, 1_000_000] and all(g["gpus"] == 8 for g in model["gpu"])
    assert len(report["goals"]) == 5 and all("quick sizes" in g["goal"] for g in report["goals"])
    # the text report of the same figures
    script = load_script()
    script.print_report(report, script.parse(["--quick"]))
    text = capsys.readouterr().out
    assert "strong scaling" in text and "weak scaling" in text and "ASSUMED" in text
    assert text.count("met ") + text.count("NOT met") >= 5


def load_script() -> Any:
    spec = importlib.util.spec_from_file_location("io_ehh_scaling", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclass looks its module up)
    spec.loader.exec_module(module)
    return module


def test_a_zero_duration_is_a_usage_error() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--ms", "0"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and "--ms and --repeat must be at least 1" in done.stderr
