"""Hypothesis strategies shared by the rounding tests (and checks that they hit their targets).

Uniformly random bit patterns almost never land on the values where rounding code goes wrong:
exact ties of the *target* format, values one carrier ulp either side of a tie, the overflow
threshold, the subnormal range and the gap below the smallest subnormal. ``bit_patterns`` mixes
uniform patterns with those classes; ``batches`` adds a numpy-generated block per example so that
one example checks hundreds of values (10,000 examples stay fast) while the drawn part still
shrinks to a minimal failing value.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hwbench.accuracy.formats import FORMATS, FloatFormat, custom_float, get_format

CARRIERS = {
    "float32": (32, 23, 127, np.float32, np.uint32),
    "float64": (64, 52, 1023, np.float64, np.uint64),
}

ML_DTYPES_PRESETS = ["bf16", "fp16", "fp8-e4m3fn", "fp8-e5m2", "fp8-e4m3fnuz", "fp8-e5m2fnuz"]


def _pattern(carrier: str, sign: int, e: int, frac: int) -> int:
    """Bit pattern of ``(-1)^sign * 1.frac * 2^e`` (normal in the carrier)."""
    width, m_c, bias, _, _ = CARRIERS[carrier]
    return (sign << (width - 1)) | ((e + bias) << m_c) | (frac & ((1 << m_c) - 1))


def bits_of(value: float, carrier: str) -> int:
    _, _, _, fdt, udt = CARRIERS[carrier]
    return int(np.asarray(value, dtype=fdt).view(udt))


@st.composite
def targeted_bits(draw: st.DrawFn, fmt: FloatFormat, carrier: str = "float32") -> int:
    """One bit pattern from a class where rounding onto ``fmt`` is delicate."""
    width, m_c, bias, _, _ = CARRIERS[carrier]
    emin_c, emax_c = 1 - bias, bias
    m = fmt.mantissa_bits
    sign = draw(st.integers(0, 1))
    kind = draw(
        st.sampled_from(["any", "tie", "near-tie", "normal", "carrier-subnormal", "special", "overflow", "tiny",
                         "boundary"])
    )
    if kind == "any":
        return draw(st.integers(0, 2**width - 1))
    if kind in ("tie", "near-tie"):
        # a value whose bits below the target quantum are exactly 100..0 (a tie), +-1 carrier ulp
        e = draw(st.integers(max(fmt.emin - m - 1, emin_c), min(fmt.emax + 1, emax_c)))
        keep = m - max(0, fmt.emin - e)  # fraction bits the target keeps at this exponent
        if keep < 0:  # below the smallest subnormal: the only tie is half of it
            return _pattern(carrier, sign, fmt.emin - m - 1, 0)
        drop = m_c - keep
        frac = (draw(st.integers(0, 2**keep - 1)) << drop) | (1 << (drop - 1))
        pat = _pattern(carrier, sign, e, frac)
        if kind == "near-tie":
            pat += draw(st.sampled_from([-1, 1]))
        return pat
    if kind == "normal":
        e = draw(st.integers(max(fmt.emin - m - 3, emin_c), min(fmt.emax + 2, emax_c)))
        return _pattern(carrier, sign, e, draw(st.integers(0, 2**m_c - 1)))
    if kind == "carrier-subnormal":
        drop = (fmt.emin - m) - (emin_c - m_c)  # target quantum in carrier-subnormal units, as a shift
        if 1 <= drop <= m_c and draw(st.booleans()):  # a tie (or near-tie) of the target there
            pat = (draw(st.integers(0, 2 ** (m_c - drop) - 1)) << drop) | (1 << (drop - 1))
            return (sign << (width - 1)) | (pat + draw(st.sampled_from([-1, 0, 0, 1])))
        return (sign << (width - 1)) | draw(st.integers(0, 2**m_c - 1))
    if kind == "special":
        inf = ((1 << (width - 1 - m_c)) - 1) << m_c
        return (sign << (width - 1)) | draw(st.one_of(st.just(inf), st.just(0), st.integers(inf + 1, inf + 2**m_c - 1)))
    if kind == "overflow":
        # around max_value and the overflow threshold max + ulp/2 (as carrier patterns)
        top = bits_of(fmt.max_value, carrier)
        return (sign << (width - 1)) | min(top + draw(st.integers(-8, 2 ** (m_c - m) + 8)), 2 ** (width - 1) - 1)
    if kind == "tiny":
        # around the smallest subnormal and half of it
        q = bits_of(fmt.min_subnormal, carrier)
        return (sign << (width - 1)) | max(0, q + draw(st.integers(-(2 ** (m_c + 1)), 2 ** (m_c + 1))))
    # boundary: around min_normal
    mn = bits_of(fmt.min_normal, carrier)
    return (sign << (width - 1)) | max(0, mn + draw(st.integers(-(2 ** (m_c - m + 1)), 2 ** (m_c - m + 1))))


def random_block(seed: int, fmt: FloatFormat, carrier: str, n: int = 256) -> np.ndarray:
    """``n`` bit patterns: half uniform, half structured (ties, near-ties, scaled normals) for ``fmt``."""
    width, m_c, bias, _, udt = CARRIERS[carrier]
    rng = np.random.default_rng(seed)
    uni = rng.integers(0, 2**63, n // 2, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n // 2, dtype=np.uint64)
    if width == 32:
        uni = (uni >> np.uint64(32)).astype(np.uint32)
    k = n - n // 2
    m = fmt.mantissa_bits
    emin_c = 1 - bias
    e = rng.integers(max(fmt.emin - m - 2, emin_c), min(fmt.emax + 1, bias) + 1, k)
    keep = np.clip(m - np.maximum(0, fmt.emin - e), 0, m)
    drop = (m_c - keep).astype(np.uint64)
    top = rng.integers(0, 2**62, k, dtype=np.uint64) & ((np.uint64(1) << keep.astype(np.uint64)) - np.uint64(1))
    frac = (top << drop) | (np.uint64(1) << (np.maximum(drop, np.uint64(1)) - np.uint64(1)))
    frac = frac + rng.integers(-1, 2, k).astype(np.int64).astype(np.uint64)  # tie, or one carrier ulp off
    pats = (((e + bias).astype(np.uint64) << np.uint64(m_c)) + frac) | (
        rng.integers(0, 2, k, dtype=np.uint64) << np.uint64(width - 1)
    )
    return np.concatenate([uni.astype(udt), pats.astype(udt)])


@lru_cache(maxsize=64)
def pool(fmt: FloatFormat, carrier: str = "float32", n: int = 1 << 16) -> np.ndarray:
    """A fixed, reusable block of patterns for a preset format (built once per process)."""
    return random_block(12345, fmt, carrier, n)


@st.composite
def batches(draw: st.DrawFn, fmt: FloatFormat, carrier: str = "float32", drawn: int = 4, block: int = 64):
    """A float array: a few drawn targeted patterns + a block of random/structured ones.

    For presets the block is a slice of :func:`pool` (cheap); for other formats a fresh seeded
    block (the format changes every example anyway).
    """
    _, _, _, fdt, udt = CARRIERS[carrier]
    picked = draw(st.lists(targeted_bits(fmt, carrier), min_size=1, max_size=drawn))
    if fmt.name in FORMATS and FORMATS[fmt.name] == fmt:
        src = pool(fmt, carrier)
        start = draw(st.integers(0, len(src) - block))
        rest = src[start : start + block]
    else:
        rest = random_block(draw(st.integers(0, 2**32 - 1)), fmt, carrier, block)
    pats = np.concatenate([np.array(picked, dtype=udt), rest])
    return pats.view(fdt)


@st.composite
def custom_formats(draw: st.DrawFn, carrier: str = "float32", max_mantissa: int = 20, conventions: bool = True):
    """Custom float formats that fit ``carrier`` (optionally with FTZ/DAZ, saturation, fn/fnuz)."""
    _, m_c, bias, _, _ = CARRIERS[carrier]
    m = draw(st.integers(1, min(max_mantissa, m_c)))
    emin = draw(st.integers(1 - bias, bias - 1))
    emax = draw(st.integers(emin, bias))
    kw = {}
    if conventions:
        kw["subnormals"] = draw(st.sampled_from(["keep", "keep", "ftz", "daz", "ftz-daz"]))
        kw["overflow"] = draw(st.sampled_from(["inf", "inf", "saturate"]))
        kw["special"] = draw(st.sampled_from(["ieee", "ieee", "fn", "fnuz"]))
        if draw(st.booleans()) and m >= 1:
            # top binade partly reserved (like e4m3fn): max_finite one or more steps below the top
            steps = draw(st.integers(1, 2**m - 1))
            kw["max_finite"] = math.ldexp(float(2 ** (m + 1) - 1 - steps), emax - m)
    return custom_float(m, emin, emax, **kw)


# --- the strategies really produce what they promise --------------------------------------------
@settings(max_examples=100)
@given(st.sampled_from(ML_DTYPES_PRESETS), st.integers(0, 2**32 - 1))
def test_random_block_has_exact_ties(name: str, seed: int) -> None:
    fmt = get_format(name)
    x = random_block(seed, fmt, "float32").view(np.float32)[128:]
    x = x[np.isfinite(x) & (np.abs(x) <= fmt.max_value) & (x != 0)]
    q = fmt.ulp(x)
    scaled = np.abs(x.astype(np.float64)) / q
    frac = scaled - np.floor(scaled)
    assert np.any(frac == 0.5)  # some exact ties of the target format
    assert np.all((frac == 0.5) | (np.abs(frac - 0.5) < 0.5))


def test_targeted_bits_reach_every_class() -> None:
    fmt = get_format("bf16")
    seen = set()

    @settings(max_examples=500)
    @given(targeted_bits(fmt))
    def collect(p: int) -> None:
        x = float(np.array(p, dtype=np.uint32).view(np.float32))
        if math.isnan(x):
            seen.add("nan")
        elif math.isinf(x):
            seen.add("inf")
        elif x == 0:
            seen.add("zero")
        elif abs(x) < 2.0**-126:
            seen.add("subnormal")
        else:
            seen.add("normal")

    collect()
    assert seen == {"nan", "inf", "zero", "subnormal", "normal"}
