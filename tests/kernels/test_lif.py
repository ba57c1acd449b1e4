"""The LIF-family kernels against a float64 reference written here, through the real engines."""

from __future__ import annotations

import numpy as np
import pytest

from hwbench.core.engines.numpy_engine import NumpyEngine
from hwbench.core.errors import UsageError
from hwbench.core.kernel import Workload
from hwbench.core.plugins import load_registry
from hwbench.plugins.kernels.lif import LifCurrentKernel, LifKernel, LifRecurrentKernel, kernels

KERNELS = {k.name: k for k in kernels()}
VARIANTS = ("lif", "lif-current", "lif-recurrent")


def reference(workload: Workload, nsteps: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Plain float64 simulation of the equations in the lif module docstring.

    Synaptic sums are built from the rows of the neurons that spiked (not a matmul), and the
    loop is over layers explicitly, so this shares no code path with the kernel.
    Returns (output spikes per step, final state in the kernel's layout).
    """
    p, a = workload.params, workload.arrays
    beta, thr, zero = p["beta"], p["thr"], p["reset_zero"] == 1.0
    alpha = p.get("alpha")
    n, n_out = workload.size, a["w_out"].shape[1]
    u = [np.zeros(n), np.zeros(n_out)]
    z = [np.zeros(n), np.zeros(n_out)]
    cur = [np.zeros(n), np.zeros(n_out)]
    out = np.zeros((nsteps, n_out))
    for t in range(nsteps):
        x = a["x"][t % a["x"].shape[0]].astype(bool)
        pre = [a["w_in"][x].sum(axis=0), None]
        if "w_rec" in a:
            pre[0] = pre[0] + a["w_rec"][z[0].astype(bool)].sum(axis=0)
        for layer in range(2):
            if layer == 1:
                pre[1] = a["w_out"][z[0].astype(bool)].sum(axis=0)
            drive = pre[layer]
            if alpha is not None:
                cur[layer] = alpha * cur[layer] + drive
                drive = cur[layer]
            if zero and (alpha is not None or ("w_rec" in a and layer == 0)):
                # snnTorch Synaptic / RLeaky: the new potential is cleared
                u[layer] = (beta * u[layer] + drive) * (1.0 - z[layer])
            elif zero:  # snnTorch Leaky: the old potential is cleared before the leak
                u[layer] = beta * (u[layer] * (1.0 - z[layer])) + drive
            else:
                u[layer] = beta * u[layer] + drive - thr * z[layer]
            z[layer] = (u[layer] > thr).astype(np.float64)
        out[t] = z[1]
    state: list[np.ndarray] = []
    for layer in range(2):
        state += ([cur[layer]] if alpha is not None else []) + [u[layer], z[layer]]
    return out, state


@pytest.fixture(scope="module")
def workloads() -> dict[tuple[str, str], Workload]:
    return {(v, r): KERNELS[v].make_workload(1000, reset=r) for v in VARIANTS for r in ("subtract", "zero")}


@pytest.mark.parametrize("reset", ["subtract", "zero"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_numpy_engine_matches_float64_reference(variant: str, reset: str, workloads: dict) -> None:
    kernel, wl = KERNELS[variant], workloads[(variant, reset)]
    out = NumpyEngine().build(kernel, wl, dtype="float64").run(wl.state0, {}, 25)
    ref_spikes, ref_state = reference(wl, 25)
    assert out.probes.shape == (25, 10)
    np.testing.assert_array_equal(out.probes, ref_spikes)
    for got, want in zip(out.state, ref_state):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_spike_counts_are_plausible(variant: str, workloads: dict) -> None:
    """An active but not saturated network: outputs spike, not on every step, hidden layer too."""
    wl = workloads[(variant, "subtract")]
    spikes, state = reference(wl, 25)
    assert 0.02 <= spikes.mean() <= 0.6, spikes.mean()
    assert (spikes.sum(axis=0) < 25).all()  # no output neuron fires on every step
    hidden_z = state[2 if variant == "lif-current" else 1]
    assert 0.005 <= hidden_z.mean() <= 0.5


def test_jax_engine_matches_reference(workloads: dict) -> None:
    """float64: same spikes as the reference (a traced step index, compiled loop); float32 (lif):
    every output neuron's spike count within 2 of the reference."""
    pytest.importorskip("jax")
    from hwbench.core.engines.jax_engine import JaxEngine

    for variant in VARIANTS:
        kernel, wl = KERNELS[variant], workloads[(variant, "zero" if variant == "lif-current" else "subtract")]
        ref_spikes, ref_state = reference(wl, 30)  # 30 > 25 steps: the input raster wraps around
        out64 = JaxEngine().build(kernel, wl, dtype="float64").run(wl.state0, {}, 30)
        np.testing.assert_array_equal(out64.probes, ref_spikes)
        for got, want in zip(out64.state, ref_state):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    wl = workloads[("lif", "subtract")]
    out32 = JaxEngine().build(KERNELS["lif"], wl, dtype="float32").run(wl.state0, {}, 25)
    assert out32.probes.dtype == np.float32
    assert np.abs(out32.probes.sum(axis=0) - reference(wl, 25)[0].sum(axis=0)).max() <= 2


def test_input_rows_cycle_with_the_step_index() -> None:
    """Step t of a call reads input row t mod n_steps: 2 x n_steps steps = the raster twice."""
    kernel = LifKernel()
    wl = kernel.make_workload(40, n_in=30, n_steps=5, input_rate=0.4, seed=3)
    out = NumpyEngine().build(kernel, wl, dtype="float64").run(wl.state0, {}, 10)
    ref, _ = reference(wl, 10)
    np.testing.assert_array_equal(out.probes, ref)


def test_workload_is_seeded_and_round_trips(tmp_path) -> None:
    kernel = LifRecurrentKernel()
    a, b = kernel.make_workload(64, seed=7), kernel.make_workload(64, seed=7)
    c = kernel.make_workload(64, seed=8)
    for key in ("x", "w_in", "w_out", "w_rec"):
        np.testing.assert_array_equal(a.arrays[key], b.arrays[key])
    assert not np.array_equal(a.arrays["w_in"], c.arrays["w_in"])
    assert a.arrays["x"].shape == (25, 784) and set(np.unique(a.arrays["x"])) <= {0, 1}
    assert a.arrays["w_in"].shape == (784, 64) and a.arrays["w_out"].shape == (64, 10)
    assert np.all(np.diag(a.arrays["w_rec"]) == 0)
    loaded = Workload.load(a.save(tmp_path / "lif.npz"))
    assert loaded.params == a.params and loaded.meta == a.meta
    for key in a.arrays:
        np.testing.assert_array_equal(loaded.arrays[key], a.arrays[key])
    assert len(loaded.state0) == 4 and [s.shape for s in loaded.state0] == [(64,), (64,), (10,), (10,)]


def test_unconnected_recurrent_network_has_no_recurrent_weights() -> None:
    wl = LifRecurrentKernel().make_workload(32, connected=False)
    assert not wl.arrays["w_rec"].any()
    assert wl.meta["connected"] is False


def test_only_the_recurrent_network_has_connections_to_remove() -> None:
    """``--unconnected`` is refused where it would change nothing (a feed-forward network), not ignored."""
    from hwbench.core.runner import check_disconnectable
    from hwbench.library.bench import networks

    check_disconnectable(LifRecurrentKernel())
    assert networks(LifRecurrentKernel(), (False, True)) == (False, True)
    for kernel in (LifKernel(), LifCurrentKernel()):
        with pytest.raises(UsageError, match=f"kernel '{kernel.name}' has no connections to remove"):
            check_disconnectable(kernel)
        assert networks(kernel, (False, True)) == (True,)  # bench times the one network once
        with pytest.raises(UsageError, match="has no connections to remove"):
            networks(kernel, (False,))


def test_current_kernel_scales_weights_by_one_minus_alpha() -> None:
    plain = LifKernel().make_workload(32, seed=1)
    current = LifCurrentKernel().make_workload(32, seed=1, alpha=0.8)
    np.testing.assert_allclose(current.arrays["w_in"], 0.2 * plain.arrays["w_in"])
    assert [s.shape for s in current.state0] == [(32,)] * 3 + [(10,)] * 3


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"tau": 3.0}, r"no parameter tau; settable: .*beta"),
        ({"reset": "half"}, r"reset must be 'subtract' or 'zero'"),
        ({"beta": 1.5}, r"beta must lie in \[0, 1\]"),
        ({"n_steps": 0}, r"n_steps must be a positive integer"),
        ({"input_rate": 0.9}, r"input_rate must lie in \[0, 0.5\]"),
    ],
)
def test_bad_workload_parameters_are_usage_errors(overrides: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        LifKernel().make_workload(16, **overrides)


def test_alpha_only_on_the_current_kernel() -> None:
    with pytest.raises(UsageError, match="no parameter alpha"):
        LifKernel().make_workload(16, alpha=0.5)


def test_kernels_register_through_the_builtin_plugin() -> None:
    registry = load_registry(entry_point_plugins=False)
    for name in VARIANTS:
        kernel = registry.kernel(name)
        assert kernel.info.family == "lif" and kernel.info.sample_every == 1
    info = registry.kernel("lif-current").info
    assert info.state_names == ["i_hidden", "u_hidden", "z_hidden", "i_out", "u_out", "z_out"]


def test_cost_model_counts_synapses() -> None:
    kernel = LifRecurrentKernel()
    wl = kernel.make_workload(100)
    synapses = 784 * 100 + 100 * 10 + 100 * 100
    assert kernel.flops_per_step(wl) == 2.0 * synapses + 6.0 * 110
    assert kernel.memory_estimate(100) > 8 * synapses
