"""The TPU v3 device: bf16 passes of matrix products, the exp error model, capacity, probe, emulation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hwbench.accuracy.numerics.emulate import emulating_ops
from hwbench.accuracy.numerics.profile import Confidence, NumericsProfile
from hwbench.core.engines.numpy_engine import NumpyOps
from hwbench.core.errors import UsageError
from hwbench.core.ops import OpClass
from hwbench.plugins.devices import tpu
from hwbench.plugins.devices.cpu import CpuDevice
from hwbench.plugins.devices.tpu import Bf16PassOps, TpuV3Device, bf16_split
from hwbench.plugins.kernels.io_ehh import IoEhhKernel
from hwbench.plugins.kernels.leaky_ring import LeakyRingKernel

# 1 + 2^-8 + 2^-17: a bf16 tie (1 + 2^-8) nudged up, plus a bit only the third part can hold
X = 1 + 2**-8 + 2**-17


@pytest.fixture(scope="module")
def chip() -> TpuV3Device:
    # not named "device": hwbench's pytest plugin parametrizes that fixture over all devices
    return TpuV3Device()


def emulated_ops(profile: NumericsProfile) -> Any:
    raw = NumpyOps(np.float32)
    inner = emulating_ops(profile)(raw)
    passes = profile.parameters["bf16_passes"]
    ops = inner if passes == 1 else Bf16PassOps(inner, raw, passes, profile.parameters["bf16_split"])
    ops.begin_step(0)
    return ops


def test_modes_and_passes(chip: TpuV3Device) -> None:
    assert chip.modes == ("default", "high", "highest")
    assert [chip.numerics(m).parameters["bf16_passes"] for m in chip.modes] == [1, 3, 6]
    default = chip.numerics("default").op(OpClass.MATMUL_INPUT)
    assert default.resolved_format().mantissa_bits == 7 and default.resolved_format().subnormals == "ftz-daz"
    assert chip.numerics("high").op(OpClass.MATMUL_INPUT) is None  # the split is not an input rounding


def test_bf16_split_parts() -> None:
    x = np.array([X, -X], np.float32)
    assert bf16_split(x, 1)[0].tolist() == [1 + 2**-7, -(1 + 2**-7)]  # nearest even, above the tie
    hi, lo = bf16_split(x, 2)
    assert hi.tolist() == [1.0, -1.0] and lo.tolist() == [2**-8, -(2**-8)]
    hi, mid, lo = bf16_split(x, 3)
    assert (hi + mid + lo).tolist() == x.tolist()  # three truncated parts hold all 24 bits
    hi_n, lo_n = bf16_split(x, 2, "nearest")
    assert hi_n.tolist()[0] == 1 + 2**-7 and lo_n.tolist()[0] == -(2**-8)  # -(2^-8 - 2^-17) to 8 bits


@pytest.mark.parametrize(("mode", "expected"), [("default", 1 + 2**-7), ("high", 1 + 2**-8), ("highest", X)])
def test_bf16_passes_on_a_known_product(chip: TpuV3Device, mode: str, expected: float) -> None:
    a = np.array([[X]], np.float32)
    b = np.array([[1.0]], np.float32)
    out = emulated_ops(chip.numerics(mode)).matmul(a, b)
    assert np.asarray(getattr(out, "raw", out), np.float32).tolist() == [[np.float32(expected)]]


def test_more_passes_are_more_accurate(chip: TpuV3Device) -> None:
    rng = np.random.default_rng(7)
    a = rng.normal(size=(16, 64)).astype(np.float32)
    b = rng.normal(size=(64, 8)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    errors = []
    for mode in chip.modes:
        out = emulated_ops(chip.numerics(mode)).matmul(a, b)
        errors.append(float(np.max(np.abs(np.asarray(getattr(out, "raw", out), np.float64) - exact))))
    fp32 = float(np.max(np.abs((a @ b).astype(np.float64) - exact)))
    assert errors[0] > 50 * errors[1] > 0
    assert errors[1] > 10 * errors[2]
    assert errors[2] <= 4 * fp32  # six passes: about fp32 accuracy


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_non_finite_partial_sums_do_not_poison_the_product(chip: TpuV3Device) -> None:
    a = np.array([[1.0, 2.0]], np.float32)
    b = np.array([[np.inf], [1.0]], np.float32)
    out = emulated_ops(chip.numerics("highest")).matmul(a, b)
    assert np.asarray(out.raw).tolist() == [[np.inf]]  # inf * 0-part would be NaN without the guard


def test_exp_error_model(chip: TpuV3Device) -> None:
    x = np.linspace(-10, 10, 4001, dtype=np.float32)
    native = np.exp(x)
    ops = emulated_ops(chip.numerics("default"))
    noisy = ops.exp(ops.asarray(x)).raw
    ulp = np.spacing(native)
    moved = np.abs(noisy.astype(np.float64) - native) / ulp
    assert moved.max() <= 2.5 and 0.3 < np.mean(moved > 0) < 1.0
    again = emulated_ops(chip.numerics("default"))
    assert np.array_equal(again.exp(again.asarray(x)).raw, noisy)  # reproducible
    exact = emulated_ops(chip.numerics("default", {"exp_ulps": 0}))
    assert np.array_equal(exact.exp(exact.asarray(x)).raw, native)


def test_every_entry_cited(chip: TpuV3Device) -> None:
    for mode in chip.modes:
        profile = chip.numerics(mode)
        assert profile.confidence() is Confidence.ASSUMED
        assert all(op.source.strip() for op in profile.ops.values())
        assert any("bf16 pass" in note for note in profile.notes)
        assert NumericsProfile.from_toml(profile.to_toml()) == profile


def test_overrides(chip: TpuV3Device) -> None:
    p = chip.numerics("high", {"exp_ulps": 4, "bf16_split": "nearest"})
    assert p.parameters == {
        "exp_ulps": 4.0,
        "bf16_split": "nearest",
        "div_ulps": 0.0,
        "fma_contraction": False,
        "bf16_passes": 3,
    }
    with pytest.raises(UsageError, match="settable: bf16_split, div_ulps, exp_ulps, fma_contraction"):
        chip.numerics("high", {"bf16_passes": 6})  # the mode decides the passes


def test_probe_gives_a_reason(chip: TpuV3Device, monkeypatch: pytest.MonkeyPatch) -> None:
    probe = chip.probe()
    assert probe.status in ("real", "emulated") and probe.reason
    monkeypatch.setattr(tpu, "tpu_backend", lambda: "libtpu with /dev/accel0")
    assert TpuV3Device().probe().reason == "real: libtpu with /dev/accel0"


def test_capacity(chip: TpuV3Device) -> None:
    kernel = IoEhhKernel()
    assert chip.supports(kernel, size=64_000, connected=True).ok
    edge = chip.supports(kernel, size=125_000, connected=True)
    assert edge.ok and "erratic" in edge.reason
    beyond = chip.supports(kernel, size=132_651, connected=True)
    assert not beyond.ok and "125,000" in beyond.reason
    assert chip.supports(kernel, size=10**6, connected=False).ok  # the limit is for connected networks
    full = chip.supports(kernel, size=200 * 10**6, connected=False)
    assert not full.ok and "32 GiB HBM" in full.reason


def test_emulated_leaky_ring_close_to_cpu_in_every_mode(chip: TpuV3Device) -> None:
    kernel = LeakyRingKernel()
    wl = kernel.make_workload(64, seed=5)
    inputs = kernel.default_inputs(wl)
    ref = CpuDevice().executor_for(kernel, wl, engine="numpy").run(wl.state0, inputs, 10).probes
    for mode in chip.modes:
        out = chip.executor_for(kernel, wl, mode=mode, engine="numpy").run(wl.state0, inputs, 10).probes
        deviation = np.max(np.abs(out - ref))
        assert 0 < deviation < 1e-4, mode  # exp is perturbed, nothing else in this kernel


def test_saved_profile_keeps_its_passes(chip: TpuV3Device, tmp_path: Path) -> None:
    path = chip.numerics("high").save(tmp_path / "tpu-high.toml")
    loaded = NumericsProfile.load(path)
    assert loaded.parameters["bf16_passes"] == 3
    kernel = LeakyRingKernel()
    wl = kernel.make_workload(16, seed=1)
    executor = chip.executor_for(kernel, wl, profile=loaded, engine="numpy")
    assert executor.detail == "emulating tpu-v3-high"
    bad = loaded.model_copy(update={"parameters": {**loaded.parameters, "bf16_passes": 2}})
    with pytest.raises(UsageError, match="bf16_passes must be 1, 3 or 6"):
        chip.executor_for(kernel, wl, profile=bad, engine="numpy")


def test_emulated_io_ehh_runs(chip: TpuV3Device) -> None:
    kernel = IoEhhKernel()
    wl = kernel.make_workload(64, seed=1)
    inputs = kernel.default_inputs(wl)
    ref = CpuDevice().executor_for(kernel, wl, engine="numpy").run(wl.state0, inputs, 1).state
    out = chip.executor_for(kernel, wl, mode="default", engine="numpy").run(wl.state0, inputs, 1).state
    assert 0 < np.max(np.abs(out - ref)) < 1e-3  # after 1 ms (40 steps): exp's ulps, not more
