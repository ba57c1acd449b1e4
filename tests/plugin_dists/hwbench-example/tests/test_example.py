"""The plugin author's own tests, run against an installed hwbench and an installed hwbench-example.

Run from this directory with ``python -m pytest`` (hwbench's pytest plugin, with its fixtures, is
active whenever hwbench is installed). ``TestConformance`` runs hwbench's device conformance
suite on ``example-dsp``; the tests below it check what is particular to this chip.
"""

from __future__ import annotations

import numpy as np
import pytest
from hwbench_example.device import MEMORY_BYTES, ExampleDsp
from hwbench_example.metric import RmsDeviation

from hwbench.core.engines.select import pick_engine
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.kernel import Workload
from hwbench.core.plugins import get_registry, load_registry
from hwbench.testing.conformance import DeviceConformance

ONLY_THIS_PLUGIN = {"HWBENCH_LOAD_PLUGINS": "example"}


class TestConformance(DeviceConformance):
    """This plugin is written against hwbench plugin contract 1 (``executor(kernel, workload, ...)``
    without ``sample_every``), which hwbench keeps serving through an adapter. The three checks
    below need what contract 1 cannot express, and the adapter refuses them with a reason."""

    device_name = "example-dsp"
    tolerance = 1e-4  # fp32 against the CPU's fp64 over a short leaky-ring run

    def test_serves_a_forensic_replay(self, conformance_device, conformance_kernel) -> None:
        with pytest.raises(UnavailableError, match=r"plugin contract 1.*'sample_every'"):
            super().test_serves_a_forensic_replay(conformance_device, conformance_kernel)

    def test_serves_the_audit(self, conformance_device, conformance_kernel, hwbench_registry) -> None:
        with pytest.raises(UnavailableError, match=r"plugin contract 1.*'sample_every'"):  # dt refinement
            super().test_serves_the_audit(conformance_device, conformance_kernel, hwbench_registry)

    def test_honours_a_profile_given_in_the_request(self, conformance_device, conformance_kernel) -> None:
        with pytest.raises(UsageError, match="takes no custom numerics profile"):
            super().test_honours_a_profile_given_in_the_request(conformance_device, conformance_kernel)


def test_registers_through_load_registry() -> None:
    # The entry point resolves, the hooks run, the names are free, and hwbench lists the plugin
    # as loaded, from this distribution, with what it provides.
    registry = load_registry(env=ONLY_THIS_PLUGIN)
    statuses = {p.name: p for p in registry.plugins}
    assert "example" in statuses, "hwbench-example is not installed here (pip install .)"
    status = statuses["example"]
    assert status.status == "loaded", status.error
    assert status.distribution == "hwbench-example"
    assert status.provides == {
        "devices": ["example-dsp"],
        "metrics": ["example-rms-deviation"],
        "protocols": ["example-range"],
    }
    assert isinstance(registry.device("example-dsp"), ExampleDsp)
    assert isinstance(registry.metric("example-rms-deviation"), RmsDeviation)


def test_probe_is_emulated_and_says_why() -> None:
    probe = ExampleDsp().probe()
    assert probe.status == "emulated"
    assert "fp32" in probe.reason


def test_every_spec_number_has_a_source() -> None:
    spec = ExampleDsp().spec
    assert spec.sources
    assert spec.memory_bytes == MEMORY_BYTES


def test_supports_checks_capacity() -> None:
    dsp = ExampleDsp()
    kernel = load_registry(env={"HWBENCH_LOAD_PLUGINS": ""}).kernel("leaky-ring")
    assert dsp.supports(kernel, Workload("leaky-ring", 8, {"connected": True})).ok
    huge = 10**9
    assert kernel.memory_estimate(huge) > MEMORY_BYTES
    verdict = dsp.supports(kernel, Workload("leaky-ring", huge, {"connected": True}))
    assert not verdict.ok
    assert "256 MiB" in verdict.reason


def test_only_fp32() -> None:
    dsp = ExampleDsp()
    kernel = load_registry(env={"HWBENCH_LOAD_PLUGINS": ""}).kernel("leaky-ring")
    with pytest.raises(UsageError, match="float32 only"):
        dsp.executor(kernel, kernel.make_workload(8), dtype="float64")
    with pytest.raises(UsageError, match="choose from: fp32"):
        dsp.numerics("bf16")


def test_runs_kernels_like_the_cpu_in_fp32() -> None:
    # The DSP-1's arithmetic is IEEE fp32, so on the same engine its results must equal the
    # CPU device's fp32 results bit for bit. With no engine installed, it must say so.
    registry = get_registry()
    kernel, cpu, dsp = registry.kernel("leaky-ring"), registry.device("cpu"), ExampleDsp()
    workload = kernel.make_workload(12, seed=3)
    inputs = kernel.default_inputs(workload)
    try:
        engine = pick_engine(registry.engines, None, "float32").name
    except UnavailableError:
        with pytest.raises(UnavailableError, match="no engine available"):
            dsp.executor(kernel, workload)
        return
    out = dsp.executor(kernel, workload).run(workload.state0, inputs, 3)
    ref = cpu.executor_for(kernel, workload, mode="fp32", engine=engine).run(workload.state0, inputs, 3)
    assert np.all(np.isfinite(out.probes))
    np.testing.assert_array_equal(out.probes, ref.probes)
    np.testing.assert_array_equal(np.asarray(out.state), np.asarray(ref.state))


def test_rms_deviation_metric() -> None:
    result = RmsDeviation().compute(candidate=[1.0, 2.0, 3.0, 4.0], reference=[1.0, 2.0, 0.0, 0.0])
    assert result == {"rms": 2.5, "max_abs": 4.0}  # sqrt((0 + 0 + 9 + 16) / 4) = 2.5
    with pytest.raises(UsageError, match="shapes differ"):
        RmsDeviation().compute(candidate=[1.0], reference=[1.0, 2.0])


def test_the_range_protocol_runs_on_the_audit_engine() -> None:
    """The protocol as hwbench's engine runs it: the CPU fp32 candidate is the reference's own
    arithmetic (ratio 0, PASS); a bare audit does not run it (it runs when named)."""
    from hwbench.accuracy.audit import Auditor, AuditSettings, Candidate, run_audit

    registry = load_registry(env=ONLY_THIS_PLUGIN)
    settings = AuditSettings(kernel="leaky-ring", protocols=("example-range",))
    report, _ = run_audit(registry, settings, [Candidate("cpu", "fp32")])
    (protocol,) = report.protocols
    assert protocol.protocol == "example-range" and protocol.verdicts[0].score == 0.0
    assert report.verdict.value == "PASS"
    bare = Auditor(registry, AuditSettings(kernel="leaky-ring")).selected()
    assert "example-range" not in [p.name for p in bare]
