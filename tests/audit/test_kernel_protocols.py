"""The audit reads what it needs of a kernel from the kernel's record (``KernelInfo.audit``).

A second kernel (the ``leaky-ring`` toy, which declares small versions of both protocols) runs
through the real CLI the way io-ehh does; the LIF family refuses both protocols with the reasons
its record gives; io-ehh's record reproduces the study's protocols exactly.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from pydantic import ValidationError

from hwbench.accuracy.report import AuditReport
from hwbench.accuracy.validation import validation
from hwbench.core.errors import UsageError
from hwbench.core.protocol_facts import AuditFacts, ValidationFacts
from hwbench.plugins import DEFAULT_KERNEL
from hwbench.plugins.kernels.io_ehh import IoEhhKernel
from hwbench.plugins.kernels.leaky_ring import LeakyRingKernel
from hwbench.plugins.kernels.lif import LifKernel
from hwbench.stress.stimulus import spike_stress


def hwbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hwbench.cli.main", *args], capture_output=True, text=True, timeout=600, check=False
    )


def test_io_ehh_record_gives_the_studys_protocols() -> None:
    info = IoEhhKernel.info
    full, quick = validation(info), validation(info, quick=True)
    assert (full.kernel, full.size, full.total_ms, full.connected) == ("io-ehh", 729, 10_000.0, True)
    assert (quick.size, quick.total_ms) == (125, 2_000.0) and quick.reduced
    assert list(full.segments[0].inputs) == ["I_app"] and not full.segments[0].inputs["I_app"].any()
    stress = spike_stress(info)
    assert stress.size == 64 and [s.ms for s in stress.segments[:3]] == [5000.0, 50.0, 950.0]
    assert len(stress.segments) == 1 + 2 * 10 and set(stress.overrides) == {"g_CaL"}
    assert "g_CaL = 0.5 + 0.9 U(0,1)" in stress.description and "a random third" in stress.description
    assert info.name == DEFAULT_KERNEL and info.default_size == 729


def test_stress_draws_each_declared_heterogeneous_parameter_per_cell() -> None:
    sc = spike_stress(LeakyRingKernel.info, seed=5)
    tau = sc.overrides["tau"]
    assert tau.shape == (16,) and tau.min() >= 4.0 and tau.max() <= 6.0 and np.unique(tau).size == 16
    pulses = [s.inputs["I_app"] for s in sc.segments[1::2]]
    assert len(pulses) == 3 and all(0 < np.count_nonzero(p) <= 8 for p in pulses)  # half of 16, with replacement


def test_a_refused_protocol_says_the_kernels_reason() -> None:
    with pytest.raises(UsageError, match="Poisson spike train"):
        spike_stress(LifKernel.info)
    with pytest.raises(UsageError, match="0/1 spikes"):
        validation(LifKernel.info)


def test_audit_facts_refuse_a_protocol_both_declared_and_refused() -> None:
    facts = ValidationFacts(size=8, quick_size=4, ms=10.0, quick_ms=5.0)
    with pytest.raises(ValidationError, match="both declared and refused"):
        AuditFacts(validation=facts, refused={"validation": "no"})
    assert AuditFacts(refused={"speed": "no"}).reason("speed") == "no"  # a third-party protocol's refusal
    assert AuditFacts(validation=facts).declared() == ("validation",)
    assert "declares no stress protocol" in AuditFacts(validation=facts).reason("stress")


def test_a_second_kernel_is_audited_the_way_io_ehh_is() -> None:
    proc = hwbench("audit", "--kernel", "leaky-ring", "--device", "groq", "--quick", "--json", "--no-store")
    assert proc.returncode == 0, proc.stderr
    report = AuditReport.model_validate(json.loads(proc.stdout))
    assert report.settings["kernel"] == "leaky-ring"
    assert [p.name for p in report.protocols] == ["validation", "stress"]
    for p in report.protocols:
        assert p.probe_unit == "" and p.reduced
        assert {r.role for r in p.runs} == {"reference", "gold", "ensemble", "candidate"}
    assert report.protocols[1].runs[0].label == "reference"


def test_lif_audit_refuses_the_protocols_its_record_refuses() -> None:
    asked = hwbench("audit", "--kernel", "lif", "--device", "loihi", "--protocol", "stress", "--no-store")
    assert asked.returncode == 2 and "kernel 'lif' has no stress protocol: its input is" in asked.stderr


def test_run_takes_its_default_size_from_the_kernel_record() -> None:
    proc = hwbench("run", "--kernel", "leaky-ring", "--ms", "2", "--repeats", "1", "--json", "--no-store")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["timing"]["ncells"] == LeakyRingKernel.info.default_size


def test_run_counts_biological_time_at_the_time_step_set() -> None:
    """``--set dt=...`` changes the kernel's time step: --ms stays biological time, steps follow dt."""
    info = IoEhhKernel.info
    proc = hwbench("run", "--cells", "64", "--set", "dt=0.0125", "--ms", "10", "--repeats", "1", "--json", "--no-store")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["timing"]["simulated_ms"] == 10.0 and doc["timing"]["steps"] == round(10 / 0.0125)
    assert doc["sample_interval_ms"] == 0.0125 * info.sample_every
