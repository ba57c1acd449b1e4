"""The vectorised block FMA (numpy and JAX) equals the exact-integer reference, bit for bit.

For every named unit model and a few described ones exercising the features no named unit uses
(sticky alignment bit, nearest-even / up rounding of a late c, a product precision limit with
nearest-even output, instructions of three interleaved or two consecutive blocks), inputs are
drawn to hit what the arithmetic distinguishes: exponents spread across the whole input range,
subnormals, zeros, the largest values (carries past the block's top exponent, overflow to
infinity), exact cancellation against c, and infinities / NaN where the format has them.
hypothesis draws the seeds for the numpy comparison; JAX compiles once per model, so it gets one
large structured batch per model.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwbench.accuracy.numerics.formats import FloatFormat
from hwbench.accuracy.numerics.matrix_unit import MatrixUnit, matrix_unit, unit_formats
from hwbench.accuracy.numerics.matrix_unit_catalog import MATRIX_UNITS
from hwbench.accuracy.numerics.matrix_unit_model import MatrixUnitModel

NAMED = [(u, fi, fo) for u in MATRIX_UNITS for fi, fo in unit_formats(u)]
DESCRIBED = [
    MatrixUnitModel(
        name="sticky", input_format="bf16", block_terms=8, extra_alignment_bits=1, alignment_rounding="sticky"
    ),
    MatrixUnitModel(
        name="late-rne",
        input_format="fp16",
        block_terms=4,
        extra_alignment_bits=2,
        c_position="after",
        late_rounding="nearest-even",
        final_rounding="nearest-even",
    ),
    MatrixUnitModel(name="late-up", input_format="tf32", block_terms=4, c_position="after", late_rounding="up"),
    MatrixUnitModel(
        name="fp8-limit-rne",
        input_format="fp8-e4m3",
        block_terms=16,
        extra_alignment_bits=-10,
        final_rounding="nearest-even",
    ),
    MatrixUnitModel(name="flush", input_format="fp16", block_terms=8, subnormals_in="flush", subnormals_out="flush"),
    MatrixUnitModel(
        name="three-interleaved",
        input_format="bf16",
        block_terms=4,
        instruction_terms=12,
        interleave=1,
        extra_alignment_bits=1,
        c_position="after-rounded",
        final_rounding="nearest-even",
    ),
    MatrixUnitModel(
        name="two-consecutive",
        input_format="tf32",
        block_terms=4,
        instruction_terms=8,
        extra_alignment_bits=2,
        c_position="after-rounded",
        late_rounding="nearest-even",
        subnormals_out="flush",
    ),
]
MODELS = [matrix_unit(*key).model for key in NAMED] + DESCRIBED
IDS = [f"{m.name}-{m.input_format}-{m.output_format}" for m in MODELS]


def values(rng: np.random.Generator, fmt: FloatFormat, shape: tuple[int, ...], specials: bool) -> np.ndarray:
    """Values of ``fmt``: normals over the whole range (and near 1), subnormals, zeros, the largest."""
    p = fmt.mantissa_bits
    kind = rng.integers(0, 10, size=shape)
    exp = np.where(kind < 4, rng.integers(-3, 3, size=shape), rng.integers(fmt.emin, fmt.emax + 1, size=shape))
    sig = rng.integers(2**p, 2 ** (p + 1), size=shape)
    x = np.ldexp(sig.astype(np.float64), exp - p)
    x = np.where(kind == 6, np.ldexp(rng.integers(0, 2**p, size=shape).astype(np.float64), fmt.emin - p), x)
    x = np.where(kind == 7, 0.0, x)
    x = np.where(kind == 8, fmt.max_value, x)
    x = np.minimum(x, fmt.max_value) * rng.choice([-1.0, 1.0], size=shape)
    if specials:
        odd = rng.random(shape)
        x = np.where(odd < 0.0005, np.nan, x)
        if fmt.has_inf:
            x = np.where((odd >= 0.0005) & (odd < 0.001), np.where(x < 0, -np.inf, np.inf), x)
    return x


def batch(model: MatrixUnitModel, seed: int, n: int, specials: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with np.errstate(all="ignore"):
        return _batch(model, seed, n, specials)


def _batch(model: MatrixUnitModel, seed: int, n: int, specials: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    k = model.block_terms * int(rng.integers(1, 4 * model.step_terms // model.block_terms))  # partial instructions too
    a = values(rng, model.input_float, (n, k), specials)
    b = values(rng, model.input_float, (n, k), specials)
    b[: n // 4] = np.abs(b[: n // 4])  # same-sign rows: carries past the block's top
    a[: n // 4] = np.abs(a[: n // 4])
    c = values(rng, model.output_float, (n,), specials)
    c[n // 4 : n // 2] = 0.0
    # exact cancellation: c = -(a . b) for rows whose exact sum is an output value
    exact = np.sum(a[n // 2 : 3 * n // 4] * b[n // 2 : 3 * n // 4], axis=1)
    fits = np.isfinite(exact) & (exact.astype(np.float32).astype(np.float64) == exact)
    if model.output_format == "fp16":
        fits &= exact.astype(np.float16).astype(np.float64) == exact
    c[n // 2 : 3 * n // 4] = np.where(fits, -exact, c[n // 2 : 3 * n // 4])
    return a, b, c


def bits(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32).view(np.uint32)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_numpy_matches_reference(model: MatrixUnitModel, seed: int) -> None:
    a, b, c = batch(model, seed, 40, specials=True)
    want = MatrixUnit(model, backend="reference").inner(a, b, c)
    got = MatrixUnit(model, backend="numpy").inner(a, b, c)
    assert np.array_equal(bits(got), bits(want))


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_jax_matches_reference(model: MatrixUnitModel) -> None:
    a, b, c = batch(model, 12345, 400, specials=True)
    want = MatrixUnit(model, backend="reference").inner(a, b, c)
    got = MatrixUnit(model, backend="jax").inner(a, b, c)
    assert np.array_equal(bits(got), bits(want))


@pytest.mark.parametrize("backend", ["numpy", "jax"])
@pytest.mark.parametrize(
    "key",
    [
        ("h100", "fp16", "fp32"),
        ("a100", "tf32", "fp32"),
        ("v100", "fp16", "fp16"),
        ("ada", "fp8-e5m2", "fp32"),
        ("mi300", "fp8-e4m3", "fp32"),
        ("mi250", "bf16", "fp32"),
        ("h200", "fp8-e4m3", "fp16"),
    ],
)
def test_matmul_is_inner_products(key: tuple[str, str, str], backend: str) -> None:
    unit = matrix_unit(*key, backend=backend)  # type: ignore[arg-type]
    rng = np.random.default_rng(7)
    fin, fout = unit.model.input_float, unit.model.output_float
    kk = 3 * unit.model.step_terms - 1  # a partial last instruction, padded with zero products
    a = values(rng, fin, (5, kk), specials=False)
    b = values(rng, fin, (kk, 4), specials=False)
    c = values(rng, fout, (5, 4), specials=False)
    got = unit.matmul(a, b, c)
    want = unit.with_backend("reference").inner(np.repeat(a, 4, axis=0), np.tile(b.T, (5, 1)), c.reshape(-1))
    assert np.array_equal(bits(got.reshape(-1)), bits(want))
