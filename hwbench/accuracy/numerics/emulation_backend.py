"""The few array primitives the emulation needs beyond an engine's ops, per array library.

The emulating ops compute every operation with the engine's own raw ops; what they add —
rounding, event counts, the one-hot lowering's column gathers — needs a handful of array
functions (``isfinite``, a count, ``take``, ``frexp``) of the engine's library. numpy and
``jax.numpy`` share one implementation through their common API; JAX is imported only when a
JAX engine asks for it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hwbench.accuracy.numerics.formats import FixedFormat
from hwbench.core.errors import UnavailableError

__all__ = ["Backend", "backend_for", "flat_index", "round_fixed_values"]


class Backend:
    """numpy-API primitives on one library's arrays (``xp`` is numpy or jax.numpy)."""

    def __init__(self, name: str, xp: Any, array_types: tuple[type, ...]) -> None:
        self.name = name
        self.xp = xp
        self.array_types = array_types

    def is_array(self, x: Any) -> bool:
        return isinstance(x, self.array_types)

    def is_float(self, x: Any) -> bool:
        dtype = getattr(x, "dtype", None)
        return dtype is not None and np.dtype(dtype).kind == "f"

    def isfinite(self, x: Any) -> Any:
        return self.xp.isfinite(x)

    def all_finite(self, x: Any) -> Any:
        return self.xp.all(self.xp.isfinite(x))

    def count(self, mask: Any) -> Any:
        """Number of true elements, as an int32 scalar of this library."""
        return self.xp.sum(mask, dtype=self.xp.int32)

    def vector(self, counts: list[Any]) -> Any:
        """One int32 vector from int32 scalars (an empty list gives an empty vector)."""
        if not counts:
            return self.xp.zeros((0,), dtype=self.xp.int32)
        return self.xp.stack([self.xp.asarray(c, dtype=self.xp.int32) for c in counts])

    def concrete(self, x: Any) -> np.ndarray | None:
        """``x`` as a host numpy array when its values are known now (not a traced value)."""
        try:
            return np.asarray(x)
        except Exception:  # a tracer: values exist only when the compiled program runs
            return None

    def take(self, x: Any, index: np.ndarray) -> Any:
        """``x[..., index]`` for a host integer index array."""
        return self.xp.take(x, self.xp.asarray(index), axis=-1)

    def append_zero(self, x: Any) -> Any:
        """``x`` with one zero appended along the last axis (the one-hot padding slot)."""
        pad = self.xp.zeros((*x.shape[:-1], 1), dtype=x.dtype)
        return self.xp.concatenate([x, pad], axis=-1)

    def zeros(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return self.xp.zeros(shape, dtype=dtype)

    def binade(self, x: Any) -> Any:
        """``floor(log2|x|)`` per element as an integer array (0 for zero, inf and NaN)."""
        _, e = self.xp.frexp(x)
        return e - 1

    def ldexp(self, x: Any, e: Any) -> Any:
        return self.xp.ldexp(x, e)

    def ulp(self, x: Any, emin: int, mantissa_bits: int) -> Any:
        """``2 ** (max(floor(log2|x|), emin) - mantissa_bits)`` per element, built from exponent bits.

        The ulp of ``x`` in a format with that exponent floor and fraction width (``emin`` for
        zero and carrier subnormals; a finite power of two for inf and NaN). It is the value
        ``ldexp(1, max(binade(x), emin) - mantissa_bits)`` gives, exactly, for every ``emin`` not
        below the carrier's, but as a handful of integer operations: ``jax.numpy``'s ``frexp`` and
        ``ldexp`` (a float power) cost ~30x more inside a compiled loop. Results below the
        carrier's smallest normal are its exact subnormals (or zero below the smallest one); an
        XLA:CPU product with them then flushes exactly as it flushed ``ldexp``'s.
        """
        xp = self.xp
        frac, bias, udt, sdt = _CARRIER_BITS[np.dtype(x.dtype).name]
        biased = (self._bits(x, udt) >> np.asarray(frac, udt)) & np.asarray(2 * bias + 1, udt)
        k = xp.maximum(biased.astype(sdt) - np.asarray(bias, sdt), np.asarray(emin, sdt)) - np.asarray(
            mantissa_bits, sdt
        )
        normal = (xp.maximum(k, np.asarray(1 - bias, sdt)) + np.asarray(bias, sdt)).astype(udt) << np.asarray(frac, udt)
        shift = xp.clip(k + np.asarray(bias - 1 + frac, sdt), 0, np.dtype(sdt).itemsize * 8 - 1).astype(udt)
        sub = xp.where(k >= np.asarray(1 - bias - frac, sdt), np.asarray(1, udt) << shift, np.asarray(0, udt))
        return self._float(xp.where(k >= np.asarray(1 - bias, sdt), normal, sub), x.dtype)

    def _bits(self, x: Any, udt: Any) -> Any:
        if self.xp is np:
            return np.asarray(x).view(udt)
        from jax import lax

        return lax.bitcast_convert_type(x, udt)

    def _float(self, b: Any, dtype: Any) -> Any:
        if self.xp is np:
            return np.asarray(b).view(dtype)
        from jax import lax

        return lax.bitcast_convert_type(b, dtype)


# carrier -> (fraction bits, exponent bias, unsigned and signed integer dtypes of its width)
_CARRIER_BITS = {
    "float32": (23, 127, np.uint32, np.int32),
    "float64": (52, 1023, np.uint64, np.int64),
}


def backend_for(ops_name: str) -> Backend:
    """The backend of an engine's raw ops, by the ops' ``name``."""
    if ops_name == "numpy":
        return Backend("numpy", np, (np.ndarray, np.generic))
    if ops_name == "jax":
        import jax
        import jax.numpy as jnp

        return Backend("jax", jnp, (jax.Array, np.ndarray, np.generic))
    raise UnavailableError(
        f"numerics emulation runs on the numpy and jax engines; engine ops '{ops_name}' compute natively only"
    )


def flat_index(xp: Any, shape: tuple[int, ...]) -> Any:
    """Each element's flat index modulo 2**32 (the element key of counter-based random bits)."""
    size = int(np.prod(shape, dtype=np.int64))
    return (xp.arange(size, dtype=xp.uint32) if size < 2**32 else xp.arange(size) % 2**32).reshape(shape)


def round_fixed_values(xp: Any, x: Any, fmt: FixedFormat, *, seed: int, counter: Any) -> Any:
    """``x`` rounded onto the fixed-point grid of ``fmt``, carried as floats of ``x``'s dtype.

    The same values as ``fixed_to_float(round_fixed(x, fmt))`` of :mod:`hwbench.accuracy.numerics.rounding`
    (NaN -> 0, ±inf saturate, overflow wraps or saturates per the format), but computed in the
    carrier's float arithmetic so it also runs inside ``jax.jit`` without 64-bit integers. Every
    step is exact because the format fits the carrier (checked by the profile): scaling by a
    power of two, trunc/floor/rint, and integer-valued sums below ``2^precision``.
    """
    with np.errstate(invalid="ignore", over="ignore"):  # numpy: inf and NaN inputs are expected
        return _round_fixed(xp, x, fmt, seed, counter)


def _round_fixed(xp: Any, x: Any, fmt: FixedFormat, seed: int, counter: Any) -> Any:
    from hwbench.accuracy.numerics.random_bits import uniform_bits

    dt = x.dtype
    y = x * np.asarray(2.0**fmt.frac_bits, dtype=dt)
    y = xp.where(xp.isnan(y), xp.zeros((), dtype=dt), y)
    t = xp.trunc(y)
    f = y - t  # exact
    mode = fmt.rounding
    if mode == "toward-zero":
        r = t
    elif mode == "floor":
        r = xp.floor(y)
    elif mode == "nearest-even":
        r = xp.rint(y)
    elif mode == "nearest-away":
        r = t + xp.where(xp.abs(f) >= 0.5, xp.sign(y), xp.zeros((), dtype=dt))
    elif mode == "nearest-up":
        fl = xp.floor(y)
        r = fl + xp.where(y - fl >= 0.5, np.asarray(1, dt), np.asarray(0, dt))
    else:  # stochastic: away from zero with probability floor(|f| * 2^32) / 2^32
        u = uniform_bits(seed, counter, flat_index(xp, y.shape), 32, xp=xp)
        threshold = xp.floor(xp.abs(f) * np.asarray(2.0**32, dt)).astype(xp.uint32)
        r = t + xp.where(u < threshold, xp.sign(y), xp.zeros((), dtype=dt))
    lo, hi = np.asarray(fmt.raw_min, dt), np.asarray(fmt.raw_max, dt)
    if fmt.overflow == "wrap":
        span = np.asarray(2.0**fmt.total_bits, dt)
        wrapped = xp.mod(r, span)  # exact (floor-mod of integers), in [0, span)
        wrapped = xp.where(wrapped > hi, wrapped - span, wrapped)  # two's complement
        r = xp.where(xp.isinf(r), r, wrapped)
    r = xp.clip(r, lo, hi)  # saturate (and ±inf, which saturate in both modes)
    return r * np.asarray(2.0**-fmt.frac_bits, dtype=dt)
