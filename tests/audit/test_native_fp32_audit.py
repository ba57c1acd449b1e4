"""Issue 30's "done when", on the spike stress test (quick protocol): native fp32 is not the CPU.

The emulated a100 [cuda-fp32], ipu [fp32] and tpu-v3 deviate from the CPU reference by a nonzero
amount, different from one another, and PASS; the GroqChip fails the way the study saw it:
unstable but finite (saturated), never NaN. One audit run, shared by the assertions (about a
minute on a loaded 2-core machine). The full protocol's figures are in docs/reproduction.md.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from hwbench.accuracy.audit import AuditSettings, Candidate
from hwbench.core.plugins import load_registry
from hwbench.stress.protocols import standard_auditor

NATIVE_FP32 = (("a100", "cuda-fp32"), ("ipu", "fp32"), ("tpu-v3", "default"))


@pytest.fixture(scope="module")
def stress() -> Any:
    registry = load_registry()
    settings = AuditSettings(kernel="io-ehh", quick=True, protocols=("stress",))
    auditor = standard_auditor(registry, settings, lambda *a: None)
    report = auditor.run([Candidate(d, m) for d, m in (*NATIVE_FP32, ("groq", "default"))])
    return next(p for p in report.protocols if p.name == "stress")


def _run(stress: Any, device: str, mode: str) -> Any:
    return next(r for r in stress.runs if r.label == f"{device} [{mode}]")


def _verdict(stress: Any, device: str, mode: str) -> str:
    return next(v for v in stress.verdicts if v.device == device and v.mode == mode).verdict.value


def test_native_fp32_devices_deviate_differently_and_pass(stress: Any) -> None:
    maxima = []
    for device, mode in NATIVE_FP32:
        dev = _run(stress, device, mode).deviation
        assert 0 < dev["max"] < 2.0, (device, dev)  # nonzero, at most mV-order
        assert _verdict(stress, device, mode) == "PASS", device
        maxima.append(dev["max"])
    assert len(set(maxima)) == 3  # three devices, three error patterns


def test_groq_fails_finite_and_saturated(stress: Any) -> None:
    run = _run(stress, "groq", "default")
    assert _verdict(stress, "groq", "default") == "FAIL"
    violation = run.violation
    assert violation is not None and math.isfinite(violation["value"]) and abs(violation["value"]) > 1e30
    assert "saturated to the largest finite value in div" in violation["explanation"]
    assert violation.get("special_values") == "saturate"
