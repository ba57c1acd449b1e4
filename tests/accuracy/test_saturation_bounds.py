"""Issue 31: a saturating profile shortens its saturations where trace-time bounds allow, bit for bit.

* :func:`native_fp32.clamp` is :func:`native_fp32.saturate` on every value that is not NaN;
* the bounds of :mod:`hwbench.accuracy.numerics.value_bounds` are sound: every fp32 result of
  an op on operands inside its operands' intervals, rounded onto the op's format, lies inside the
  widened result interval and is never NaN (hypothesis, and the edges: zero, the largest finite
  value, exp's overflow);
* the GroqChip's emulating ops give the same bits with the bounds as with the full saturation
  everywhere (io-ehh's expressions on NaN, infinities, the largest values, the 0/0 points),
  on numpy and under ``jax.jit``, and they do take the shorter path; both equal the policy as
  defined (each result rounded with its NaN guard, then saturated), so leaving out the guard
  and an in-range result's select after a rounding changes no bit either.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwbench.accuracy.numerics import emulate
from hwbench.accuracy.numerics.emulate import EmulatingOps, emulating_ops
from hwbench.accuracy.numerics.emulated_array import unwrap
from hwbench.accuracy.numerics.formats import custom_float
from hwbench.accuracy.numerics.native_fp32 import clamp, saturate
from hwbench.accuracy.numerics.rounding import round_float
from hwbench.accuracy.numerics.value_bounds import EXP_SLACK, result_bounds, rounded
from hwbench.core.engines.jax_engine import JaxOps
from hwbench.core.engines.numpy_engine import NumpyOps
from hwbench.plugins.groqware_shim.numerics import default_profile

MAX32 = float(np.finfo(np.float32).max)
REDUCED = custom_float(10, -126, 127, name="groq-reduced-test")
EDGES = np.array(
    [0.0, -0.0, 1.0, -1.0, 1e-40, -1e-40, 3e38, -3e38, MAX32, -MAX32, np.inf, -np.inf, REDUCED.max_value],
    dtype=np.float32,
)


@pytest.mark.parametrize("limit", [MAX32, REDUCED.max_value, 1.5])
@pytest.mark.parametrize("xp", [np, jnp], ids=["numpy", "jax"])
def test_clamp_is_saturate_without_nan(limit: float, xp: Any) -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate([EDGES, rng.normal(0, 1, 200).astype(np.float32) * np.float32(2.0**120)])
    want = saturate(np, x, limit).view(np.uint32)
    assert np.array_equal(np.asarray(clamp(xp, xp.asarray(x), limit)).view(np.uint32), want)
    upper_only = x[x >= -np.float32(limit)]
    got = np.asarray(clamp(xp, xp.asarray(upper_only), limit, lower=False)).view(np.uint32)
    assert np.array_equal(got, saturate(np, upper_only, limit).view(np.uint32))


def _fp32(lo: float, hi: float, rng: np.random.Generator) -> np.ndarray:
    """Points of [lo, hi] as float32: both ends and random ones between."""
    inner = rng.uniform(lo, hi, 64) if hi > lo else np.full(64, lo)
    return np.clip(np.concatenate([[lo, hi], inner]).astype(np.float32), np.float32(lo), np.float32(hi))


_finite = st.floats(min_value=-MAX32, max_value=MAX32, width=32)
_small = st.floats(min_value=-200.0, max_value=200.0, width=32)


@given(
    st.sampled_from([operator.add, operator.sub, operator.mul, operator.truediv, "square", "exp"]),
    st.tuples(st.one_of(_finite, _small), st.one_of(_finite, _small)),
    st.tuples(st.one_of(_finite, _small), st.one_of(_finite, _small)),
    st.sampled_from([None, REDUCED]),
    st.integers(0, 2**32 - 1),
)
def test_bounds_hold_every_result(
    fn: Callable[..., Any] | str, a: tuple[float, float], b: tuple[float, float], fmt: Any, seed: int
) -> None:
    with np.errstate(all="ignore"):  # overflow to inf is one of the cases
        _check_bounds(fn, (min(a), max(a)), (min(b), max(b)), fmt, seed)


Interval = tuple[float, float]


def _check_bounds(fn: Callable[..., Any] | str, a: Interval, b: Interval, fmt: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x, y = _fp32(*a, rng), _fp32(*b, rng)
    if fn == "square":
        exact, got = result_bounds(operator.mul, a, a, same=True), x * x
    elif fn == "exp":
        exact, got = result_bounds("exp", a), np.exp(x)
    else:
        exact, got = result_bounds(fn, a, b), fn(x, y)
    if exact is None:
        assert fn is operator.truediv and b[0] <= 0 <= b[1]  # only a divisor interval holding 0 is unknown
        return
    if fmt is not None:
        got = round_float(got, fmt)
    bits = 23 if fmt is None else fmt.mantissa_bits
    lo, hi = rounded(exact, bits, float(np.finfo(np.float32).tiny), slack=EXP_SLACK if fn == "exp" else 0.0)
    limit = MAX32 if fmt is None else fmt.max_value
    lo, hi = (lo if lo >= -limit else -math.inf), (hi if hi <= limit else math.inf)  # beyond: may overflow
    assert not np.isnan(got).any()
    assert (got >= lo).all() and (got <= hi).all(), (fn, a, b, got.min(), got.max(), lo, hi)


def test_bounds_edges() -> None:
    assert result_bounds("exp", (0.0, 1e6)) == (1.0, math.inf)  # exp may overflow: a clamp, not a NaN select
    assert result_bounds(operator.truediv, (1.0, 2.0), (-1.0, 1.0)) is None  # x / 0
    assert result_bounds(operator.add, (0.0, math.inf), (1.0, 1.0)) is None  # inf - inf possible elsewhere
    assert result_bounds(operator.mul, (-3.0, 2.0), (-3.0, 2.0), same=True) == (0.0, 9.0)
    assert result_bounds(operator.mul, (-3.0, 2.0), (-3.0, 2.0)) == (-6.0, 9.0)


def _io_ehh_pieces(ops: Any, v: Any) -> list[Any]:
    """io-ehh's expression shapes (``model.py``) on one voltage-like array."""
    sig = 1 / (1 + ops.exp(-(v - 61) / 4.2))
    alpha_x = 0.13 * (v + 25) / (1 - ops.exp(-(v + 25) / 10))  # 0/0 at v = -25
    beta_r = 0.02 * (v + 8.5) / (ops.exp((v + 8.5) / 5) - 1)
    tau_l = 20 * ops.exp((v + 160) / 30) / (1 + ops.exp((v + 84) / 7.3)) + 35
    drive = 2e-5 * v
    alpha_s = ops.where(ops.less(drive, 0.01), drive, 0.01)
    dv = v - 3 * v
    junction = dv * (0.2 + 0.8 * ops.exp(-(dv**2) / 100))
    current = 1.2 * sig**3 * v * (v - 55)
    pieces = [sig, alpha_x, beta_r, tau_l, alpha_s / (alpha_s + 0.015), junction, current, alpha_x / (alpha_x + beta_r)]
    return [*pieces, ops.exp(v), v / 7, 1 / v]  # reduced roundings of the input itself (its NaN payloads)


def _reference(
    self: EmulatingOps, rule: Any, before: Any, tag: Any, function: str, exact: Any, slack: float
) -> tuple[Any, Any, Any]:
    """The saturating policy as defined: the result rounded (its NaN guard kept), then the full
    saturation — what every op computed before the bounds and the shortcuts existed."""
    after, tag = self._round_result(rule, before, tag, function=function)
    limit = min(rule.max_value, MAX32)
    return saturate(self._be.xp, after, rule.max_value), tag, (-limit, limit)


def _run(engine: str, path: str, x: np.ndarray, monkeypatch: pytest.MonkeyPatch) -> tuple[list[np.ndarray], int]:
    """The pieces' values under groq [default], and how many full saturations were traced.

    ``path``: ``short`` (as the emulation runs), ``unbounded`` (no bounds: every op takes the
    full saturation, with the rounding's NaN guard merged into it) or ``reference``.
    """
    full = 0
    real = emulate.saturate

    def counted(xp: Any, v: Any, m: float, **kw: Any) -> Any:
        nonlocal full
        full += 1
        return real(xp, v, m, **kw)

    monkeypatch.setattr(emulate, "saturate", counted)
    if path != "short":
        monkeypatch.setattr(EmulatingOps, "_bounds", lambda self, rule, v: None)
    if path == "reference":
        monkeypatch.setattr(EmulatingOps, "_round_and_saturate", _reference)
    raw = NumpyOps(np.float32) if engine == "numpy" else JaxOps(np.float32)
    ops = emulating_ops(default_profile(), counters=False)(raw)
    assert isinstance(ops, EmulatingOps)

    def pieces(v: Any) -> list[Any]:
        ops.begin_step(0)
        return [unwrap(p) for p in _io_ehh_pieces(ops, ops.load(v))]

    with np.errstate(all="ignore"):
        out = pieces(x) if engine == "numpy" else jax.jit(pieces)(jnp.asarray(x))
    monkeypatch.undo()
    return [np.asarray(o) for o in out], full


@pytest.mark.parametrize("engine", ["numpy", "jax"])
def test_groq_gives_the_full_saturations_bits(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    special = [np.nan, -25.0, -8.5, 61.0, 500.0, -500.0, 1e30, -1e30, 3e38, -3e38]
    # NaNs whose payload a rounding without its guard turns into inf, -0 or another NaN
    payloads = np.array([0x7FFFFFFF, 0xFFFFFFFF, 0x7FC00001, 0x7F800001, 0xFF801000], np.uint32).view(np.float32)
    normal = rng.normal(-60, 40, 300).astype(np.float32)
    x = np.concatenate([EDGES, np.array(special, np.float32), payloads, normal])
    short, n_short = _run(engine, "short", x, monkeypatch)
    unbounded, n_full = _run(engine, "unbounded", x, monkeypatch)
    reference, _ = _run(engine, "reference", x, monkeypatch)
    assert n_short < n_full / 2  # the shorter path is taken ...
    for got, other, want in zip(short, unbounded, reference, strict=True):  # ... and changes no bit
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
        assert np.array_equal(other.view(np.uint32), want.view(np.uint32))
    assert not any(np.isnan(p).any() for p in short)  # NaN never survives saturation


def _groq_executor(workload: Any, kernel: Any) -> Any:
    from hwbench.core.plugins import get_registry

    groq = get_registry().devices["groq"]
    return groq.executor_for(
        kernel, workload, mode="default", engine="jax", dtype="float32", sample_every=kernel.info.sample_every
    )


def test_finite_state_program_gives_the_general_programs_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The JAX executor traces groq's step for a finite loaded state (no full saturation of the ops
    that read it) and runs it for calls that start finite; a call starting with NaN or infinity
    runs the general program. Both give exactly what the general program alone gives."""
    from hwbench.plugins.kernels.io_ehh import IoEhhKernel

    kernel = IoEhhKernel()
    workload = kernel.make_workload(64, connected=True, seed=3)
    fast = _groq_executor(workload, kernel)
    assert fast._finite is not None and fast._general is None  # the finite program, only
    with monkeypatch.context() as m:
        m.setattr(EmulatingOps, "finite_state_helps", property(lambda self: False))
        general = _groq_executor(workload, kernel)
    assert general._finite is None
    nan_tests = [e._compiled.as_text().count("direction=NE") for e in (fast, general)]  # x != x
    assert nan_tests[0] < nan_tests[1] / 2, nan_tests
    inputs = kernel.default_inputs(workload)
    broken = np.array(workload.state0, dtype=np.float32)
    broken[0, :3] = [np.nan, np.inf, -np.inf]
    broken[9, 5] = np.nan
    for state in (workload.state0, broken):
        got, want = fast.run(state, inputs, 3), general.run(state, inputs, 3)
        for a, b in ((got.state, want.state), (got.probes, want.probes)):
            a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
            assert np.array_equal(a.view(np.uint32), b.view(np.uint32)) or np.array_equal(a, b, equal_nan=True)
        assert np.array_equal(got.spikes, want.spikes)
    assert fast._general is not None  # compiled for the call that started with NaN


def test_finite_state_is_kept_only_by_bounded_stores() -> None:
    """A step that stores anything but saturated results (here: the loaded state's raw values
    through an unemulated op) does not keep the state finite: the engine then uses the general
    program."""
    import jax.numpy as jnp

    ops = emulating_ops(default_profile(), counters=False)(JaxOps(np.float32))
    assert isinstance(ops, EmulatingOps) and ops.finite_state_helps
    ops.assume_finite_state = True
    ops.begin_step(0)
    state = ops.load(jnp.ones((2, 4), jnp.float32))
    ops.store(ops.stack([state[0] + 1.0, state[1] * 2.0]))
    assert ops.finite_state_kept
    ops.store(jnp.exp(unwrap(state)) * 1e38)  # may be inf: not an emulated, saturated result
    assert not ops.finite_state_kept
