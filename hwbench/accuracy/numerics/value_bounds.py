"""Trace-time value bounds: which saturations of a saturating profile cannot change a value.

A profile with ``special_values = "saturate"`` clamps every op's result to its format's range and
replaces NaN by 0 (:func:`~hwbench.accuracy.numerics.native_fp32.saturate`). Applied to every
op of a kernel that clamp-and-select costs more than the rest of the emulation on io-ehh
(GroqChip: 2.7x native with it, 1.7x without). Most of it cannot change anything: a saturated
value lies in ``[-max, max]`` and is never NaN, so ``(V + 85) / 8.5`` of a saturated ``V`` is
finite and in range, ``1 / (1 + exp(x))`` lies in ``[0, 1]``, and ``exp`` of a finite value is
never NaN or negative. Bounds known while the kernel is traced (Python-float intervals, from
constants and earlier saturations) decide, per op, whether its result needs

* nothing (every value provably in range and not NaN),
* a clamp without the NaN select (no NaN possible: :func:`~hwbench.accuracy.numerics.native_fp32.
  clamp`), one-sided where the other side is provably in range, or
* the full saturation (operands of unknown range: the loaded state, traced inputs, gathers).

Each choice gives the full saturation's result bit for bit: a clamp is the saturation of a
value that is not NaN, and no clamp at all is its saturation of a value already in range.

Bounds are sound, not tight: an op's exact result interval is computed in float64 from its
operands' intervals (every fp32 value and every finite float64 product or sum of two of them is
finite in float64), then widened for the native op's own rounding (a few ulps for ``exp``) and
for the rounding onto the op's format (relative ``2^-mantissa_bits``, plus that format's smallest
normal for values that round into or out of the subnormal range). Rounding is monotone and the
format's largest finite value is representable, so a result whose exact value lies in range
stays in range in every rounding mode.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["EXP_SLACK", "Bounds", "constant_bounds", "hull", "result_bounds", "rounded"]

Bounds = tuple[float, float]
"""``(lo, hi)``: every element is a number (never NaN) in ``[lo, hi]``; either end may be infinite."""

EXP_SLACK = 2.0**-16
"""Relative error allowed for the engine's native ``exp`` (a few fp32 ulps off the exact value, far below this)."""


def constant_bounds(x: Any) -> Bounds | None:
    """The bounds of a concrete operand (a Python number or a numpy array), None for anything else.

    Traced engine arrays (JAX tracers, device arrays) are not looked into: None.
    """
    if isinstance(x, bool):
        return None
    if isinstance(x, (int, float, np.number)):
        v = float(x)
        return None if math.isnan(v) else (v, v)
    if isinstance(x, np.ndarray) and x.dtype.kind in "fiu" and x.size:
        lo, hi = float(np.min(x)), float(np.max(x))
        return None if math.isnan(lo) or math.isnan(hi) else (lo, hi)
    return None


def hull(*parts: Bounds | None) -> Bounds | None:
    """The smallest interval holding every part, None if any part is unknown."""
    if not parts or any(p is None for p in parts):
        return None
    known = [p for p in parts if p is not None]
    return min(p[0] for p in known), max(p[1] for p in known)


def result_bounds(
    fn: Callable[..., Any] | str, a: Bounds | None, b: Bounds | None = None, *, same: bool = False
) -> Bounds | None:
    """The exact result's interval of ``fn`` (``operator.add/sub/mul/truediv`` or ``"exp"``) on
    operands within ``a`` (and ``b``); None where it is unknown or may hold a NaN. ``same``: both
    operands are one array (``x * x`` is never negative, what ``x ** 2`` and ``x ** 4`` trace to).

    Operands must be finite intervals: ``inf - inf``, ``0 * inf`` and ``inf / inf`` are NaN.
    A division is bounded only when the divisor's interval excludes zero (``x / 0`` is inf or NaN).
    """
    if a is None or not all(math.isfinite(v) for v in a):
        return None
    if fn == "exp":
        return _exp(a[0]), _exp(a[1])
    if b is None or not all(math.isfinite(v) for v in b):
        return None
    if fn is operator.add:
        return a[0] + b[0], a[1] + b[1]
    if fn is operator.sub:
        return a[0] - b[1], a[1] - b[0]
    if fn is operator.mul and same:
        low = 0.0 if a[0] <= 0 <= a[1] else min(a[0] * a[0], a[1] * a[1])
        return low, max(a[0] * a[0], a[1] * a[1])
    if fn is operator.mul:
        corners = [x * y for x in a for y in b]
    elif fn is operator.truediv and (b[0] > 0 or b[1] < 0):
        corners = [x / y for x in a for y in b]
    else:
        return None
    return min(corners), max(corners)


def rounded(exact: Bounds, mantissa_bits: int, smallest_normal: float, *, slack: float = 0.0) -> Bounds:
    """``exact`` widened for a native op's rounding (``slack``, relative) and the rounding onto a
    format with ``mantissa_bits`` fraction bits whose smallest normal is ``smallest_normal``.

    The float64 arithmetic of :func:`result_bounds` is itself within ``2^-52`` of the exact
    interval; the relative widening ``2^-(mantissa_bits - 1)`` covers it with room.
    """
    rel = 2.0 ** -(mantissa_bits - 1) + slack

    def widen(v: float, direction: float) -> float:
        return v + direction * (abs(v) * rel + smallest_normal) if math.isfinite(v) else v

    return widen(exact[0], -1.0), widen(exact[1], 1.0)


def _exp(v: float) -> float:
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf
