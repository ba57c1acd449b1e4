"""`hwbench audit` end to end through the real CLI: the headline outcome, report, plots, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hwbench.accuracy.report import AuditReport


def hwbench(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hwbench.cli.main", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One quick audit of two devices side by side, shared by the tests below."""
    out = tmp_path_factory.mktemp("audit")
    proc = hwbench("audit", "--device", "groq", "--device", "a100:cuda-fp32", "--quick", "--json", "--out", str(out))
    return proc, out


def test_groq_fails_and_ieee_fp32_passes(audit):
    proc, _ = audit
    assert proc.returncode == 1, proc.stderr  # FAIL -> exit 1
    report = AuditReport.model_validate(json.loads(proc.stdout))
    assert report.verdict.value == "FAIL"
    by_device = {(p.name, v.device): v for p in report.protocols for v in p.verdicts}
    assert by_device[("stress", "groq")].verdict.value == "FAIL"
    assert by_device[("stress", "a100")].verdict.value == "PASS"
    assert by_device[("validation", "a100")].verdict.value == "PASS"
    for p in report.protocols:
        assert p.reduced, "a --quick report must say what it reduced"
        assert {r.role for r in p.runs} >= {"reference", "gold", "ensemble", "candidate"}


def test_groq_failure_is_located_and_explained(audit):
    proc, _ = audit
    report = AuditReport.model_validate(json.loads(proc.stdout))
    stress = next(p for p in report.protocols if p.name == "stress")
    groq = next(r for r in stress.runs if r.device == "groq")
    assert groq.execution == "emulated" and groq.profile == "groq-default"
    v = groq.violation
    # saturating special values (issue 30): finite, out of range, never NaN, as the study saw it
    assert v["kind"] != "non-finite value" and isinstance(v["step"], int) and v["t_ms"] > 0
    assert any(k.startswith("div.") for k in v["counters"]), v
    assert "removable singularity" in v["explanation"]
    assert "saturated to the largest finite value in div" in v["explanation"]


def test_report_and_plots_written(audit):
    _, out = audit
    data = json.loads((out / "report.json").read_text())
    assert data["schema"] == "hwbench.audit/1"
    for name in ("validation_box.png", "validation_traces.png", "stress_box.png", "stress_traces.png"):
        png = out / name
        assert png.stat().st_size > 10_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(out.glob("*.partial*")), "no half-written files may remain"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("audit", "--device", "grok", "--quick"), 2, "Did you mean 'groq'"),
        (("audit", "--device", "groq:fast", "--quick"), 2, "unknown mode"),
        (("audit", "--device", "groq", "--set", "reduced_mantissa_bit=9", "--quick"), 2, "reduced_mantissa_bits"),
        (("audit", "--device", "loihi", "--quick"), 4, "cannot run"),
        (("audit", "--device", "groq", "--profile", "/nonexistent.toml"), 2, "no such file"),
    ],
)
def test_bad_input_is_one_line_and_a_documented_exit_code(args, code, message):
    proc = hwbench(*args, timeout=120)
    assert proc.returncode == code, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_malformed_profile_file_is_refused(tmp_path):
    bad = tmp_path / "mine.toml"
    bad.write_text("name = 'x'\n[ops.exp]\nformat = 'fp99'\n")
    proc = hwbench("audit", "--device", "groq", "--profile", str(bad), "--quick", timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: ") and len(proc.stderr.strip().splitlines()) == 1
