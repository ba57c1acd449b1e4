"""The emulation's short rounding sequences are bit-identical to round_float, for every input (stochastic
rounding onto narrow-range formats: to its own float64 reference, given the same random words)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwbench.accuracy.numerics.emulation_backend import flat_index
from hwbench.accuracy.numerics.fast_rounding import fast_rounder
from hwbench.accuracy.numerics.formats import FORMATS, RoundingMode, custom_float
from hwbench.accuracy.numerics.random_bits import uniform_bits
from hwbench.accuracy.numerics.rounding import round_float

MODES = list(RoundingMode)
CARRIERS = {"float32": (np.float32, np.uint32, 23, 126), "float64": (np.float64, np.uint64, 52, 1022)}


def special_values(dtype: type) -> np.ndarray:
    """Zeros, infinities, NaNs with payloads, subnormals, the largest finite values, ties."""
    info = np.finfo(dtype)
    tiny = info.smallest_subnormal
    vals = [0.0, -0.0, np.inf, -np.inf, np.nan, info.max, -info.max, info.tiny, tiny, -tiny, 1.0, -1.0, 1.5, 3.0]
    out = np.array(vals, dtype=dtype)
    udt = np.uint32 if dtype == np.float32 else np.uint64
    width = 32 if dtype == np.float32 else 64
    nan_payloads = np.array([(1 << (width - 1)) - 1, (((1 << (width - 1)) - 1) ^ ((1 << 12) - 1)) | 1], dtype=udt)
    return np.concatenate([out, nan_payloads.view(dtype), np.nextafter(out[:4], 0)])


def bit_patterns(dtype: type, seed: int, n: int = 4096) -> np.ndarray:
    udt = np.uint32 if dtype == np.float32 else np.uint64
    width = 32 if dtype == np.float32 else 64
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 2**width, size=n, dtype=np.uint64 if width == 64 else np.int64).astype(udt)
    return np.concatenate([raw.view(dtype), special_values(dtype)])


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    udt = np.uint32 if a.dtype == np.float32 else np.uint64
    return bool(np.array_equal(np.asarray(a).view(udt), np.asarray(b).view(udt)))


def test_only_carrier_range_formats_take_the_short_path() -> None:
    assert fast_rounder(FORMATS["bf16"], RoundingMode.NEAREST_EVEN, "float32") is not None
    assert fast_rounder(FORMATS["tf32"], RoundingMode.STOCHASTIC, "float32") is not None
    # a narrower exponent range has a short path for nearest-even and stochastic rounding
    assert fast_rounder(FORMATS["fp16"], RoundingMode.NEAREST_EVEN, "float32") is not None
    assert fast_rounder(FORMATS["fp16"], RoundingMode.STOCHASTIC, "float32") is not None
    assert fast_rounder(FORMATS["fp16"], RoundingMode.STOCHASTIC, "float64") is None
    assert fast_rounder(FORMATS["fp8-e5m2fnuz"], RoundingMode.STOCHASTIC, "float32") is None
    assert fast_rounder(FORMATS["fp16"], RoundingMode.UP, "float32") is None
    assert fast_rounder(custom_float(10, -14, 15, subnormals="ftz"), RoundingMode.NEAREST_EVEN, "float32") is None
    assert fast_rounder(FORMATS["fp8-e4m3fn"], RoundingMode.NEAREST_EVEN, "float32") is None  # no inf
    assert fast_rounder(custom_float(7, -126, 127, subnormals="ftz"), RoundingMode.UP, "float32") is None
    assert fast_rounder(custom_float(7, -126, 127, overflow="saturate"), RoundingMode.UP, "float32") is None
    assert fast_rounder(FORMATS["fp32"], RoundingMode.NEAREST_EVEN, "float64") is not None  # narrower range
    assert fast_rounder(FORMATS["fp32"], RoundingMode.TOWARD_ZERO, "float64") is None
    assert fast_rounder(custom_float(0, -126, 127), RoundingMode.ODD, "float32") is None
    assert fast_rounder(custom_float(30, -1022, 1023), RoundingMode.ODD, "float64") is not None
    # subnormal inputs read as zero (the TPU's bf16) keep the short path; a flush of results alone does not
    assert fast_rounder(custom_float(7, -126, 127, subnormals="ftz-daz"), RoundingMode.TOWARD_ZERO, "float32")
    assert fast_rounder(custom_float(7, -126, 127, subnormals="daz"), RoundingMode.NEAREST_EVEN, "float32")


@settings(max_examples=60)
@given(
    carrier=st.sampled_from(sorted(CARRIERS)),
    mantissa=st.integers(0, 51),
    mode=st.sampled_from(MODES),
    random_bits=st.integers(1, 32),
    seed=st.integers(0, 2**40),
    counter=st.integers(0, 2**32 - 1),
    data_seed=st.integers(0, 2**32 - 1),
)
def test_numpy_matches_round_float(
    carrier: str, mantissa: int, mode: RoundingMode, random_bits: int, seed: int, counter: int, data_seed: int
) -> None:
    dtype, _, m_c, e = CARRIERS[carrier]
    mantissa = 1 + mantissa % (m_c - 1)
    fmt = custom_float(mantissa, -e, e + 1)
    rounder = fast_rounder(fmt, mode, carrier)
    assert rounder is not None
    x = bit_patterns(dtype, data_seed)
    got = rounder(np, x, seed=seed, counter=counter, random_bits=random_bits, index=flat_index(np, x.shape))
    want = round_float(x, fmt, mode, seed=seed, counter=counter, random_bits=random_bits)
    assert got.dtype == x.dtype
    assert same_bits(got, want)


@settings(max_examples=60)
@given(
    carrier=st.sampled_from(sorted(CARRIERS)),
    mantissa=st.integers(0, 51),
    mode=st.sampled_from(MODES),
    subnormals=st.sampled_from(["daz", "ftz-daz"]),
    seed=st.integers(0, 2**40),
    data_seed=st.integers(0, 2**32 - 1),
)
def test_daz_formats_match_round_float(
    carrier: str, mantissa: int, mode: RoundingMode, subnormals: str, seed: int, data_seed: int
) -> None:
    """Carrier-range formats that read subnormal inputs as zero (the TPU's bf16): bit-identical
    to the general algorithm, subnormal inputs of both signs included (``special_values``)."""
    dtype, udt, m_c, e = CARRIERS[carrier]
    fmt = custom_float(1 + mantissa % (m_c - 1), -e, e + 1, subnormals=subnormals)
    rounder = fast_rounder(fmt, mode, carrier)
    assert rounder is not None
    x = bit_patterns(dtype, data_seed)
    width = 8 * np.dtype(udt).itemsize
    keep = udt((1 << (width - 1)) | ((1 << m_c) - 1))  # sign and fraction: the same values made subnormal
    x = np.concatenate([x, (x.view(udt) & keep).view(dtype)])
    got = rounder(np, x, seed=seed, counter=3, random_bits=32, index=flat_index(np, x.shape))
    assert same_bits(got, round_float(x, fmt, mode, seed=seed, counter=3, random_bits=32))


def test_tpu_bf16_split_under_jax_matches_round_float() -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    x = bit_patterns(np.float32, 9, n=20_000)
    fmt = custom_float(7, -126, 127, subnormals="ftz-daz")
    for mode in (RoundingMode.TOWARD_ZERO, RoundingMode.NEAREST_EVEN):
        rounder = fast_rounder(fmt, mode, "float32")
        assert rounder is not None
        got = np.asarray(jax.jit(lambda v, r=rounder: r(jnp, v))(jnp.asarray(x)))
        assert same_bits(got, round_float(x, fmt, mode))


@pytest.mark.parametrize("mode", MODES)
def test_jax_matches_round_float(mode: RoundingMode) -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    x = bit_patterns(np.float32, 7, n=20_000)
    for mantissa in (1, 7, 10, 22):
        fmt = custom_float(mantissa, -126, 127)
        rounder = fast_rounder(fmt, mode, "float32")
        assert rounder is not None

        @jax.jit
        def run(v, counter, rounder=rounder):
            return rounder(jnp, v, seed=11, counter=counter, random_bits=9, index=flat_index(jnp, v.shape))

        got = np.asarray(run(jnp.asarray(x), jnp.int32(5)))
        assert same_bits(got, round_float(x, fmt, mode, seed=11, counter=5, random_bits=9))


def _near_thresholds(fmt: object, dtype: type) -> np.ndarray:
    """The format's smallest subnormal, half of it, its smallest normal, its largest value, the
    overflow tie, and each one's carrier neighbours: where the narrow-range path branches."""
    points = [fmt.min_subnormal, fmt.min_subnormal / 2, fmt.min_subnormal * 1.5, fmt.min_normal, fmt.max_value]
    points.append(fmt.max_value + 2.0 ** (fmt.emax - fmt.mantissa_bits - 1))  # the tie that overflows
    x = np.array(points, dtype=dtype)
    x = np.concatenate([x, np.nextafter(x, 0), np.nextafter(x, np.inf)])
    return np.concatenate([x, -x])


@settings(max_examples=60)
@given(
    carrier=st.sampled_from(sorted(CARRIERS)),
    mantissa=st.integers(1, 20),
    emin=st.integers(2, 105),  # t - m >= 2: formats the short sequence takes (up to m = 20)
    saturate=st.booleans(),
    data_seed=st.integers(0, 2**32 - 1),
)
def test_narrow_range_nearest_even_matches_round_float(
    carrier: str, mantissa: int, emin: int, saturate: bool, data_seed: int
) -> None:
    """Formats like fp16 (exponent range narrower than the carrier's), nearest-even, bit for bit."""
    dtype = CARRIERS[carrier][0]
    fmt = custom_float(mantissa, -emin, emin + 1, overflow="saturate" if saturate else "inf")
    rounder = fast_rounder(fmt, RoundingMode.NEAREST_EVEN, carrier)
    assert rounder is not None
    x = np.concatenate([bit_patterns(dtype, data_seed), _near_thresholds(fmt, dtype)])
    # values near the format's range, where random bit patterns rarely land
    rng = np.random.default_rng(data_seed)
    x = np.concatenate(
        [x, (rng.standard_normal(4096) * 2.0 ** rng.integers(-emin - mantissa - 3, emin + 3, 4096)).astype(dtype)]
    )
    with np.errstate(all="ignore"):
        assert same_bits(rounder(np, x), round_float(x, fmt, "nearest-even"))


def test_narrow_range_nearest_even_under_jax() -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    x = np.concatenate([bit_patterns(np.float32, 3, n=50_000), _near_thresholds(FORMATS["fp16"], np.float32)])
    for fmt in (FORMATS["fp16"], custom_float(10, -14, 15, overflow="saturate")):
        rounder = fast_rounder(fmt, RoundingMode.NEAREST_EVEN, "float32")
        got = np.asarray(jax.jit(lambda v, rounder=rounder: rounder(jnp, v))(jnp.asarray(x)))
        assert same_bits(got, round_float(x, fmt, "nearest-even"))


def _half_critical_patterns() -> np.ndarray:
    """Every float32 whose high 16 bits (sign, exponent, 7 fraction bits) take each of their 65,536
    values, combined with low 16 bits at fp16's rounding points (ties, just below and above them,
    sticky bits): every binade, fp16's subnormal range (where the rounding point moves up into the
    high bits) and the overflow boundary included, NaN payloads too."""
    low = np.array([0, 1, 0x0FFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x3000, 0x5000, 0x7FFF, 0x8000, 0xFFFF], np.uint32)
    high = np.arange(1 << 16, dtype=np.uint32) << np.uint32(16)
    return (high[:, None] | low[None, :]).ravel().view(np.float32)


def test_half_through_xla_conversion_matches_round_float() -> None:
    """Under JAX, IEEE fp16 nearest-even goes through XLA's float16 conversion: bit for bit the same."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    x = _half_critical_patterns()
    for fmt in (FORMATS["fp16"], custom_float(10, -14, 15, name="half-by-another-name")):
        rounder = fast_rounder(fmt, RoundingMode.NEAREST_EVEN, "float32")
        assert rounder is not None
        assert "f16[" in str(jax.make_jaxpr(lambda v, rounder=rounder: rounder(jnp, v))(x[:4]))  # that path
        got = np.asarray(jax.jit(lambda v, rounder=rounder: rounder(jnp, v))(jnp.asarray(x)))
        with np.errstate(all="ignore"):
            assert same_bits(got, round_float(x, fmt, "nearest-even"))


def reference_narrow_stochastic(x: np.ndarray, fmt: Any, rand: np.ndarray) -> np.ndarray:
    """Stochastic rounding onto a narrow-range format as the short sequence defines it, computed
    in float64 and integers: away from zero when the top ``d = 23 - m`` random bits ``r`` satisfy
    ``r >= 2^d - F`` (``F`` the dropped bits), below the smallest normal on ``|x|`` taken to the
    grid of ``2^(emin - 23)`` to nearest even first (the lifting add); overflow per the format."""
    m, d = fmt.mantissa_bits, 23 - fmt.mantissa_bits
    a = np.abs(x.astype(np.float64))
    finite = np.isfinite(a)
    e = np.maximum(np.frexp(np.where(finite, a, 1.0))[1] - 1, fmt.emin)  # binade, at least emin
    v = np.rint(np.where(finite, a, 0.0) / np.ldexp(1.0, e - 23)).astype(np.int64)  # fp32 ulps of that binade
    r = (rand.astype(np.int64) >> (32 - d)) if d else np.zeros_like(v)
    frac = v & ((1 << d) - 1)
    up = (frac > 0) & (r >= (1 << d) - frac)
    mag = np.ldexp(((v >> d) + up).astype(np.float64), e - m)
    over = ~finite | (mag > fmt.max_value)
    limit = fmt.max_value if fmt.overflow == "saturate" else (np.inf if fmt.has_inf else np.nan)
    mag = np.where(over, limit, mag)
    out = np.copysign(mag, x.astype(np.float64)).astype(np.float32)
    return np.where(np.isnan(x), x, out)


def assert_matches_reference(got: np.ndarray, x: np.ndarray, fmt: Any, rand: np.ndarray) -> None:
    want = reference_narrow_stochastic(x, fmt, rand)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert same_bits(got[np.isnan(x)], x[np.isnan(x)])  # NaN keeps its bits
    finite = ~np.isnan(want)
    assert same_bits(got[finite], want[finite])


@settings(max_examples=40)
@given(
    mantissa=st.integers(1, 20),
    emin=st.integers(2, 102),  # emin >= -102 and emin - m >= -126: the formats the short sequence takes
    kind=st.sampled_from(["inf", "saturate", "fn"]),
    seed=st.integers(0, 2**40),
    counter=st.integers(0, 2**32 - 1),
    data_seed=st.integers(0, 2**32 - 1),
)
def test_narrow_range_stochastic_matches_reference(
    mantissa: int, emin: int, kind: str, seed: int, counter: int, data_seed: int
) -> None:
    """fp16-like formats rounded stochastically (the IPU's every op), given the random words: the
    same result as the float64 reference, every sign, binade, subnormal, overflow and NaN; drawing
    its own words when given none (the counter-based hash)."""
    overflow = "saturate" if kind == "saturate" else "inf"
    special = "fn" if kind == "fn" else "ieee"
    fmt = custom_float(mantissa, -emin, emin + 1, overflow=overflow, special=special)
    rounder = fast_rounder(fmt, RoundingMode.STOCHASTIC, "float32")
    assert rounder is not None
    rng = np.random.default_rng(data_seed)
    near = rng.standard_normal(4096) * 2.0 ** rng.integers(-emin - mantissa - 3, emin + 3, 4096)
    x = np.concatenate(
        [bit_patterns(np.float32, data_seed), _near_thresholds(fmt, np.float32), near.astype(np.float32)]
    )
    rand = rng.integers(0, 2**32, x.shape, dtype=np.int64).astype(np.uint32)
    index = flat_index(np, x.shape)
    with np.errstate(all="ignore"):
        assert_matches_reference(rounder(np, x, rand=rand), x, fmt, rand)
        drawn = rounder(np, x, seed=seed, counter=counter, index=index)
        assert_matches_reference(drawn, x, fmt, uniform_bits(seed, counter, index, 32, xp=np))


@pytest.mark.parametrize("random_bits", [1, 5, 12])
def test_narrow_range_stochastic_with_fewer_bits_is_the_general_algorithm(random_bits: int) -> None:
    """Fewer random bits than fp16 drops (13) decide as round_float does with those bits."""
    fmt = FORMATS["fp16"]
    rounder = fast_rounder(fmt, RoundingMode.STOCHASTIC, "float32")
    assert rounder is not None
    x = np.concatenate([bit_patterns(np.float32, 7), _near_thresholds(fmt, np.float32)])
    with np.errstate(all="ignore"):
        got = rounder(np, x, seed=11, counter=4, random_bits=random_bits, index=flat_index(np, x.shape))
        want = round_float(x, fmt, "stochastic", seed=11, counter=4, random_bits=random_bits)
    assert same_bits(got, want)


def test_narrow_range_stochastic_needs_formats_above_fp32_subnormals() -> None:
    """The lifting add must absorb fp32 subnormals (which XLA reads as zero): emin >= -102."""
    assert fast_rounder(custom_float(10, -102, 103), RoundingMode.STOCHASTIC, "float32") is not None
    assert fast_rounder(custom_float(10, -103, 104), RoundingMode.STOCHASTIC, "float32") is None


def test_half_stochastic_under_jax_matches_numpy_and_reference() -> None:
    """The IPU's fp16 formats, every binade and rounding point (``_half_critical_patterns``), jitted:
    bit for bit numpy's result (fp32 subnormal inputs included, which XLA reads as zero)."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from hwbench.plugins.devices.ipu import FP16_CLIP, FP16_NANOO

    x = _half_critical_patterns()
    rand = np.random.default_rng(3).integers(0, 2**32, x.shape, dtype=np.int64).astype(np.uint32)
    for fmt in (FP16_CLIP, FP16_NANOO, FORMATS["fp16"], FORMATS["fp8-e5m2"]):
        rounder = fast_rounder(fmt, RoundingMode.STOCHASTIC, "float32")
        assert rounder is not None

        @jax.jit
        def run(v, r, rounder=rounder):
            return rounder(jnp, v, rand=r)

        got = np.asarray(run(jnp.asarray(x), jnp.asarray(rand)))
        with np.errstate(all="ignore"):
            assert same_bits(got, rounder(np, x, rand=rand))
            assert_matches_reference(got, x, fmt, rand)


@pytest.mark.parametrize("engine", ["numpy", "jax"])
def test_narrow_range_stochastic_keeps_every_nan_bit_for_bit(engine: str) -> None:
    """fp16 stochastic rounding keeps a NaN's sign and payload (quiet or signalling) inside its
    overflow select (no separate NaN test), and still takes overflow and infinities to inf."""
    fmt = FORMATS["fp16"]
    rounder = fast_rounder(fmt, RoundingMode.STOCHASTIC, "float32")
    assert rounder is not None
    nans = np.array([0x7FC00000, 0x7F800001, 0x7FBFFFFF, 0x7FFFFFFF, 0x7FC01234], np.uint32)
    x = np.concatenate([nans, nans | np.uint32(0x80000000)]).view(np.float32)
    x = np.concatenate([x, np.array([np.inf, -np.inf, 65520.0, -65520.0, 3e38, 65504.0, 1.0], np.float32)])
    rand = np.random.default_rng(3).integers(0, 2**32, x.shape, dtype=np.int64).astype(np.uint32)
    with np.errstate(all="ignore"):
        if engine == "numpy":
            got = np.asarray(rounder(np, x, rand=rand))
        else:
            jax = pytest.importorskip("jax")
            import jax.numpy as jnp

            got = np.asarray(jax.jit(lambda v, r: rounder(jnp, v, rand=r))(jnp.asarray(x), jnp.asarray(rand)))
        assert same_bits(got[:10], x[:10])
        assert_matches_reference(got, x, fmt, rand)


@pytest.mark.parametrize(
    "fmt", [custom_float(10, -126, 127, name="reduced-m10"), FORMATS["bf16"], FORMATS["fp16"]], ids=lambda f: f.name
)
@pytest.mark.parametrize("mode", [RoundingMode.NEAREST_EVEN, RoundingMode.TOWARD_ZERO, RoundingMode.STOCHASTIC])
@pytest.mark.parametrize("engine", ["numpy", "jax"])
def test_rounding_without_nan_guard_changes_only_nan_lanes(fmt: Any, mode: RoundingMode, engine: str) -> None:
    """``nan_guard=False`` (callers that hold no NaN, or replace NaN themselves) rounds every other
    input exactly as the guarded rounder, and never turns a number into NaN."""
    fast = fast_rounder(fmt, mode, "float32")
    if fast is None:
        pytest.skip(f"{fmt.name} {mode.value}: no short sequence")
    x = bit_patterns(np.float32, 11)
    kwargs = {"seed": 5, "counter": 2, "random_bits": 32, "index": np.arange(x.size, dtype=np.uint32)}
    if engine == "numpy":
        xp, arg = np, x
    else:
        import jax.numpy as jnp

        xp, arg = jnp, jnp.asarray(x)
    guarded = np.asarray(fast(xp, arg, **kwargs))
    bare = np.asarray(fast(xp, arg, nan_guard=False, **kwargs))
    numbers = ~np.isnan(x)
    assert same_bits(guarded[numbers], bare[numbers])
    assert not np.isnan(bare[numbers]).any()
    assert same_bits(guarded[~numbers], x[~numbers])  # the guard keeps a NaN's bits
