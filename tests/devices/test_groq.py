"""The groq device: cited numerics profile, capacity model, probe, and the two execution routes."""

from __future__ import annotations

import numpy as np
import pytest

from hwbench.accuracy.numerics.emulate import emulating_ops
from hwbench.accuracy.numerics.emulated_array import EmuArray
from hwbench.accuracy.numerics.emulated_device import emulated_executor
from hwbench.accuracy.numerics.formats import FloatFormat
from hwbench.accuracy.numerics.profile import Confidence, NumericsProfile
from hwbench.api import RunRequest
from hwbench.core.engines.numpy_engine import NumpyOps
from hwbench.core.errors import UsageError
from hwbench.core.ops import OpClass
from hwbench.plugins.devices import groq
from hwbench.plugins.devices.groq import GroqDevice, GroqProgramExecutor
from hwbench.plugins.kernels.io_ehh import IoEhhKernel
from hwbench.plugins.kernels.leaky_ring import LeakyRingKernel

REDUCED = (OpClass.EXP, OpClass.DIV, OpClass.POW, OpClass.COMPARE)


def _bits(x: object) -> list[int]:
    return [int(b) for b in np.asarray(x, np.float32).view(np.uint32)]


def _ops(profile: NumericsProfile) -> object:
    return emulating_ops(profile, counters=False)(NumpyOps(np.float32))


# ----------------------------------------------------------------------------------- profile
def test_default_profile_rounds_exp_and_div_to_the_reduced_width():
    ops = _ops(GroqDevice().numerics())
    x = EmuArray(np.array([1.0, 3.0], np.float32), ops)
    # exp(1) in fp32 is 0x402DF855; 10 fraction bits, nearest even: the 13 dropped bits 0x1855 > half
    assert _bits(ops.exp(x).raw)[0] == 0x402E0000
    # 1/3 in fp32 is 0x3EAAAAAB; dropped bits 0x0AAB < half: rounds down
    assert _bits((1.0 / x).raw)[1] == 0x3EAAA000
    # additions and multiplications stay IEEE fp32
    third = np.float32(1) / np.float32(3)
    assert _bits((x + third).raw) == _bits(np.array([1.0, 3.0], np.float32) + third)
    assert _bits((x * third).raw) == _bits(np.array([1.0, 3.0], np.float32) * third)


def test_overrides_rebuild_the_profile():
    device = GroqDevice()
    trunc = device.numerics(overrides={"reduced_rounding": "toward-zero"})
    assert _bits(_ops(trunc).exp(EmuArray(np.array([1.0], np.float32), _ops(trunc))).raw) == [0x402DE000]
    wide = device.numerics(overrides={"reduced_mantissa_bits": 16})
    fmt = wide.op(OpClass.EXP).resolved_format()
    assert isinstance(fmt, FloatFormat) and (fmt.mantissa_bits, fmt.emin, fmt.emax) == (16, -126, 127)
    assert wide.parameters["reduced_mantissa_bits"] == 16 and "16" in wide.description
    literal = device.numerics(overrides={"reduced_compare": "false"})
    assert literal.op(OpClass.COMPARE).resolved_format().mantissa_bits == 23
    again = device.apply_overrides(wide, {"reduced_rounding": "toward-zero"})  # keeps the earlier override
    assert again.parameters["reduced_mantissa_bits"] == 16


@pytest.mark.parametrize(
    ("mode", "overrides", "message"),
    [
        (
            "default",
            {"exp_bits": 8},
            "settable: reduced_compare, reduced_mantissa_bits, reduced_rounding, special_values",
        ),
        ("default", {"reduced_mantissa_bits": 30}, "must be <= 23"),
        ("default", {"reduced_rounding": "up"}, "must be one of nearest-even, toward-zero"),
        ("fp32-exact-vector", {"reduced_mantissa_bits": 8}, "settable: special_values"),
        ("default", {"special_values": "wrap"}, "must be one of saturate, ieee"),
    ],
)
def test_bad_overrides_are_usage_errors(mode, overrides, message):
    with pytest.raises(UsageError, match=message):
        GroqDevice().numerics(mode, overrides=overrides)


def test_every_profile_field_is_cited():
    for mode in GroqDevice.modes:
        profile = GroqDevice().numerics(mode)
        assert NumericsProfile.from_json(profile.to_json()) == profile
        for cls, op in profile.ops.items():
            assert op.source.strip(), cls
            assert op.confidence in Confidence
        assert profile.notes and all(n.strip() for n in profile.notes)
        assert profile.op(OpClass.GATHER).lowering == "one-hot-matmul"
        assert profile.op(OpClass.MATMUL_INPUT).resolved_format().name == "fp16"
        assert profile.op(OpClass.ADD).confidence is Confidence.DOCUMENTED
    default = GroqDevice().numerics()
    assert all(default.op(c).confidence is Confidence.ASSUMED for c in REDUCED)
    assert default.confidence() is Confidence.ASSUMED and "assumption" in default.op(OpClass.EXP).source
    exact = GroqDevice().numerics("fp32-exact-vector")
    assert all(exact.op(c).resolved_format().mantissa_bits == 23 for c in REDUCED)
    assert all("sensitivity mode" in exact.op(c).source for c in REDUCED)
    spec = GroqDevice().spec
    assert spec.memory_bytes == 220 * 2**20 and spec.transistors_bn == 26.8 and spec.process_nm == 14
    assert spec.clock_mhz == "900" and len(spec.sources) == 2 and all("Argonne" in v for v in spec.peak.values())


# ---------------------------------------------------------------------------------- capacity
def test_connected_io_ehh_fits_up_to_729_cells():
    device, kernel = GroqDevice(), IoEhhKernel()
    ok = device.supports(kernel, kernel.make_workload(729, connected=True))
    assert ok.ok, ok.reason
    assert "8,280 of 8,280" in ok.reason  # the 729-cell program is the budget itself
    refused = device.supports(kernel, kernel.make_workload(1000, connected=True))
    assert not refused.ok
    assert "scheduler could not allocate the instructions" in refused.reason
    assert "15,360" in refused.reason and "at most 729 cells" in refused.reason


def test_unconnected_io_ehh_fits_below_640000_cells():
    device, kernel = GroqDevice(), IoEhhKernel()
    assert device.supports(kernel, kernel.make_workload(100_000, connected=False)).ok
    refused = device.supports(kernel, kernel.make_workload(640_000, connected=False))
    assert not refused.ok
    assert "220.0 MiB usable" in refused.reason and "640,000" in refused.reason


def test_unsupported_family_is_refused_with_a_reason():
    kernel = LeakyRingKernel()
    kernel.info = kernel.info.model_copy(update={"family": "fixed-point"})
    answer = GroqDevice().supports(kernel, None)
    assert not answer.ok and "family 'fixed-point'" in answer.reason and "float32 ONNX" in answer.reason


def test_probe_says_what_was_looked_for():
    probe = GroqDevice().probe()
    if probe.status == "emulated":
        assert "groq.runner.tsp" in probe.reason and "groq-compiler" in probe.reason and "1de0" in probe.reason
    assert GroqDevice().name == "groq"
    with pytest.raises(UsageError, match="unknown route"):
        GroqDevice(route="sideways")
    with pytest.raises(UsageError, match="float32"):
        GroqDevice().executor_for(LeakyRingKernel(), LeakyRingKernel().make_workload(8), dtype="float64")


def test_registered_through_the_hook():
    devices = groq.hwbench_devices()
    assert [d.name for d in devices] == ["groq"]


# ------------------------------------------------------------------------------------ routes
@pytest.fixture(scope="module")
def tf_stack():
    pytest.importorskip("tensorflow")
    pytest.importorskip("tf2onnx")
    pytest.importorskip("onnx")


@pytest.mark.onnx
@pytest.mark.parametrize("mode", ["default", "fp32-exact-vector"])
def test_groqware_route_agrees_with_emulation_on_leaky_ring(tf_stack, mode):
    kernel = LeakyRingKernel()
    workload = kernel.make_workload(64, connected=True, seed=3)
    device = GroqDevice(route="groqware", shim_backend="numpy")
    profile = device.numerics(mode)
    shim = device.executor_for(kernel, workload, mode=mode)
    assert isinstance(shim, GroqProgramExecutor) and shim.engine_name == "groqware-shim"
    stats = shim.stats
    assert stats["lowered"]["Gather"] == 2 * 10 and stats["lowered"]["segment-sum"] == 10  # 10 fused steps
    emu = emulated_executor(RunRequest(kernel, workload, engine="numpy"), profile)  # the same arithmetic library
    inputs = {"I_app": np.linspace(0.0, 0.3, 64)}  # drive part of the ring over threshold
    a = shim.run(workload.state0, inputs, 20)
    b = emu.run(workload.state0, inputs, 20)
    assert a.probes.shape == b.probes.shape == (20, 64)
    # v is O(0.5); one 10-bit ulp there is 2**-11 ~ 5e-4: the routes differ far below that
    np.testing.assert_allclose(a.probes, b.probes, rtol=0, atol=1e-4)
    np.testing.assert_array_equal(a.spikes, b.spikes)
    assert np.any(a.spikes >= 0)  # the comparison covers spiking cells


@pytest.mark.onnx
def test_groqware_route_agrees_with_emulation_on_io_ehh(tf_stack):
    """64 connected cells, 40-step fused programs, 3 ms: graph route and kernel route within 5e-3 mV."""
    kernel = IoEhhKernel()
    workload = kernel.make_workload(64, connected=True, seed=0)
    device = GroqDevice(shim_backend="numpy")
    profile = device.numerics()
    shim = device.executor_for(kernel, workload, engine="groqware")
    assert shim.stats["lowered"] == {"Gather": 80, "segment-sum": 40, "ScatterElements": 0, "ScatterND": 0}
    assert shim.stats["onehot_matrices"] == 3
    # numpy engine: the arithmetic library of the shim's numpy runner, so only the route differs
    # (the JAX engine's fp32 exp differs from numpy's by ulps; its compile alone takes ~10-20 s)
    emu = emulated_executor(RunRequest(kernel, workload, engine="numpy"), profile)
    inputs = kernel.default_inputs(workload)
    a = shim.run(workload.state0, inputs, 3)
    b = emu.run(workload.state0, inputs, 3)
    assert np.all(np.isfinite(a.probes))
    deviation = np.abs(a.probes.astype(np.float64) - b.probes)
    assert deviation.max() < 5e-3, deviation.max(axis=1)
    # the reduced-precision vector ops move the trace further than the choice of route does
    exact = emulated_executor(RunRequest(kernel, workload, engine="numpy"), device.numerics("fp32-exact-vector"))
    c = exact.run(workload.state0, inputs, 3)
    assert np.abs(b.probes - c.probes).max() > deviation.max()
