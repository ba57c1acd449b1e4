"""Issue 31: the JAX engine's contracted ``a * b + c`` on the host's FMA instruction.

The hardware route is used only where a start-up probe finds it bit-identical to the binary64
route-to-odd (``native_fp32.hardware_fma_exact``). These tests check that the probe bites (it
rejects formulations that double-round or that XLA leaves uncontracted), that ``HWBENCH_FMA``
picks the route, that both routes equal the exact rounding, and that whole io-ehh runs of
contracting device modes are the same bit for bit on either route.
"""

from __future__ import annotations

from typing import Any

import gmpy2
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hwbench.accuracy.numerics import native_fp32
from hwbench.accuracy.numerics.native_fp32 import (
    FMA_ENV,
    agrees_with_binary64,
    fma_probe_operands,
    fma_route,
    fma_salt,
    fused_multiply_add,
    hardware_fma_exact,
)
from hwbench.core.errors import UsageError

FP32 = gmpy2.context(precision=24, emin=-148, emax=128, subnormalize=True)

needs_hardware_route = pytest.mark.skipif(
    not hardware_fma_exact(), reason="this host's XLA does not contract a*b+c into an exact FMA"
)


def bits(x: Any) -> Any:
    return np.asarray(x, np.float32).view(np.uint32)


def same(got: Any, want: Any) -> bool:
    """Identical bits, or NaN in both (a NaN's sign and payload are not arithmetic)."""
    g, w = np.asarray(got, np.float32), np.asarray(want, np.float32)
    return bool(g.shape == w.shape and ((bits(g) == bits(w)) | (np.isnan(g) & np.isnan(w))).all())


def test_the_probe_accepts_the_binary64_route() -> None:
    assert agrees_with_binary64(jax.jit(lambda a, b, c, salt: native_fp32._fma_f64_jax(jnp, a, b, c)))


def test_the_probe_rejects_a_double_rounding_sum() -> None:
    """A binary64 sum rounded to binary32 (no rounding to odd) fails on the traps."""

    def double_rounded(a: Any, b: Any, c: Any, salt: Any) -> Any:
        with jax.enable_x64(True):
            a, b, c = (jnp.asarray(v).astype(jnp.float64) for v in (a, b, c))
            return (a * b + c).astype(jnp.float32)

    assert not agrees_with_binary64(jax.jit(double_rounded))


def test_the_probe_rejects_a_product_that_another_use_keeps_uncontracted() -> None:
    """Plain ``a * b + c`` contracts alone, but not where the product has another use (CSE)."""
    plain = jax.jit(lambda a, b, c, salt: a * b + c)
    a, b, c = fma_probe_operands()
    with jax.enable_x64(True):
        reference = jax.jit(lambda x, y, z: native_fp32._fma_f64_jax(jnp, x, y, z))(a, b, c)
    assert same(plain(a, b, c, 0), reference)  # alone, it is contracted
    assert not agrees_with_binary64(plain)


def test_the_probe_rejects_a_barrier_in_place_of_the_salt() -> None:
    """``lax.optimization_barrier`` on the operands keeps CSE off the product in a small program,
    but XLA:CPU drops it before simplification and fusion end: an addend that is a single-use
    product can then reach the same loop, and LLVM may fuse that product instead of ours (it made
    io-ehh runs differ); the probe's program has that case."""

    def barrier(a: Any, b: Any, c: Any, salt: Any) -> Any:
        c_bits = jax.lax.bitcast_convert_type(jnp.asarray(c, jnp.float32), jnp.int32)
        a2, b2, c2 = jax.lax.optimization_barrier((a, b, c_bits))
        return a2 * b2 + jax.lax.bitcast_convert_type(c2, jnp.float32)

    assert not agrees_with_binary64(jax.jit(barrier))


def test_the_probe_operands_reach_the_edges() -> None:
    a, b, c = fma_probe_operands()
    with np.errstate(all="ignore"):
        p = a.astype(np.float64) * b.astype(np.float64)
        s = p + c
    assert a.dtype == b.dtype == c.dtype == np.float32 and a.shape == b.shape == c.shape
    assert np.isnan(a).any() and np.isinf(a).any() and np.isnan(c).any()
    assert ((np.abs(s) < 2.0**-126) & (s != 0)).any()  # subnormal results
    assert (np.isfinite(p) & (np.abs(p) > np.finfo(np.float32).max) & (np.abs(s) <= np.finfo(np.float32).max)).any()
    assert (np.abs(s) > np.finfo(np.float32).max).any()  # results that overflow


def test_the_environment_variable_picks_the_route(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FMA_ENV, "binary64")
    assert fma_route() == "binary64"
    monkeypatch.setenv(FMA_ENV, "auto")
    assert fma_route() == ("hardware" if hardware_fma_exact() else "binary64")
    monkeypatch.delenv(FMA_ENV)
    assert fma_route() == ("hardware" if hardware_fma_exact() else "binary64")
    monkeypatch.setenv(FMA_ENV, "fast")
    with pytest.raises(UsageError, match="HWBENCH_FMA='fast': expected one of auto, binary64"):
        fma_route()


def _exact(a: float, b: float, c: float) -> float:
    from fractions import Fraction

    q = Fraction(a) * Fraction(b) + Fraction(c)
    with gmpy2.local_context(FP32):
        return float(np.float32(float(gmpy2.mpfr(gmpy2.mpq(q.numerator, q.denominator)))))


@pytest.mark.parametrize("route", ["auto", "binary64"])
def test_both_routes_equal_the_exact_rounding_eagerly_and_jitted(route: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FMA_ENV, route)
    a, b, c = fma_probe_operands()
    jitted = np.asarray(
        jax.jit(lambda x, y, z, step: fused_multiply_add(jnp, x, y, z, salt=fma_salt(step, 1)))(a, b, c, 0)
    )
    eager = fused_multiply_add(jnp, jnp.asarray(a), jnp.asarray(b), jnp.asarray(c), salt=fma_salt(0, 2))
    assert same(jitted, eager)
    finite = np.flatnonzero(np.isfinite(a) & np.isfinite(b) & np.isfinite(c))
    checked = 0
    for i in list(finite[:30]) + list(finite[30::97]):  # the traps and edges, then a sample
        with np.errstate(over="ignore"):
            want = np.float32(_exact(float(a[i]), float(b[i]), float(c[i])))
        # XLA:CPU flushes subnormal operands and results to zero (either route, as the native
        # program does); exact zeros' signs are test_native_fp32's business
        tiny = min(abs(float(v)) for v in (a[i], b[i], c[i], want) if v != 0) < 2.0**-126
        if want != 0 and not tiny:
            assert bits(jitted[i]) == bits(want), (route, a[i], b[i], c[i])
            checked += 1
    assert checked > 60


def _io_ehh_run(device: str, mode: str, samples: int) -> dict[str, np.ndarray]:
    """A short io-ehh run (64 cells connected, JAX), pulse on: probes, spikes, state, counters."""
    from hwbench.core.plugins import get_registry
    from hwbench.plugins.kernels.io_ehh import IoEhhKernel

    kernel = IoEhhKernel()
    workload = kernel.make_workload(64, connected=True, seed=5)
    executor = (
        get_registry()
        .devices[device]
        .executor_for(kernel, workload, mode=mode, engine="jax", sample_every=kernel.info.sample_every, counters=True)
    )
    current = {"I_app": np.where(np.arange(workload.size) % 3 == 0, 6.0, 0.0).astype(np.float32)}
    run = executor.run(workload.state0, current, samples)
    return {
        "probes": np.asarray(run.probes, np.float32),
        "spikes": np.asarray(run.spikes),
        "state": np.asarray(run.state, np.float32),
        "counters": np.asarray([run.counters[k] for k in sorted(run.counters)], np.int64),
    }


@needs_hardware_route
@pytest.mark.parametrize(("device", "mode"), [("a100", "cuda-fp32"), ("h100", "fp16")])
def test_io_ehh_runs_are_bit_identical_on_either_route(device: str, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FMA_ENV, "binary64")
    slow = _io_ehh_run(device, mode, 20)
    monkeypatch.setenv(FMA_ENV, "auto")
    fast = _io_ehh_run(device, mode, 20)
    assert (slow["spikes"] >= 0).any()  # the run reaches the spiking regime
    assert sorted(slow) == sorted(fast)
    for name in slow:
        want, got = slow[name], fast[name]
        assert want.shape == got.shape, name
        if want.dtype == np.float32:
            same = (bits(want) == bits(got)) | (np.isnan(want) & np.isnan(got))
        else:
            same = want == got
        assert same.all(), f"{device}:{mode} {name}: {int((~same).sum())} of {same.size} differ"


def test_the_probe_answers_the_same_while_a_kernel_is_being_traced() -> None:
    """The first contraction is met inside a trace; the probe must run, not be staged into it."""
    seen: list[bool] = []

    def step(x: Any) -> Any:
        seen.append(agrees_with_binary64(native_fp32._hardware_fma()))
        return x + 1

    jax.jit(step)(np.float32(1))
    assert seen == [hardware_fma_exact()]
