"""The NVIDIA A100 device: TF32 rounding bit patterns, the gather lowering, probe, capacity, emulation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hwbench.accuracy.numerics.emulate import emulating_ops
from hwbench.accuracy.numerics.emulated_array import unwrap
from hwbench.accuracy.numerics.profile import Confidence, NumericsProfile
from hwbench.accuracy.numerics.rounding import round_float
from hwbench.core.engines.numpy_engine import NumpyOps
from hwbench.core.errors import UsageError
from hwbench.core.ops import OpClass
from hwbench.plugins.devices import a100
from hwbench.plugins.devices.a100 import A100Device
from hwbench.plugins.devices.cpu import CpuDevice
from hwbench.plugins.kernels.io_ehh import IoEhhKernel
from hwbench.plugins.kernels.leaky_ring import LeakyRingKernel

READ_GPUS = a100.nvidia_gpus  # the real reader, kept before tests patch the module's name
U = 2.0**-23  # fp32 ulp in [1, 2)
T = 2.0**-10  # tf32 ulp in [1, 2)


@pytest.fixture(scope="module")
def gpu() -> A100Device:
    # not named "device": hwbench's pytest plugin parametrizes that fixture over all devices
    return A100Device()


def bits(x: np.ndarray) -> list[int]:
    return np.asarray(x, np.float32).view(np.uint32).tolist()


def ops_for(profile: NumericsProfile) -> Any:
    ops = emulating_ops(profile)(NumpyOps(np.float32))
    if hasattr(ops, "begin_step"):  # a native profile hands back the raw ops
        ops.begin_step(0)
    return ops


def test_modes_and_spec(gpu: A100Device) -> None:
    assert gpu.modes == ("cuda-fp32", "tensorrt", "tf32", "fp16", "bf16")
    assert gpu.default_mode == "cuda-fp32"
    assert gpu.spec.memory_bytes == 80 * 10**9
    assert gpu.spec.sources and "Table I" in gpu.spec.sources[0]


def test_cuda_fp32_contracts_and_perturbs_and_tensorrt_rounds_tf32(gpu: A100Device) -> None:
    cuda = gpu.numerics("cuda-fp32")
    assert not cuda.is_native()  # issue 30: native fp32 is not the CPU
    assert OpClass.FMA in cuda.ops and cuda.op(OpClass.FMA).confidence is Confidence.DOCUMENTED
    assert cuda.op(OpClass.EXP).error.ulps == 1.0 and cuda.op(OpClass.DIV).error.ulps == 1.0
    assert gpu.numerics("cuda-fp32", {"exp_ulps": 0, "div_ulps": 0, "fma_contraction": False}).is_native()
    trt = gpu.numerics("tensorrt")
    assert not trt.is_native()
    assert trt.op(OpClass.MATMUL_INPUT).resolved_format().name == "tf32"
    assert trt.op(OpClass.MATMUL_ACCUMULATE).resolved_format().name == "fp32"
    assert trt.op(OpClass.GATHER).lowering == "one-hot-matmul"
    assert trt.confidence() is Confidence.ASSUMED  # the gather lowering is an assumption


@pytest.mark.parametrize(
    ("value", "away", "even"),
    [
        (1 + 2**-11, 1 + T, 1.0),  # exact tie: ties-away goes up, ties-even stays at 1.0
        (1 + 2**-11 - U, 1.0, 1.0),  # just below the tie
        (1 + 2**-11 + U, 1 + T, 1 + T),  # just above the tie
        (1 + 3 * 2**-11, 1 + 2 * T, 1 + 2 * T),  # tie next to an odd mantissa: both go up
        (-(1 + 2**-11), -(1 + T), -1.0),  # ties-away is symmetric
    ],
)
def test_tf32_rounding_bit_patterns(gpu: A100Device, value: float, away: float, even: float) -> None:
    x = np.array([value], np.float32)
    for override, expected in ((None, away), ("nearest-even", even)):
        profile = gpu.numerics("tensorrt", None if override is None else {"tf32_rounding": override})
        op = profile.op(OpClass.MATMUL_INPUT)
        assert bits(round_float(x, op.resolved_format(), op.rounding)) == bits([expected])


def test_tf32_matmul_through_the_emulation(gpu: A100Device) -> None:
    a = np.array([[1 + 2**-11, 3.0]], np.float32)
    b = np.array([[1.0], [1 + 2**-12]], np.float32)  # 1 + 2^-12 rounds to 1.0 in TF32
    trt = ops_for(gpu.numerics("tensorrt")).matmul(a, b).raw
    native = unwrap(ops_for(gpu.numerics("cuda-fp32")).matmul(a, b))
    assert bits(trt) == bits([[(1 + T) + 3.0]])  # exact products of TF32 inputs, fp32 sum
    assert bits(native) == bits(a @ b)


def test_gather_scatter_lowered_to_tf32_matmul(gpu: A100Device) -> None:
    v = np.array([-60.01, -59.3, 10.004], np.float32)
    src = np.array([2, 0, 1, 0], np.int32)
    tgt = np.array([0, 1, 1, 2], np.int32)
    tf32 = gpu.numerics("tensorrt").op(OpClass.MATMUL_INPUT).resolved_format()
    ops = ops_for(gpu.numerics("tensorrt"))
    gathered = ops.gather(v, src).raw
    assert bits(gathered) == bits(round_float(v, tf32, "nearest-away")[src])
    summed = ops.scatter_add(v[src], tgt, 3).raw
    r = round_float(v[src], tf32, "nearest-away")
    assert bits(summed) == bits([r[0], np.float32(r[1]) + np.float32(r[2]), r[3]])
    off = ops_for(gpu.numerics("tensorrt", {"gather_as_matmul": "false"}))
    assert bits(off.gather(v, src).raw) == bits(v[src])


def test_every_entry_cited_and_parameters_documented(gpu: A100Device) -> None:
    for mode in gpu.modes:
        profile = gpu.numerics(mode)
        for cls, op in profile.ops.items():
            assert op.source.strip() and op.confidence, (mode, cls)
        for name in profile.parameters:
            assert any(note.startswith(f"Parameter {name} = ") and "Source:" in note for note in profile.notes)
        assert NumericsProfile.from_json(profile.to_json()) == profile


def test_overrides_are_checked(gpu: A100Device) -> None:
    with pytest.raises(UsageError, match="settable: exp_ulps, fma_contraction, gather_as_matmul, tf32_rounding"):
        gpu.numerics("tensorrt", {"tf32_bits": 9})
    with pytest.raises(UsageError, match="must be one of nearest-away, nearest-even, toward-zero"):
        gpu.numerics("tensorrt", {"tf32_rounding": "stochastic"})
    with pytest.raises(UsageError, match=r"settable: div_ulps, exp_ulps, fma_contraction$"):
        gpu.numerics("cuda-fp32", {"gather_as_matmul": True})
    with pytest.raises(UsageError, match="div_ulps' of device 'a100' must be >= 0"):
        gpu.numerics("cuda-fp32", {"div_ulps": -1})
    with pytest.raises(UsageError, match="fma_contraction' of device 'a100' is true or false"):
        gpu.numerics("cuda-fp32", {"fma_contraction": "sometimes"})
    noisy = gpu.numerics("cuda-fp32", {"exp_ulps": 2})
    assert not noisy.is_native() and noisy.op(OpClass.EXP).error.ulps == 2.0
    assert noisy.parameters == {"exp_ulps": 2.0, "div_ulps": 1.0, "fma_contraction": True}


def test_probe_gives_a_reason(gpu: A100Device) -> None:
    probe = gpu.probe()
    assert probe.status in ("real", "emulated") and probe.reason


def test_probe_names_the_gpu_it_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = tmp_path / "0000:07:00.0"
    gpu.mkdir()
    (gpu / "information").write_text("Model: \t\t NVIDIA A100-SXM4-80GB\nIRQ: 42\n")
    monkeypatch.setattr(a100, "nvidia_gpus", lambda: READ_GPUS(tmp_path))
    monkeypatch.setattr(a100, "jax_gpu_backend", lambda: None)
    monkeypatch.setattr(a100, "tensorrt_backend", lambda: None)
    probe = A100Device().probe()
    assert probe.status == "emulated"
    assert "NVIDIA A100-SXM4-80GB found, but neither" in probe.reason
    monkeypatch.setattr(a100, "tensorrt_backend", lambda: "ONNX Runtime TensorRT execution provider")
    probe = A100Device().probe()
    assert probe.status == "real"
    assert probe.reason == (
        "real tensorrt: NVIDIA A100-SXM4-80GB via ONNX Runtime TensorRT execution provider; "
        "emulated: cuda-fp32, tf32, fp16, bf16"
    )


def test_no_gpu_directory_means_no_gpu(tmp_path: Path) -> None:
    assert a100.nvidia_gpus(tmp_path / "absent") == []


def test_capacity(gpu: A100Device) -> None:
    kernel = IoEhhKernel()
    ok = gpu.supports(kernel, kernel.make_workload(64, seed=0))
    assert ok.ok and "64 cells need about" in ok.reason and "80 GB HBM2e" in ok.reason
    ring = gpu.supports(LeakyRingKernel(), size=10**6)
    assert ring.ok
    huge = gpu.supports(kernel, size=300 * 10**6, connected=True)
    assert not huge.ok and "more than the 80 GB HBM2e" in huge.reason
    assert gpu.supports(kernel).ok  # no size: nothing to refuse


def test_emulated_leaky_ring_stays_close_to_cpu(gpu: A100Device) -> None:
    kernel = LeakyRingKernel()
    wl = kernel.make_workload(64, seed=2)
    inputs = kernel.default_inputs(wl)
    ref = CpuDevice().executor_for(kernel, wl, engine="numpy").run(wl.state0, inputs, 10).probes
    for mode in gpu.modes:
        executor = gpu.executor_for(kernel, wl, mode=mode, engine="numpy")
        assert executor.detail == f"emulating a100-{mode}"
        out = executor.run(wl.state0, inputs, 10).probes
        assert np.all(np.isfinite(out))
        assert np.max(np.abs(out - ref)) < 1e-3, mode


def test_emulated_io_ehh_tf32_gap_junctions(gpu: A100Device) -> None:
    """cuda-fp32 (FMA, libdevice exp, div.full) and TF32 gap junctions move V by a small, nonzero amount."""
    kernel = IoEhhKernel()
    wl = kernel.make_workload(64, seed=1)
    inputs = kernel.default_inputs(wl)
    ref = CpuDevice().executor_for(kernel, wl, engine="numpy").run(wl.state0, inputs, 1).probes
    cuda = gpu.executor_for(kernel, wl, mode="cuda-fp32", engine="numpy").run(wl.state0, inputs, 1).probes
    assert 0 < np.max(np.abs(cuda - ref)) < 1e-3  # fp32 noise after 1 ms, not a bit-identical copy
    plain = {"exp_ulps": 0, "div_ulps": 0, "fma_contraction": False}
    profile = gpu.numerics("cuda-fp32", plain)
    same = gpu.executor_for(kernel, wl, mode="cuda-fp32", engine="numpy", profile=profile).run(wl.state0, inputs, 1)
    assert bits(same.probes) == bits(ref)  # with every mechanism off, the CPU's bits
    trt = gpu.executor_for(kernel, wl, mode="tensorrt", engine="numpy").run(wl.state0, inputs, 1).probes
    deviation = np.max(np.abs(trt - ref))
    assert 0 < deviation < 0.05  # mV, after 1 ms
