"""Counter-based random bits, identical in numpy and in ``jax.numpy``.

Stochastic rounding needs one random number per rounded element. A *counter-based* generator
(a hash of ``(seed, counter, element index)``) gives that without any generator state: the bits
for an element do not depend on evaluation order, on how the array is split or fused by a
compiler, or on which library evaluates it. That is what makes stochastic-rounding emulation
reproducible for a seed and bit-identical between the numpy reference and a jitted JAX kernel.

The hash is built from the 32-bit "lowbias32" integer finaliser (C. Wellons' hash-prospector,
a better-mixing variant of MurmurHash3's ``fmix32``), written with only wrapping ``uint32``
multiply, xor and shift, which numpy and XLA both define the same way:

* the seed (a Python int, up to 64 bits) is folded into two key words at trace time;
* the counter (a Python/numpy int or a traced integer scalar) is reduced modulo ``2**32`` and
  mixed with the first key word into a per-call key;
* each element's flat index (modulo ``2**32``) is hashed through two more rounds keyed by it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["element_words", "hash_key", "mix32", "op_bits", "op_multiplier", "uniform_bits"]

_M32 = 0xFFFFFFFF
_GOLDEN = 0x9E3779B9  # 2^32 / phi, decorrelates consecutive inputs
_C_SEED_HI = 0x85EBCA6B
_C_ELEM = 0xC2B2AE35


def _mix32_int(h: int) -> int:
    """lowbias32 on a Python int (used for the trace-time seed words)."""
    h &= _M32
    h ^= h >> 16
    h = (h * 0x7FEB352D) & _M32
    h ^= h >> 15
    h = (h * 0x846CA68B) & _M32
    h ^= h >> 16
    return h


def mix32(h: Any, xp: Any = np) -> Any:
    """lowbias32 on a ``uint32`` array of ``xp`` (numpy or jax.numpy); wraps modulo 2**32."""
    c1 = xp.asarray(0x7FEB352D, dtype=xp.uint32)
    c2 = xp.asarray(0x846CA68B, dtype=xp.uint32)
    h = h ^ (h >> 16)
    h = h * c1
    h = h ^ (h >> 15)
    h = h * c2
    return h ^ (h >> 16)


def _seed_words(seed: int) -> tuple[int, int]:
    seed = int(seed) & 0xFFFFFFFFFFFFFFFF
    k0 = _mix32_int((seed & _M32) ^ _GOLDEN)
    k1 = _mix32_int(k0 ^ ((seed >> 32) * _C_SEED_HI))
    return k0, k1


def _counter_u32(counter: Any, xp: Any) -> Any:
    """The counter modulo 2**32 as a uint32 scalar of ``xp`` (works on traced JAX scalars)."""
    if isinstance(counter, (int, np.integer)):
        return xp.asarray(int(counter) & _M32, dtype=xp.uint32)
    c = xp.asarray(counter)
    if c.dtype == xp.uint32:
        return c
    if c.dtype.itemsize == 8:
        return (c.astype(xp.uint64) & xp.asarray(_M32, dtype=xp.uint64)).astype(xp.uint32)
    if xp is np:
        return c.astype(np.int64).astype(np.uint64).astype(np.uint32)
    from jax import lax

    return lax.bitcast_convert_type(c.astype(xp.int32), xp.uint32)


def hash_key(seed: int, counter: Any, xp: Any = np) -> tuple[Any, Any]:
    """The per-call key words for ``(seed, counter)``: a uint32 scalar and a trace-time int."""
    k0, k1 = _seed_words(seed)
    c = _counter_u32(counter, xp)
    with np.errstate(over="ignore"):
        key = mix32((c * xp.asarray(_GOLDEN, dtype=xp.uint32)) ^ xp.asarray(k0, dtype=xp.uint32), xp)
    return key, k1


def uniform_bits(seed: int, counter: Any, index: Any, nbits: int = 32, xp: Any = None) -> Any:
    """``nbits`` uniformly distributed random bits (a uint32 in ``[0, 2**nbits)``) per element.

    ``index`` is an integer array (typically the flat element index); the result has its shape.
    ``xp`` defaults to jax.numpy when ``index`` or ``counter`` is a JAX array, else numpy.
    """
    if not 1 <= nbits <= 32:
        raise ValueError(f"nbits must be within 1..32, got {nbits}")
    if xp is None:
        xp = _namespace_of(index, counter)
    key, k1 = hash_key(seed, counter, xp)
    idx = _as_u32(index, xp)
    with np.errstate(over="ignore"):
        h = mix32(idx ^ key, xp)
        h = mix32(h + (key ^ xp.asarray(k1 ^ _C_ELEM, dtype=xp.uint32)), xp)
    if nbits < 32:
        h = h >> xp.asarray(32 - nbits, dtype=xp.uint32)
    return h


def element_words(seed: int, counter: Any, index: Any, xp: Any = None) -> Any:
    """One odd ``uint32`` word per element for ``(seed, counter)``: the base of :func:`op_bits`.

    A step of an emulated kernel draws these once per array shape and derives every rounding's
    bits from them with one multiply each, instead of hashing every element again for every
    operation. The per-call key (both seed words and the counter) is mixed into one scalar
    first, so each element costs one lowbias32 round of ``index ^ key``: a bijection of the
    index for a key, with full avalanche (issue 31; :func:`uniform_bits`' second round cost as
    much as the error models' own arithmetic). tests/accuracy/test_random_stream.py measures the
    stream it gives: uniform, and independent across elements, steps and operations.
    """
    if xp is None:
        xp = _namespace_of(index, counter)
    key, k1 = hash_key(seed, counter, xp)
    with np.errstate(over="ignore"):
        key = mix32(key ^ xp.asarray(k1 ^ _C_ELEM, dtype=xp.uint32), xp)
        return mix32(_as_u32(index, xp) ^ key, xp) | xp.asarray(1, dtype=xp.uint32)


def op_multiplier(key: int) -> int:
    """The odd 32-bit multiplier of operation ``key`` (a 64-bit int, folded like a seed)."""
    k0, k1 = _seed_words(key)
    return _mix32_int(k0 ^ _mix32_int(k1 ^ _C_ELEM)) | 1


def op_bits(words: Any, key: int, xp: Any = np) -> Any:
    """32 random bits per element for operation ``key``: ``words * multiplier(key)`` modulo 2**32.

    ``words`` are :func:`element_words` (odd): for an odd multiplier the product is a bijection of
    the odd words, so its top bits are as uniform as the words, and elements stay independent
    (their words are). Two operations on one element see ``w * a`` and ``w * b``: the top bits
    of the second are those of the first times ``b / a`` (an odd 32-bit ratio) with the first's
    19 low bits unknown, so a decision read from the top bits of one says next to nothing about
    the other; tests/accuracy/test_random_stream.py measures it. Use the *top* bits: the low ones
    of a product depend only on the low bits of the word (the lowest is always 1).
    """
    with np.errstate(over="ignore"):
        return words * xp.asarray(op_multiplier(key), dtype=xp.uint32)


def _as_u32(index: Any, xp: Any) -> Any:
    """An integer index array modulo 2**32, as uint32."""
    idx = xp.asarray(index)
    if idx.dtype == xp.uint32:
        return idx
    return idx.astype(xp.uint32) if xp is not np else idx.astype(np.int64).astype(np.uint32)


def _namespace_of(*values: Any) -> Any:
    import sys

    if "jax" in sys.modules:
        import jax

        if any(isinstance(v, jax.Array) for v in values):
            import jax.numpy as jnp

            return jnp
    return np
