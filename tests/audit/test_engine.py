"""One audit engine: protocols are plugins, every kernel goes through the same auditor.

The spike-train protocol audits the LIF family on Loihi and SpiNNaker through the real CLI; a
third-party protocol registered like a plugin runs on the engine; a contract-2 kernel (no floors)
is served through its adapter; reports written before the engine still load.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hwbench
from hwbench import api
from hwbench.accuracy.audit import Auditor, AuditSettings, Candidate, run_audit
from hwbench.accuracy.metrics import coincidence_factor, first_divergence
from hwbench.accuracy.report import AuditReport
from hwbench.accuracy.stepped import SteppedProtocol
from hwbench.core.audit_protocol import ProtocolInfo
from hwbench.core.errors import UsageError
from hwbench.core.plugins import get_registry, load_registry
from hwbench.core.protocol_facts import CONTRACT2_FLOORS
from hwbench.core.scenario import Scenario, Segment
from hwbench.plugins.kernels.leaky_ring import LeakyRingKernel

DATA = Path(__file__).parents[1] / "data"


def hwbench_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hwbench.cli.main", *args], capture_output=True, text=True, timeout=600, check=False
    )


def test_one_auditor_class_remains() -> None:
    """No module of the package defines a class named ``*Auditor`` but the engine's."""
    root = Path(hwbench.__file__).parent
    found = [
        f"{path.relative_to(root)}:{line.split('(')[0].split()[1].rstrip(':')}"
        for path in root.rglob("*.py")
        for line in path.read_text().splitlines()
        if line.startswith("class ") and "Auditor" in line.split("(")[0]
    ]
    assert found == ["accuracy/audit.py:Auditor"]


def test_every_builtin_protocol_is_registered_through_the_hook() -> None:
    registry = get_registry()
    assert list(registry.protocols) == ["validation", "stress", "spike-train", "dl-primitives", "training-precision"]
    for protocol in registry.protocols.values():
        assert protocol.info.runs and protocol.info.compares and protocol.info.verdict and protocol.info.floor


@pytest.mark.parametrize("device", ["loihi", "spinnaker"])
def test_lif_on_neuromorphic_chips_gets_a_spike_train_verdict(device: str) -> None:
    proc = hwbench_cli("audit", "--kernel", "lif", "--device", device, "--quick", "--json", "--no-store")
    assert proc.returncode in (0, 1), proc.stderr
    report = AuditReport.model_validate(json.loads(proc.stdout))
    (p,) = report.protocols
    assert p.protocol == "spike-train" and p.verdict == report.verdict
    assert (proc.returncode == 1) == (report.verdict.value == "FAIL")
    cand = p.runs[-1]
    assert cand.role == "candidate" and cand.execution == "emulated"
    assert {r.label: r.spikes for r in p.runs if r.role in ("gold", "ensemble")}  # floor members compared
    assert cand.spikes is not None and {"coincidence_factor", "van_rossum_mean", "first_divergence"} <= set(cand.spikes)
    assert "synaptic-events" in cand.metrics and cand.metrics["synaptic-events"]["events"] > 0
    # the chips' fixed point against the float reference: a divergence, located to its step
    first = cand.spikes["first_divergence"]
    assert first is not None and 0 <= first["step"] < 50
    assert any(f"step {first['step']}" in r for r in p.verdicts[0].reasons)


def test_spike_train_floor_comes_from_legitimate_variants_and_cpu_fp32_passes() -> None:
    settings = AuditSettings(kernel="lif", quick=True, protocols=("spike-train",))
    report, data = run_audit(get_registry(), settings, [Candidate("cpu", "fp32")])
    (p,) = report.protocols
    assert p.verdict.value == "PASS" and p.runs[-1].spikes["first_divergence"] is None
    assert p.floor["count_diff_total"] >= 1.0 and p.floor["incoincidence"] >= 0.01
    assert "spike-train" in data and "reference" in data["spike-train"].traces


def test_training_precision_runs_only_when_a_training_session_asks() -> None:
    """`hwbench train --audit` runs on the engine; a bare audit never selects it, and asking for it
    without a training run says where it comes from."""
    registry = get_registry()
    assert registry.protocols["training-precision"] not in Auditor(registry, AuditSettings(kernel="lif")).selected()
    asked = hwbench_cli("audit", "--kernel", "lif", "--device", "cpu", "--protocol", "training-precision")
    assert asked.returncode == 2 and "run `hwbench train --audit`" in asked.stderr


def test_coincidence_factor_and_first_divergence() -> None:
    a = np.array([10.0, 30.0, 50.0])
    assert coincidence_factor(a, a, 2.0, 100.0) == pytest.approx(1.0)
    assert coincidence_factor(np.zeros(0), np.zeros(0), 2.0, 100.0) == 1.0
    assert coincidence_factor(a + 20.0 / 3, a, 2.0, 100.0) < 0.0  # no coincidence: below chance
    ref = np.zeros((6, 3))
    cand = ref.copy()
    cand[4, 2] = 1.0
    ref[1, 0] = cand[1, 0] = 1.0
    found = first_divergence(cand, ref, 1.0)
    assert found is not None and (found["step"], found["cell"], found["candidate_spiked"]) == (4, 2, True)
    assert found["spikes_before"] == 1 and first_divergence(ref, ref, 1.0) is None


class OutputRange(api.AuditProtocol):
    """A third-party protocol: the candidate's final probe range against the reference's."""

    info = api.ProtocolInfo(
        name="output-range",
        summary="final probe range",
        applies_to="kernels with a probe",
        runs=["reference: CPU fp32", "candidate"],
        compares=[api.Compared(header="range diff", path="deviation.range_diff")],
        floor="none",
        verdict="FAIL when the ranges differ by more than 1%",
    )

    def refusal(self, kernel: Any) -> str | None:
        return None if kernel.name == "leaky-ring" else "only leaky-ring"

    def run(self, ctx: api.AuditContext) -> list[api.ProtocolReport]:
        def final(device: str, mode: str) -> float:
            kernel, wl = ctx.kernel, ctx.kernel.make_workload(8, seed=ctx.settings.seed)
            dev = ctx.registry.device(device)
            ex = dev.executor(api.RunRequest(kernel, wl, mode=mode))
            probes = np.asarray(ex.run(wl.state0, kernel.default_inputs(wl), 4).probes)
            return float(probes.max() - probes.min())

        ref = ctx.baseline(("output-range", ctx.kernel.name), lambda: final("cpu", "fp32"))
        runs, verdicts = [], []
        for c in ctx.candidates:
            mode = c.mode or ctx.registry.device(c.device).default_mode
            diff = abs(final(c.device, mode) - ref) / max(abs(ref), 1e-30)
            verdict = api.Verdict.PASS if diff <= 0.01 else api.Verdict.FAIL
            runs.append(api.RunSummary(label=c.device, role="candidate", device=c.device, mode=mode,
                                       execution="emulated", engine="-", setup_s=0.0, run_s=0.0,
                                       deviation={"range_diff": diff}))  # fmt: skip
            verdicts.append(api.CandidateVerdict(device=c.device, mode=mode, verdict=verdict, score=diff,
                                                 reasons=[f"range differs by {diff:.3g}"]))  # fmt: skip
        return [api.ProtocolReport(name="output-range", protocol="output-range", description="final range",
                                   sample_ms=1.0, regime="-", floor={}, runs=runs, verdicts=verdicts,
                                   verdict=api.combine([v.verdict for v in verdicts]))]  # fmt: skip


class _ThirdParty:
    HWBENCH_CONTRACT = 3

    @staticmethod
    @api.hookimpl
    def hwbench_audit_protocols() -> list[api.AuditProtocol]:
        return [OutputRange()]


def test_a_third_party_protocol_runs_on_the_engine() -> None:
    registry = load_registry(entry_point_plugins=False, extra={"acme-protocols": _ThirdParty()})
    assert "output-range" in registry.protocols
    settings = AuditSettings(kernel="leaky-ring", protocols=("output-range",))
    report, _ = run_audit(registry, settings, [Candidate("cpu", "fp32")])
    assert [p.protocol for p in report.protocols] == ["output-range"]
    assert report.verdict.value == "PASS" and report.protocols[0].runs[0].deviation == {"range_diff": 0.0}
    with pytest.raises(UsageError, match="has no output-range protocol: only leaky-ring"):
        Auditor(registry, AuditSettings(kernel="io-ehh", protocols=("output-range",))).selected()
    with pytest.raises(UsageError, match="unknown protocol nope; choose from: validation, stress"):
        Auditor(registry, AuditSettings(kernel="io-ehh", protocols=("nope",))).selected()


class _Contract2Kernel(LeakyRingKernel):
    info = LeakyRingKernel.info.model_copy(
        update={
            "name": "ring-c2",
            "audit": LeakyRingKernel.info.audit.model_copy(update={"floors": None}),
        }
    )


class _Contract2Plugin:
    HWBENCH_CONTRACT = 2

    @staticmethod
    @api.hookimpl
    def hwbench_kernels() -> list[api.Kernel]:
        return [_Contract2Kernel()]


def test_contract_2_kernel_is_judged_with_contract_2_floors_through_its_adapter() -> None:
    assert api.CONTRACT_VERSION == 3
    registry = load_registry(entry_point_plugins=False, extra={"old-kernels": _Contract2Plugin()})
    status = next(s for s in registry.plugins if s.name == "old-kernels")
    assert status.status == "loaded" and status.contract == 2
    assert any("ring-c2" in n and "contract 2" in n for n in status.notes)
    assert registry.kernel("ring-c2").info.audit.floors == CONTRACT2_FLOORS
    assert _Contract2Kernel.info.audit.floors is None  # the class's record is left alone


def test_io_ehh_audit_runs_carry_synaptic_events() -> None:
    """A short io-ehh scenario on the engine's time-stepped protocol: every run carries the
    kernel's metrics (synaptic events counted from its gap junctions)."""
    registry = get_registry()
    kernel = registry.kernel("io-ehh")
    scenario = Scenario("short", "io-ehh", 64, True, 42, [Segment(2.0, {"I_app": np.zeros(64)}, "free")])
    info = ProtocolInfo(name="short", summary="-", applies_to="io-ehh", runs=["all"], compares=[], floor="-",
                        verdict="-")  # fmt: skip
    protocol = SteppedProtocol(info, lambda _s, _i: scenario, applies=lambda _i: None)
    auditor = Auditor(registry, AuditSettings(kernel=kernel.name), protocols={"short": protocol})
    report = auditor.run([Candidate("tpu-v3")])
    for run in report.protocols[0].runs:
        events = run.metrics["synaptic-events"]
        assert events["events"] > 0 and events["events_per_s"] > 0, run.label


def test_reports_of_older_versions_still_load() -> None:
    old = json.loads((DATA / "audit_report_tpu_v3_quick.json").read_text())
    report = AuditReport.model_validate(old)
    assert all(p.protocol == "" for p in report.protocols) and report.verdict


def test_api_exports_the_protocol_contract() -> None:
    for name in ("AuditProtocol", "AuditContext", "ProtocolInfo", "Compared", "ProtocolReport", "RunSummary"):
        assert name in api.__all__
    assert inspect.isabstract(api.AuditProtocol)


def test_the_html_report_shows_each_runs_kernel_metrics(tmp_path: Path) -> None:
    from hwbench.cli.main import main
    from hwbench.core.results import write_json

    settings = AuditSettings(kernel="lif", quick=True)
    report, _ = run_audit(get_registry(), settings, [Candidate("spinnaker")])
    path = write_json(report, tmp_path / "report.json")
    assert main(["report", str(path), "--out", str(tmp_path / "audit.html")]) == 0
    text = (tmp_path / "audit.html").read_text()
    assert "Kernel metrics per run" in text and ">synaptic-events</th>" in text and "events_per_s (events / s)" in text
    metrics = text[text.index("<h3>Kernel metrics per run</h3>") :]
    metrics = metrics[: metrics.index("</table>")]
    assert metrics.count("<tr><td>") == len(report.protocols[0].runs)  # one row per run


@given(
    raster=hnp.arrays(np.int8, st.tuples(st.integers(1, 30), st.integers(1, 6)), elements=st.integers(0, 1)),
    flip=st.tuples(st.integers(0, 29), st.integers(0, 5)),
)
@settings(max_examples=60, deadline=None)
def test_first_divergence_is_the_earliest_differing_step(raster: np.ndarray, flip: tuple[int, int]) -> None:
    """Flipping one (step, neuron) of a raster: the divergence is found at that step or earlier,
    never later, and identical rasters have none; a train always coincides fully with itself."""
    step, cell = flip[0] % raster.shape[0], flip[1] % raster.shape[1]
    other = raster.copy()
    other[step, cell] = 1 - other[step, cell]
    found = first_divergence(other, raster, 1.0)
    assert found is not None and found["step"] == step and found["cell"] == cell
    assert found["candidate_spiked"] == bool(other[step, cell]) and first_divergence(raster, raster, 1.0) is None
    times = np.nonzero(raster[:, 0])[0].astype(float)
    assert coincidence_factor(times, times, 2.0, float(raster.shape[0])) == pytest.approx(1.0)


def test_the_kernels_reports_are_computed_once_per_workload(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reference, gold, the reordered member and the candidate share one workload, so the kernel's
    activity replay runs twice (it and the +1 ulp member), not once per run."""
    from hwbench.plugins.kernels.lif import LifKernel

    calls: list[int] = []
    real = LifKernel.activity

    def counted(self: Any, workload: Any, steps: int) -> Any:
        calls.append(steps)
        return real(self, workload, steps)

    monkeypatch.setattr(LifKernel, "activity", counted)
    report, _ = run_audit(get_registry(), AuditSettings(kernel="lif", quick=True), [Candidate("loihi")])
    runs = report.protocols[0].runs
    assert len(runs) == 5 and all("synaptic-events" in r.metrics for r in runs)
    assert calls == [50, 50]
