"""What makes a device's native fp32 differ from the CPU's: the arithmetic the emulating ops add.

Three mechanisms, each a pure function of engine arrays (numpy or ``jax.numpy``), so that the
emulating namespace (:mod:`hwbench.accuracy.numerics.emulate`) only decides *where* they apply:

* :func:`fused_multiply_add` — ``a * b + c`` rounded once, as a compiler that contracts the
  pattern into an FMA instruction computes it. Exact for fp32 operands: the product of two fp32
  values is exact in binary64 (48 <= 53 significant bits, exponents within range), the sum is
  formed in binary64 *rounded to odd* (round to nearest, then, when the rounding was inexact and
  the last bit is even, one step toward the exact sum, found with Knuth's TwoSum), and rounding
  that to fp32 is then the correctly rounded ``a * b + c``: rounding to odd with at least two
  extra bits never double-rounds (Boldo & Melquiond, "Emulation of FMA and correctly rounded
  sums: proved algorithms using rounding to odd", IEEE Trans. Computers 57(4), 2008).
* :func:`offset_ulps` — an error model for a transcendental function or division whose vendor
  formula is not public: the reference's result moved by a whole number ``k`` of representable
  steps, ``k`` uniform on ``{-n, ..., n}``, drawn from a counter-based stream keyed by (run seed,
  device and function, step, op, element). ``|result - reference| <= n`` ulp always, and every
  ``k`` has probability ``1 / (2n + 1)`` (within ``2**-24``).
* :func:`saturate` — a saturating special-value policy: a result beyond the largest finite value
  (infinity included) becomes that value with its sign, and an invalid result (NaN: 0/0,
  inf - inf) becomes 0, as a division by a saturated reciprocal (0 * max = 0) gives.

Stream keys (:func:`stream_key`) hash the device name with the function name, so two devices,
or exp and log on one device, never share an error pattern.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from hwbench.accuracy.numerics.random_bits import uniform_bits

__all__ = ["clamp", "fused_multiply_add", "offset_ulps", "saturate", "stream_key", "ulp_offsets"]

_M32 = 0xFFFFFFFF


def stream_key(device: str, function: str, seed: int = 0) -> int:
    """The 32-bit key of one device's error stream for one function (``exp``, ``log``, ``div``).

    CRC-32 of ``"device/function"``, mixed with the model's own ``seed``: deterministic across
    runs and machines, and distinct for every (device, function) pair hwbench ships (tested).
    """
    return (zlib.crc32(f"{device}/{function}".encode()) ^ (int(seed) * 0x9E3779B1)) & _M32


def ulp_offsets(seed: int, counter: Any, index: Any, n: int, xp: Any, dtype: Any) -> Any:
    """Whole-ulp offsets ``k``, uniform on ``{-n, ..., n}``, one per element of ``index``.

    ``k = floor(u * (2n + 1)) - n`` with ``u = bits / 2**24`` a 24-bit uniform: exactly, in
    uint32, for ``2n + 1 <= 256`` (every default); above, in the carrier's float type, clamped to
    ``n`` against the product rounding up to ``2n + 1``. Each ``k`` has probability within
    ``2**-24`` of ``1 / (2n + 1)``. Returned in the signed integer type of ``dtype``'s width.
    """
    bits = uniform_bits(seed, counter, index, 24, xp=xp)
    dt = np.dtype(dtype)
    sdt = np.int32 if dt.itemsize == 4 else np.int64
    m = 2 * n + 1
    if m <= 256:  # exact in uint32: floor(bits * m / 2^24), a multiply and a shift
        k = ((bits * np.asarray(m, np.uint32)) >> np.asarray(24, np.uint32)).astype(sdt)
        return k - np.asarray(n, sdt)
    u = bits.astype(dt) * np.asarray(2.0**-24, dt)
    k = xp.floor(u * np.asarray(2 * n + 1, dt)).astype(sdt)
    return xp.minimum(k, np.asarray(2 * n, sdt)) - np.asarray(n, sdt)


def offset_ulps(xp: Any, y: Any, k: Any) -> Any:
    """``y`` moved by ``k`` representable steps of its own IEEE format (fp32 or fp64 carrier).

    Steps are counted on the magnitude's bit pattern, so a move crosses binades the way
    ``nextafter`` does, stops at zero (never changes the sign) and at the largest finite
    value; infinities and NaN stay as they are.
    """
    dt = np.dtype(y.dtype)
    sdt = np.int32 if dt.itemsize == 4 else np.int64
    width = dt.itemsize * 8
    top = np.asarray((1 << (width - 1)) - 1, sdt)
    sign_bit = np.asarray(-(1 << (width - 1)), sdt)
    max_bits = _bits(xp, np.asarray(np.finfo(dt).max, dt), sdt)
    bits = _bits(xp, y, sdt)
    sign = bits & sign_bit
    moved = xp.clip((bits & top) + k.astype(sdt), np.asarray(0, sdt), max_bits)
    out = _float(xp, moved | sign, dt)
    return xp.where(xp.isfinite(y), out, y)


def fused_multiply_add(xp: Any, a: Any, b: Any, c: Any) -> Any:
    """``a * b + c`` rounded once to the fp32 carrier (see the module docstring for why exact).

    ``a``, ``b``, ``c`` are float32 arrays (or scalars broadcasting against them). On JAX the
    binary64 intermediates need 64-bit types; they are switched on for this computation only.
    """
    if xp is np:
        return _fma_f64(np, np.asarray(a, np.float64), np.asarray(b, np.float64), np.asarray(c, np.float64))
    import jax

    with jax.enable_x64(True):
        f64 = xp.float64
        out = _fma_f64(xp, xp.asarray(a).astype(f64), xp.asarray(b).astype(f64), xp.asarray(c).astype(f64))
    return out


def _fma_f64(xp: Any, a: Any, b: Any, c: Any) -> Any:
    p = a * b  # exact: two fp32 significands fit binary64's
    with np.errstate(invalid="ignore", over="ignore"):
        s = p + c
        t = s - p  # TwoSum (Knuth): s + e == p + c exactly where s is finite
        e = (p - (s - t)) + (c - t)
        bits = _bits(xp, s, np.int64)
        even = (bits & np.asarray(1, np.int64)) == 0
        # one step toward the exact sum: away from zero when e has s's sign, else toward it
        step = xp.where((e > 0) == (s > 0), np.asarray(1, np.int64), np.asarray(-1, np.int64))
        fix = xp.isfinite(e) & (e != 0) & even & (s != 0)
        odd = _float(xp, xp.where(fix, bits + step, bits), np.float64)
        return odd.astype(np.float32)


def saturate(xp: Any, x: Any, max_value: float) -> Any:
    """The saturating policy: ``|x| > max`` (inf included) -> ``+-max``, NaN -> 0."""
    dt = np.dtype(x.dtype)
    limit = np.asarray(min(max_value, float(np.finfo(dt).max)), dt)
    clipped = xp.clip(x, -limit, limit)
    return xp.where(xp.isnan(x), np.asarray(0, dt), clipped)


def clamp(xp: Any, x: Any, max_value: float, *, lower: bool = True, upper: bool = True) -> Any:
    """:func:`saturate` of an ``x`` known to hold no NaN, bit for bit, with fewer operations.

    Without the NaN select, and as selects on a strict comparison (what x86's ``minps`` /
    ``maxps`` compute), not as NaN-propagating minimum / maximum. ``lower`` / ``upper``: whether
    that side can be out of range at all (``exp`` is never below ``-max``).
    """
    dt = np.dtype(x.dtype)
    limit = np.asarray(min(max_value, float(np.finfo(dt).max)), dt)
    if upper:
        x = xp.where(x < limit, x, limit)
    if lower:
        x = xp.where(x > -limit, x, -limit)
    return x


def _bits(xp: Any, x: Any, idt: Any) -> Any:
    if xp is np:
        return np.asarray(x).view(idt)
    from jax import lax

    return lax.bitcast_convert_type(x, idt)


def _float(xp: Any, b: Any, dt: Any) -> Any:
    if xp is np:
        return np.asarray(b).view(dt)
    from jax import lax

    return lax.bitcast_convert_type(b, dt)
