"""The block FMA vectorised: whole arrays of inner products at once, in numpy or under ``jax.jit``.

Same arithmetic as the reference (:mod:`.block_fma`), held to it bit for bit by the tests, but on
float64 arrays where every step is exact:

* a product of two input values has at most 2 * 11 + 2 significant bits, so ``a * b`` is exact;
* the aligned integer of a term is ``floor(|term| * 2^(F - top))`` with ``F = 23 + extra`` and
  ``top`` the block's alignment exponent: a power-of-two scaling and a floor, both exact, and
  the integer is below 2^35; a block's signed sum of at most 257 such integers stays below 2^53;
* the block result ``sum * 2^(top - F)`` is one ``ldexp`` and the final rounding is done on it
  with the exponent read by ``frexp`` (exact), so nothing rounds that the unit does not round.

The block loop is sequential (each block's result is the next block's ``c``; a step is one
instruction, several blocks where the unit's instruction holds more): a Python loop in numpy,
``lax.scan`` under JAX, whose steps get their operands sliced one step ahead so that XLA's CPU
backend vectorises each step's fused loop. ``matmul`` broadcasts a block of A's rows against a
block of B's columns, so memory is O(M * N * block) per step. The exact (Kulisch) summation has no float64
shortcut: units with ``summation == "exact"`` run the reference algorithm in every backend.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from hwbench.accuracy.numerics.matrix_unit_model import ACCUMULATOR_EMIN, ACCUMULATOR_FRACTION_BITS, MatrixUnitModel

__all__ = ["inner_vec", "matmul_vec"]

# Fields that name and cite a model but do not change its arithmetic (one compilation serves all).
_LABELS = {"name", "source", "confidence", "notes"}
_NONE = -4000  # exponent of an absent term: below every real exponent, never overflows ldexp


def inner_vec(model: MatrixUnitModel, a: np.ndarray, b: np.ndarray, c: np.ndarray, *, backend: str) -> np.ndarray:
    """n inner products: a, b (n, K), c (n,)."""
    if model.summation == "exact":
        return _reference_rows(model, a, b, c)
    ab, bb = _blocks(model, a), _blocks(model, b)  # (nb, n, k)
    return _run(model, ab, bb, c, backend)


def matmul_vec(model: MatrixUnitModel, a: np.ndarray, b: np.ndarray, c: np.ndarray, *, backend: str) -> np.ndarray:
    """``A @ B + C``: A (M, K), B (K, N), C (M, N)."""
    if model.summation == "exact":
        m, n = a.shape[0], b.shape[1]
        rows = _reference_rows(model, np.repeat(a, n, axis=0), np.tile(b.T, (m, 1)), c.reshape(-1))
        return rows.reshape(m, n)
    if _fast_path(model) and all(np.isfinite(x).all() for x in (a, b, c)):
        return _fast_matmul(model, a, b, c, backend)
    ab = _blocks(model, a)[:, :, None, :]  # (nb, M, 1, k)
    bb = _blocks(model, np.ascontiguousarray(b.T))[:, None, :, :]  # (nb, 1, N, k)
    return _run(model, ab, bb, c, backend)


def _reference_rows(model: MatrixUnitModel, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    from hwbench.accuracy.numerics.block_fma import reference_inner

    rows = zip(a.tolist(), b.tolist(), c.tolist(), strict=True)
    return np.array([reference_inner(model, x, y, z) for x, y, z in rows], dtype=np.float64)


def _blocks(model: MatrixUnitModel, x: np.ndarray) -> np.ndarray:
    """(rows, K) -> (instructions, rows, instruction_terms), zero-padded (zero products change
    nothing), each instruction's terms in the order its blocks take them."""
    k, order = model.step_terms, model.term_order()
    pad = (-x.shape[1]) % k
    if pad:
        x = np.concatenate([x, np.zeros((x.shape[0], pad))], axis=1)
    steps = x.reshape(x.shape[0], -1, k)
    if order is not None:
        steps = steps[:, :, order]
    return np.ascontiguousarray(steps.transpose(1, 0, 2))


def _run(model: MatrixUnitModel, ab: np.ndarray, bb: np.ndarray, c: np.ndarray, backend: str) -> np.ndarray:
    if backend == "jax":
        import jax

        with jax.enable_x64(True):
            out = _jitted(model.model_dump_json(exclude=_LABELS))(ab, bb, c)
            return np.asarray(out)
    with np.errstate(all="ignore"):
        state = _start(np, c)
        for i in range(ab.shape[0]):
            state = _step(np, model, state, ab[i], bb[i])
        return np.asarray(_finish(np, state), dtype=np.float64)


@lru_cache(maxsize=32)
def _jitted(model_json: str) -> Any:
    import jax

    model = MatrixUnitModel.model_validate_json(model_json)
    jnp = jax.numpy

    def run(ab: Any, bb: Any, c: Any) -> Any:
        def operands(i: Any) -> tuple[Any, Any]:
            return jax.lax.dynamic_index_in_dim(ab, i, 0, False), jax.lax.dynamic_index_in_dim(bb, i, 0, False)

        # Step i's operands come in the carry, sliced one step ahead (see _fast_jitted: a slice
        # fused into the step's elementwise loops keeps them from being vectorised).
        def body(carry: Any, i: Any) -> tuple[Any, None]:
            state, (a, b) = carry
            return (_step(jnp, model, state, a, b), operands(i + 1)), None

        (state, _), _ = jax.lax.scan(body, (_start(jnp, c), operands(0)), jnp.arange(ab.shape[0]))
        return _finish(jnp, state)

    return jax.jit(run)


# --- the GEMM fast path: NVIDIA-style units (c in the alignment, truncation), finite inputs ---
# Each block is k passes over (M, N) slabs (one per product term) for the alignment exponent and
# k more for the aligned integers: XLA fuses each set into one loop over the output, where the
# general path builds (M, N, k) arrays. Same arithmetic, held to the reference by the tests.


def _fast_path(model: MatrixUnitModel) -> bool:
    return (
        model.summation == "aligned"
        and model.c_position == "alignment"
        and not model.odd_even_grouping
        and model.alignment_rounding == "truncate"
        and model.subnormals_in == "keep"
        and model.subnormals_out == "keep"
        and not model.product_overflow_limit
        and model.interleave is None
    )


def _fast_matmul(model: MatrixUnitModel, a: np.ndarray, b: np.ndarray, c: np.ndarray, backend: str) -> np.ndarray:
    pad = (-a.shape[1]) % model.block_terms
    if pad:
        a = np.concatenate([a, np.zeros((a.shape[0], pad))], axis=1)
        b = np.concatenate([b, np.zeros((pad, b.shape[1]))], axis=0)
    if backend == "numpy":
        with np.errstate(all="ignore"):
            ea, eb = _nonzero_exponent(np, model, a), _nonzero_exponent(np, model, b)
            k, d = model.block_terms, c
            for i in range(0, a.shape[1], k):
                d = _fast_block(np, model, d, (a[:, i : i + k], ea[:, i : i + k]), (b[i : i + k], eb[i : i + k]))
            return np.asarray(d, dtype=np.float64)
    import jax

    with jax.enable_x64(True):
        return np.asarray(_fast_jitted(model.model_dump_json(exclude=_LABELS))(a, b, c))


def _nonzero_exponent(xp: Any, model: MatrixUnitModel, x: Any) -> Any:
    """Alignment exponents of the inputs, with zeros far below any real one (their products drop)."""
    return xp.where(x != 0, _exponent(xp, x, model.input_float.emin), _NONE).astype(xp.int32)


def _fast_block(xp: Any, model: MatrixUnitModel, d: Any, a: tuple[Any, Any], b: tuple[Any, Any]) -> Any:
    """One block of the GEMM: a = (values, exponents) (M, k), b the same (k, N), d (M, N)."""
    (va, ea), (vb, eb) = a, b
    k = va.shape[1]
    frac = ACCUMULATOR_FRACTION_BITS + model.extra_alignment_bits
    top = ea[:, 0, None] + eb[0, None, :]
    for j in range(1, k):
        top = xp.maximum(top, ea[:, j, None] + eb[j, None, :])
    c_exp = xp.where(d != 0, _exponent(xp, d, ACCUMULATOR_EMIN), _NONE)
    top = xp.maximum(xp.maximum(top, c_exp), model.min_alignment_exponent)
    scale = _pow2(xp, frac - top)
    total = xp.trunc(d * scale)
    for j in range(k):
        total = total + xp.trunc(va[:, j, None] * vb[j, None, :] * scale)
    new = _round_value(xp, model, total * _pow2(xp, top - frac), model.final_rounding)
    return xp.where(xp.isinf(d), d, new)


@lru_cache(maxsize=16)
def _fast_jitted(model_json: str) -> Any:
    import jax

    model = MatrixUnitModel.model_validate_json(model_json)
    jnp, lax = jax.numpy, jax.lax
    k = model.block_terms

    def run(a: Any, b: Any, c: Any) -> Any:
        ea, eb = _nonzero_exponent(jnp, model, a), _nonzero_exponent(jnp, model, b)

        def operands(i: Any) -> Any:
            blk_a = lax.dynamic_slice_in_dim(a, i * k, k, 1), lax.dynamic_slice_in_dim(ea, i * k, k, 1)
            return blk_a, (lax.dynamic_slice_in_dim(b, i * k, k, 0), lax.dynamic_slice_in_dim(eb, i * k, k, 0))

        # Block i's operands come in the carry, sliced one step ahead: a dynamic slice fused into
        # the block's elementwise loop keeps XLA's CPU backend from vectorising that loop (the
        # A100 tf32 GEMM ran about 3x slower). The slice after the last block is clamped, unused.
        def body(carry: Any, i: Any) -> tuple[Any, None]:
            d, (blk_a, blk_b) = carry
            return (_fast_block(jnp, model, d, blk_a, blk_b), operands(i + 1)), None

        (d, _), _ = lax.scan(body, (c, operands(0)), jnp.arange(a.shape[1] // k))
        return d

    return jax.jit(run)


# --- the per-block step, written once for numpy and jax.numpy ---------------------------------
# state: (d, c0, nan, pos_inf, neg_inf): the running result, the initial c, and the specials seen.


def _start(xp: Any, c: Any) -> tuple[Any, ...]:
    false = xp.zeros(c.shape, dtype=bool)
    return c, c, false, false, false


def _finish(xp: Any, state: tuple[Any, ...]) -> Any:
    d, c0, nan, pos, neg = state
    nan = nan | xp.isnan(c0) | (pos & neg) | ((c0 == xp.inf) & neg) | ((c0 == -xp.inf) & pos)
    pos, neg = pos | (c0 == xp.inf), neg | (c0 == -xp.inf)
    return xp.where(nan, xp.nan, xp.where(pos, xp.inf, xp.where(neg, -xp.inf, d)))


def _step(xp: Any, model: MatrixUnitModel, state: tuple[Any, ...], a: Any, b: Any) -> tuple[Any, ...]:
    d, c0, nan, pos, neg = state
    prod = a * b
    nan = nan | xp.any(xp.isnan(prod), axis=-1)
    pos = pos | xp.any(prod == xp.inf, axis=-1)
    neg = neg | xp.any(prod == -xp.inf, axis=-1)
    a, b = xp.where(xp.isfinite(a), a, 0.0), xp.where(xp.isfinite(b), b, 0.0)
    c = xp.where(xp.isfinite(d), d, 0.0)
    new = _instruction(xp, model, a, b, c)
    return xp.where(xp.isfinite(d), new, d), c0, nan, pos, neg


def _instruction(xp: Any, model: MatrixUnitModel, a: Any, b: Any, c: Any) -> Any:
    """One instruction (terms in block order): its blocks chained through c, or with
    ``after-rounded`` chained from zero (each rounded with ``late_rounding``), then c added once."""
    if model.c_position != "after-rounded":
        return _chain(xp, model, a, b, c)
    chain = model.model_copy(update={"c_position": "alignment", "final_rounding": model.late_rounding})
    partial = _chain(xp, chain, a, b, xp.zeros_like(c))
    return xp.where(xp.isfinite(partial), _round_two(xp, model, partial, c), partial)


def _chain(xp: Any, model: MatrixUnitModel, a: Any, b: Any, c: Any) -> Any:
    """Blocks of consecutive terms, each block's result the next block's c (an infinity stays)."""
    k = model.block_terms
    if a.shape[-1] == k:
        return _block(xp, model, a, b, c)
    for start in range(0, a.shape[-1], k):
        new = _block(xp, model, a[..., start : start + k], b[..., start : start + k], xp.where(xp.isfinite(c), c, 0.0))
        c = xp.where(xp.isfinite(c), new, c)
    return c


def _block(xp: Any, model: MatrixUnitModel, a: Any, b: Any, c: Any) -> Any:
    fin, fout = model.input_float, model.output_float
    if model.subnormals_in == "flush":
        a = xp.where(xp.abs(a) < 2.0**fin.emin, 0.0, a)
        b = xp.where(xp.abs(b) < 2.0**fin.emin, 0.0, b)
    if model.subnormals_out == "flush":
        c = xp.where(xp.abs(c) < 2.0**fout.emin, 0.0, c)
    prod = a * b
    if model.summation == "pairwise":
        out = _pairwise(xp, model, prod, c)
    else:
        exps = _exponent(xp, a, fin.emin) + _exponent(xp, b, fin.emin)
        out = _aligned_family(xp, model, prod, exps, c)
    if model.product_overflow_limit:
        big = xp.abs(prod) >= 2.0 ** (fout.emax + 1)
        over_pos = xp.any(big & (prod > 0), axis=-1)
        over_neg = xp.any(big & (prod < 0), axis=-1)
        over = xp.where(over_pos & over_neg, xp.nan, xp.where(over_pos, xp.inf, -xp.inf))
        out = xp.where(over_pos | over_neg, over, out)
    return out


def _bits(xp: Any, x: Any) -> Any:
    if xp is np:
        return np.asarray(x, dtype=np.float64).view(np.int64)
    import jax

    return jax.lax.bitcast_convert_type(x, xp.int64)


def _exponent(xp: Any, x: Any, emin: int) -> Any:
    """``max(floor(log2|x|), emin)`` read from the float64 exponent field (emin for zero).

    Exact for every value here: the formats' values, products and block results are all
    normal float64 numbers (the smallest, bf16's 2^-133 squared, is 2^-266)."""
    return xp.maximum(((_bits(xp, x) >> 52) & 0x7FF) - 1023, emin)


def _pow2(xp: Any, e: Any) -> Any:
    """``2.0 ** e`` for integer arrays, built from its bits (e clamped to the normal range)."""
    return _from_bits(xp, (xp.clip(e, -1022, 1023).astype(xp.int64) + 1023) << 52)


def _from_bits(xp: Any, bits: Any) -> Any:
    if xp is np:
        return np.asarray(bits, dtype=np.int64).view(np.float64)
    import jax

    return jax.lax.bitcast_convert_type(bits, xp.float64)


def _aligned_family(xp: Any, model: MatrixUnitModel, prod: Any, exps: Any, c: Any) -> Any:
    frac = ACCUMULATOR_FRACTION_BITS + model.extra_alignment_bits
    nonzero = prod != 0
    if model.odd_even_grouping:
        exps = xp.where(nonzero, exps, -1024)
        even = _aligned_sum(xp, model, prod[..., 0::2], exps[..., 0::2], None, None)
        odd = _aligned_sum(xp, model, prod[..., 1::2], exps[..., 1::2], None, None)
        s, top, _ = _add_two(xp, model, even, odd, 0, exp_check=False)
        total, grid = _add_c(xp, model, (s, top), c, frac, exp_check=True)
    elif model.c_position == "alignment":
        exps = xp.where(nonzero, exps, _NONE)
        c_exp = xp.where(c != 0, _exponent(xp, c, ACCUMULATOR_EMIN), _NONE)
        total, top = _aligned_sum(xp, model, prod, exps, c, c_exp)
        grid = top - frac - int(model.alignment_rounding == "sticky")
    else:
        exps = xp.where(nonzero, exps, _NONE)
        s, top = _aligned_sum(xp, model, prod, exps, None, None)
        none = ~xp.any(nonzero, axis=-1)
        total, grid = _add_c(xp, model, (s, top), c, frac, exp_check=False, no_products=none)
    result = _round_out(xp, model, total, grid, model.final_rounding)
    return xp.where(~xp.any(nonzero, axis=-1) & (c == 0), 0.0, result)


def _aligned_sum(xp: Any, model: MatrixUnitModel, prod: Any, exps: Any, c: Any, c_exp: Any) -> tuple[Any, Any]:
    """(signed sum of the aligned integers, alignment exponent) of a block (and c if given)."""
    frac = ACCUMULATOR_FRACTION_BITS + model.extra_alignment_bits
    top = xp.maximum(xp.max(exps, axis=-1), model.min_alignment_exponent)
    if c is not None:
        top = xp.maximum(top, c_exp)
    scale = (frac - top)[..., None]
    total = xp.sum(_cut(xp, model, prod, scale), axis=-1)
    if c is not None:
        total = total + _cut(xp, model, c, frac - top)
    return total, top


def _cut(xp: Any, model: MatrixUnitModel, x: Any, scale: Any) -> Any:
    """``sign(x) * floor(|x| * 2^scale)``, with one sticky bit below when the unit keeps one."""
    mag = xp.ldexp(xp.abs(x), scale)
    kept = xp.floor(mag)
    if model.alignment_rounding == "sticky":
        kept = 2 * kept + (mag != kept)
    return xp.where(x < 0, -kept, kept)


def _add_c(
    xp: Any, model: MatrixUnitModel, s: tuple[Any, Any], c: Any, frac: int, *, exp_check: bool, no_products: Any = None
) -> tuple[Any, Any]:
    """c added to an unnormalised products' sum in a second two-operand addition."""
    c_zero_exp = model.c_zero_exponent if model.c_zero_exponent is not None else -1024
    c_exp = xp.where(c != 0, _exponent(xp, c, ACCUMULATOR_EMIN), c_zero_exp)
    c_int = xp.ldexp(c, frac - c_exp)
    total, top, extra = _add_two(xp, model, s, (c_int, c_exp), model.late_extra_bits, exp_check=exp_check)
    grid = top - frac - extra
    if no_products is not None:
        total = xp.where(no_products, c_int, total)
        grid = xp.where(no_products, c_exp - frac, grid)
    return total, grid


def _add_two(
    xp: Any, model: MatrixUnitModel, first: tuple[Any, Any], second: tuple[Any, Any], extra: int, *, exp_check: bool
) -> tuple[Any, Any, Any]:
    """Two unnormalised sums: the smaller is shifted onto the larger's grid, rounded with
    ``late_rounding``; when the first is the smaller, both first gain ``extra`` bits."""
    (s1, e1), (s2, e2) = first, second
    top = xp.maximum(e1, e2)
    first_small = e1 < top
    second_small = (e2 < top) & ~first_small
    gain = xp.where(first_small, extra, 0)
    s1, s2 = xp.ldexp(s1, gain), xp.ldexp(s2, gain)
    s1 = xp.where(first_small, _round_shift(xp, s1, top - e1, model.late_rounding), s1)
    shifted2 = _round_shift(xp, s2, top - e2, model.late_rounding)
    if exp_check:
        shifted2 = xp.where(e2 < top - 25, _round_shift(xp, s2, top - e2, "toward-zero"), shifted2)
    s2 = xp.where(second_small, shifted2, s2)
    return s1 + s2, top, gain


def _round_shift(xp: Any, v: Any, by: Any, mode: str) -> Any:
    """``v / 2^by`` rounded to an integer (signed modes: down is toward -inf)."""
    t = xp.ldexp(v, -xp.minimum(by, 2000))
    if mode == "down":
        return xp.floor(t)
    if mode == "up":
        return xp.ceil(t)
    if mode == "nearest-even":
        return xp.round(t)
    return xp.trunc(t)


def _round_out(xp: Any, model: MatrixUnitModel, total: Any, grid: Any, mode: str) -> Any:
    """Round ``total * 2^grid`` onto the output format (gradual underflow, inf past the top)."""
    return _round_value(xp, model, xp.ldexp(total, grid), mode)


def _round_value(xp: Any, model: MatrixUnitModel, value: Any, mode: str) -> Any:
    fout = model.output_float
    if mode == "toward-zero" and model.output_fraction_bits == fout.mantissa_bits and model.subnormals_out == "keep":
        return _truncate_value(xp, fout, value)
    mag = xp.abs(value)
    exp = _exponent(xp, mag, fout.emin)
    shift = model.output_fraction_bits - exp
    t = mag * _pow2(xp, shift)
    r = xp.round(t) if mode == "nearest-even" else xp.floor(t)
    out = r * _pow2(xp, -shift)
    out = xp.where(out >= 2.0 ** (fout.emax + 1), xp.inf, out)
    out = xp.where(value < 0, -out, out)
    if model.subnormals_out == "flush":
        out = xp.where(xp.abs(out) < 2.0**fout.emin, 0.0, out)
    return out


def _truncate_value(xp: Any, fout: Any, value: Any) -> Any:
    """Round toward zero onto ``fout`` by clearing the float64 fraction bits it does not have
    (normal range), or truncating on the subnormal grid below ``2^emin``; inf past the top."""
    p = fout.mantissa_bits
    keep = ~((1 << (52 - p)) - 1)
    masked = _from_bits(xp, _bits(xp, value) & keep)
    quantum = 2.0 ** (fout.emin - p)
    sub = xp.trunc(value * (1.0 / quantum)) * quantum
    out = xp.where(xp.abs(value) < 2.0**fout.emin, sub, masked) + 0.0  # a zero result is +0
    return xp.where(xp.abs(out) >= 2.0 ** (fout.emax + 1), xp.where(value < 0, -xp.inf, xp.inf), out)


def _round_two(xp: Any, model: MatrixUnitModel, x: Any, y: Any) -> Any:
    """``x + y`` (two output-format values) with one rounding: when their exponents are far
    apart, the smaller is replaced by a tiny value of its sign that rounds the same way, so the
    float64 sum is exact."""
    big = xp.maximum(xp.abs(x), xp.abs(y))
    small_is_y = xp.abs(y) <= xp.abs(x)
    small = xp.where(small_is_y, y, x)
    large = xp.where(small_is_y, x, y)
    e = _exponent(xp, big, -1022)
    far = (small != 0) & (xp.abs(small) < xp.ldexp(xp.ones_like(big), e - 26))
    small = xp.where(far, xp.where(small < 0, -1.0, 1.0) * xp.ldexp(xp.ones_like(big), e - 27), small)
    return _round_value(xp, model, large + small, model.final_rounding)


def _pairwise(xp: Any, model: MatrixUnitModel, prod: Any, c: Any) -> Any:
    """fp32 products, a binary tree of fp32 additions, then c; each rounds to nearest even and
    flushes below 2^-126 when the unit flushes."""
    flush = model.subnormals_out == "flush"

    def ftz(v: Any) -> Any:
        return xp.where(xp.abs(v) < np.float32(2.0**ACCUMULATOR_EMIN), np.float32(0.0), v) if flush else v

    level = ftz(prod.astype(np.float32))
    while level.shape[-1] > 1:
        level = ftz(level[..., 0::2] + level[..., 1::2])
    return ftz(c.astype(np.float32) + level[..., 0]).astype(np.float64)
