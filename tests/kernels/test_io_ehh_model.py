"""The io-ehh equations against an independent scalar transcription of docs/io-ehh.md."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from hwbench.core.engine import kernel_params
from hwbench.core.engines.numpy_engine import NumpyOps
from hwbench.plugins.kernels.io_ehh import IoEhhKernel, kernel, model

KERNEL = IoEhhKernel()


def spec_derivatives(x: dict[str, float], p: dict[str, float], I_app: float, I_gj: float) -> dict[str, float]:
    """One cell's d/dt, written from the spec with the math module (no shared code)."""
    exp = math.exp

    def sig(V: float, a: float, b: float) -> float:
        return 1 / (1 + exp(-(V + a) / b))

    V, Vd, Va = x["V_soma"], x["V_dend"], x["V_axon"]
    k, l, h, n, xs = x["soma_k"], x["soma_l"], x["soma_h"], x["soma_n"], x["soma_x"]  # noqa: E741
    soma_I = (
        p["g_ls"] * (V - p["V_l"])
        + p["g_int"] / p["p1"] * (V - Vd)
        + p["g_int"] / (1 - p["p2"]) * (V - Va)
        + p["g_K_s"] * xs**4 * (V - p["V_K"])
        + p["g_Kdr_s"] * n**4 * (V - p["V_K"])
        + p["g_Na_s"] * sig(V, 30, 5.5) ** 3 * h * (V - p["V_Na"])
        + p["g_CaL"] * k**3 * l * (V - p["V_Ca"])
    )
    tau_l = 20 * exp((V + 160) / 30) / (1 + exp((V + 84) / 7.3)) + 35
    ax_s = 0.13 * (V + 25) / (1 - exp(-(V + 25) / 10))
    bx_s = 1.69 * exp(-(V + 35) / 80)
    d = {
        "V_soma": -p["S"] * soma_I,
        "soma_k": sig(V, 61, 4.2) - k,
        "soma_l": (1 / (1 + exp((V + 85) / 8.5)) - l) / tau_l,
        "soma_h": (1 / (1 + exp((V + 70) / 5.8)) - h) / (3 * exp(-(V + 40) / 33)),
        "soma_n": (sig(V, 3, 10) - n) / (5 + 47 * exp((V + 50) / 900)),
        "soma_x": (ax_s / (ax_s + bx_s) - xs) * (ax_s + bx_s),
    }
    ha, xa = x["axon_h"], x["axon_x"]
    ax_a = 0.13 * (Va + 25) / (1 - exp(-(Va + 25) / 10))
    bx_a = 1.69 * exp(-(Va + 35) / 80)
    axon_I = (
        p["g_la"] * (Va - p["V_l"])
        + p["g_int"] / p["p2"] * (Va - V)
        + p["g_Na_a"] * sig(Va, 30, 5.5) ** 3 * ha * (Va - p["V_Na"])
        + p["g_K_a"] * xa**4 * (Va - p["V_K"])
    )
    d["V_axon"] = -p["S"] * axon_I
    d["axon_h"] = (1 / (1 + exp((Va + 60) / 5.8)) - ha) / (1.5 * exp(-(Va + 40) / 33))
    d["axon_x"] = (ax_a / (ax_a + bx_a) - xa) * (ax_a + bx_a)
    Ca, r, s, q = x["dend_Ca"], x["dend_r"], x["dend_s"], x["dend_q"]
    I_CaH = p["g_CaH"] * r**2 * (Vd - p["V_Ca"])
    a_r = 1.7 / (1 + exp(-(Vd - 5) / 13.9))
    b_r = 0.02 * (Vd + 8.5) / (exp((Vd + 8.5) / 5) - 1)
    a_s = min(2e-5 * Ca, 0.01)
    q_inf = 1 / (1 + exp((Vd + 80) / 4))
    inv_tau_q = exp(-0.086 * Vd - 14.6) + exp(0.070 * Vd - 1.87)
    dend_I = (
        p["g_ld"] * (Vd - p["V_l"])
        + p["g_int"] / (1 - p["p1"]) * (Vd - V)
        + I_CaH
        + p["g_K_Ca"] * s * (Vd - p["V_K"])
        + p["g_h"] * q * (Vd - p["V_h"])
        - I_app
        - I_gj
    )
    d["V_dend"] = -p["S"] * dend_I
    d["dend_Ca"] = -3 * I_CaH - 0.075 * Ca
    d["dend_r"] = 0.2 * (a_r / (a_r + b_r) - r) * (a_r + b_r)
    d["dend_s"] = (a_s / (a_s + 0.015) - s) * (a_s + 0.015)
    d["dend_q"] = (q_inf - q) * inv_tau_q
    return d


def random_states(ncells: int, seed: int) -> np.ndarray:
    """States spread over the physiological range (voltages -80..+30 mV, gates in (0, 1))."""
    rng = np.random.default_rng(seed)
    state = rng.uniform(0.0, 1.0, (14, ncells))
    for name in ("V_soma", "V_axon", "V_dend"):
        state[model.ROW[name]] = rng.uniform(-80, 30, ncells)
    state[model.ROW["dend_Ca"]] = rng.uniform(0, 1000, ncells)  # spans both branches of min(2e-5 Ca, 0.01)
    return state


@pytest.mark.parametrize("connected", [False, True])
def test_derivatives_match_the_spec(connected: bool) -> None:
    wl = KERNEL.make_workload(64, connected=connected, seed=7, g_CaL=np.linspace(0.5, 1.4, 64))
    ops = NumpyOps(np.float64)
    params = kernel_params(wl, lambda a: np.asarray(a, np.float64), np.asarray)
    state = random_states(64, seed=8)
    I_app = np.linspace(-2, 12, 64)
    got = model.derivatives(ops, state, params, I_app)
    I_gj = np.zeros(64)
    if connected:  # the Cx36 sum, written as a plain loop over directed connections
        for a, b in zip(wl.arrays["src"], wl.arrays["tgt"]):
            dv = state[9, a] - state[9, b]
            I_gj[b] += wl.params["g_gj"] * dv * (0.2 + 0.8 * math.exp(-dv * dv / 100))
    for c in range(64):
        p = {k: (float(v[c]) if np.ndim(v) else v) for k, v in wl.params.items()}
        want = spec_derivatives({n: state[i, c] for i, n in enumerate(model.STATE_NAMES)}, p, I_app[c], I_gj[c])
        for name, value in want.items():
            assert got[name][c] == pytest.approx(value, rel=1e-11, abs=1e-12), (name, c)


def test_euler_step_updates_every_row_from_the_old_state() -> None:
    wl = KERNEL.make_workload(27, connected=False, seed=1)
    ops = NumpyOps(np.float64)
    params = kernel_params(wl, lambda a: np.asarray(a, np.float64), np.asarray)
    state = random_states(27, seed=2)
    new = KERNEL.step(ops, state, params, {"I_app": np.zeros(27)}, 0)
    d = model.derivatives(ops, state, params, np.zeros(27))
    expected = np.stack([state[i] + 0.025 * d[n] for i, n in enumerate(model.STATE_NAMES)])
    np.testing.assert_array_equal(new, expected)


def test_removable_singularities_are_kept_in_their_0_over_0_form() -> None:
    """alpha_x (V = -25) and beta_r (V = -8.5) are 0/0 as the spec writes them: NaN on the spot,
    near their limits 1.3 and 0.1 a little away, and visibly off one ulp away, where 1 - exp(-tiny)
    cancels. A numerically kinder rewrite (expm1, a series) would be 1.3 / 0.1 there — and hide
    exactly what the precision audit must exercise."""
    ops = NumpyOps(np.float64)

    def rates(v0: float) -> tuple[np.ndarray, np.ndarray]:
        V = np.array([v0, v0 + 1e-6, np.nextafter(v0, 0.0)])
        with np.errstate(invalid="ignore", divide="ignore"):
            return model.k_fast_rates(ops, V)[0], model.cah_rates(ops, V)[1]

    alpha_x, beta_r = rates(-25.0)[0], rates(-8.5)[1]
    for values, limit in ((alpha_x, 1.3), (beta_r, 0.1)):
        assert np.isnan(values[0])
        assert values[1] == pytest.approx(limit, rel=1e-6)
        assert abs(values[2] - limit) > 0.01 * limit


def test_float32_stays_float32() -> None:
    wl = KERNEL.make_workload(64, seed=0)
    ops = NumpyOps(np.float32)
    params = kernel_params(wl, lambda a: np.asarray(a, np.float32), np.asarray)
    new = KERNEL.step(ops, wl.state0.astype(np.float32), params, {"I_app": np.zeros(64, np.float32)}, 0)
    assert new.dtype == np.float32 and new.shape == (14, 64)


def test_operation_counts_match_the_traced_step() -> None:
    """ARITH_/EXP_PER_CELL and _PER_JUNCTION (flops_per_step) against the traced computation."""
    jax = pytest.importorskip("jax")
    from hwbench.core.engines.jax_engine import JaxOps

    arith = {"add", "sub", "mul", "div", "neg", "integer_pow", "min"}

    def count(connected: bool) -> Counter:
        wl = KERNEL.make_workload(64, connected=connected, seed=0)
        ops = JaxOps(np.float32, scatter="segment_sum")
        params = kernel_params(wl, lambda a: np.asarray(a, np.float32), np.asarray)
        jaxpr = jax.make_jaxpr(lambda s, i: KERNEL.step(ops, s, params, {"I_app": i}, 0))(
            wl.state0.astype(np.float32), np.zeros(64, np.float32)
        )
        c: Counter = Counter()
        for eqn in jaxpr.eqns:
            name, aval = eqn.primitive.name, eqn.outvars[0].aval
            if name == "lt" and np.issubdtype(eqn.invars[0].aval.dtype, np.floating):
                c["arith"] += int(np.prod(aval.shape))  # the KCa gate's compare (its select is free)
                continue
            if not np.issubdtype(aval.dtype, np.floating):
                continue  # index arithmetic of gathers/scatters
            size = int(np.prod(aval.shape))
            if name == "integer_pow":  # x**k costs k-1 multiplies
                c["arith"] += size * (eqn.params["y"] - 1)
            elif name in arith:
                c["arith"] += size
            elif name == "exp":
                c["exp"] += size
        return c

    cells, both = count(False), count(True)
    assert cells["exp"] == 64 * kernel.EXP_PER_CELL
    assert cells["arith"] == 64 * kernel.ARITH_PER_CELL
    assert both["exp"] - cells["exp"] == 640 * kernel.EXP_PER_JUNCTION
    assert both["arith"] - cells["arith"] == 640 * kernel.ARITH_PER_JUNCTION + 64 * kernel.ARITH_PER_CONNECTED_CELL


def _one_step_with_nan_calcium(engine: str) -> tuple[np.ndarray, np.ndarray]:
    """One step of 8 unconnected cells whose cell 0 has Ca = NaN and cell 1 Ca = 1e4 (both
    saturate the KCa gate in the study's code), on ``engine``; returns (state before, after)."""
    from hwbench.core.plugins import load_registry

    wl = KERNEL.make_workload(8, connected=False, seed=0)
    state = wl.state0.astype(np.float32)
    ca = model.STATE_NAMES.index("dend_Ca")
    state[ca, 0], state[ca, 1] = np.nan, 1e4
    if engine == "jax":
        pytest.importorskip("jax")
        from hwbench.core.engines.jax_engine import JaxEngine

        executor = JaxEngine().build(KERNEL, wl, dtype="float32", sample_every=1)
    elif engine == "emulated":  # the GroqChip's rounding through the emulating ops namespace
        from hwbench.accuracy.numerics.emulate import emulating_ops
        from hwbench.core.engines.numpy_engine import NumpyEngine

        device = load_registry().device("groq")
        # IEEE special values: a NaN must survive to show the select's semantics (the chip's
        # default saturating policy, issue 30, replaces NaN by 0)
        profile = device.numerics(device.default_mode, {"special_values": "ieee"})
        wrap = emulating_ops(profile)
        executor = NumpyEngine().build(KERNEL, wl, dtype=profile.carrier, sample_every=1, ops_wrapper=wrap)
    else:
        from hwbench.core.engines.numpy_engine import NumpyEngine

        executor = NumpyEngine().build(KERNEL, wl, dtype="float32", sample_every=1)
    return state, np.asarray(executor.run(state, {}, 1).state, dtype=np.float64)


@pytest.mark.parametrize("engine", ["numpy", "jax", "emulated"])
def test_kca_gate_saturates_for_nan_calcium_as_the_study_code_does(engine: str) -> None:
    """ioperf's ``tf.where(2e-5 Ca < 0.01, 2e-5 Ca, 0.01)`` gives alpha_s = 0.01 for a NaN Ca (a NaN
    compares false), where ``minimum`` would make dend_s NaN: after one step the only NaN is Ca
    itself, and the NaN cell's dend_s equals that of a cell with a saturating finite Ca."""
    before, after = _one_step_with_nan_calcium(engine)
    ca, s = model.STATE_NAMES.index("dend_Ca"), model.STATE_NAMES.index("dend_s")
    assert [tuple(ix) for ix in np.argwhere(~np.isfinite(after))] == [(ca, 0)]
    assert before[s, 0] == before[s, 1]
    assert after[s, 0] == after[s, 1]
    # and by hand: alpha_s = 0.01, s_inf = 0.01 / 0.025, ds/dt = (s_inf - s) (alpha_s + 0.015)
    s0 = float(np.float32(model.INITIAL_STATE["dend_s"]))
    expected = s0 + model.DEFAULT_PARAMS["dt"] * (0.01 / 0.025 - s0) * 0.025
    assert after[s, 0] == pytest.approx(expected, rel=1e-2 if engine == "emulated" else 1e-6)
