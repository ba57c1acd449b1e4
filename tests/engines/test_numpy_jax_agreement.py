"""The numpy float64 gold reference against the JAX engine and the float32 engines, on io-ehh.

Tolerances (in brackets: the maxima observed with numpy 2.4 / jaxlib 0.10 on x86-64):

* JAX float64 vs numpy float64: 1e-9 relative on every state variable after 100 ms (both use
  IEEE float64; they differ only in libm vs XLA ``exp`` (<= 1 ulp), XLA's rewrite of division
  by a constant into a multiplication, and scatter-add order, so the trajectories stay within a
  few ulps [3e-15]).
* float32 (numpy and JAX) vs float64 gold, subthreshold (default parameters, 100 ms):
  ``rtol = atol = 1e-4`` on every variable [observed 5e-6 relative, 9e-5 mV on V_soma]. Float32
  rounds each of ~250 operations per cell and step at u = 6e-8; over 4000 steps the errors
  accumulate like a random walk (sqrt(4000) ~ 63) amplified by the stiff gating dynamics, i.e.
  ~1e-5; 1e-4 leaves a margin for other libm/XLA ``exp`` implementations while a real defect
  (a term computed wrong, a lost update) shows up orders of magnitude larger.
* float32 with spikes (64 cells driven by a current pulse): the same cells spike within one
  step of the gold spike times and V_soma stays within 0.05 mV [same steps; 1.9e-3 mV]; upstrokes of
  ~100 mV/ms turn a time shift of a fraction of a step into a larger voltage difference.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hwbench.core.engines.numpy_engine import NumpyEngine
from hwbench.plugins.kernels.io_ehh import IoEhhKernel

pytest.importorskip("jax")
from hwbench.core.engines.jax_engine import JaxEngine

KERNEL = IoEhhKernel()
SAMPLES = 100  # 100 ms


def run_all(wl: Any, inputs: dict[str, np.ndarray]) -> dict[tuple[str, str], Any]:
    outs = {}
    for engine in (NumpyEngine(), JaxEngine()):
        for dtype in ("float64", "float32"):
            outs[engine.name, dtype] = engine.build(KERNEL, wl, dtype=dtype).run(wl.state0, inputs, SAMPLES)
    return outs


@pytest.fixture(scope="module", params=[64, 729])
def default_runs(request: pytest.FixtureRequest) -> tuple[Any, dict]:
    wl = KERNEL.make_workload(request.param, seed=0)
    return wl, run_all(wl, {})


@pytest.fixture(scope="module")
def spiking_runs() -> tuple[Any, dict]:
    rng = np.random.default_rng(3)
    wl = KERNEL.make_workload(64, seed=3, g_CaL=0.5 + 0.9 * rng.uniform(size=64))
    pulse = np.where(rng.uniform(size=64) < 1 / 3, rng.normal(10, 3, 64), 0.0)
    return wl, run_all(wl, {"I_app": pulse})


def relative_deviation(got: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Per state row, max |got - gold| / |gold| (no state variable is zero in these runs)."""
    return (np.abs(got - gold) / np.abs(gold)).max(axis=1)


def test_outputs_have_the_contract_shapes_and_dtypes(default_runs: tuple) -> None:
    wl, outs = default_runs
    n = wl.size
    for (_, dtype), out in outs.items():
        assert out.state.shape == (14, n) and out.state.dtype == np.dtype(dtype)
        assert out.probes.shape == (SAMPLES, n) and out.probes.dtype == np.dtype(dtype)
        assert out.spikes is not None and out.spikes.shape == (SAMPLES, n) and out.spikes.dtype == np.int16
        assert out.counters == {}


def test_jax_float64_matches_numpy_gold_to_1e9(default_runs: tuple) -> None:
    _, outs = default_runs
    gold, jax64 = outs["numpy", "float64"], outs["jax", "float64"]
    assert relative_deviation(jax64.state, gold.state).max() < 1e-9
    np.testing.assert_allclose(jax64.probes, gold.probes, rtol=1e-9)
    np.testing.assert_array_equal(jax64.spikes, gold.spikes)


@pytest.mark.parametrize("engine", ["numpy", "jax"])
def test_float32_within_tolerance_of_gold(default_runs: tuple, engine: str) -> None:
    _, outs = default_runs
    gold, got = outs["numpy", "float64"], outs[engine, "float32"]
    np.testing.assert_allclose(got.state, gold.state, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got.probes, gold.probes, rtol=1e-4, atol=1e-4)
    # and float32 really is float32: its deviation is far above float64's
    assert relative_deviation(got.state, gold.state).max() > 1e-8


def test_spikes_identical_between_float64_engines(spiking_runs: tuple) -> None:
    _, outs = spiking_runs
    gold, jax64 = outs["numpy", "float64"], outs["jax", "float64"]
    assert (gold.spikes >= 0).sum() >= 5  # the pulse does make cells spike
    np.testing.assert_array_equal(jax64.spikes, gold.spikes)
    assert relative_deviation(jax64.state, gold.state).max() < 1e-9


@pytest.mark.parametrize("engine", ["numpy", "jax"])
def test_float32_spikes_near_gold(spiking_runs: tuple, engine: str) -> None:
    _, outs = spiking_runs
    gold, got = outs["numpy", "float64"], outs[engine, "float32"]
    assert np.array_equal(got.spikes >= 0, gold.spikes >= 0)
    assert np.abs(got.spikes.astype(int) - gold.spikes.astype(int)).max() <= 1
    assert np.abs(got.probes - gold.probes).max() < 0.05


def test_leaky_ring_agrees_too() -> None:
    """A second kernel (the toy ring) through both engines: the engines are kernel-generic."""
    from hwbench.plugins.kernels.leaky_ring import LeakyRingKernel

    kernel = LeakyRingKernel()
    wl = kernel.make_workload(50, seed=2)
    gold = NumpyEngine().build(kernel, wl, dtype="float64").run(wl.state0, {}, 30)
    jax64 = JaxEngine().build(kernel, wl, dtype="float64").run(wl.state0, {}, 30)
    np.testing.assert_allclose(jax64.state, gold.state, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(jax64.spikes, gold.spikes)
