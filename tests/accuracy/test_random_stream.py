"""The stochastic-rounding stream of the emulated narrow-range formats (the IPU's fp16), statistically.

Issue 31 allowed replacing the model-owned stream: per step, one hashed odd word per element
(``random_bits.element_words``), and per rounding that word times the operation's own odd
multiplier (``random_bits.op_bits``). These tests draw it as the emulating ops do
(``EmulatingOps._stream_bits``) and check, over >= 10^6 draws per format, with 6-sigma bounds:
the mean of the rounded values is the input, the probability of rounding away from zero is the
dropped fraction (normals and subnormals), only the two neighbours occur, the bits are uniform,
and decisions are uncorrelated between neighbouring elements, steps and operations; the stream is
the same for a seed and differs for another seed, step or operation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hwbench.accuracy.numerics.emulate import emulating_ops
from hwbench.accuracy.numerics.fast_rounding import StreamRounder, fast_rounder
from hwbench.accuracy.numerics.formats import FORMATS, FloatFormat, RoundingMode
from hwbench.accuracy.numerics.random_bits import element_words, op_bits
from hwbench.core.engines.numpy_engine import NumpyOps
from hwbench.core.plugins import get_registry
from hwbench.plugins.devices.ipu import FP16_CLIP, FP16_NANOO

N = 1_000_000
SIGMA = 6.0
FORMATS_SR = (FP16_CLIP, FP16_NANOO, FORMATS["fp8-e5m2"])


def ipu_ops(seed: int = 0) -> Any:
    """The IPU fp16-sr mode's emulating ops on numpy (the namespace whose stream is under test)."""
    profile = get_registry().devices["ipu"].numerics("fp16-sr")
    return emulating_ops(profile, counters=False, seed=seed)(NumpyOps(np.float32))


def stream(ops: Any, step: int, n: int = N, ops_in_step: int = 1) -> list[np.ndarray]:
    """The 32-bit words of the first ``ops_in_step`` roundings of ``step``, ``n`` elements each."""
    ops.begin_step(step)
    out = []
    for _ in range(ops_in_step):
        out.append(ops._stream_bits((n,), ops._next_seed(0)))
    return out


def rounded(fmt: FloatFormat, value: float, rand: np.ndarray) -> np.ndarray:
    rounder = fast_rounder(fmt, RoundingMode.STOCHASTIC, "float32")
    assert isinstance(rounder, StreamRounder)
    return np.asarray(rounder(np, np.full(rand.shape, value, dtype=np.float32), rand=rand))


def neighbours(fmt: FloatFormat, value: float) -> tuple[float, float]:
    """The format's values just below and above |value| (value itself not on the grid)."""
    a = abs(value)
    e = max(int(np.floor(np.log2(a))), fmt.emin)
    q = 2.0 ** (e - fmt.mantissa_bits)
    low = np.floor(a / q) * q
    return low, low + q


def values_for(fmt: FloatFormat) -> list[float]:
    """Fractions of an ulp (fp32-exact) in normal binades of both signs, and in the subnormals."""
    vals = []
    for e, frac in ((0, 0.3125), (-3, 0.75), (fmt.emin, 1 / 3), (fmt.emax - 1, 0.1)):
        q = 2.0 ** (e - fmt.mantissa_bits)
        base = 2.0**e + 5 * q
        vals.append(float(np.float32(base + frac * q)))
        vals.append(-float(np.float32(base + frac * q)))
    sub = 2.0 ** (fmt.emin - fmt.mantissa_bits)  # the subnormal grid
    vals += [float(np.float32(3.4 * sub)), -float(np.float32(0.2 * sub))]
    return vals


@pytest.mark.parametrize("fmt", FORMATS_SR, ids=lambda f: f.name)
def test_rounded_mean_is_the_input_and_up_probability_the_fraction(fmt: FloatFormat) -> None:
    """>= 10^6 draws per value: only the two neighbours, P(away from zero) = the dropped fraction,
    mean = input, each within 6 sigma of the binomial."""
    ops = ipu_ops(seed=123)
    for step, value in enumerate(values_for(fmt)):
        (rand,) = stream(ops, step)
        out = rounded(fmt, value, rand).astype(np.float64)
        low, high = neighbours(fmt, value)
        mags = np.abs(out)
        assert np.all((mags == low) | (mags == high)), value
        assert np.all(np.signbit(out) == (value < 0))
        p = (abs(value) - low) / (high - low)
        up = float(np.mean(mags == high))
        sd = np.sqrt(p * (1 - p) / N)
        assert abs(up - p) <= SIGMA * sd, (value, up, p)
        assert abs(float(np.mean(out)) - value) <= SIGMA * sd * (high - low), value


def test_exact_values_never_move() -> None:
    """A value of the format is its own rounding, for every draw."""
    ops = ipu_ops()
    (rand,) = stream(ops, 0, n=1 << 16)
    grid = np.array([1.0, -1.5, 65504.0, 2.0**-24, -(2.0**-24) * 7, 2.0**-14, 0.0, -0.0], dtype=np.float32)
    for v in grid:
        out = rounded(FP16_CLIP, float(v), rand)
        assert np.all(out.view(np.uint32) == np.float32(v).view(np.uint32)), v


def test_the_decision_bits_are_uniform() -> None:
    """The 13 bits fp16 decides with, chi-square over 8192 bins within 6 sigma of its mean."""
    ops = ipu_ops(seed=5)
    for rand in stream(ops, 3, ops_in_step=3):
        counts = np.bincount((rand >> np.uint32(19)).astype(np.int64), minlength=8192)
        expected = N / 8192
        chi2 = float(np.sum((counts - expected) ** 2 / expected))
        assert abs(chi2 - 8191) <= SIGMA * np.sqrt(2 * 8191), chi2


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a.astype(np.float64), b.astype(np.float64))[0, 1])


def test_uncorrelated_across_elements_steps_and_operations() -> None:
    """Decisions (and the top bits themselves) of neighbouring elements, consecutive steps and
    consecutive operations: correlation within 6 / sqrt(n) of zero; the joint 16 x 16 histogram of
    two operations' top 4 bits is uniform (chi-square)."""
    ops = ipu_ops(seed=77)
    a0, a1, a2 = stream(ops, 10, ops_in_step=3)
    (b0,) = stream(ops, 11)
    bound = SIGMA / np.sqrt(N)
    up = (a0 >> np.uint32(19)) >= np.uint32(8192 - 2731)  # decisions at a third of an ulp
    pairs = {
        "elements": (a0[:-1], a0[1:]),
        "steps": (a0, b0),
        "operations": (a0, a1),
        "operations 1 apart": (a0, a2),
    }
    for name, (x, y) in pairs.items():
        assert abs(_corr(x >> np.uint32(19), y >> np.uint32(19))) <= bound, name
    up1 = (a1 >> np.uint32(19)) >= np.uint32(8192 - 2731)
    assert abs(_corr(up, up1)) <= bound
    joint = np.bincount(((a0 >> np.uint32(28)) * 16 + (a1 >> np.uint32(28))).astype(np.int64), minlength=256)
    chi2 = float(np.sum((joint - N / 256) ** 2 / (N / 256)))
    assert abs(chi2 - 255) <= SIGMA * np.sqrt(2 * 255), chi2


def test_deterministic_for_a_seed_and_different_otherwise() -> None:
    first = stream(ipu_ops(seed=9), 4, n=4096, ops_in_step=2)
    again = stream(ipu_ops(seed=9), 4, n=4096, ops_in_step=2)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    other_seed = stream(ipu_ops(seed=10), 4, n=4096, ops_in_step=2)
    other_step = stream(ipu_ops(seed=9), 5, n=4096, ops_in_step=2)
    for other in (other_seed, other_step):
        assert np.mean(other[0] == first[0]) < 0.01
    assert np.mean(first[0] == first[1]) < 0.01  # another operation


def test_numpy_and_jax_draw_the_same_stream() -> None:
    """The words and products are wrapping uint32 arithmetic, identical under jax.jit."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    index = np.arange(5000, dtype=np.uint32)
    key = (7 << 32) | 13
    want = op_bits(element_words(99, 6, index, np), key, np)
    got = jax.jit(lambda c, i: op_bits(element_words(99, c, i, jnp), key, jnp))(jnp.uint32(6), jnp.asarray(index))
    assert np.array_equal(np.asarray(got), want)
