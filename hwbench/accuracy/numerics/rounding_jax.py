"""The JAX path of :func:`hwbench.accuracy.numerics.rounding.round_float`: same algorithm, ``jax.numpy``.

The integer algorithm in :func:`hwbench.accuracy.numerics.rounding_bits.round_bits` runs unchanged on
``jax.numpy`` after a ``lax.bitcast_convert_type`` to uint32/uint64, so it traces into a jitted
kernel and fuses with the surrounding arithmetic. Because it never converts to a narrower float
type, XLA has no convert pair to elide under ``--xla_allow_excess_precision`` and the rounding
always happens. Import this module only where JAX is wanted (it imports jax at import time).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from hwbench.accuracy.numerics.formats import FloatFormat, RoundingMode
from hwbench.accuracy.numerics.random_bits import uniform_bits
from hwbench.accuracy.numerics.rounding_bits import as_mode, flat_index, plan, round_bits
from hwbench.accuracy.numerics.rounding_bits import classify as _classify
from hwbench.core.errors import UsageError

__all__ = ["classify", "round_float"]

_UINT = {jnp.dtype(jnp.float32): jnp.uint32, jnp.dtype(jnp.float64): jnp.uint64}


@partial(jax.jit, static_argnames=("fmt", "mode", "seed", "random_bits"))
def _round_jit(
    x: jax.Array, counter: jax.Array, *, fmt: FloatFormat, mode: RoundingMode, seed: int, random_bits: int
) -> jax.Array:
    p = plan(fmt, jnp.dtype(x.dtype).name, mode)
    udt = _UINT[jnp.dtype(x.dtype)]
    bits = lax.bitcast_convert_type(x, udt)
    rand = None
    if mode is RoundingMode.STOCHASTIC:
        rand = uniform_bits(seed, counter, flat_index(jnp, x.shape), random_bits, xp=jnp)
    out = round_bits(jnp, bits, p, rand, random_bits)
    return lax.bitcast_convert_type(out, x.dtype)


def round_float(
    x: Any,
    fmt: FloatFormat,
    mode: RoundingMode | str = "nearest-even",
    *,
    seed: int = 0,
    counter: Any = 0,
    random_bits: int = 32,
) -> jax.Array:
    """JAX version of :func:`hwbench.accuracy.numerics.rounding.round_float` (same semantics, same bits).

    Traceable under ``jax.jit``; ``fmt``, ``mode``, ``seed`` and ``random_bits`` are static,
    ``counter`` may be traced. float64 inputs need ``jax_enable_x64``.
    """
    if not 1 <= random_bits <= 32:
        raise UsageError(f"random_bits must be within 1..32, got {random_bits}")
    mode = as_mode(mode)
    x = jnp.asarray(x)
    if jnp.dtype(x.dtype) not in _UINT:
        raise UsageError(f"round_float carries values in float32 or float64, got {x.dtype}")
    if isinstance(counter, int):
        counter = jnp.asarray(counter & 0xFFFFFFFF, dtype=jnp.uint32)
    else:
        counter = jnp.asarray(counter)
    plan(fmt, jnp.dtype(x.dtype).name, mode)  # raise the "does not fit" error outside tracing
    out: jax.Array = _round_jit(x, counter, fmt=fmt, mode=mode, seed=int(seed), random_bits=int(random_bits))
    return out


def classify(before: Any, after: Any, fmt: FloatFormat) -> dict[str, jax.Array]:
    """JAX version of :func:`hwbench.accuracy.numerics.rounding.classify`."""
    return _classify(jnp.asarray(before), jnp.asarray(after), fmt)
