"""Issue 30: what makes native fp32 differ from the CPU, as the emulating ops compute it.

* FMA contraction is ``a * b + c`` rounded once, bit for bit (checked against exact rational
  arithmetic rounded by gmpy2, on random operands and on the double-rounding traps that a plain
  binary64 sum falls into), on numpy and under ``jax.jit``, and the emulating namespace fuses
  exactly the patterns it documents;
* the error models' offsets never exceed their bound, are uniform on ``{-n..n}`` and independent
  across elements and steps (6-sigma statistical checks over >= 10^6 draws, fixed seeds, so they
  are deterministic), and every device and function draws its own stream;
* the saturating special-value policy, and the words forensics use for it.
"""

from __future__ import annotations

import math
import operator
from fractions import Fraction
from typing import Any

import gmpy2
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwbench.accuracy.checks import explain
from hwbench.accuracy.numerics.emulate import emulating_ops
from hwbench.accuracy.numerics.emulated_array import EmuArray, unwrap
from hwbench.accuracy.numerics.native_fp32 import (
    DOUBLE_ROUNDING_TRAPS,
    fused_multiply_add,
    offset_ulps,
    offsets_from_bits,
    saturate,
    stream_key,
)
from hwbench.accuracy.numerics.profile import Confidence, ErrorModel, NumericsProfile, OpNumerics
from hwbench.core.engines.jax_engine import JaxOps
from hwbench.core.engines.numpy_engine import NumpyOps
from hwbench.core.ops import OpClass
from hwbench.plugins.devices.a100 import A100Device
from hwbench.plugins.devices.ipu import IpuDevice
from hwbench.plugins.devices.tpu import TpuV3Device
from hwbench.plugins.groqware_shim.numerics import build_profile as groq_profile
from hwbench.plugins.groqware_shim.numerics import default_profile as groq_default

SIGMAS = 6.0
FP32 = gmpy2.context(precision=24, emin=-148, emax=128, subnormalize=True)
MAX32 = float(np.finfo(np.float32).max)


def exact_fma(a: float, b: float, c: float) -> float:
    """``a * b + c`` with exact rationals, rounded once to binary32 (nearest, ties to even) by gmpy2."""
    q = Fraction(a) * Fraction(b) + Fraction(c)
    if q == 0:  # IEEE's sign of an exact zero: -0 only for (-0) + (-0), else +0 (round to nearest)
        negative = a * b == 0 and c == 0 and math.copysign(1, a) * math.copysign(1, b) < 0 and math.copysign(1, c) < 0
        return -0.0 if negative else 0.0
    with gmpy2.local_context(FP32):
        r = gmpy2.mpfr(gmpy2.mpq(q.numerator, q.denominator))
    return float(np.float32(float(r)))


def f32_bits(x: Any) -> list[int]:
    return np.asarray(x, np.float32).view(np.uint32).tolist()


# ------------------------------------------------------------------------------ fused multiply-add
# the double-rounding traps: a binary64 sum rounded to binary32 gets some of them wrong
TRAPS = DOUBLE_ROUNDING_TRAPS


@pytest.mark.parametrize(("a", "b", "c"), TRAPS)
def test_fma_is_rounded_once_even_where_binary64_double_rounds(a: float, b: float, c: float) -> None:
    args = [np.array([v], np.float32) for v in (a, b, c)]
    assert [float(v[0]) for v in args] == [a, b, c]  # exactly representable operands
    want = exact_fma(a, b, c)
    got = fused_multiply_add(np, *args)
    assert f32_bits(got) == f32_bits([want])
    jitted = jax.jit(lambda x, y, z: fused_multiply_add(jnp, x, y, z))(*args)
    assert jitted.dtype == jnp.float32 and f32_bits(jitted) == f32_bits([want])


def test_the_traps_are_real() -> None:
    """A plain binary64 sum rounded to binary32 gets some of TRAPS wrong (so the tests above bite)."""
    wrong = 0
    for a, b, c in TRAPS:
        naive = float(np.float32(np.float64(np.float32(a)) * np.float64(np.float32(b)) + np.float64(np.float32(c))))
        wrong += naive != exact_fma(a, b, c)
    assert wrong >= 2


finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@given(finite32, finite32, finite32)
def test_fma_equals_the_exact_rounding(a: float, b: float, c: float) -> None:
    args = [np.array([v], np.float32) for v in (a, b, c)]
    with np.errstate(over="ignore"):
        want = exact_fma(a, b, c) if abs(Fraction(a) * Fraction(b) + Fraction(c)) < 2**128 else None
        got = fused_multiply_add(np, *args)
    if want is None:  # beyond binary32: infinity with the sign of the exact result
        assert np.isinf(got[0])
        return
    assert f32_bits(got) == f32_bits([want])


def test_fma_random_operands_numpy_and_jax_agree_bitwise() -> None:
    rng = np.random.default_rng(30)
    a, b, c = (rng.standard_normal(50_000).astype(np.float32) * 2.0 ** rng.integers(-20, 20, 50_000) for _ in "abc")
    a, b, c = (v.astype(np.float32) for v in (a, b, c))
    ref = fused_multiply_add(np, a, b, c)
    assert f32_bits(jax.jit(lambda x, y, z: fused_multiply_add(jnp, x, y, z))(a, b, c)) == f32_bits(ref)
    for i in range(0, 50_000, 997):  # a sample against the exact rounding
        assert f32_bits(ref[i]) == f32_bits(exact_fma(float(a[i]), float(b[i]), float(c[i])))


def _fma_profile(**extra: Any) -> NumericsProfile:
    fma = OpNumerics(format="fp32", source="test", confidence=Confidence.ASSUMED)
    return NumericsProfile(name="t", device="t", mode="m", ops={OpClass.FMA: fma}, **extra)


def _ops(profile: NumericsProfile) -> Any:
    ops = emulating_ops(profile)(NumpyOps(np.float32))
    ops.begin_step(0)
    return ops


@pytest.mark.parametrize(
    ("expr", "fused"),
    [
        (lambda a, b, c: a * b + c, lambda a, b, c: (a, b, c)),
        (lambda a, b, c: c + a * b, lambda a, b, c: (a, b, c)),
        (lambda a, b, c: a * b - c, lambda a, b, c: (a, b, -c)),
        (lambda a, b, c: c - a * b, lambda a, b, c: (-a, b, c)),
        (lambda a, b, c: a * b + c * a, lambda a, b, c: (a, b, c * a)),  # both products: the left one
    ],
    ids=["ab+c", "c+ab", "ab-c", "c-ab", "ab+ca"],
)
def test_the_emulation_contracts_the_documented_patterns(expr: Any, fused: Any) -> None:
    rng = np.random.default_rng(7)
    a, b, c = (rng.standard_normal(20_000).astype(np.float32) for _ in "abc")
    ops = _ops(_fma_profile())
    out = unwrap(expr(*(EmuArray(v, ops) for v in (a, b, c))))
    assert f32_bits(out) == f32_bits(fused_multiply_add(np, *fused(a, b, c)))
    separate = expr(a, b, c)
    assert f32_bits(out) != f32_bits(separate)  # contraction changed some results


def test_a_profile_without_fma_rounds_each_op_and_native_profiles_stay_native() -> None:
    rng = np.random.default_rng(8)
    a, b, c = (rng.standard_normal(1000).astype(np.float32) for _ in "abc")
    plain = NumericsProfile(name="t", device="t", mode="m")
    assert plain.is_native() and not _fma_profile().is_native()
    assert not NumericsProfile(name="t", device="t", mode="m", special_values="saturate").is_native()
    raw = emulating_ops(plain)(NumpyOps(np.float32))
    assert isinstance(raw, NumpyOps)  # nothing to emulate: the engine's own ops
    assert f32_bits(a * b + c) == f32_bits(a * b + c)


# ---------------------------------------------------------------------------------- error models
def emulated_offsets(step: int, functions: tuple[str, ...], n: int = 1, draws: int = 1_000_000) -> list[np.ndarray]:
    """The offsets the a100 [cuda-fp32] emulating ops draw at ``step`` for consecutive perturbed
    results of ``functions``, ``draws`` elements each, through the ops' own stream (issue 31: the
    step's element words times each result's odd multiplier, top 24 bits)."""
    ops = emulating_ops(A100Device().numerics("cuda-fp32"), counters=False, seed=3)(NumpyOps(np.float32))
    ops.begin_step(step)
    out = []
    for function in functions:
        seed = ops._next_seed(1, extra=stream_key("a100", function, 0))
        bits = ops._stream_bits((draws,), seed) >> np.uint32(8)
        out.append(offsets_from_bits(bits, n, np, np.float32))
    return out


@pytest.mark.parametrize("n", [1, 2, 5])
def test_the_emulated_stream_is_uniform_on_minus_n_to_n(n: int) -> None:
    draws = 1_200_000
    (k,) = emulated_offsets(4, ("exp",), n, draws)
    assert int(k.min()) == -n and int(k.max()) == n
    counts = np.bincount(k + n, minlength=2 * n + 1)
    p = 1 / (2 * n + 1)
    assert np.all(np.abs(counts - draws * p) <= SIGMAS * math.sqrt(draws * p * (1 - p))), counts
    assert abs(k.mean()) <= SIGMAS * math.sqrt(n * (n + 1) / 3 / draws)  # unbiased


def test_the_emulated_stream_is_independent_across_elements_steps_and_results() -> None:
    draws = 1_000_000
    div0, exp0 = (k.astype(np.float64) for k in emulated_offsets(0, ("div", "exp"), draws=draws))
    (div1,) = (k.astype(np.float64) for k in emulated_offsets(1, ("div",), draws=draws))
    bound = SIGMAS / math.sqrt(draws)
    sd = math.sqrt(draws / 9 * (8 / 9))
    for a, b in ((div0, div1), (div0, exp0), (div0[:-1], div0[1:])):  # steps, results, neighbours
        assert abs(np.corrcoef(a, b)[0, 1]) <= bound
        pairs = np.bincount(((a + 1) * 3 + (b + 1)).astype(np.int64), minlength=9)  # joint: uniform
        assert np.all(np.abs(pairs - len(a) / 9) <= SIGMAS * sd), pairs
    again = emulated_offsets(1, ("div",), draws=draws)[0]
    assert np.array_equal(again, div1)  # deterministic for a seed


@pytest.mark.parametrize("xp", [np, jnp], ids=["numpy", "jax"])
def test_offsets_move_by_whole_steps_and_leave_the_ends_and_specials(xp: Any) -> None:
    tiny = float(np.float32(1e-45))  # the smallest subnormal: one step above zero
    y = np.array([1.0, 2.0, 0.0, tiny, -3.0, MAX32, np.inf, np.nan, -0.0, -tiny * 2, -tiny * 3], np.float32)
    k = np.array([-1, -2, -1, -3, 2, 1, -1, 1, 1, -3, -3], np.int32)
    out = np.asarray(offset_ulps(xp, xp.asarray(y), xp.asarray(k), 3))
    assert out[0] == np.nextafter(np.float32(1), np.float32(0))
    assert out[1] == np.nextafter(np.nextafter(np.float32(2), np.float32(0)), np.float32(0))  # crosses a binade
    assert out[4] == np.nextafter(np.nextafter(np.float32(-3), np.float32(-4)), np.float32(-4))
    # within n = 3 steps of zero or of the largest finite value, infinities, NaN: unchanged
    assert f32_bits(out[[2, 3, 5, 6, 8, 9]]) == f32_bits(y[[2, 3, 5, 6, 8, 9]]) and np.isnan(out[7])
    assert np.signbit(out[8]) and np.signbit(out[9])
    assert out[10] == 0 and np.signbit(out[10])  # n steps from zero: moves, onto zero, keeping its sign


@given(
    st.floats(width=32, allow_nan=False),
    st.integers(-4, 4),
    st.integers(1, 4),
)
def test_an_offset_is_k_steps_or_none_and_never_leaves_the_finite_range(y: float, k: int, n: int) -> None:
    k = max(-n, min(n, k))
    x = np.array([y], np.float32)
    out = offset_ulps(np, x, np.array([k], np.int32), n)
    mag = int(x.view(np.int32)[0]) & 0x7FFFFFFF
    moves = n <= mag <= int(np.array([MAX32], np.float32).view(np.int32)[0]) - n
    toward = np.float32(np.copysign(np.inf, x[0])) if k > 0 else np.float32(0)  # k > 0: away from zero
    want = x.copy()
    for _ in range(abs(k) if moves else 0):
        want = np.nextafter(want, toward)
    assert f32_bits(out) == f32_bits(want)
    assert np.signbit(out[0]) == np.signbit(x[0]) and (np.isfinite(out[0]) == np.isfinite(x[0]))
    if not np.signbit(x[0]):  # exp's results: the unsigned comparison moves exactly the same values
        assert f32_bits(offset_ulps(np, x, np.array([k], np.int32), n, nonnegative=True)) == f32_bits(want)


@pytest.mark.parametrize("engine", ["numpy", "jax"])
def test_the_device_error_model_stays_within_its_bound(engine: str) -> None:
    profile = IpuDevice().numerics("fp32", {"exp_ulps": 3})
    x = np.linspace(-80, 80, 400_000, dtype=np.float32)
    ref = np.exp(x) if engine == "numpy" else np.asarray(jax.jit(jnp.exp)(x))

    def run(v: Any, raw: Any) -> Any:
        ops = emulating_ops(profile)(raw)
        ops.begin_step(0)
        return unwrap(ops.exp(EmuArray(v, ops)))

    if engine == "numpy":
        out = run(x, NumpyOps(np.float32))
    else:
        from hwbench.core.engines.jax_engine import JaxOps

        out = np.asarray(jax.jit(lambda v: run(v, JaxOps(np.float32)))(x))
    steps = out.view(np.int32).astype(np.int64) - ref.view(np.int32).astype(np.int64)
    assert np.abs(steps).max() == 3
    counts = np.bincount(steps + 3)
    sd = math.sqrt(x.size * (1 / 7) * (6 / 7))
    finite_nonzero = np.isfinite(ref) & (ref > 0) & (ref < MAX32)
    assert finite_nonzero.mean() > 0.95
    assert np.all(np.abs(counts - x.size / 7) <= SIGMAS * sd + (~finite_nonzero).sum()), counts


def _exp_offsets(profile: NumericsProfile, function: str = "exp") -> np.ndarray:
    x = np.linspace(-5, 5, 100_000, dtype=np.float32)
    ops = emulating_ops(profile, seed=1)(NumpyOps(np.float32))
    ops.begin_step(3)
    fn = ops.exp if function == "exp" else ops.log
    v = x if function == "exp" else np.abs(x) + 1
    out = unwrap(fn(EmuArray(v, ops)))
    ref = np.exp(v) if function == "exp" else np.log(v)
    return out.view(np.int32).astype(np.int64) - ref.view(np.int32).astype(np.int64)


def test_every_device_and_function_has_its_own_stream() -> None:
    """The issue's case: a100 and ipu with exp_ulps=2 gave the identical deviation (one stream)."""
    a100 = A100Device().numerics("cuda-fp32", {"exp_ulps": 2, "fma_contraction": False, "div_ulps": 0})
    ipu = IpuDevice().numerics("fp32", {"exp_ulps": 2})
    tpu = TpuV3Device().numerics("default", {"exp_ulps": 2})
    patterns = [_exp_offsets(p) for p in (a100, ipu, tpu)]
    for i in range(3):
        for j in range(i + 1, 3):
            assert (patterns[i] == patterns[j]).mean() < 0.3  # independent: about 1/5 agree by chance
    assert (_exp_offsets(ipu, "log") == patterns[1][:100_000]).mean() < 0.3
    keys = {stream_key(d, f) for d in ("a100", "ipu", "tpu-v3", "groq") for f in ("exp", "log", "div", "pow")}
    assert len(keys) == 16


def test_error_model_bound_is_whole_ulps_of_the_knob() -> None:
    assert ErrorModel(ulps=2.7).ulps == 2.7
    ops = _ops(NumericsProfile(name="t", device="t", mode="m", ops={OpClass.DIV: _div(2.7)}))
    x = np.full(200_000, 1.0, np.float32)
    out = unwrap(ops.arith(OpClass.DIV, operator.truediv, EmuArray(x, ops), np.float32(3)))
    steps = out.view(np.int32).astype(np.int64) - (x / np.float32(3)).view(np.int32).astype(np.int64)
    assert set(np.unique(steps).tolist()) == {-2, -1, 0, 1, 2}


# ------------------------------------------------------------------------- division by a constant
def test_xla_divides_by_a_constant_as_a_product_with_its_reciprocal() -> None:
    """The fact the a100 / h100 / tpu profiles' division lowering rests on, measured on this XLA."""
    x = np.random.default_rng(0).normal(0, 50, 100_000).astype(np.float32)
    got = np.asarray(jax.jit(lambda v: v / 8.5)(x))
    assert f32_bits(got) == f32_bits(x * (np.float32(1) / np.float32(8.5)))
    assert f32_bits(got) != f32_bits(x / np.float32(8.5))  # and so not the correctly rounded quotient


@pytest.mark.parametrize("engine", ["numpy", "jax"])
def test_a100_division_by_a_constant_is_a_product_without_the_division_error(engine: str) -> None:
    profile = A100Device().numerics("cuda-fp32")
    assert profile.op(OpClass.DIV).lowering == "constant-reciprocal"
    x = np.random.default_rng(1).normal(0, 50, 50_000).astype(np.float32)
    y = np.random.default_rng(2).uniform(1, 9, 50_000).astype(np.float32)

    def run(kernel: Any) -> np.ndarray:
        raw = NumpyOps(np.float32) if engine == "numpy" else JaxOps(np.float32)
        ops = emulating_ops(profile, counters=False, seed=5)(raw)
        if engine == "numpy":
            ops.begin_step(3)
            return np.asarray(unwrap(kernel(ops, EmuArray(x, ops), EmuArray(y, ops))))

        def step(a: Any, b: Any, t: Any) -> Any:
            ops.begin_step(t)
            return unwrap(kernel(ops, EmuArray(a, ops), EmuArray(b, ops)))

        return np.asarray(jax.jit(step)(x, y, jnp.int32(3)))

    by_constant = run(lambda ops, a, b: a / 8.5)
    assert f32_bits(by_constant) == f32_bits(x * (np.float32(1) / np.float32(8.5)))
    by_int = run(lambda ops, a, b: a / 100)
    assert f32_bits(by_int) == f32_bits(x * (np.float32(1) / np.float32(100)))
    by_value, of_constant = run(lambda ops, a, b: a / b), run(lambda ops, a, b: 8.5 / b)
    for divided, exact in ((by_value, x / y), (of_constant, np.float32(8.5) / y)):
        steps = divided.view(np.int32).astype(np.int64) - exact.view(np.int32).astype(np.int64)
        assert set(np.unique(steps).tolist()) == {-1, 0, 1}  # divisions by a computed value keep div.full's error


def _div(ulps: float) -> OpNumerics:
    return OpNumerics(format="fp32", error=ErrorModel(ulps=ulps), source="test", confidence=Confidence.ASSUMED)


# ----------------------------------------------------------------------------- special values
def test_saturate_policy() -> None:
    x = np.array([np.inf, -np.inf, np.nan, 1.0, -MAX32], np.float32)
    assert saturate(np, x, MAX32).tolist() == [MAX32, -MAX32, 0.0, 1.0, -MAX32]


def test_groq_saturates_division_and_counts_it_as_overflow() -> None:
    profile = groq_default()
    assert profile.special_values == "saturate" and profile.parameters["special_values"] == "saturate"
    reduced_max = profile.op(OpClass.DIV).resolved_format().max_value
    ops = _ops(profile)
    num = EmuArray(np.array([1.0, -2.0, 0.0, 3.0], np.float32), ops)
    out = num / np.array([0.0, 0.0, 0.0, 1.5], np.float32)
    assert unwrap(out).tolist() == [np.float32(reduced_max), -np.float32(reduced_max), 0.0, 2.0]
    counts = dict(zip(ops.counter_names, ops.end_step().tolist(), strict=True))
    assert counts["div.overflow"] == 2 and counts["div.nonfinite"] == 1
    big = EmuArray(np.array([MAX32], np.float32), ops) * np.float32(4)
    assert unwrap(big).tolist() == [MAX32]  # fp32 multiplication saturates at fp32's own maximum
    ieee = _ops(groq_profile("default", {**profile.parameters, "special_values": "ieee"}))
    out = EmuArray(np.array([1.0, 0.0], np.float32), ieee) / np.array([0.0, 0.0], np.float32)
    assert np.isinf(unwrap(out)[0]) and np.isnan(unwrap(out)[1])


def test_forensics_name_the_mechanism() -> None:
    found = {
        "t_ms": 1234.0,
        "cell": 3,
        "variable": "V_soma",
        "kind": "voltage outside [-200, 200] mV",
        "value": 8.5e36,
        "counters": {"div.overflow": 2, "div.nonfinite": 1, "mul.overflow": 5},
        "special_values": "saturate",
    }
    text = explain(found)
    assert "saturated to the largest finite value in div (2 elements)" in text
    assert "an invalid result (0/0) replaced by 0 in div (1 element)" in text
    assert "saturated to the largest finite value in mul (5 elements)" in text
    ieee = explain({**found, "special_values": "ieee", "value": float("nan"), "kind": "non-finite value"})
    assert "overflowed to infinity in div (2 elements)" in ieee and "NaN or infinity born in div" in ieee
