"""The Graphcore IPU device: fp16 stochastic rounding, overflow per nanoo, fp32, capacity, probe, emulation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hwbench.accuracy.numerics.emulate import emulating_ops
from hwbench.accuracy.numerics.profile import NumericsProfile
from hwbench.core.engines.numpy_engine import NumpyOps
from hwbench.core.errors import UsageError
from hwbench.core.ops import OpClass
from hwbench.plugins.devices import ipu
from hwbench.plugins.devices.cpu import CpuDevice
from hwbench.plugins.devices.ipu import IpuDevice
from hwbench.plugins.kernels.io_ehh import IoEhhKernel
from hwbench.plugins.kernels.leaky_ring import LeakyRingKernel


@pytest.fixture(scope="module")
def chip() -> IpuDevice:
    # not named "device": hwbench's pytest plugin parametrizes that fixture over all devices
    return IpuDevice()


def ops_for(profile: NumericsProfile, seed: int = 0, step: int = 0) -> Any:
    ops = emulating_ops(profile, seed=seed)(NumpyOps(np.float32))
    ops.begin_step(step)
    return ops


def add(profile: NumericsProfile, a: np.ndarray, b: float, seed: int = 0, step: int = 0) -> np.ndarray:
    ops = ops_for(profile, seed, step)
    return (ops.asarray(a) + b).raw


def test_modes(chip: IpuDevice) -> None:
    assert chip.modes == ("fp32", "fp16-sr")
    fp32 = chip.numerics("fp32")
    assert not fp32.is_native() and fp32.op(OpClass.EXP).error.ulps == 1.0  # Poplar's exp is not XLA:CPU's
    assert OpClass.FMA not in fp32.ops and OpClass.DIV not in fp32.ops  # nothing published: off
    assert chip.numerics("fp32", {"exp_ulps": 0}).is_native()
    sr = chip.numerics("fp16-sr")
    for cls in (OpClass.ADD, OpClass.MUL, OpClass.DIV, OpClass.EXP, OpClass.GATHER):
        assert sr.op(cls).rounding.value == "stochastic", cls
        assert sr.op(cls).resolved_format().mantissa_bits == 10
    assert sr.op(OpClass.MATMUL_ACCUMULATE).resolved_format().name == "fp32"  # PopLibs' default partials


def test_fp16_stochastic_rounding_is_reproducible_and_unbiased(chip: IpuDevice) -> None:
    profile = chip.numerics("fp16-sr")
    x = np.full(20_000, 1.0, np.float32)
    third = 2.0**-10 / 3  # a third of an fp16 ulp at 1.0
    first = add(profile, x, third, seed=7)
    assert np.array_equal(first, add(profile, x, third, seed=7))  # same seed and step: same bits
    assert not np.array_equal(first, add(profile, x, third, seed=8))
    assert not np.array_equal(first, add(profile, x, third, seed=7, step=1))
    assert set(np.unique(first).tolist()) == {1.0, 1.0 + 2.0**-10}  # only the two fp16 neighbours
    assert abs(np.mean(first == 1.0 + 2.0**-10) - 1 / 3) < 0.02  # rounds up a third of the time
    assert abs(float(np.mean(first.astype(np.float64))) - (1 + third)) < 2e-5


def test_updates_below_half_an_ulp_survive_on_average(chip: IpuDevice) -> None:
    """What SR is for: nearest rounding would lose dt-sized updates to an fp16 state entirely."""
    profile = chip.numerics("fp16-sr")
    state = np.full(4096, 8.0, np.float32)  # fp16 ulp at 8 is 2^-7
    for step in range(64):
        ops = ops_for(profile, seed=1, step=step)
        state = (ops.asarray(state) + 2.0**-10).raw  # an eighth of an ulp per step
    assert abs(float(np.mean(state)) - (8.0 + 64 * 2.0**-10)) < 2e-3


@pytest.mark.parametrize(("nanoo", "expected"), [(None, 65504.0), ("true", np.nan)])
def test_fp16_overflow_clips_or_gives_nan(chip: IpuDevice, nanoo: str | None, expected: float) -> None:
    profile = chip.numerics("fp16-sr", None if nanoo is None else {"nanoo": nanoo})
    ops = ops_for(profile)
    out = (ops.asarray(np.array([60000.0, -60000.0], np.float32)) * 2.0).raw
    if np.isnan(expected):
        assert np.isnan(out).all()
    else:
        assert out.tolist() == [expected, -expected]


def test_fp32_mode_documents_fast_math(chip: IpuDevice) -> None:
    notes = " ".join(chip.numerics("fp32").notes)
    assert "fast-math" in notes and "reciprocal" in notes and "Not emulated" in notes
    assert chip.numerics("fp32", {"exp_ulps": 1}).op(OpClass.EXP).error.ulps == 1.0


def test_every_entry_cited(chip: IpuDevice) -> None:
    for mode in chip.modes:
        profile = chip.numerics(mode)
        assert all(op.source.strip() and op.confidence for op in profile.ops.values())
        assert NumericsProfile.from_json(profile.to_json()) == profile
    half = chip.numerics("fp16-sr", {"partials": "half"})
    assert half.op(OpClass.MATMUL_ACCUMULATE).rounding.value == "stochastic"
    with pytest.raises(UsageError, match="settable: nanoo, partials"):
        chip.numerics("fp16-sr", {"exp_ulps": 1})


def test_capacity_from_bytes_per_cell(chip: IpuDevice) -> None:
    kernel = IoEhhKernel()
    fits = chip.supports(kernel, size=90**3, connected=True)
    assert fits.ok and "900 MB SRAM" in fits.reason
    too_big = chip.supports(kernel, size=100**3, connected=True)  # the study's largest network
    assert not too_big.ok and "more than the usable half of the 900 MB SRAM" in too_big.reason
    assert chip.supports(kernel, size=100**3, connected=True, mode="fp16-sr").ok  # half the bytes per value
    assert chip.supports(kernel, kernel.make_workload(64, seed=0)).ok


def test_probe_gives_a_reason(chip: IpuDevice, monkeypatch: pytest.MonkeyPatch) -> None:
    probe = chip.probe()
    assert probe.status in ("real", "emulated") and probe.reason
    monkeypatch.setattr(ipu, "tf_ipu_installed", lambda: False)
    assert IpuDevice().probe().reason.startswith("Graphcore TensorFlow not installed")
    monkeypatch.setattr(ipu, "tf_ipu_installed", lambda: True)
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--use_ipu_model")
    probe = IpuDevice().probe()
    assert probe.status == "real" and "IPU Model" in probe.reason


def test_emulated_leaky_ring_close_to_cpu(chip: IpuDevice) -> None:
    kernel = LeakyRingKernel()
    wl = kernel.make_workload(64, seed=4)
    inputs = kernel.default_inputs(wl)
    ref = CpuDevice().executor_for(kernel, wl, engine="numpy").run(wl.state0, inputs, 10).probes
    fp32 = chip.executor_for(kernel, wl, mode="fp32", engine="numpy").run(wl.state0, inputs, 10).probes
    assert 0 <= np.max(np.abs(fp32 - ref)) < 1e-5  # the leaky ring has no exp: at most fp32 noise
    fp16 = chip.executor_for(kernel, wl, mode="fp16-sr", engine="numpy").run(wl.state0, inputs, 10).probes
    deviation = np.max(np.abs(fp16 - ref))
    assert 0 < deviation < 2e-2  # a few fp16 ulps of values below 1


def test_emulated_io_ehh_fp16_runs(chip: IpuDevice) -> None:
    kernel = IoEhhKernel()
    wl = kernel.make_workload(64, seed=1)
    inputs = kernel.default_inputs(wl)
    out = chip.executor_for(kernel, wl, mode="fp16-sr", engine="numpy", sample_every=8).run(wl.state0, inputs, 1)
    v = out.state[0]
    assert np.all(np.isfinite(v)) and np.all(np.abs(v + 60) < 15)  # still near rest after 0.2 ms
    assert np.array_equal(v.astype(np.float16).astype(np.float32), v)  # stored in fp16
