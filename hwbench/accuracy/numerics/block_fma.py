"""The block FMA, plainly: one inner product at a time, in exact Python integers.

This is the reference the vectorised implementation (:mod:`.block_fma_vec`) is held to bit for
bit. Every value is an integer significand times a power of two, so nothing here rounds except
where the modelled hardware does. The algorithm follows the published parameterised model
(Khattak & Mikaitis, arXiv:2512.07004; github.com/north-numerical-computing/MATLAB-tensor-core,
``Generic_BFMA_TC.m`` and ``GEMM.m``), written afresh:

1. specials first, over the whole inner product (NaN, opposite infinities -> NaN; else +-inf);
2. K is cut into instructions of ``instruction_terms`` (one block unless the unit says more),
   an instruction's terms are dealt to its blocks (consecutively, or interleaved), and each
   block's result is the next block's ``c`` (with ``after-rounded``: an instruction's blocks
   chain from zero and ``c`` is added to their sum once, rounded once);
3. in a block: flush subnormal inputs if the unit does, drop zero products, split each product
   into an integer significand and the *sum of its factors' exponents* (a product of two
   significands in [1, 2) is kept in [1, 4): the alignment exponent is not renormalised);
4. align to the largest exponent (``c`` included unless it is added later), cut every term to
   ``23 + extra`` fraction bits below it (truncation, or one sticky bit), add exactly;
5. normalise and round once onto the output format (toward zero or to nearest even), with
   gradual underflow; a result past the largest binade is an infinity.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from hwbench.accuracy.numerics.matrix_unit_model import ACCUMULATOR_EMIN, ACCUMULATOR_FRACTION_BITS, MatrixUnitModel

__all__ = ["reference_inner"]

# A term of an exact sum: (negative, integer magnitude, power of two of its last bit).
Term = tuple[bool, int, int]


def reference_inner(model: MatrixUnitModel, a: Sequence[float], b: Sequence[float], c: float) -> float:
    """``a . b + c`` as the unit computes it; a and b hold K input-format values, c one output value."""
    special = _specials([x * y for x, y in zip(a, b, strict=True)] + [c])
    if special is not None:
        return special
    step, order = model.step_terms, model.term_order()
    a, b = list(a), list(b)
    if len(a) % step:
        pad = step - len(a) % step
        a, b = a + [0.0] * pad, b + [0.0] * pad
    d = float(c)
    for start in range(0, len(a), step):
        at, bt = a[start : start + step], b[start : start + step]
        if order is not None:
            at, bt = [at[i] for i in order], [bt[i] for i in order]
        d = instruction(model, at, bt, d)
        if math.isinf(d) or math.isnan(d):
            return d
    return d


def instruction(model: MatrixUnitModel, a: Sequence[float], b: Sequence[float], c: float) -> float:
    """One instruction: its blocks (terms already in block order) chained through ``c``, or with
    ``after-rounded`` chained from zero, each rounded with ``late_rounding``, and ``c`` added last
    with one correctly rounded addition (``final_rounding``)."""
    if model.c_position != "after-rounded":
        return _chain(model, a, b, c)
    chain = model.model_copy(update={"c_position": "alignment", "final_rounding": model.late_rounding})
    partial = _chain(chain, a, b, 0.0)
    if math.isinf(partial) or math.isnan(partial):
        return partial
    terms = [_c_term(v)[:3] for v in (partial, c) if v != 0]
    total, grid = _exact_sum(terms)
    return _round_out(model, total, grid)


def _chain(model: MatrixUnitModel, a: Sequence[float], b: Sequence[float], c: float) -> float:
    """Blocks of consecutive terms, each block's result the next block's ``c`` (an infinity ends it)."""
    k = model.block_terms
    for start in range(0, len(a), k):
        c = block(model, a[start : start + k], b[start : start + k], c)
        if math.isinf(c) or math.isnan(c):
            break
    return c


def _specials(values: list[float]) -> float | None:
    if any(math.isnan(v) for v in values):
        return math.nan
    pos = any(v == math.inf for v in values)
    neg = any(v == -math.inf for v in values)
    if pos and neg:
        return math.nan
    return math.inf if pos else (-math.inf if neg else None)


def block(model: MatrixUnitModel, a: Sequence[float], b: Sequence[float], c: float) -> float:
    """One block FMA: ``sum(a[i] * b[i]) + c`` for ``len(a) == block_terms``."""
    fin, fout = model.input_float, model.output_float
    emin_in = fin.emin
    if model.subnormals_in == "flush":
        a = [0.0 if abs(x) < 2.0**emin_in else x for x in a]
        b = [0.0 if abs(x) < 2.0**emin_in else x for x in b]
    if model.subnormals_out == "flush" and abs(c) < 2.0**fout.emin:
        c = 0.0
    if model.product_overflow_limit:
        limit = 2.0 ** (fout.emax + 1)
        big = [x * y for x, y in zip(a, b, strict=True) if abs(x * y) >= limit]
        if big:
            pos, neg = any(v > 0 for v in big), any(v < 0 for v in big)
            return math.nan if pos and neg else (math.inf if pos else -math.inf)
    if model.summation == "pairwise":
        return _pairwise(model, a, b, c)
    keep_zeros = model.odd_even_grouping
    prods = [_product(model, x, y) for x, y in zip(a, b, strict=True) if keep_zeros or (x != 0 and y != 0)]
    if not prods and c == 0:
        return 0.0
    if model.summation == "exact":
        terms = [(neg, mag, q) for neg, mag, q, _ in prods] + ([_c_term(c)[:3]] if c != 0 else [])
        total, grid = _exact_sum(terms)
        return _round_out(model, total, grid)
    if model.odd_even_grouping:
        total, grid = _odd_even(model, prods, c)
    elif model.c_position == "after":
        total, grid = _late_c(model, prods, c, exp_check=False)
    else:
        total, grid = _aligned(model, prods + ([_c_term(c)] if c != 0 else []))
    return _round_out(model, total, grid)


def _product(model: MatrixUnitModel, x: float, y: float) -> tuple[bool, int, int, int]:
    """(negative, |significand product|, power of its last bit, alignment exponent)."""
    fin = model.input_float
    emin_in, p = fin.emin, fin.mantissa_bits
    ex, mx = _split(x, emin_in, p)
    ey, my = _split(y, emin_in, p)
    mag = mx * my
    align = ex + ey
    if model.normalised_products and mag >= 1 << (2 * p + 1):
        align += 1
    if mag == 0:
        align = -1024
    return ((x < 0) != (y < 0)) and mag != 0, mag, ex + ey - 2 * p, align


def _split(x: float, emin: int, p: int) -> tuple[int, int]:
    """Exponent ``max(floor(log2|x|), emin)`` and the integer significand ``|x| / 2^(e - p)``."""
    if x == 0:
        return emin, 0
    e = max(math.frexp(x)[1] - 1, emin)
    m = math.ldexp(abs(x), p - e)
    assert m == int(m), "value not representable in the input format"
    return e, int(m)


def _c_term(c: float) -> tuple[bool, int, int, int]:
    """c on the fp32 frame: (negative, 24-bit significand, last-bit power, exponent)."""
    e, m = _split(c, ACCUMULATOR_EMIN, ACCUMULATOR_FRACTION_BITS)
    return c < 0, m, e - ACCUMULATOR_FRACTION_BITS, e


def _shift(mag: int, by: int) -> tuple[int, bool]:
    """``floor(mag * 2^by)`` and whether bits were lost."""
    if by >= 0:
        return mag << by, False
    return mag >> -by, (mag & ((1 << -by) - 1)) != 0


def _aligned(model: MatrixUnitModel, terms: list[tuple[bool, int, int, int]]) -> tuple[int, int]:
    """Align to the largest exponent, cut, add: (signed integer sum, power of its last bit)."""
    top = max([t[3] for t in terms] + [model.min_alignment_exponent])
    grid = top - ACCUMULATOR_FRACTION_BITS - model.extra_alignment_bits
    sticky = model.alignment_rounding == "sticky"
    total = 0
    for neg, mag, q, _ in terms:
        kept, lost = _shift(mag, q - grid)
        if sticky:
            kept = 2 * kept + int(lost)
        total += -kept if neg else kept
    return total, grid - int(sticky)


def _exact_sum(terms: list[Term]) -> tuple[int, int]:
    if not terms:
        return 0, 0
    grid = min(q for _, _, q in terms)
    return sum((-m if neg else m) << (q - grid) for neg, m, q in terms), grid


def _late_c(
    model: MatrixUnitModel, prods: list[tuple[bool, int, int, int]], c: float, *, exp_check: bool
) -> tuple[int, int]:
    """Products aligned and summed without c, then c added in a second two-operand addition."""
    prod_sum, prod_grid = _aligned(model, prods) if prods else (0, None)
    return _add_c(model, prod_sum, prod_grid, c, exp_check=exp_check)


def _add_c(model: MatrixUnitModel, s: int, s_grid: int | None, c: float, *, exp_check: bool) -> tuple[int, int]:
    frac = ACCUMULATOR_FRACTION_BITS + model.extra_alignment_bits
    if c != 0:
        neg, mag, _, c_exp = _c_term(c)
        c_int = -(mag << model.extra_alignment_bits) if neg else mag << model.extra_alignment_bits
    else:
        c_int, c_exp = 0, model.c_zero_exponent if model.c_zero_exponent is not None else -1024
    if s_grid is None:  # no products: c alone, on its own grid
        return c_int, c_exp - frac
    s_exp = s_grid + frac
    return _add_two(model, (s, s_exp), (c_int, c_exp), frac, exp_check=exp_check)


def _add_two(
    model: MatrixUnitModel, first: tuple[int, int], second: tuple[int, int], frac: int, *, exp_check: bool
) -> tuple[int, int]:
    """Add two unnormalised sums (value = int * 2^(exp - frac)); the smaller one is shifted onto
    the larger one's grid and rounded with ``late_rounding``. Used for the late c (the products
    then get ``late_extra_bits`` more bits first) and for the odd/even partial sums (none)."""
    (s1, e1), (s2, e2), top = first, second, max(first[1], second[1])
    extra = 0
    if e1 < top:
        extra = model.late_extra_bits
        s1, s2 = s1 << extra, s2 << extra
        s1 = _round_shift(s1, top - e1, model.late_rounding)
    elif e2 < top:
        mode = "toward-zero" if exp_check and e2 < top - 25 else model.late_rounding
        s2 = _round_shift(s2, top - e2, mode)
    return s1 + s2, top - frac - extra


def _round_shift(v: int, by: int, mode: str) -> int:
    """``v / 2^by`` rounded to an integer with ``mode`` (signed: down is toward -inf)."""
    mag, neg = abs(v), v < 0
    kept, lost = _shift(mag, -by)
    if lost:
        if (mode == "down" and neg) or (mode == "up" and not neg):
            kept += 1
        elif mode == "nearest-even":
            half = 1 << (by - 1)
            rem = mag - (kept << by)
            kept += rem > half or (rem == half and kept & 1)
    return -kept if neg else kept


def _odd_even(model: MatrixUnitModel, prods: list[tuple[bool, int, int, int]], c: float) -> tuple[int, int]:
    frac = ACCUMULATOR_FRACTION_BITS + model.extra_alignment_bits
    even_sum, even_grid = _aligned(model, prods[0::2])
    odd_sum, odd_grid = _aligned(model, prods[1::2])
    no_extra = model.model_copy(update={"late_extra_bits": 0})
    s, grid = _add_two(no_extra, (even_sum, even_grid + frac), (odd_sum, odd_grid + frac), frac, exp_check=False)
    return _add_c(model, s, grid, c, exp_check=True)


def _pairwise(model: MatrixUnitModel, a: Sequence[float], b: Sequence[float], c: float) -> float:
    """fp32 products (flushed below 2^-126 when the unit flushes), a binary tree of fp32
    additions, then c: every addition rounds to nearest even."""
    tiny = 2.0**ACCUMULATOR_EMIN
    flush = model.subnormals_out == "flush"

    def ftz(v: np.float32) -> np.float32:
        return np.float32(0.0) if flush and abs(float(v)) < tiny else v

    level = [ftz(np.float32(x * y)) for x, y in zip(a, b, strict=True)]
    with np.errstate(over="ignore", invalid="ignore"):
        while len(level) > 1:
            level = [ftz(np.float32(level[i] + level[i + 1])) for i in range(0, len(level), 2)]
        return float(ftz(np.float32(np.float32(c) + level[0])))


def _round_out(model: MatrixUnitModel, total: int, grid: int) -> float:
    """Round ``total * 2^grid`` once onto the output format (gradual underflow, inf on overflow)."""
    if total == 0:
        return 0.0
    fout = model.output_float
    neg, mag = total < 0, abs(total)
    top = grid + mag.bit_length() - 1
    quantum = max(top, fout.emin) - model.output_fraction_bits
    mag = _round_shift(mag, quantum - grid, model.final_rounding) if quantum > grid else mag << (grid - quantum)
    if quantum + mag.bit_length() - 1 > fout.emax:
        value = math.inf
    else:
        value = math.ldexp(float(mag), quantum)
        if model.subnormals_out == "flush" and value < 2.0**fout.emin:
            return 0.0
    return -value if neg else value
