"""Short rounding sequences for the formats emulation meets most, bit-identical to round_float.

:func:`hwbench.accuracy.numerics.rounding.round_float` handles every format with one general integer
algorithm (per-element exponent, variable shift, overflow and subnormal fix-ups: about forty
integer operations per element). Inside an emulated kernel *every* operation is followed by a
rounding, so that cost multiplies the kernel's. Most emulated formats, though, keep the
carrier's exponent range and only shorten the significand: bf16 and TF32 on an fp32 carrier,
the GroqChip's "reduced-precision fp32". For those the target grid is the carrier's grid with
the low ``d`` fraction bits cleared, for normals and subnormals alike, and overflow is the
carrier's own (a carry out of the top binade gives the infinity bit pattern). Rounding is then
a constant-shift integer sequence of three to six operations plus a NaN guard, which XLA fuses
into the surrounding arithmetic.

Formats with a narrower exponent range than the carrier's (fp16 on fp32) have two short
sequences of their own: nearest-even (XLA's float16 conversion under JAX) and stochastic rounding
(the IPU rounds every fp16 operation so), each about half the general algorithm or less.

:func:`fast_rounder` returns such a rounder when the format qualifies and None otherwise (the
caller uses round_float). The results are bit-identical to round_float for every input, and so
is stochastic rounding onto carrier-range formats (same random bits, same comparison); the tests
check this. Stochastic rounding onto narrower-range formats (:class:`StreamRounder`) takes its
bits in the order of an add-and-clear (issue 31 allowed replacing that model-owned stream): its
tests are a reference of their own and statistical ones (``tests/accuracy/test_random_stream.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.accuracy.numerics.formats import FORMATS, FloatFormat, RoundingMode
from hwbench.accuracy.numerics.random_bits import uniform_bits

if TYPE_CHECKING:
    from hwbench.accuracy.numerics.rounding_bits import Plan

__all__ = ["StreamRounder", "fast_rounder"]

# carrier -> (fraction bits, emin, emax, unsigned int dtype, float dtype)
_CARRIERS = {
    "float32": (23, -126, 127, np.uint32, np.float32),
    "float64": (52, -1022, 1023, np.uint64, np.float64),
}

Rounder = Callable[..., Any]


def fast_rounder(fmt: FloatFormat, mode: RoundingMode, carrier: str) -> Rounder | None:
    """A rounder ``(xp, x, *, seed, counter, random_bits, index, nan_guard) -> rounded x``, or None.

    Qualifying formats have the carrier's exponent range, IEEE specials and overflow, and
    gradual underflow or subnormal inputs read as zero (``daz`` / ``ftz-daz``; with the
    carrier's emin no normal input rounds below the smallest normal, so a flush of results has
    nothing more to do): only ``mantissa_bits`` and that differ. ``xp`` is numpy or jax.numpy.

    Every rounder keeps a NaN's bits with a select; ``nan_guard=False`` leaves that select out,
    for callers that know ``x`` holds no NaN (or replace every NaN themselves): a NaN then comes
    out as some other pattern (inf, another NaN, a signed zero), while every other input rounds
    exactly as with the guard. A number never rounds to NaN onto a format with infinities or a
    saturating overflow (a format without either turns overflow into NaN).
    """
    m_c, emin, emax, udt, _ = _CARRIERS[carrier]
    if mode is RoundingMode.NEAREST_EVEN and fmt.emin > emin:
        return _narrow_nearest_rounder(fmt, carrier)
    if mode is RoundingMode.STOCHASTIC and fmt.emin > emin:
        return _narrow_stochastic_rounder(fmt, carrier)
    natural_max = float(np.ldexp(2.0 - np.ldexp(1.0, -fmt.mantissa_bits), emax))
    if not (
        fmt.emin == emin
        and fmt.emax == emax
        and fmt.subnormals in ("keep", "daz", "ftz-daz")
        and fmt.overflow == "inf"
        and fmt.special == "ieee"
        and (fmt.max_finite is None or fmt.max_finite == natural_max)
        and 1 <= fmt.mantissa_bits < m_c  # with no fraction bit the parity bit is the implicit one
    ):
        return None
    d = m_c - fmt.mantissa_bits
    width = np.dtype(udt).itemsize * 8
    sign = 1 << (width - 1)
    daz = fmt.subnormals != "keep"  # subnormal inputs read as zero: the input's signed zero
    exp_mask = ((1 << width) - 1) ^ sign ^ ((1 << m_c) - 1)

    def rounder(
        xp: Any,
        x: Any,
        *,
        seed: int = 0,
        counter: Any = 0,
        random_bits: int = 32,
        index: Any = None,
        nan_guard: bool = True,
    ) -> Any:
        b = _to_bits(xp, x, udt)
        rand = None
        if mode is RoundingMode.STOCHASTIC:
            rand = uniform_bits(seed, counter, index, random_bits, xp=xp).astype(udt)
        r = _carrier_range_bits(xp, b, mode, d, udt, rand, random_bits)
        if daz:
            r = xp.where((b & xp.asarray(exp_mask, dtype=udt)) == 0, b & xp.asarray(sign, dtype=udt), r)
        out = _from_bits(xp, r, x.dtype)
        # NaN keeps its bits; tested on the float (one compare) rather than on the bits (two ops):
        # measured faster on io-ehh (groq default 1.76x native against 2.27x with the bit test)
        return xp.where(xp.isnan(x), x, out) if nan_guard else out

    return rounder


def _carrier_range_bits(xp: Any, b: Any, mode: RoundingMode, d: int, udt: Any, rand: Any, random_bits: int) -> Any:
    """The bit pattern ``b`` rounded in ``mode`` to a grid ``d`` bits coarser than its own (NaN aside)."""

    def u(c: int) -> Any:
        return xp.asarray(c, dtype=udt)

    width = np.dtype(udt).itemsize * 8
    low = (1 << d) - 1
    mask = ((1 << width) - 1) ^ low
    sign = 1 << (width - 1)
    if mode is RoundingMode.NEAREST_EVEN:
        return (b + u(low >> 1) + ((b >> u(d)) & u(1))) & u(mask)
    if mode is RoundingMode.NEAREST_AWAY:
        return (b + u(1 << (d - 1))) & u(mask)
    if mode is RoundingMode.TOWARD_ZERO:
        return b & u(mask)
    if mode in (RoundingMode.UP, RoundingMode.DOWN):
        away = (b & u(sign)) == u(0) if mode is RoundingMode.UP else (b & u(sign)) != u(0)
        return xp.where(away, b + u(low), b) & u(mask)
    if mode is RoundingMode.ODD:
        return (b & u(mask)) | xp.where((b & u(low)) != u(0), u(1 << d), u(0))
    # STOCHASTIC, as round_float: up when rand < floor(rem / 2^d * 2^nbits)
    rem = b & u(low)
    threshold = rem >> u(d - random_bits) if d >= random_bits else rem << u(random_bits - d)
    return (b & u(mask)) + xp.where(rand < threshold, u(1 << d), u(0))


def _narrow_nearest_rounder(fmt: FloatFormat, carrier: str) -> Rounder | None:
    """Nearest-even onto a format with a narrower exponent range (fp16 on an fp32 carrier).

    :func:`hwbench.accuracy.numerics.rounding_bits.round_bits` specialised to one mode: the bits to drop grow
    by one per binade below the format's smallest normal (``s = d + max(0, t - e)``), and while
    ``s`` stays within the carrier's fraction the rounding is the constant-shift sequence with a
    per-element shift; values below half the smallest subnormal go to zero, those between it and
    the smallest subnormal up to it. Overflow (decided after rounding) gives inf, or the largest
    finite value for saturating formats, as the general algorithm does; NaN keeps its bits.
    About half the general algorithm's operations. None for formats it does not cover.
    """
    from hwbench.accuracy.numerics.rounding_bits import plan

    if fmt.subnormals != "keep" or fmt.special != "ieee" or fmt.overflow not in ("inf", "saturate"):
        return None
    p = plan(fmt, carrier, RoundingMode.NEAREST_EVEN)
    m_c, udt = p.m_c, _CARRIERS[carrier][3]
    if not (1 <= fmt.mantissa_bits < m_c and p.t - fmt.mantissa_bits >= 2 and fmt.emax <= _CARRIERS[carrier][2]):
        return None
    first_regular = p.t - fmt.mantissa_bits  # lowest exponent field with s <= m_c
    overflow = p.max_bits if p.saturate else p.inf
    half_on_fp32 = carrier == "float32" and _is_ieee_half(fmt)

    def rounder(xp: Any, x: Any, *, nan_guard: bool = True, **_: Any) -> Any:
        if half_on_fp32 and xp is not np:
            return _through_half(x, nan_guard=nan_guard)

        def u(c: int) -> Any:
            return xp.asarray(c, dtype=udt)

        one = u(1)
        b = _to_bits(xp, x, udt)
        mag = b & u(p.abs_mask)
        e_field = mag >> u(m_c)
        regular = e_field >= u(first_regular)
        s = u(p.d) + xp.maximum(u(p.t), e_field) - e_field  # d + max(0, t - e)
        s = xp.minimum(s, u(m_c))  # (only lanes with s <= m_c use it)
        parity = (((mag & u(p.frac_mask)) | u(1 << m_c)) >> s) & one  # q's last bit, implicit one included
        low = (one << s) - one
        res = (mag + (low >> one) + parity) & ~low
        # s > m_c: |x| < 2^(emin - m), rounds to 0 or, above half of it, up to it
        half_q = (e_field == u(first_regular - 1)) & ((mag & u(p.frac_mask)) != u(0))
        res = xp.where(regular, res, xp.where(half_q, u(p.q_bits), u(0)))
        res = xp.where(res > u(p.max_bits), u(overflow), res)
        out = _from_bits(xp, res | (b & u(p.sign)), x.dtype)
        return xp.where(xp.isnan(x), x, out) if nan_guard else out

    return rounder


class StreamRounder:
    """A stochastic rounder that may take its 32 random bits per element from the caller.

    The emulating ops pass the step stream's bits (``rand``, :func:`random_bits.op_bits`): one
    multiply per rounding instead of a hash per element. Called without ``rand`` it draws
    :func:`random_bits.uniform_bits` itself.
    """

    def __init__(self, fn: Rounder) -> None:
        self._fn = fn

    def __call__(self, xp: Any, x: Any, **kwargs: Any) -> Any:
        return self._fn(xp, x, **kwargs)


def _narrow_stochastic_rounder(fmt: FloatFormat, carrier: str) -> Rounder | None:
    """Stochastic rounding onto a format with a narrower exponent range (fp16 on an fp32 carrier).

    The IPU's fp16 mode rounds every operation stochastically, so this sequence is the cost of
    that mode. With ``d = 23 - m`` the bits an fp32 normal has below the format's ulp, it decides
    with the top ``d`` random bits ``r``:

    * results in the format's normal range: ``(bits(|x|) + r) & ~(2^d - 1)`` — the add carries
      into the kept bits (exponent included) exactly when ``r >= 2^d - F``, ``F`` the dropped
      bits, so the probability of rounding away from zero is ``F / 2^d``, the dropped fraction
      *exactly* (an fp32 value has no more bits there);
    * below the smallest normal ``2^emin`` (the format's subnormals, a fixed grid of
      ``2^(emin - m)``): ``2^emin`` is added first, which moves ``|x|`` into the binade whose
      ulp *is* that grid, the same add-and-clear rounds it there, and ``2^emin`` is subtracted
      again (exact). The first add is one fp32 rounding (to nearest even) of the bits below
      ``2^(emin - 23)``, so there the probability is the dropped fraction to ``d`` bits (within
      ``2^-d`` ulp); fp32 subnormal inputs (which XLA reads as zero) give the same result on
      numpy and JAX because ``2^emin`` absorbs them (``emin >= -102``);
    * overflow after rounding as the general algorithm decides it (the largest value where the
      format saturates, inf, or NaN where it has none), inf inputs alike; NaN keeps its bits.

    About a dozen integer and float operations, a third of the general algorithm. Fewer than
    ``d`` random bits take the general algorithm (with :func:`uniform_bits`). None for formats
    that flush, have an unsigned zero, or reach fp32's own subnormal range.
    """
    from hwbench.accuracy.numerics.rounding_bits import plan

    if fmt.subnormals != "keep" or fmt.special == "fnuz" or carrier != "float32":
        return None
    p = plan(fmt, carrier, RoundingMode.STOCHASTIC)
    if not (1 <= fmt.mantissa_bits < p.m_c and fmt.emin >= -102 and fmt.emin - fmt.mantissa_bits >= -126):
        return None

    def rounder(
        xp: Any,
        x: Any,
        *,
        seed: int = 0,
        counter: Any = 0,
        random_bits: int = 32,
        index: Any = None,
        rand: Any = None,
        nan_guard: bool = True,
    ) -> Any:
        if random_bits < p.d:  # the general algorithm, with that many bits of the hash
            from hwbench.accuracy.numerics.rounding_bits import round_bits

            bits = uniform_bits(seed, counter, index, random_bits, xp=xp)
            return _from_bits(xp, round_bits(xp, _to_bits(xp, x, np.uint32), p, bits, random_bits), x.dtype)
        if rand is None:
            rand = uniform_bits(seed, counter, index, 32, xp=xp)
        out = _from_bits(xp, _stochastic_narrow_bits(xp, x, rand, p), x.dtype)
        return xp.where(xp.isnan(x), x, out) if nan_guard else out

    return StreamRounder(rounder)


def _stochastic_narrow_bits(xp: Any, x: Any, rand: Any, p: Plan) -> Any:
    """The bits of :func:`_narrow_stochastic_rounder`'s result (NaN lanes aside)."""

    def u(c: int) -> Any:
        return xp.asarray(c, dtype=np.uint32)

    b = _to_bits(xp, x, np.uint32)
    sign = b & u(p.sign)
    mag = b ^ sign
    # 2^emin where |x| is below it (moves it into the binade whose ulp is the subnormal grid), else 0
    lift = _from_bits(xp, xp.where(mag < u(p.minnorm_bits), u(p.minnorm_bits), u(0)), np.float32)
    lifted = _to_bits(xp, _from_bits(xp, mag, np.float32) + lift, np.uint32)
    res = (lifted + (rand >> u(32 - p.d))) & u(0xFFFFFFFF ^ ((1 << p.d) - 1))
    res = _to_bits(xp, _from_bits(xp, res, np.float32) - lift, np.uint32)
    if p.saturate:
        res = xp.minimum(res, u(p.max_bits))
    else:
        res = xp.where(res > u(p.max_bits), u(p.inf if p.has_inf else p.qnan), res)
    return res | sign


def _is_ieee_half(fmt: FloatFormat) -> bool:
    """Whether ``fmt`` is IEEE binary16 (any name): the format XLA's float16 conversion rounds to."""
    half = FORMATS["fp16"]
    return fmt.model_dump(exclude={"name"}) == half.model_dump(exclude={"name"})


def _through_half(x: Any, *, nan_guard: bool = True) -> Any:
    """IEEE binary16 nearest-even of float32 ``x`` under JAX: XLA's conversion there and back.

    Two instructions per element (F16C's ``vcvtps2ph`` / ``vcvtph2ps`` on x86) instead of the
    integer sequence's twenty, and cheap enough that XLA may recompute it wherever it fuses.
    Bit-identical to the integer sequence for every one of the 2**32 float32 inputs on XLA:CPU
    (subnormals kept, overflow to inf, ties to even), NaN keeping its bits as there (the
    conversion would quiet it and drop payload bits); tests/accuracy/test_emulate_fast_rounding.py
    checks a sweep of every sign, exponent and leading fraction bits with the rounding-critical
    low bits.
    """
    import jax.numpy as jnp

    out = x.astype(jnp.float16).astype(jnp.float32)
    return jnp.where(jnp.isnan(x), x, out) if nan_guard else out


def _to_bits(xp: Any, x: Any, udt: Any) -> Any:
    if xp is np:
        arr = np.asarray(x)
        return arr.reshape(1).view(udt).reshape(()) if arr.ndim == 0 else arr.view(udt)
    from jax import lax

    return lax.bitcast_convert_type(x, udt)


def _from_bits(xp: Any, b: Any, dtype: Any) -> Any:
    if xp is np:
        arr = np.asarray(b)
        out = arr.reshape(1).view(dtype).reshape(()) if arr.ndim == 0 else arr.view(dtype)
        return out
    from jax import lax

    return lax.bitcast_convert_type(b, dtype)
