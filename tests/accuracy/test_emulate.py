"""The emulating ops namespace on numpy: every result rounded per op class, bit for bit.

Oracles: :func:`hwbench.accuracy.numerics.rounding.round_float` (itself tested against ml_dtypes and an
exact rational oracle), plain numpy float32 arithmetic, and explicitly written dense one-hot
matrix products.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwbench.accuracy.numerics.emulate import COUNTER_NAMES, EmulatingOps, Rule, emulating_ops, representable_in
from hwbench.accuracy.numerics.emulated_array import EmuArray
from hwbench.accuracy.numerics.emulation_backend import backend_for, round_fixed_values
from hwbench.accuracy.numerics.formats import FORMATS, FixedFormat, FloatFormat, RoundingMode, custom_float
from hwbench.accuracy.numerics.profile import Confidence, ErrorModel, NumericsProfile, OpNumerics
from hwbench.accuracy.numerics.rounding import fixed_to_float, round_fixed, round_float
from hwbench.core.engines.numpy_engine import NumpyEngine, NumpyOps
from hwbench.core.errors import UsageError
from hwbench.core.ops import OpClass
from hwbench.plugins.kernels.leaky_ring import LeakyRingKernel

M3 = custom_float(3, -126, 127, name="m3")  # a coarse format with fp32's range (fast path)
BF16 = FORMATS["bf16"]
FP16 = FORMATS["fp16"]


def entry(fmt: object, **kw: object) -> OpNumerics:
    return OpNumerics(format=fmt, source="test", confidence=Confidence.ASSUMED, **kw)


def profile(carrier: str = "float32", **ops: OpNumerics | object) -> NumericsProfile:
    table = {OpClass(k): (v if isinstance(v, OpNumerics) else entry(v)) for k, v in ops.items()}
    return NumericsProfile(name="test", device="test", mode="test", carrier=carrier, ops=table)


def emulated(prof: NumericsProfile, dtype: type = np.float32, **kw: object) -> EmulatingOps:
    ops = emulating_ops(prof, **kw)(NumpyOps(dtype))
    assert isinstance(ops, EmulatingOps)
    ops.begin_step(0)
    return ops


def values(seed: int, n: int = 256, *, positive: bool = False, scale: float = 3.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * np.exp(rng.uniform(-scale, scale, n))).astype(np.float32)
    return np.abs(x) if positive else x


def bits(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    return x.view(np.uint32 if x.dtype == np.float32 else np.uint64)


def assert_same(got: object, want: np.ndarray) -> None:
    raw = got.raw if isinstance(got, EmuArray) else np.asarray(got)
    assert raw.dtype == want.dtype
    np.testing.assert_array_equal(bits(raw), bits(want))


# --- operators and ops functions map onto their op classes -------------------------------------
@settings(max_examples=200)
@given(st.integers(0, 2**32 - 1))
def test_bf16_multiply_is_round_float_of_the_product(seed: int) -> None:
    ops = emulated(profile(mul="bf16"))
    a, b = values(seed), values(seed + 1)
    x, y = ops.load((a, b))
    assert_same(x * y, round_float(a * b, BF16))
    assert_same(b * x, round_float(b * a, BF16))  # ndarray on the left: reflected, still rounded
    assert_same(x * 0.3, round_float(a * np.float32(0.3), BF16))  # constants are carrier constants
    assert_same(x + y, a + b)  # ADD is not in the profile: native


def _f32(x: float) -> np.float32:
    return np.float32(x)


# expression, op class, native float32 value (a > 0)
EXPRESSIONS = {
    "a + b": (OpClass.ADD, lambda o, a, b: a + b),
    "b - a": (OpClass.ADD, lambda o, a, b: b - a),
    "2 - a": (OpClass.ADD, lambda o, a, b: 2 - a),
    "a * b": (OpClass.MUL, lambda o, a, b: a * b),
    "a / b": (OpClass.DIV, lambda o, a, b: a / b),
    "1 / a": (OpClass.DIV, lambda o, a, b: 1 / a),
    "a ** 2.5": (OpClass.POW, lambda o, a, b: a**2.5),
    "ops.power(a, 0.5)": (OpClass.POW, lambda o, a, b: o.power(a, 0.5)),
    "ops.sqrt(a)": (OpClass.POW, lambda o, a, b: o.sqrt(a)),
    "ops.exp(-a)": (OpClass.EXP, lambda o, a, b: o.exp(-a)),
    "ops.log(a)": (OpClass.EXP, lambda o, a, b: o.log(a)),
    "ops.sum(a)": (OpClass.ADD, lambda o, a, b: o.sum(a, 0)),
}


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_each_operation_is_rounded_as_its_class_only(name: str) -> None:
    cls, expr = EXPRESSIONS[name]
    a, b = values(1, positive=True), values(2)
    native = np.asarray(expr(NumpyOps(np.float32), a, b))
    ops = emulated(profile(**{cls.value: M3}))
    assert_same(expr(ops, *ops.load((a, b))), round_float(native, M3))
    others = emulated(profile(**{c.value: M3 for c in OpClass if c is not cls}))
    assert_same(expr(others, *others.load((a, b))), native)


def test_integer_powers_are_repeated_multiplication() -> None:
    """``x ** k`` with an int k is what XLA's integer_pow emits: square-and-multiply (MUL)."""
    a = values(3)
    r = lambda v: round_float(v, M3)  # noqa: E731
    ops = emulated(profile(mul=M3, div=M3))
    (x,) = ops.load((a,))
    assert_same(x**2, r(a * a))
    assert_same(x**3, r(a * r(a * a)))
    assert_same(x**4, r(r(a * a) * r(a * a)))
    assert_same(ops.power(x, 5), r(a * r(r(a * a) * r(a * a))))
    assert_same(x**-2, r(np.float32(1) / r(a * a)))
    np.testing.assert_array_equal((x**0).raw, np.ones_like(a))
    pow_only = emulated(profile(pow=M3))
    (x,) = pow_only.load((a,))
    assert_same(x**3, (a * a) * a)  # not a POW op, so not rounded


def test_exact_operations_are_not_rounded() -> None:
    a = values(4)
    ops = emulated(profile(**{c.value: M3 for c in OpClass}))
    state = ops.load(np.stack([a, -a]))
    assert_same(-state[0], -a)
    assert_same(abs(state[1]), np.abs(a))
    assert_same(ops.abs(state[1]), np.abs(a))
    assert_same(ops.stack([state[0], state[1]]), np.stack([a, -a]))
    assert_same(state[0][::2], a[::2])


def test_comparisons_and_selection() -> None:
    a, b = values(5), values(6)
    ops = emulated(profile(compare=M3, mul=M3))
    x, y = ops.load((a, b))
    mask = x > y
    assert isinstance(mask, EmuArray)
    np.testing.assert_array_equal(mask.raw, a > b)
    np.testing.assert_array_equal(ops.less(x, 0.0).raw, a < 0)
    assert_same(ops.where(mask, x, 0.25), round_float(np.where(a > b, a, np.float32(0.25)), M3))
    assert_same(ops.minimum(x, y), round_float(np.minimum(a, b), M3))
    np.testing.assert_array_equal(((x > 0) & (y > 0)).raw, (a > 0) & (b > 0))


def test_native_methods_are_refused_with_a_pointer_to_ops() -> None:
    ops = emulated(profile(add=M3))
    (x,) = ops.load((values(7),))
    with pytest.raises(AttributeError, match=r"ops\.sum"):
        x.sum()  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        np.exp(x)  # numpy ufuncs defer to the emulation and find nothing: never silently native


# --- native profiles, carriers -------------------------------------------------------------------
def test_native_profiles_return_the_raw_ops_unchanged() -> None:
    raw = NumpyOps(np.float32)
    fp32_inline = custom_float(23, -126, 127, name="inline-fp32")
    assert emulating_ops(profile())(raw) is raw
    assert emulating_ops(profile(add="fp32", mul=fp32_inline, store="fp32"))(raw) is raw
    assert emulating_ops(profile(store="bf16"))(raw) is not raw
    raw64 = NumpyOps(np.float64)
    assert emulating_ops(profile(carrier="float64", add="fp64"))(raw64) is raw64
    # a float32 device on a float64 engine still has to round to float32
    assert emulating_ops(profile())(raw64) is not raw64


def test_float64_profile_refuses_a_float32_engine() -> None:
    with pytest.raises(UsageError, match="float64 carrier"):
        emulating_ops(profile(carrier="float64", add="s16.15"))(NumpyOps(np.float32))


@settings(max_examples=100)
@given(st.integers(0, 2**32 - 1))
def test_fp32_device_on_a_float64_engine_is_fp32_arithmetic(seed: int) -> None:
    """Parameters, constants and every + - * / result are rounded to fp32: bit-identical to fp32."""
    a, b, p = values(seed), values(seed + 1), values(seed + 2)
    ops = emulated(profile(), dtype=np.float64)
    x, y = ops.load((a.astype(np.float64), b.astype(np.float64)))
    got = (x * 0.1 + y) / (x - 3.0) - p.astype(np.float64) * y
    want = (a * np.float32(0.1) + b) / (a - np.float32(3.0)) - p * b
    assert_same(got, want.astype(np.float64))


def forced_fp32_wrapper(raw: NumpyOps) -> EmulatingOps:
    """The emulation machinery with every class rounded to fp32 (an identity on float32)."""
    prof = profile()
    rules = {cls: Rule(cls, FORMATS["fp32"], max_value=FORMATS["fp32"].max_value) for cls in OpClass}
    return EmulatingOps(raw, prof, rules, backend_for(raw.name), "float32")


def test_fp32_rounding_through_the_machinery_changes_nothing() -> None:
    kernel = LeakyRingKernel()
    workload = kernel.make_workload(32, seed=3)
    native = NumpyEngine().build(kernel, workload, dtype="float32").run(workload.state0, {}, 5)
    emulated_run = NumpyEngine().build(kernel, workload, dtype="float32", ops_wrapper=forced_fp32_wrapper)
    out = emulated_run.run(workload.state0, {}, 5)
    np.testing.assert_array_equal(bits(out.probes), bits(native.probes))
    np.testing.assert_array_equal(bits(out.state), bits(native.state))
    assert sum(out.counters.values()) == 0


# --- input formats, stochastic rounding, error models ---------------------------------------------
def test_input_format_rounds_operands_first() -> None:
    a, b = values(8), values(9)
    ops = emulated(profile(mul=entry("fp32", input_format="fp16")))
    x, y = ops.load((a, b))
    assert_same(x * y, round_float(a, FP16) * round_float(b, FP16))


def test_stochastic_rounding_is_keyed_by_seed_step_and_op() -> None:
    a, b = values(10), values(11)
    prof = profile(mul=entry(M3, rounding="stochastic", random_bits=12))

    def product(step: int, seed: int = 0, ops_before: int = 0) -> np.ndarray:
        ops = emulating_ops(prof, seed=seed)(NumpyOps(np.float32))
        ops.begin_step(step)
        x, y = ops.load((a, b))
        for _ in range(ops_before):
            x * y
        return (x * y).raw

    first = product(5)
    np.testing.assert_array_equal(first, product(5))  # reproducible
    for other in (product(6), product(5, seed=1), product(5, ops_before=1)):
        assert np.any(other != first)  # another step, seed or op sequence number: other bits
    exact = a * b
    toward_zero = round_float(exact, M3, "toward-zero")
    away = np.where(exact >= 0, round_float(exact, M3, "up"), round_float(exact, M3, "down"))
    assert np.all((first == toward_zero) | (first == away))
    assert 0.2 < np.mean(first == away) < 0.8


def test_faithful_ulp_error_model() -> None:
    a = values(12, n=4096, scale=2.0)
    fmt = custom_float(10, -126, 127, name="m10")
    exact = round_float(np.exp(a), fmt)
    ulp = fmt.ulp(exact)

    def run(step: int, err_seed: int = 0, ulps: float = 2.0) -> np.ndarray:
        ops = emulated(profile(exp=entry(fmt, error=ErrorModel(ulps=ulps, seed=err_seed))))
        ops.begin_step(step)
        (x,) = ops.load((a,))
        return ops.exp(x).raw

    got = run(0)
    assert np.all(np.abs(got.astype(np.float64) - exact) <= 2.5 * ulp)  # offset <= 2 ulp, then rounding
    assert np.array_equal(round_float(got, fmt), got)  # results lie in the format
    assert np.mean(got != exact) > 0.5  # most results moved
    np.testing.assert_array_equal(got, run(0))
    assert np.any(got != run(1)) and np.any(got != run(0, err_seed=1))
    np.testing.assert_array_equal(run(0, ulps=0.0), exact)


# --- one-hot lowering of gather / scatter-add -----------------------------------------------------
def one_hot_profile(acc: object = "fp32") -> NumericsProfile:
    return profile(
        matmul_input="fp16",
        matmul_accumulate=acc,
        gather=entry("fp32", lowering="one-hot-matmul"),
    )


def dense_product(matrix: np.ndarray, vector: np.ndarray, acc: FloatFormat | None) -> np.ndarray:
    """``matrix @ vector`` as a matrix unit computes it: fp32 products summed over the columns in
    order, every partial sum rounded to the accumulation format (when it is not fp32)."""
    total = np.zeros(matrix.shape[0], np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        for j in range(matrix.shape[1]):
            total = total + matrix[:, j] * vector[j]
            if acc is not None:
                total = round_float(total, acc)
    return total


@settings(max_examples=150)
@given(
    n=st.integers(1, 12),
    m=st.integers(0, 40),
    seed=st.integers(0, 2**32 - 1),
    acc=st.sampled_from(["fp32", "bf16"]),
    special=st.sampled_from([None, np.inf, -np.inf, np.nan, 1e6]),
)
def test_one_hot_lowering_equals_the_dense_product(n: int, m: int, seed: int, acc: str, special: float | None) -> None:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * np.exp(rng.uniform(-12, 12, n))).astype(np.float32)
    v = (rng.standard_normal(m) * np.exp(rng.uniform(-12, 12, m))).astype(np.float32)
    if special is not None and m:
        v[rng.integers(m)] = special
        x[rng.integers(n)] = special
    index = rng.integers(0, n, size=m).astype(np.int32)  # unsorted, with repeats and gaps
    acc_fmt = None if acc == "fp32" else FORMATS[acc]
    ops = emulated(one_hot_profile(acc))
    sx, sv = ops.load((x, v))
    with np.errstate(invalid="ignore", over="ignore"):
        got_scatter = ops.scatter_add(sv, index, n).raw
        got_gather = ops.gather(sx, index).raw
        scatter_matrix = (np.arange(n)[:, None] == index[None, :]).astype(np.float32)  # (n, m)
        want_scatter = dense_product(scatter_matrix, round_float(v, FP16), acc_fmt)
        want_gather = dense_product(scatter_matrix.T, round_float(x, FP16), acc_fmt)  # (m, n) @ x
    np.testing.assert_array_equal(got_scatter, want_scatter)  # values (+0 and -0 compare equal)
    np.testing.assert_array_equal(got_gather, want_gather)


def test_one_hot_lowering_cost_is_per_connection() -> None:
    """No dense matrix: the segment table is (targets, max in-degree)."""
    from hwbench.accuracy.numerics.emulate import segment_table

    index = np.array([3, 0, 3, 1, 3], np.int32)
    table = segment_table(index, 5)
    assert table.shape == (5, 3)
    np.testing.assert_array_equal(table[3], [0, 2, 4])
    np.testing.assert_array_equal(table[0], [1, 5, 5])
    with pytest.raises(UsageError, match="out of range"):
        segment_table(np.array([5]), 5)


# --- fixed point -------------------------------------------------------------------------------
FIXED = [f for f in FORMATS.values() if isinstance(f, FixedFormat)]


@settings(max_examples=200)
@given(fmt=st.sampled_from(FIXED), seed=st.integers(0, 2**32 - 1), counter=st.integers(0, 2**32 - 1))
def test_fixed_point_values_match_round_fixed(fmt: FixedFormat, seed: int, counter: int) -> None:
    rng = np.random.default_rng(seed)
    span = max(abs(fmt.min_value), fmt.max_value)
    x = rng.uniform(-1.3 * span, 1.3 * span, 512) * np.exp(rng.uniform(-8, 0, 512))
    x = np.concatenate([x, [np.nan, np.inf, -np.inf, 0.0, fmt.resolution / 2, -fmt.resolution / 2]])
    carrier = np.float32 if fmt.int_bits + fmt.frac_bits <= 24 else np.float64
    x = x.astype(carrier)
    want = fixed_to_float(round_fixed(x, fmt, seed=seed, counter=counter), fmt).astype(carrier)
    got = round_fixed_values(np, x, fmt, seed=seed, counter=counter)
    np.testing.assert_array_equal(got, want)


def test_fixed_point_profile_rounds_to_the_grid() -> None:
    fmt = FORMATS["s16.15"]
    ops = emulated(profile(carrier="float64", mul="s16.15"), dtype=np.float64)
    a, b = values(13).astype(np.float64), values(14).astype(np.float64)
    x, y = ops.load((a, b))
    np.testing.assert_array_equal((x * y).raw, fixed_to_float(round_fixed(a * b, fmt), fmt))


# --- skipping roundings that cannot change a value -------------------------------------------------
def float_formats() -> st.SearchStrategy[FloatFormat]:
    return st.builds(
        lambda m, lo, hi, sub, ovf, sp: custom_float(m, -lo, hi, subnormals=sub, overflow=ovf, special=sp),
        st.integers(1, 12),
        st.integers(2, 126),
        st.integers(2, 127),
        st.sampled_from(["keep", "ftz", "daz", "ftz-daz"]),
        st.sampled_from(["inf", "saturate"]),
        st.sampled_from(["ieee", "fn", "fnuz"]),
    )


@settings(max_examples=300)
@given(a=float_formats(), b=float_formats(), mode=st.sampled_from(list(RoundingMode)), seed=st.integers(0, 2**31))
def test_representable_in_means_rounding_is_the_identity(
    a: FloatFormat, b: FloatFormat, mode: RoundingMode, seed: int
) -> None:
    if not representable_in(a, b):
        return
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 2**32, size=2048, dtype=np.int64).astype(np.uint32).view(np.float32)
    x = round_float(raw, a)
    y = round_float(x, b, mode, seed=seed)
    same = (bits(x) == bits(y)) | (np.isnan(x) & np.isnan(y))
    assert np.all(same)


def test_representable_in_examples() -> None:
    assert representable_in(BF16, FORMATS["tf32"]) and representable_in(FP16, FORMATS["fp32"])
    assert not representable_in(FP16, BF16) and not representable_in(BF16, FP16)
    assert not representable_in(FP16, custom_float(10, -14, 15, subnormals="ftz"))
    assert not representable_in(FP16, custom_float(10, -14, 15, overflow="saturate"))


def test_store_after_same_format_arithmetic_skips_the_rounding() -> None:
    """The result is identical, and the emulation spends no rounding on the store."""
    calls: list[object] = []
    ops = emulated(profile(add=M3, mul=M3, store=M3))
    original = ops._round_to

    def spy(x, fmt, mode, rb, **kw):  # type: ignore[no-untyped-def]
        calls.append(fmt)
        return original(x, fmt, mode, rb, **kw)

    ops._round_to = spy  # type: ignore[method-assign]
    state = ops.load(np.stack([values(15), values(16)]))
    new = ops.stack([state[0] + 0.5 * state[1], state[1] * state[1]])
    before = len(calls)
    stored = ops.store(new)
    assert len(calls) == before
    np.testing.assert_array_equal(stored, round_float(stored, M3))


# --- counters ------------------------------------------------------------------------------------
def counts(ops: EmulatingOps) -> dict[str, int]:
    vector = ops.end_step()
    assert vector.dtype == np.int32 and vector.shape == (len(COUNTER_NAMES),)
    return {name: int(v) for name, v in zip(ops.counter_names, vector, strict=True) if v}


def test_counters_reduced_precision_exp_cancels_and_divides_zero_by_zero() -> None:
    tiny = np.full(64, 1e-3, np.float32)
    ops = emulated(profile(exp=custom_float(4, -126, 127, name="m4")))
    (x,) = ops.load((tiny,))
    with np.errstate(invalid="ignore"):
        d = 1 - ops.exp(-x)
        q = d / d
    np.testing.assert_array_equal(d.raw, 0.0)  # exp(-1e-3) rounds to 1 with 4 mantissa bits
    assert np.all(np.isnan(q.raw))
    assert counts(ops) == {"div.nonfinite": 64}
    native = 1 - np.exp(-tiny)
    assert np.all(native > 0)


def test_counters_overflow_underflow_and_propagation() -> None:
    ops = emulated(profile(exp="fp16"))
    x = np.array([-20.0, 12.0, 0.5, np.nan], np.float32)
    (v,) = ops.load((x,))
    e = ops.exp(v)
    np.testing.assert_array_equal(e.raw[:3], [0.0, np.inf, round_float(np.exp(np.float32(0.5)), FP16)])
    with np.errstate(invalid="ignore", over="ignore"):
        e - e  # inf - inf and NaN - NaN: non-finite operands, so nothing is born in ADD
        e * 0.0 + 1e38 * v  # 1e38 * -20 and 1e38 * 12 overflow fp32 in the carrier: born in MUL
    assert counts(ops) == {
        "exp.underflow": 1,
        "exp.overflow": 1,
        "exp.nonfinite": 1,
        "mul.overflow": 2,
        "mul.nonfinite": 2,
    }


def test_counters_saturating_overflow_and_stalled_store() -> None:
    sat = custom_float(3, -6, 7, overflow="saturate", name="sat")
    ops = emulated(profile(mul=sat, store="fp16"))
    state = ops.load(np.array([1.0, 2.0, 1000.0, 0.0], np.float32))
    big = state * 1000.0  # 1000, 2000 saturate at 240; 1e6 too
    np.testing.assert_array_equal(big.raw, [240.0, 240.0, 240.0, 0.0])
    stored = ops.store(state + 1e-4)  # the fp16 store loses the update where 1e-4 < ulp/2
    np.testing.assert_array_equal(stored, [1.0, 2.0, 1000.0, round_float(np.float32(1e-4), FP16)])
    assert counts(ops) == {"mul.overflow": 3, "store.stalled": 3}


def test_counters_off() -> None:
    ops = emulated(profile(exp="fp16"), counters=False)
    assert ops.counter_names == ()
    (v,) = ops.load((np.array([12.0], np.float32),))
    ops.exp(v)
    assert ops.end_step().shape == (0,)


def test_engine_sums_counters_over_steps() -> None:
    kernel = LeakyRingKernel()
    workload = kernel.make_workload(16, seed=1)
    prof = profile(store=M3, add=custom_float(4, -126, 127), exp=custom_float(2, -126, 127))
    out = (
        NumpyEngine()
        .build(kernel, workload, dtype="float32", ops_wrapper=emulating_ops(prof))
        .run(workload.state0, {}, 3)
    )
    assert set(out.counters) == set(COUNTER_NAMES)
    assert out.counters["store.stalled"] > 0


@pytest.mark.parametrize("op", [operator.add, operator.mul])
def test_operators_with_foreign_objects_are_not_implemented(op) -> None:  # type: ignore[no-untyped-def]
    ops = emulated(profile(add=M3))
    (x,) = ops.load((values(17),))
    with pytest.raises(TypeError):
        op(x, "text")
