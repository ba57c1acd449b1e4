"""The integer rounding algorithm shared by the numpy and JAX paths, written against ``xp``.

:func:`round_bits` rounds a float's bit pattern onto a target format (the algorithm is explained
in :mod:`hwbench.accuracy.numerics.rounding`). It lives apart from both front ends so that
:mod:`.rounding` (numpy, and dispatch) and :mod:`.rounding_jax` (``jax.jit``) each import it
without importing each other: the numpy module dispatches to the JAX one, never the reverse.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from hwbench.accuracy.numerics.formats import FloatFormat, RoundingMode
from hwbench.core.errors import UsageError


# ---------------------------------------------------------------------------------------------
# plan: everything about (format, carrier, mode) that is a trace-time constant
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    carrier: str
    width: int  # carrier bits
    m_c: int  # carrier fraction bits
    d: int  # m_c - m: bits dropped from a normal significand
    t: int  # emin + carrier bias: biased exponent of the target's min normal
    sign: int
    abs_mask: int
    frac_mask: int
    inf: int
    qnan: int
    max_bits: int  # bit pattern of max_value
    minnorm_bits: int  # bit pattern of 2^emin
    q_bits: int  # bit pattern of the smallest subnormal 2^(emin - m)
    daz: bool
    ftz: bool
    has_inf: bool
    saturate: bool
    fnuz: bool
    mode: RoundingMode


CARRIER_INFO = {
    "float32": (32, 23, 127, np.float32, np.uint32),
    "float64": (64, 52, 1023, np.float64, np.uint64),
}


def bits_of(value: float, carrier: str) -> int:
    _, _, _, fdt, udt = CARRIER_INFO[carrier]
    return int(np.asarray(value, dtype=fdt).view(udt))


@lru_cache(maxsize=512)
def plan(fmt: FloatFormat, carrier: str, mode: RoundingMode) -> Plan:
    width, m_c, bias, _, _ = CARRIER_INFO[carrier]
    if not fmt.fits(carrier):
        raise UsageError(
            f"format '{fmt.name}' (mantissa_bits={fmt.mantissa_bits}, emin={fmt.emin}, emax={fmt.emax}) "
            f"does not fit a {carrier} carrier; pass float64 data (see carrier_for())"
        )
    sign = 1 << (width - 1)
    inf = ((1 << (width - 1 - m_c)) - 1) << m_c
    return Plan(
        carrier=carrier,
        width=width,
        m_c=m_c,
        d=m_c - fmt.mantissa_bits,
        t=fmt.emin + bias,
        sign=sign,
        abs_mask=sign - 1,
        frac_mask=(1 << m_c) - 1,
        inf=inf,
        qnan=inf | (1 << (m_c - 1)),
        max_bits=bits_of(fmt.max_value, carrier),
        minnorm_bits=bits_of(fmt.min_normal, carrier),
        q_bits=bits_of(fmt.min_subnormal, carrier),
        daz=fmt.flushes_inputs,
        ftz=fmt.flushes_results,
        has_inf=fmt.has_inf,
        saturate=fmt.overflow == "saturate",
        fnuz=fmt.special == "fnuz",
        mode=mode,
    )


def as_mode(mode: RoundingMode | str) -> RoundingMode:
    try:
        return RoundingMode(mode)
    except ValueError:
        from hwbench.core.errors import unknown_name

        raise unknown_name("rounding mode", str(mode), [m.value for m in RoundingMode]) from None


# ---------------------------------------------------------------------------------------------
# the shared integer algorithm (numpy and jax.numpy)
# ---------------------------------------------------------------------------------------------
def round_bits(xp: Any, bits: Any, p: Plan, rand: Any = None, random_bits: int = 32) -> Any:
    """Round carrier bit patterns ``bits`` (uint32/uint64 array of ``xp``) onto the plan's format.

    ``rand`` (stochastic mode only) is a uint32 array of ``random_bits`` uniform bits per element.
    Four steps, each a function of trace-time constants and arrays (so under ``jax.jit`` the
    compiled program is the same single sequence): split the input, find the bits to drop,
    decide the rounding direction, build the result and put the specials back.
    """
    u = _constants(xp, bits.dtype)
    sign = bits & u(p.sign)
    mag = bits & u(p.abs_mask)
    is_nan = mag > u(p.inf)
    is_inf = mag == u(p.inf)
    if p.daz:
        mag = xp.where(mag < u(p.minnorm_bits), u(0), mag)
    neg = sign != u(0)
    s, q, rem, half = _dropped_bits(xp, u, mag, p)
    inc = _rounds_up(xp, u, p, q, rem, half, s, neg, rand, random_bits)
    res = _rounded_magnitude(xp, u, p, mag, s, inc, neg)
    # special inputs
    if p.has_inf and not p.saturate:
        inf_val = u(p.inf)
    else:
        inf_val = u(p.max_bits if p.saturate else p.qnan)
    res = xp.where(is_inf, inf_val, res)
    res = xp.where(is_nan, mag, res)
    if p.fnuz:
        sign = xp.where(res == u(0), u(0), sign)
    return res | sign


def _constants(xp: Any, udt: Any) -> Any:
    """``u(c)``: the integer ``c`` as a scalar of the bit patterns' unsigned dtype."""

    def u(c: int) -> Any:
        return xp.asarray(c, dtype=udt)

    return u


def _dropped_bits(xp: Any, u: Any, mag: Any, p: Plan) -> tuple[Any, Any, Any, Any]:
    """Per element: ``s``, the significand bits to drop (the format's ``d``, plus one per binade
    below its smallest normal); the kept significand ``q``; the dropped remainder ``rem``; and
    ``half``, the remainder's halfway value (1 when nothing is dropped, so an exact input never
    rounds)."""
    zero, one, m_c = u(0), u(1), p.m_c
    e_field = mag >> u(m_c)
    e_eff = xp.maximum(e_field, one)
    # bits to drop: d + max(0, t - e_eff), clamped (anything past m_c + 2 + 33 acts the same)
    below = xp.where(e_eff < u(p.t), u(p.t) - e_eff, zero)
    s = xp.minimum(below, u(m_c + 40)) + u(p.d)
    sig = xp.where(e_field > zero, (mag & u(p.frac_mask)) | u(1 << m_c), mag)
    sc = xp.minimum(s, u(m_c + 1))
    q = sig >> sc
    rem = sig & ((one << sc) - one)
    sh = xp.minimum(s, u(m_c + 2))
    half = one << (xp.maximum(sh, one) - one)  # s == 0 -> half = 1 > rem = 0: exact
    return s, q, rem, half


def _rounds_up(
    xp: Any, u: Any, p: Plan, q: Any, rem: Any, half: Any, s: Any, neg: Any, rand: Any, random_bits: int
) -> Any:
    """Per element: whether the magnitude rounds away from zero, in the plan's mode."""
    one = u(1)
    inexact = rem != u(0)
    q_odd = (q & one) == one
    mode = p.mode
    if mode is RoundingMode.NEAREST_EVEN:
        return (rem > half) | ((rem == half) & q_odd)
    if mode is RoundingMode.NEAREST_AWAY:
        return rem >= half
    if mode is RoundingMode.TOWARD_ZERO:
        return xp.zeros(rem.shape, dtype=bool)
    if mode is RoundingMode.UP:
        return inexact & ~neg
    if mode is RoundingMode.DOWN:
        return inexact & neg
    if mode is RoundingMode.ODD:
        return inexact & ~q_odd
    # STOCHASTIC: up with probability floor(rem / 2^s * 2^nbits) / 2^nbits
    nb = u(random_bits)
    cap = u(p.width - 1)
    r_hi = rem >> xp.minimum(s - nb, cap)  # s >= nb (unsigned wrap is masked out by where)
    r_lo = rem << xp.minimum(nb - s, cap)  # s < nb
    r = xp.where(s >= nb, r_hi, r_lo)
    return rand.astype(rem.dtype) < r


def _rounded_magnitude(xp: Any, u: Any, p: Plan, mag: Any, s: Any, inc: Any, neg: Any) -> Any:
    """The rounded magnitude's bits: the candidate below or above, then overflow (decided after
    rounding with an unbounded exponent) and flush-to-zero of results."""
    zero, one = u(0), u(1)
    tiny = s > u(p.m_c)  # |x| below the smallest subnormal: candidates are 0 and 2^(emin - m)
    sm = xp.minimum(s, u(p.m_c))
    down = xp.where(tiny, zero, mag & ~((one << sm) - one))
    up = xp.where(tiny, u(p.q_bits), down + (one << sm))
    res = xp.where(inc, up, down)
    mode = p.mode
    if p.saturate:
        ovf_val = u(p.max_bits)
    else:
        big = u(p.inf if p.has_inf else p.qnan)
        if mode in (RoundingMode.NEAREST_EVEN, RoundingMode.NEAREST_AWAY, RoundingMode.STOCHASTIC):
            ovf_val = big
        elif mode is RoundingMode.UP:
            ovf_val = xp.where(neg, u(p.max_bits), big)
        elif mode is RoundingMode.DOWN:
            ovf_val = xp.where(neg, big, u(p.max_bits))
        else:  # toward-zero, odd
            ovf_val = u(p.max_bits)
    res = xp.where(res > u(p.max_bits), ovf_val, res)
    if p.ftz:
        res = xp.where(res < u(p.minnorm_bits), zero, res)
    return res


def flat_index(xp: Any, shape: tuple[int, ...]) -> Any:
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if xp is np:
        idx = (np.arange(n, dtype=np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    else:
        idx = xp.arange(n, dtype=xp.uint32)
    return idx.reshape(shape)


def is_jax(*values: Any) -> bool:
    if "jax" not in sys.modules:
        return False
    import jax

    return any(isinstance(v, jax.Array) for v in values)


def classify(before: Any, after: Any, fmt: FloatFormat) -> dict[str, Any]:
    """Per-element event flags of a rounding ``before -> after`` (numpy or JAX arrays).

    ``overflow``: a finite input beyond ``max_value`` that became ±inf, NaN or ±max_value;
    ``underflow``: a nonzero input (NaN excluded) that became zero; ``nonfinite``: the result is
    inf or NaN. The emulation layer sums these into its counters.
    """
    xp: Any = np
    if is_jax(before, after):
        import jax.numpy as jnp

        xp = jnp
    b = xp.asarray(before)
    a = xp.asarray(after)
    mx = fmt.max_value
    finite_b = xp.isfinite(b)
    finite_a = xp.isfinite(a)
    overflow = finite_b & (xp.abs(b) > mx) & (~finite_a | (xp.abs(a) == mx))
    underflow = (b != 0) & ~xp.isnan(b) & (a == 0)
    return {"overflow": overflow, "underflow": underflow, "nonfinite": ~finite_a}
