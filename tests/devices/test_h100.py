"""The h100 device: tensor-core modes on the H100 block-FMA model, emulated without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

from hwbench.accuracy.numerics.formats import RoundingMode
from hwbench.accuracy.numerics.matrix_unit import matrix_unit
from hwbench.accuracy.numerics.rounding import round_float
from hwbench.core.errors import UnavailableError
from hwbench.core.plugins import get_registry
from hwbench.plugins.devices._matrix_unit_ops import APPROXIMATION, MatrixUnitOps, matmul_method, profile_unit
from hwbench.plugins.devices.h100 import MODES, H100Device, JaxTensorCoreUnit
from hwbench.testing.conformance import DeviceConformance


class TestH100Conformance(DeviceConformance):
    device_name = "h100"
    tolerance = 1e-2


def test_h100_is_registered_with_every_tensor_core_mode() -> None:
    dev = get_registry().device("h100")
    assert dev.modes == ("tf32", "fp16", "bf16", "fp8-e4m3", "fp8-e5m2")
    for mode, (fmt, _) in MODES.items():
        profile = dev.numerics(mode)
        assert profile is not None and matmul_method(profile) == f"block-FMA model h100 {fmt}->fp32"
        unit = profile_unit(profile)
        assert unit is not None and unit.model.name == "h100" and unit.model.input_format == fmt


def test_without_a_gpu_it_is_emulated_and_says_so() -> None:
    dev = H100Device()
    if dev.real_backend("tf32") is not None:
        pytest.skip("an NVIDIA GPU with JAX is present")
    assert dev.probe().status == "emulated" and "block-FMA" in dev.probe().reason
    assert dev.real_matrix_unit("fp16") is None
    with pytest.raises(UnavailableError):
        JaxTensorCoreUnit("fp16")


class _Raw:
    emulated = False


@pytest.mark.parametrize("fmt", ["fp16", "bf16", "tf32", "fp8-e4m3"])
def test_matmul_is_the_unit_on_rounded_operands_bit_for_bit(fmt: str) -> None:
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(6, 70)).astype(np.float32), rng.normal(size=(70, 5)).astype(np.float32)
    unit = matrix_unit("h100", fmt, "fp32")
    got = MatrixUnitOps(_Raw(), unit).matmul(a, b)
    ra = round_float(a.astype(np.float64), unit.model.input_float, RoundingMode.NEAREST_EVEN)
    rb = round_float(b.astype(np.float64), unit.model.input_float, RoundingMode.NEAREST_EVEN)
    want = unit.matmul(np.asarray(ra, dtype=np.float64), np.asarray(rb, dtype=np.float64))
    assert got.dtype == np.float32 and np.array_equal(got.astype(np.float64), want)


def test_block_model_biases_long_positive_sums_toward_zero() -> None:
    """The reason the model exists: toward-zero block sums undershoot where fp32 rounding does not."""
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.5, 1, size=(64, 4096)), rng.uniform(0.5, 1, size=(4096, 64))
    unit = matrix_unit("h100", "fp16", "fp32")
    ra = np.asarray(round_float(a, unit.model.input_float, RoundingMode.NEAREST_EVEN), dtype=np.float64)
    rb = np.asarray(round_float(b, unit.model.input_float, RoundingMode.NEAREST_EVEN), dtype=np.float64)
    exact = ra @ rb
    err = (unit.matmul(ra, rb) - exact) / exact
    assert (err <= 0).all() and err.mean() < -1e-7


def test_conv2d_is_a_matrix_product_of_patches() -> None:
    """Small integers: every product and sum exact, so the unit must equal a direct convolution."""
    rng = np.random.default_rng(1)
    x = rng.integers(-3, 4, size=(2, 5, 6, 3)).astype(np.float32)
    w = rng.integers(-3, 4, size=(3, 2, 3, 4)).astype(np.float32)
    got = MatrixUnitOps(_Raw(), matrix_unit("h100", "fp16", "fp32")).conv2d(x, w, (1, 0))
    xp = np.pad(x, ((0, 0), (1, 1), (0, 0), (0, 0)))
    want = np.zeros((2, 5, 5, 4))
    for i in range(5):
        for j in range(5):
            want[:, i, j, :] = np.einsum("nhwc,hwco->no", xp[:, i : i + 3, j : j + 2, :], w)
    assert np.array_equal(got, want)


def test_a_profile_without_a_unit_keeps_the_approximation() -> None:
    assert matmul_method(get_registry().device("ipu").numerics()) == APPROXIMATION
    assert matmul_method(None) == APPROXIMATION


@pytest.mark.parametrize(("mode", "fmt"), [("tensorrt", "tf32"), ("tf32", "tf32"), ("fp16", "fp16"), ("bf16", "bf16")])
def test_a100_tensor_core_paths_use_the_a100_model(mode: str, fmt: str) -> None:
    profile = get_registry().device("a100").numerics(mode)
    assert matmul_method(profile) == f"block-FMA model a100 {fmt}->fp32"


def test_tensorrt_keeps_its_ties_away_tf32_operands_on_the_block_model() -> None:
    """TensorRT's operand rounding (knob tf32_rounding) survives the switch to the block model."""
    from hwbench.plugins.devices._matrix_unit_ops import MatrixUnitWrapper

    profile = get_registry().device("a100").numerics("tensorrt")
    unit = profile_unit(profile)
    assert unit is not None
    assert MatrixUnitWrapper(profile, unit).rounding is RoundingMode.NEAREST_AWAY


@pytest.mark.parametrize("fmt", ["fp16", "bf16", "fp8-e4m3", "tf32"])
def test_real_path_gemm_diagonal_is_the_row_inner_products(fmt: str) -> None:
    """The real probe path's arithmetic plumbing, on JAX's CPU: small integers, exact everywhere."""
    from hwbench.plugins.devices.h100 import gemm_diagonal

    rng = np.random.default_rng(3)
    a = rng.integers(-4, 5, size=(7, 32)).astype(np.float64)
    b = rng.integers(-4, 5, size=(7, 32)).astype(np.float64)
    c = rng.integers(-100, 100, size=7).astype(np.float64)
    got = gemm_diagonal(a, b, c, fmt, platform="cpu")
    assert np.array_equal(got, np.einsum("nk,nk->n", a, b) + c)


@pytest.mark.parametrize("mode", list(MODES))
def test_elementwise_fp32_is_cudas_as_on_the_a100(mode: str) -> None:
    """Issue 30 for the h100: contracted a*b+c, div.full division and libdevice exp on every mode,
    each settable; the a100's tensor-core modes carry the same ops."""
    from hwbench.core.ops import OpClass

    h100, a100 = get_registry().device("h100"), get_registry().device("a100")
    profile = h100.numerics(mode)
    assert {OpClass.FMA, OpClass.DIV, OpClass.EXP} <= set(profile.ops)
    assert profile.ops[OpClass.DIV] == a100.numerics("fp16").ops[OpClass.DIV]
    off = h100.numerics(mode, {"fma_contraction": False, "div_ulps": 0, "exp_ulps": 0})
    assert not {OpClass.FMA, OpClass.DIV, OpClass.EXP} & set(off.ops)
