"""matrix_unit(): the named units, hand-worked block-FMA cases, and refusals of bad input.

The hand-worked cases are the features the published measurements describe (Fasi et al., PeerJ
CS 2021; Khattak & Mikaitis, arXiv:2512.07004), each computed on paper: truncation at the
block's alignment point, the extra alignment bits, round-toward-zero of the block result,
nearest-even for fp16 output, chaining blocks through c.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hwbench.accuracy.numerics.matrix_unit import MATRIX_UNITS, MatrixUnit, matrix_unit, unit_formats
from hwbench.accuracy.numerics.matrix_unit_model import MatrixUnitModel
from hwbench.core.errors import UsageError

BACKENDS = ["reference", "numpy", "jax"]
T = 2.0**-12  # fp16 value whose square is 2^-24


def one(unit: MatrixUnit, a: list[float], b: list[float], c: float) -> float:
    return float(unit.inner(np.array([a]), np.array([b]), np.array([c]))[0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_products_below_the_alignment_point_are_cut(backend: str) -> None:
    # V100: no extra bits, so with c = 1 the grid is 2^-23 and four products of 2^-24 vanish;
    # fp32 FMAs would give 1 + 2^-22.
    v100 = matrix_unit("v100", "fp16", "fp32", backend=backend)  # type: ignore[arg-type]
    assert one(v100, [T] * 4, [T] * 4, 1.0) == 1.0
    # A100 keeps one extra bit (grid 2^-24): eight products of 2^-24 survive -> 1 + 2^-21.
    a100 = matrix_unit("a100", "fp16", "fp32", backend=backend)  # type: ignore[arg-type]
    assert one(a100, [T] * 8, [T] * 8, 1.0) == 1.0 + 2.0**-21
    # H100 keeps two (grid 2^-25): sixteen products of 2^-25 survive -> 1 + 2^-21.
    h100 = matrix_unit("h100", "fp16", "fp32", backend=backend)  # type: ignore[arg-type]
    assert one(h100, [T] * 16, [T / 2] * 16, 1.0) == 1.0 + 2.0**-21


@pytest.mark.parametrize("backend", BACKENDS)
def test_round_toward_zero_and_nearest_even_output(backend: str) -> None:
    a100 = matrix_unit("a100", "fp16", "fp32", backend=backend)  # type: ignore[arg-type]
    # 1 + 3 * 2^-24 rounds toward zero to 1 + 2^-23 (nearest would give 1 + 2^-22).
    assert one(a100, [T] * 3 + [0.0] * 5, [T] * 3 + [0.0] * 5, 1.0) == 1.0 + 2.0**-23
    # A negative product smaller than the grid is cut, not rounded down: 1 - 2^-30 -> 1.
    assert one(a100, [-(2.0**-15)] + [0.0] * 7, [2.0**-15] + [0.0] * 7, 1.0) == 1.0
    # fp16 output rounds to nearest even: 1 + 3 * 2^-11 (between 1 + 2^-10 and 1 + 2^-9) -> 1 + 2^-9.
    h16 = matrix_unit("a100", "fp16", "fp16", backend=backend)  # type: ignore[arg-type]
    x = 2.0**-6
    assert one(h16, [x, x, x] + [0.0] * 5, [2.0**-5] * 3 + [0.0] * 5, 1.0) == 1.0 + 2.0**-9


@pytest.mark.parametrize("backend", BACKENDS)
def test_blocks_chain_through_c(backend: str) -> None:
    # V100, K = 8: block 1 gives 1 + 4 * 2^-20 exactly; block 2's products 2^-24 are cut.
    v100 = matrix_unit("v100", "fp16", "fp32", backend=backend)  # type: ignore[arg-type]
    a = [2.0**-10] * 4 + [T] * 4
    b = [2.0**-10] * 4 + [T] * 4
    assert one(v100, a, b, 1.0) == 1.0 + 2.0**-18
    # matmul gives every element the same inner product
    out = v100.matmul(np.array([a, a]), np.array([b, b]).T, np.ones((2, 2)))
    assert np.all(out == 1.0 + 2.0**-18)


@pytest.mark.parametrize("backend", BACKENDS)
def test_specials(backend: str) -> None:
    u = matrix_unit("h100", "bf16", "fp32", backend=backend)  # type: ignore[arg-type]
    z = [0.0] * 15
    assert one(u, [math.inf, *z], [-1.0, *z], 0.0) == -math.inf
    assert math.isnan(one(u, [math.inf, -math.inf, *z[1:]], [1.0, 1.0, *z[1:]], 0.0))
    assert math.isnan(one(u, [math.inf, *z], [0.0, *z], 0.0))
    assert one(u, [2.0**127, *z], [2.0, *z], 0.0) == math.inf  # overflow of the block result


def _fp8_row(products: dict[int, tuple[float, float]], k: int = 32) -> tuple[list[float], list[float]]:
    a, b = [0.0] * k, [0.0] * k
    for i, (x, y) in products.items():
        a[i], b[i] = x, y
    return a, b


@pytest.mark.parametrize("backend", BACKENDS)
def test_hopper_fp8_to_fp16_runs_two_interleaved_blocks_then_adds_c(backend: str) -> None:
    # Terms 0, 1, 4, 5, ... go to the first 16-term block, 2, 3, 6, 7, ... to the second, each
    # block rounded to nearest even onto fp16; c is added last with one more rounding.
    h = 2.0**-11  # half an fp16 ulp of 1 (2^-5 * 2^-6 in e4m3)
    u = matrix_unit("h100", "fp8-e4m3", "fp16", backend=backend)  # type: ignore[arg-type]
    together = _fp8_row({0: (1.0, 1.0), 1: (2.0**-5, 2.0**-6), 4: (2.0**-5, 2.0**-6)})
    assert one(u, *together, 0.0) == 1.0 + 2.0**-10  # one block: exact
    apart = _fp8_row({0: (1.0, 1.0), 1: (2.0**-5, 2.0**-6), 2: (2.0**-5, 2.0**-6)})
    assert one(u, *apart, 0.0) == 1.0  # 1 + h rounds to 1 (a tie, to even) in each block
    second = _fp8_row({0: (1.0, 1.0), 2: (2.0**-5, 2.0**-6), 3: (2.0**-5, 2.0**-6)})
    assert one(u, *second, 0.0) == 1.0 + 2 * h  # both halves in the second block: exact
    # c joins after the products: (1 + 2^-10) + (1 + 2^-10) = 2 + 2^-9 exactly; had c joined the
    # first block, 2 + 2^-10 would have rounded to 2 there and again in the second block.
    assert one(u, *second, 1.0 + 2.0**-10) == 2.0 + 2.0**-9


@pytest.mark.parametrize("backend", BACKENDS)
def test_ada_fp8_to_fp16_keeps_13_bits_then_rounds_to_fp16(backend: str) -> None:
    # 1 + 2^-11 + 2^-14: the 2^-14 is cut at alignment (13 fraction bits), so the sum is a tie
    # that rounds to 1; with the term kept it would round up to 1 + 2^-10.
    u = matrix_unit("ada", "fp8-e5m2", "fp16", backend=backend)  # type: ignore[arg-type]
    row = _fp8_row({0: (1.0, 1.0), 1: (2.0**-5, 2.0**-6), 2: (2.0**-7, 2.0**-7)}, k=16)
    assert one(u, *row, 0.0) == 1.0
    assert one(u, *_fp8_row({0: (1.0, 1.0), 1: (2.0**-5, 2.0**-6), 2: (2.0**-6, 2.0**-7)}, k=16), 0.0) == 1.0 + 2.0**-10


def test_instruction_fields_are_checked() -> None:
    base = {"input_format": "fp8-e4m3", "output_format": "fp16", "block_terms": 16, "c_position": "after-rounded"}
    with pytest.raises(ValueError, match="whole number of blocks of 16"):
        MatrixUnitModel(**base, instruction_terms=24)
    with pytest.raises(ValueError, match="deal an instruction of 32 terms evenly"):
        MatrixUnitModel(**base, instruction_terms=32, interleave=3)
    with pytest.raises(ValueError, match="after-rounded c"):
        MatrixUnitModel(**{**base, "c_position": "alignment"}, instruction_terms=32)
    with pytest.raises(ValueError, match="an alignment bit below the result's"):
        MatrixUnitModel(**base, instruction_terms=32, interleave=2, extra_alignment_bits=-13)
    with pytest.raises(ValueError, match="toward-zero or nearest-even"):
        MatrixUnitModel(**base, late_rounding="down")
    strict = MatrixUnit(matrix_unit("b200", "fp8-e5m2", "fp16").model.model_copy(update={"pad_k": False}))
    with pytest.raises(UsageError, match="whole instructions of 32; got K=16"):
        strict.inner(np.ones((1, 16)), np.ones((1, 16)), np.zeros(1))


def test_every_named_unit_has_models() -> None:
    assert set(MATRIX_UNITS) == {"v100", "a100", "a2", "a30", "ada", "l40s", "h100", "h200", "b200"} | {
        "mi100",
        "mi250",
        "mi300",
    }
    for name in MATRIX_UNITS:
        for fin, fout in unit_formats(name):
            unit = matrix_unit(name, fin, fout)
            assert unit.model.name == name and unit.model.source


def test_bad_input_is_refused_with_one_line() -> None:
    with pytest.raises(UsageError, match=r"unknown matrix unit 'h900'.*h100"):
        matrix_unit("h900", "fp16")
    with pytest.raises(UsageError, match="no published model for bf16->fp16; it has"):
        matrix_unit("h100", "bf16", "fp16")
    with pytest.raises(UsageError, match="unknown matrix-unit input format"):
        matrix_unit("h100", "fp64")
    u = matrix_unit("a100", "fp16")
    with pytest.raises(UsageError, match=r"not representable in fp16 \(first: 0.1\)"):
        u.inner(np.array([[0.1] * 8]), np.ones((1, 8)), np.zeros(1))
    with pytest.raises(UsageError, match="not representable in fp32"):
        u.inner(np.ones((1, 8)), np.ones((1, 8)), np.array([0.1]))
    e4m3 = matrix_unit("h100", "fp8-e4m3")
    with pytest.raises(UsageError, match="not representable in fp8-e4m3fn"):
        e4m3.inner(np.full((1, 32), 480.0), np.ones((1, 32)), np.zeros(1))
    strict = MatrixUnit(u.model.model_copy(update={"pad_k": False}))
    with pytest.raises(UsageError, match="whole blocks of 8; got K=5"):
        strict.inner(np.ones((1, 5)), np.ones((1, 5)), np.zeros(1))
    with pytest.raises(UsageError, match="same shape"):
        u.inner(np.ones((1, 8)), np.ones((2, 8)), np.zeros(1))


def test_a_caller_that_rounded_its_operands_skips_only_the_representability_check() -> None:
    """``rounded=True`` (the op-level evaluator's unit, which rounds its operands itself) gives the
    checked product's bits; K must still come in whole blocks."""
    u = matrix_unit("a100", "fp16")
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(shape).astype(np.float16).astype(np.float64) for shape in ((6, 16), (16, 5)))
    assert np.array_equal(u.matmul(a, b, rounded=True), u.matmul(a, b))
    with pytest.raises(UsageError, match="not representable in fp16"):
        u.matmul(a + 1e-6, b)
    strict = MatrixUnit(u.model.model_copy(update={"pad_k": False}))
    with pytest.raises(UsageError, match="whole blocks of 8; got K=5"):
        strict.matmul(np.ones((1, 5)), np.ones((5, 1)), rounded=True)


def test_padding_k_with_zero_products_changes_nothing() -> None:
    u = matrix_unit("h100", "tf32", backend="reference")
    rng = np.random.default_rng(0)
    a = np.round(rng.standard_normal((50, 4)) * 64) / 64
    b = np.round(rng.standard_normal((50, 4)) * 64) / 64
    padded = np.concatenate([a, np.zeros((50, 4))], axis=1), np.concatenate([b, np.zeros((50, 4))], axis=1)
    assert np.array_equal(u.inner(a, b, np.zeros(50)), u.inner(*padded, np.zeros(50)))


def test_a_described_unit() -> None:
    model = MatrixUnitModel(name="mine", input_format="bf16", block_terms=4, extra_alignment_bits=3)
    unit = matrix_unit(model=model)
    assert unit.model is model
    with pytest.raises(UsageError, match="not both"):
        matrix_unit("h100", "bf16", model=model)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_zero_result_is_positive_zero(backend: str) -> None:
    # products cut to nothing, or cancelling exactly: the unit returns +0 (as the published model)
    u = matrix_unit("v100", "fp16", "fp32", backend=backend)  # type: ignore[arg-type]
    out = u.inner(np.array([[-T, -T, 1.0, -1.0]]), np.array([[T, T, 1.0, 1.0]]), np.array([0.0]))
    assert out.astype(np.float32).view(np.uint32)[0] == 0
    m = u.matmul(np.array([[-T, -T, 1.0, -1.0]]), np.array([[T], [T], [1.0], [1.0]]))
    assert m.astype(np.float32).view(np.uint32)[0, 0] == 0
