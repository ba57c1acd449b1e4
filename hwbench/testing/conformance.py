"""The conformance suite a device plugin runs in its own tests with one import::

    from hwbench.testing.conformance import DeviceConformance

    class TestMyChip(DeviceConformance):
        device_name = "my-chip"        # as registered through hwbench_devices
        kernel = "leaky-ring"           # small kernel for the run checks (default)
        tolerance = 1e-3                # max |probe - CPU fp64| the device declares

It checks the contracts hwbench relies on, and it makes every call the CLI makes:

* the spec is valid and cited, ``probe()`` gives a status and a reason, ``supports()`` answers
  every registered kernel (with a reason when it refuses), every mode's profile is well formed
  and every entry cited;
* ``hwbench run`` / ``bench``: the runner resolves, builds and times the device;
* ``hwbench audit``: the auditor runs the device as a candidate with everything the audit passes
  (the mode, a profile rebuilt with ``--set`` overrides, dt refinement's ``sample_every``), and a
  forensic replay's step-wise, counting request;
* an emulated run honours the device's declared profile: it equals hwbench's generic emulation of
  that profile (``emulated_executor``) on the same kernel, so a device that ignores its profile
  cannot report PASS while ``hwbench devices`` advertises reduced precision. A device whose
  arithmetic a profile alone cannot express (a fixed-point integer model, say) sets
  ``custom_arithmetic = True`` and is then held only to agreeing with the CPU within
  ``tolerance``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest


class DeviceConformance:
    device_name: ClassVar[str] = ""
    kernel: ClassVar[str] = "leaky-ring"
    size: ClassVar[int] = 64
    samples: ClassVar[int] = 5
    tolerance: ClassVar[float] = 1e-3
    custom_arithmetic: ClassVar[bool] = False
    workload_options: ClassVar[dict[str, Any]] = {}  # kernel parameters the device needs (e.g. reset)

    # --- fixtures ------------------------------------------------------------------------------
    @pytest.fixture
    def conformance_device(self, hwbench_registry: Any) -> Any:
        if not self.device_name:
            pytest.fail(f"{type(self).__name__} must set device_name")
        return hwbench_registry.device(self.device_name)

    @pytest.fixture
    def conformance_kernel(self, conformance_device: Any, hwbench_registry: Any) -> Any:
        kernel = hwbench_registry.kernel(self.kernel)
        if not conformance_device.supports(kernel, kernel.make_workload(self.size, seed=0, **self.workload_options)).ok:
            pytest.skip(f"{self.device_name} does not run {self.kernel}")
        return kernel

    def _run(self, device: Any, kernel: Any, workload: Any, **options: Any) -> Any:
        from hwbench.core.device import RunRequest

        executor = device.executor(RunRequest(kernel, workload, **options))
        return executor.run(workload.state0, kernel.default_inputs(workload), self.samples)

    # --- the records ---------------------------------------------------------------------------
    def test_spec_fields_valid_and_cited(self, conformance_device: Any) -> None:
        from hwbench.core.device import DeviceSpec

        spec = conformance_device.spec
        assert isinstance(spec, DeviceSpec)
        DeviceSpec.model_validate(spec.model_dump())  # round-trips through validation
        assert spec.name == self.device_name
        assert spec.vendor.strip() and spec.model.strip(), "vendor and model must be named"
        assert spec.sources, "a DeviceSpec must cite where its facts come from (spec.sources)"
        assert conformance_device.modes, "a device needs at least one numerics mode"

    def test_probe_returns_status_and_reason(self, conformance_device: Any) -> None:
        probe = conformance_device.probe()
        assert probe.status in ("real", "emulated", "unavailable")
        assert len(probe.reason.strip()) >= 10, "probe().reason must tell a user why, in words"

    def test_supports_answers_every_registered_kernel(self, conformance_device: Any, hwbench_registry: Any) -> None:
        for kernel in hwbench_registry.kernels.values():
            for mode in conformance_device.modes:
                answer = conformance_device.supports(kernel, None, mode=mode)
                assert isinstance(answer.ok, bool)
                if not answer.ok:
                    assert answer.reason.strip(), f"supports() refused {kernel.name} without a reason"

    def test_profiles_well_formed_and_cited(self, conformance_device: Any) -> None:
        from hwbench.accuracy.numerics.profile import NumericsProfile

        for mode in conformance_device.modes:
            profile = conformance_device.numerics(mode)
            if profile is None:
                continue
            assert isinstance(profile, NumericsProfile)
            again = NumericsProfile.from_json(profile.to_json())
            assert again == profile, f"profile of mode {mode} does not survive a JSON round-trip"
            for op_class, op in profile.ops.items():
                assert op.source.strip(), f"mode {mode}: {op_class.value} has no source"
                assert op.confidence is not None

    def test_overrides_accept_exactly_the_settable_parameters(self, conformance_device: Any) -> None:
        """``--set`` of a settable parameter to its current value changes nothing; any other name is
        a one-line UsageError, never a TypeError."""
        from hwbench.core.errors import UsageError

        for mode in conformance_device.modes:
            settable = conformance_device.settable(mode)
            assert isinstance(settable, dict)
            if settable:
                assert conformance_device.numerics(mode, settable) == conformance_device.numerics(mode)
            with pytest.raises(UsageError):
                conformance_device.numerics(mode, {"no_such_knob_xyz": 1})

    # --- the calls the CLI makes ---------------------------------------------------------------
    def test_runs_as_hwbench_run_and_bench_do(self, conformance_kernel: Any, hwbench_registry: Any) -> None:
        from hwbench.core.runner import build, prepare, timed_runs, timing_record

        prep = prepare(
            hwbench_registry,
            kernel=self.kernel,
            device=self.device_name,
            size=self.size,
            overrides=dict(self.workload_options),
        )
        executor, setup = build(prep)
        inputs = conformance_kernel.default_inputs(prep.workload)
        out, samples = timed_runs(executor, prep.workload.state0, inputs, self.samples, repeats=2)
        timing = timing_record(prep, executor, setup, samples, self.samples)
        assert np.asarray(out.probes).shape[0] == self.samples
        assert timing.steps == self.samples * conformance_kernel.info.sample_every and timing.run_s > 0

    def test_every_mode_runs_and_agrees_with_cpu(self, conformance_device: Any, conformance_kernel: Any) -> None:
        workload = conformance_kernel.make_workload(self.size, seed=0, **self.workload_options)
        cpu = self._run(_cpu(), conformance_kernel, workload, mode="fp64")
        for mode in conformance_device.modes:
            if not conformance_device.supports(conformance_kernel, workload, mode=mode).ok:
                continue
            out = self._run(conformance_device, conformance_kernel, workload, mode=mode)
            probes = np.asarray(out.probes, dtype=np.float64)
            assert probes.shape == np.asarray(cpu.probes).shape, f"mode {mode}: probe shape"
            assert np.isfinite(probes).all(), f"mode {mode}: the run produced non-finite values"
            worst = float(np.max(np.abs(probes - np.asarray(cpu.probes, dtype=np.float64))))
            assert worst <= self.tolerance, (
                f"{self.device_name} [{mode}] deviates {worst:.3g} from the CPU fp64 reference "
                f"(declared tolerance {self.tolerance:g})"
            )

    def test_emulated_run_honours_its_profile(self, conformance_device: Any, conformance_kernel: Any) -> None:
        """Emulated, a device computes what its profile says: hwbench's generic emulation of it."""
        from hwbench.accuracy.numerics.emulated_device import emulated_executor
        from hwbench.core.device import RunRequest

        if conformance_device.probe().status != "emulated" or self.custom_arithmetic:
            pytest.skip("real device, or arithmetic beyond a profile (custom_arithmetic)")
        workload = conformance_kernel.make_workload(self.size, seed=0, **self.workload_options)
        inputs = conformance_kernel.default_inputs(workload)
        for mode in conformance_device.modes:
            profile = conformance_device.numerics(mode)
            if profile is None or not conformance_device.supports(conformance_kernel, workload, mode=mode).ok:
                continue
            got = self._run(conformance_device, conformance_kernel, workload, mode=mode)
            expected = emulated_executor(RunRequest(conformance_kernel, workload, mode=mode), profile)
            want = expected.run(workload.state0, inputs, self.samples)
            np.testing.assert_array_equal(
                np.asarray(got.probes),
                np.asarray(want.probes),
                err_msg=f"{self.device_name} [{mode}] does not compute what its profile '{profile.name}' says",
            )

    def test_honours_a_profile_given_in_the_request(self, conformance_device: Any, conformance_kernel: Any) -> None:
        """``--profile FILE`` and ``--set`` reach the device as ``RunRequest.profile``: a coarse
        profile must change the result exactly as the generic emulation says."""
        from hwbench.accuracy.numerics.emulated_device import emulated_executor
        from hwbench.core.device import RunRequest

        if self.custom_arithmetic:
            pytest.skip("arithmetic beyond a profile (custom_arithmetic)")
        workload = conformance_kernel.make_workload(self.size, seed=0, **self.workload_options)
        coarse = _coarse_profile(self.device_name, conformance_device.default_mode)
        got = self._run(conformance_device, conformance_kernel, workload, profile=coarse)
        want = emulated_executor(RunRequest(conformance_kernel, workload), coarse).run(
            workload.state0, conformance_kernel.default_inputs(workload), self.samples
        )
        native = self._run(_cpu(), conformance_kernel, workload, mode="fp32")
        assert not np.array_equal(np.asarray(want.probes), np.asarray(native.probes)), "the check needs a difference"
        np.testing.assert_array_equal(
            np.asarray(got.probes), np.asarray(want.probes), err_msg="the device ignored RunRequest.profile"
        )

    def test_serves_the_audit(self, conformance_device: Any, conformance_kernel: Any, hwbench_registry: Any) -> None:
        """The auditor's own code path, on a short scenario of the conformance kernel: the device as
        candidate in its default mode and with its profile's parameters set as ``--set`` does,
        dt refinement (``sample_every`` x2) and forensics on."""
        from hwbench.accuracy.audit import Auditor, AuditSettings, Candidate
        from hwbench.accuracy.stepped import SteppedProtocol
        from hwbench.core.audit_protocol import ProtocolInfo
        from hwbench.core.scenario import Scenario, Segment
        from hwbench.stress import forensics, refinement

        dt = conformance_kernel.info.dt_ms or 1.0
        ms = 2 * dt * conformance_kernel.info.sample_every
        inputs = conformance_kernel.default_inputs(
            conformance_kernel.make_workload(self.size, seed=0, **self.workload_options)
        )
        scenario = Scenario(
            "conformance",
            self.kernel,
            self.size,
            True,
            0,
            [Segment(ms, inputs, "first chunk"), Segment(ms, inputs, "second chunk")],
            overrides=dict(self.workload_options),
        )
        refine = conformance_kernel.info.dt_param is not None  # discrete-time kernels have no dt to refine
        settings = AuditSettings(kernel=self.kernel, protocols=("conformance",), dt_refine=refine, refine_factors=(2,))
        info = ProtocolInfo(
            name="conformance", summary="two chunks of the conformance kernel", applies_to="any kernel",
            runs=["reference", "gold", "ensemble", "candidate"], compares=[], floor="the ensemble's", verdict="ratios",
        )  # fmt: skip
        protocol = SteppedProtocol(
            info,
            lambda _settings, _info: scenario,
            refine=refinement.refined,
            forensics=forensics.replay,
            applies=lambda _info: None,
        )
        auditor = Auditor(hwbench_registry, settings, protocols={"conformance": protocol})
        overrides = conformance_device.settable(conformance_device.default_mode)
        candidates = [Candidate(self.device_name)]
        if overrides:
            candidates.append(Candidate(self.device_name, conformance_device.default_mode, overrides))
        report = auditor.run(candidates)
        modes = [v.mode for v in report.protocols[0].verdicts]
        assert len(modes) == len(candidates) * (2 if refine else 1)
        assert not refine or modes[-1].endswith("dt/2")
        assert all(v.reasons for v in report.protocols[0].verdicts)

    def test_serves_a_forensic_replay(self, conformance_device: Any, conformance_kernel: Any) -> None:
        """Forensics asks for one step per sample (and an emulation may be asked for counters)."""
        from hwbench.core.device import RunRequest

        workload = conformance_kernel.make_workload(self.size, seed=0, **self.workload_options)
        executor = conformance_device.executor(RunRequest(conformance_kernel, workload, sample_every=1))
        out = executor.run(workload.state0, conformance_kernel.default_inputs(workload), 3)
        assert np.asarray(out.probes).shape[0] == 3
        steps = np.asarray(self._run(conformance_device, conformance_kernel, workload, sample_every=1).probes)
        assert steps.shape[0] == self.samples


def _cpu() -> Any:
    from hwbench.core.plugins import get_registry

    return get_registry().device("cpu")


def _coarse_profile(device: str, mode: str) -> Any:
    """Every rounded op class at bfloat16: far from any real device, so ignoring it shows."""
    from hwbench.accuracy.numerics.profile import Confidence, NumericsProfile, OpNumerics
    from hwbench.core.ops import OpClass

    coarse = OpNumerics(format="bf16", source="conformance suite: a deliberately coarse profile",
                        confidence=Confidence.ASSUMED)  # fmt: skip
    classes = (OpClass.ADD, OpClass.MUL, OpClass.DIV, OpClass.EXP, OpClass.STORE)
    return NumericsProfile(
        name="conformance-coarse",
        device=device,
        mode=mode,
        description="bf16 results for add, mul, div, exp and the stored state",
        ops=dict.fromkeys(classes, coarse),
    )
