"""The io-ehh step written as a plain JAX function, as a user would write it (docs/io-ehh.md).

No hwbench in it: ``jax.numpy`` and ``lax`` only, the connectivity closed over as numpy arrays,
the scalar parameters as Python floats. Each expression is written as the built-in kernel's
``hwbench/plugins/kernels/io_ehh/model.py`` writes it (the same operations in the same order), so
that the function audited by the op-level evaluator and the kernel run by the emulated engine
compute the same numbers on a device (``benchmarks/function_audit.py``,
``tests/evaluator/test_io_ehh_function.py``): the gap junctions as a gather, an elementwise map
and a scatter-add (``zeros.at[tgt].add``), ``x ** 3`` as an integer power, divisions by constants
as divisions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

Array = Any
ROWS = ("V_soma", "soma_k", "soma_l", "soma_h", "soma_n", "soma_x", "V_axon", "axon_h", "axon_x", "V_dend")
ROWS += ("dend_Ca", "dend_r", "dend_s", "dend_q")


def sig(V: Array, a: float, b: float) -> Array:
    return 1 / (1 + jnp.exp(-(V + a) / b))


def soma(s: dict[str, Array], p: dict[str, float]) -> dict[str, Array]:
    V = s["V_soma"]
    I_leak = p["g_ls"] * (V - p["V_l"])
    I_ds = (p["g_int"] / p["p1"]) * (V - s["V_dend"])
    I_as = (p["g_int"] / (1 - p["p2"])) * (V - s["V_axon"])
    k, l = s["soma_k"], s["soma_l"]  # noqa: E741
    I_CaL = p["g_CaL"] * k**3 * l * (V - p["V_Ca"])
    k_inf = sig(V, 61, 4.2)
    l_inf = 1 / (1 + jnp.exp((V + 85) / 8.5))
    tau_l = 20 * jnp.exp((V + 160) / 30) / (1 + jnp.exp((V + 84) / 7.3)) + 35
    dk, dl = k_inf - k, (l_inf - l) / tau_l
    m_inf = sig(V, 30, 5.5)
    h_inf = 1 / (1 + jnp.exp((V + 70) / 5.8))
    I_Na = p["g_Na_s"] * m_inf**3 * s["soma_h"] * (V - p["V_Na"])
    tau_h = 3 * jnp.exp(-(V + 40) / 33)
    dh = (h_inf - s["soma_h"]) / tau_h
    I_Kdr = p["g_Kdr_s"] * s["soma_n"] ** 4 * (V - p["V_K"])
    n_inf = sig(V, 3, 10)
    tau_n = 5 + 47 * jnp.exp((V + 50) / 900)
    dn = (n_inf - s["soma_n"]) / tau_n
    I_K, dx = k_fast(V, s["soma_x"], p["g_K_s"], p["V_K"])
    dV = -p["S"] * (I_leak + I_ds + I_as + I_K + I_Kdr + I_Na + I_CaL)
    return {"V_soma": dV, "soma_k": dk, "soma_l": dl, "soma_h": dh, "soma_n": dn, "soma_x": dx}


def k_fast(V: Array, x: Array, g_K: float, V_K: float) -> tuple[Array, Array]:
    I_K = g_K * x**4 * (V - V_K)
    alpha_x = 0.13 * (V + 25) / (1 - jnp.exp(-(V + 25) / 10))
    beta_x = 1.69 * jnp.exp(-(V + 35) / 80)
    x_inf = alpha_x / (alpha_x + beta_x)
    return I_K, (x_inf - x) * (alpha_x + beta_x)


def axon(s: dict[str, Array], p: dict[str, float]) -> dict[str, Array]:
    V = s["V_axon"]
    I_leak = p["g_la"] * (V - p["V_l"])
    I_sa = (p["g_int"] / p["p2"]) * (V - s["V_soma"])
    m_inf = sig(V, 30, 5.5)
    h_inf = 1 / (1 + jnp.exp((V + 60) / 5.8))
    I_Na = p["g_Na_a"] * m_inf**3 * s["axon_h"] * (V - p["V_Na"])
    tau_h = 1.5 * jnp.exp(-(V + 40) / 33)
    dh = (h_inf - s["axon_h"]) / tau_h
    I_K, dx = k_fast(V, s["axon_x"], p["g_K_a"], p["V_K"])
    dV = -p["S"] * (I_leak + I_sa + I_Na + I_K)
    return {"V_axon": dV, "axon_h": dh, "axon_x": dx}


def dendrite(
    s: dict[str, Array], p: dict[str, float], I_app: Array, gap: Callable[[Array], Array] | None
) -> dict[str, Array]:
    V = s["V_dend"]
    I_leak = p["g_ld"] * (V - p["V_l"])
    I_sd = (p["g_int"] / (1 - p["p1"])) * (V - s["V_soma"])
    r = s["dend_r"]
    I_CaH = p["g_CaH"] * r**2 * (V - p["V_Ca"])
    alpha_r = 1.7 / (1 + jnp.exp(-(V - 5) / 13.9))
    beta_r = 0.02 * (V + 8.5) / (jnp.exp((V + 8.5) / 5) - 1)
    r_inf = alpha_r / (alpha_r + beta_r)
    dr = 0.2 * (r_inf - r) * (alpha_r + beta_r)
    I_KCa = p["g_K_Ca"] * s["dend_s"] * (V - p["V_K"])
    drive = 2e-5 * s["dend_Ca"]
    alpha_s = jnp.where(drive < 0.01, drive, 0.01)
    s_inf = alpha_s / (alpha_s + 0.015)
    ds = (s_inf - s["dend_s"]) * (alpha_s + 0.015)
    I_h = p["g_h"] * s["dend_q"] * (V - p["V_h"])
    q_inf = 1 / (1 + jnp.exp((V + 80) / 4))
    inv_tau_q = jnp.exp(-0.086 * V - 14.6) + jnp.exp(0.070 * V - 1.87)
    dq = (q_inf - s["dend_q"]) * inv_tau_q
    dCa = -3 * I_CaH - 0.075 * s["dend_Ca"]
    I_total = I_leak + I_sd + I_CaH + I_KCa + I_h - I_app
    if gap is not None:
        I_total = I_total - gap(V)
    dV = -p["S"] * I_total
    return {"V_dend": dV, "dend_Ca": dCa, "dend_r": dr, "dend_s": ds, "dend_q": dq}


def gap_junctions(src: np.ndarray, tgt: np.ndarray, n: int, g_gj: float) -> Callable[[Array], Array]:
    """Each cell's gap-junction current: a gather, the Cx36 map, a scatter-add in connection order."""

    def current(V: Array) -> Array:
        def junction(V_src: Array, V_tgt: Array) -> Array:
            dv = V_src - V_tgt
            return dv * (0.2 + 0.8 * jnp.exp(-(dv**2) / 100))

        return g_gj * jnp.zeros(n, V.dtype).at[tgt].add(junction(V[src], V[tgt]))

    return current


def make_step(params: dict[str, Any], src: np.ndarray | None, tgt: np.ndarray | None, n: int) -> Callable[..., Array]:
    """``step(state, I_app)``: one forward-Euler step of the (14, n) state."""
    p = {k: float(v) for k, v in params.items()}
    gap = gap_junctions(src, tgt, n, p["g_gj"]) if src is not None and tgt is not None else None

    def step(state: Array, I_app: Array) -> Array:
        s = {name: state[i] for i, name in enumerate(ROWS)}
        d = {**soma(s, p), **axon(s, p), **dendrite(s, p, I_app, gap)}
        return jnp.stack([state[i] + p["dt"] * d[name] for i, name in enumerate(ROWS)])

    return step


def make_simulation(params: dict[str, Any], src: Any, tgt: Any, n: int, steps: int) -> Callable[..., Array]:
    """``simulate(state, I_app)``: ``steps`` Euler steps in one ``lax.fori_loop``, the final state."""
    step = make_step(params, src, tgt, n)

    def simulate(state: Array, I_app: Array) -> Array:
        return lax.fori_loop(0, steps, lambda _, s: step(s, I_app), state)

    return simulate
