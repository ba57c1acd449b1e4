"""The inferior-olive extended Hodgkin-Huxley cell (De Gruijl et al. 2012), one function per part.

Every function here is written against the ops interface (:mod:`hwbench.core.ops`): plain
arithmetic on arrays plus ``ops.exp`` / ``ops.less`` / ``ops.where`` / ``ops.stack`` and, for the gap
junctions, :func:`~hwbench.core.ops.gather_map_scatter`. The same code therefore runs on numpy,
JAX, TensorFlow and under an emulating ops namespace that rounds every result as a chip would.
Each function reads like the equations of ``docs/io-ehh.md``; none branches on array values, so
every engine can compile it.

Parameters ``p`` are the ``params`` dict an engine passes to ``Kernel.step``: each entry is a
Python float or a per-cell array of the working dtype. Units: mV, ms, mS/cm^2, uA/cm^2, uF/cm^2.

The removable singularities of ``alpha_x`` (at V = -25) and ``beta_r`` (at V = -8.5) are kept
in the spec's 0/0 form on purpose: the precision audit exists to show what reduced-precision
``exp`` does to them, so they must not be rewritten into a numerically kinder form.
"""

from __future__ import annotations

from typing import Any

from hwbench.core.ops import Ops, gather_map_scatter

Array = Any

# Row order of the (14, ncells) state array (spec table).
STATE_NAMES: tuple[str, ...] = (
    "V_soma",
    "soma_k",
    "soma_l",
    "soma_h",
    "soma_n",
    "soma_x",
    "V_axon",
    "axon_h",
    "axon_x",
    "V_dend",
    "dend_Ca",
    "dend_r",
    "dend_s",
    "dend_q",
)
ROW: dict[str, int] = {name: i for i, name in enumerate(STATE_NAMES)}

# Initial values (spec table); the three voltages are drawn N(-60, 3) per cell by the workload.
INITIAL_STATE: dict[str, float] = {
    "V_soma": -60.0,
    "soma_k": 0.7423159,
    "soma_l": 0.0321349,
    "soma_h": 0.3596066,
    "soma_n": 0.2369847,
    "soma_x": 0.1,
    "V_axon": -60.0,
    "axon_h": 0.9,
    "axon_x": 0.2369847,
    "V_dend": -60.0,
    "dend_Ca": 3.715,
    "dend_r": 0.0113,
    "dend_s": 0.0049291,
    "dend_q": 0.0337836,
}

# Parameter defaults (spec). I_app is not here: it is an input that may change between calls.
DEFAULT_PARAMS: dict[str, float] = {
    "g_int": 0.13,
    "p1": 0.25,
    "p2": 0.15,
    "g_CaL": 1.1,
    "g_h": 0.12,
    "g_K_Ca": 35.0,
    "g_ld": 0.01532,
    "g_la": 0.016,
    "g_ls": 0.016,
    "g_Na_s": 150.0,
    "g_Kdr_s": 9.0,
    "g_K_s": 5.0,
    "g_CaH": 4.5,
    "g_Na_a": 240.0,
    "g_K_a": 240.0,
    "S": 1.0,
    "V_Na": 55.0,
    "V_K": -75.0,
    "V_Ca": 120.0,
    "V_h": -43.0,
    "V_l": 10.0,
    "g_gj": 0.05,
    "dt": 0.025,
}


def sig(ops: Ops, V: Array, a: float, b: float) -> Array:
    """sig(a, b) = 1 / (1 + exp(-(V + a) / b)), the spec's shorthand."""
    return 1 / (1 + ops.exp(-(V + a) / b))


# ----------------------------------------------------------------------------------- soma
def soma_cal(ops: Ops, V: Array, k: Array, l: Array, p: dict[str, Any]) -> tuple[Array, Array, Array]:  # noqa: E741
    """Low-threshold calcium (CaL): current, dk/dt, dl/dt."""
    I_CaL = p["g_CaL"] * k**3 * l * (V - p["V_Ca"])
    k_inf = sig(ops, V, 61, 4.2)
    l_inf = 1 / (1 + ops.exp((V + 85) / 8.5))
    tau_l = 20 * ops.exp((V + 160) / 30) / (1 + ops.exp((V + 84) / 7.3)) + 35
    return I_CaL, k_inf - k, (l_inf - l) / tau_l


def soma_na(ops: Ops, V: Array, h: Array, p: dict[str, Any]) -> tuple[Array, Array]:
    """Somatic sodium (m instantaneous): current, dh/dt."""
    m_inf = sig(ops, V, 30, 5.5)
    h_inf = 1 / (1 + ops.exp((V + 70) / 5.8))
    I_Na = p["g_Na_s"] * m_inf**3 * h * (V - p["V_Na"])
    tau_h = 3 * ops.exp(-(V + 40) / 33)
    return I_Na, (h_inf - h) / tau_h


def soma_kdr(ops: Ops, V: Array, n: Array, p: dict[str, Any]) -> tuple[Array, Array]:
    """Delayed-rectifier potassium (Kdr): current, dn/dt."""
    I_Kdr = p["g_Kdr_s"] * n**4 * (V - p["V_K"])
    n_inf = sig(ops, V, 3, 10)
    tau_n = 5 + 47 * ops.exp((V + 50) / 900)
    return I_Kdr, (n_inf - n) / tau_n


def k_fast_rates(ops: Ops, V: Array) -> tuple[Array, Array]:
    """alpha_x and beta_x of the fast potassium gate (soma and axon share them).

    alpha_x is 0/0 at V = -25 (removable singularity), kept in the spec's form on purpose.
    """
    alpha_x = 0.13 * (V + 25) / (1 - ops.exp(-(V + 25) / 10))
    beta_x = 1.69 * ops.exp(-(V + 35) / 80)
    return alpha_x, beta_x


def k_fast(ops: Ops, V: Array, x: Array, g_K: Any, V_K: Any) -> tuple[Array, Array]:
    """Fast potassium (soma K_s, axon K_a): current, dx/dt."""
    I_K = g_K * x**4 * (V - V_K)
    alpha_x, beta_x = k_fast_rates(ops, V)
    x_inf = alpha_x / (alpha_x + beta_x)
    return I_K, (x_inf - x) * (alpha_x + beta_x)


def soma(ops: Ops, s: dict[str, Array], p: dict[str, Any]) -> dict[str, Array]:
    """Derivatives of the somatic rows."""
    V = s["V_soma"]
    I_leak = p["g_ls"] * (V - p["V_l"])
    I_ds = (p["g_int"] / p["p1"]) * (V - s["V_dend"])
    I_as = (p["g_int"] / (1 - p["p2"])) * (V - s["V_axon"])
    I_CaL, dk, dl = soma_cal(ops, V, s["soma_k"], s["soma_l"], p)
    I_Na, dh = soma_na(ops, V, s["soma_h"], p)
    I_Kdr, dn = soma_kdr(ops, V, s["soma_n"], p)
    I_K, dx = k_fast(ops, V, s["soma_x"], p["g_K_s"], p["V_K"])
    dV = -p["S"] * (I_leak + I_ds + I_as + I_K + I_Kdr + I_Na + I_CaL)
    return {"V_soma": dV, "soma_k": dk, "soma_l": dl, "soma_h": dh, "soma_n": dn, "soma_x": dx}


# ----------------------------------------------------------------------------------- axon
def axon_na(ops: Ops, V: Array, h: Array, p: dict[str, Any]) -> tuple[Array, Array]:
    """Axonal sodium (m instantaneous): current, dh/dt."""
    m_inf = sig(ops, V, 30, 5.5)
    h_inf = 1 / (1 + ops.exp((V + 60) / 5.8))
    I_Na = p["g_Na_a"] * m_inf**3 * h * (V - p["V_Na"])
    tau_h = 1.5 * ops.exp(-(V + 40) / 33)
    return I_Na, (h_inf - h) / tau_h


def axon(ops: Ops, s: dict[str, Array], p: dict[str, Any]) -> dict[str, Array]:
    """Derivatives of the axonal rows."""
    V = s["V_axon"]
    I_leak = p["g_la"] * (V - p["V_l"])
    I_sa = (p["g_int"] / p["p2"]) * (V - s["V_soma"])
    I_Na, dh = axon_na(ops, V, s["axon_h"], p)
    I_K, dx = k_fast(ops, V, s["axon_x"], p["g_K_a"], p["V_K"])
    dV = -p["S"] * (I_leak + I_sa + I_Na + I_K)
    return {"V_axon": dV, "axon_h": dh, "axon_x": dx}


# ------------------------------------------------------------------------------- dendrite
def cah_rates(ops: Ops, V: Array) -> tuple[Array, Array]:
    """alpha_r and beta_r of the high-threshold calcium gate.

    beta_r is 0/0 at V = -8.5 (removable singularity), kept in the spec's form on purpose.
    """
    alpha_r = 1.7 / (1 + ops.exp(-(V - 5) / 13.9))
    beta_r = 0.02 * (V + 8.5) / (ops.exp((V + 8.5) / 5) - 1)
    return alpha_r, beta_r


def dend_cah(ops: Ops, V: Array, r: Array, p: dict[str, Any]) -> tuple[Array, Array]:
    """High-threshold calcium (CaH): current, dr/dt."""
    I_CaH = p["g_CaH"] * r**2 * (V - p["V_Ca"])
    alpha_r, beta_r = cah_rates(ops, V)
    r_inf = alpha_r / (alpha_r + beta_r)
    return I_CaH, 0.2 * (r_inf - r) * (alpha_r + beta_r)


def dend_kca(ops: Ops, V: Array, s: Array, Ca: Array, p: dict[str, Any]) -> tuple[Array, Array]:
    """Calcium-activated potassium (KCa): current, ds/dt.

    alpha_s = min(2e-5 Ca, 0.01) is written as the study's code writes it, a compare and a select
    (``where(2e-5 Ca < 0.01, 2e-5 Ca, 0.01)``), not as ``minimum``: the two agree on every finite
    Ca, but after a blow-up a NaN Ca gives alpha_s = 0.01 there (a NaN compares false) where
    ``minimum`` would pass the NaN on, so which cells and rows turn NaN - and the NaN counts of an
    audit - follow the reference code.
    """
    I_KCa = p["g_K_Ca"] * s * (V - p["V_K"])
    drive = 2e-5 * Ca
    alpha_s = ops.where(ops.less(drive, 0.01), drive, 0.01)
    s_inf = alpha_s / (alpha_s + 0.015)
    return I_KCa, (s_inf - s) * (alpha_s + 0.015)


def dend_h(ops: Ops, V: Array, q: Array, p: dict[str, Any]) -> tuple[Array, Array]:
    """H current: current, dq/dt (the spec gives the rate 1/tau_q, so dq/dt = (q_inf - q) / tau_q)."""
    I_h = p["g_h"] * q * (V - p["V_h"])
    q_inf = 1 / (1 + ops.exp((V + 80) / 4))
    inv_tau_q = ops.exp(-0.086 * V - 14.6) + ops.exp(0.070 * V - 1.87)
    return I_h, (q_inf - q) * inv_tau_q


def gap_junction_current(ops: Ops, V_dend: Array, p: dict[str, Any]) -> Array:
    """Connexin-36 gap-junction current into each cell: a gather, an elementwise map, a scatter-add.

    For each directed connection src -> tgt, I = g_gj dv (0.2 + 0.8 exp(-dv^2/100)) with
    dv = V_dend[src] - V_dend[tgt], summed per target. ``g_gj`` multiplies the per-cell sum, so a
    per-cell ``g_gj`` array means the conductance of the target cell's junctions (for a scalar
    this is the spec's formula with the common factor taken out of the sum).
    """

    def junction(V_src: Array, V_tgt: Array) -> Array:
        dv = V_src - V_tgt
        return dv * (0.2 + 0.8 * ops.exp(-(dv**2) / 100))

    return p["g_gj"] * gather_map_scatter(ops, junction, V_dend, p["src"], p["tgt"], p["n"])


def dendrite(ops: Ops, s: dict[str, Array], p: dict[str, Any], I_app: Array) -> dict[str, Array]:
    """Derivatives of the dendritic rows; gap junctions only when the workload has connectivity."""
    V = s["V_dend"]
    I_leak = p["g_ld"] * (V - p["V_l"])
    I_sd = (p["g_int"] / (1 - p["p1"])) * (V - s["V_soma"])
    I_CaH, dr = dend_cah(ops, V, s["dend_r"], p)
    I_KCa, ds = dend_kca(ops, V, s["dend_s"], s["dend_Ca"], p)
    I_h, dq = dend_h(ops, V, s["dend_q"], p)
    dCa = -3 * I_CaH - 0.075 * s["dend_Ca"]
    I_total = I_leak + I_sd + I_CaH + I_KCa + I_h - I_app
    if "src" in p:  # a static property of the workload (connected or not), not of array values
        I_total = I_total - gap_junction_current(ops, V, p)
    dV = -p["S"] * I_total
    return {"V_dend": dV, "dend_Ca": dCa, "dend_r": dr, "dend_s": ds, "dend_q": dq}


# ----------------------------------------------------------------------------------- step
def derivatives(ops: Ops, state: Array, p: dict[str, Any], I_app: Array) -> dict[str, Array]:
    """d(row)/dt for every state row, all from the same old state."""
    s = {name: state[i] for i, name in enumerate(STATE_NAMES)}
    return {**soma(ops, s, p), **axon(ops, s, p), **dendrite(ops, s, p, I_app)}


def euler_step(ops: Ops, state: Array, p: dict[str, Any], I_app: Array) -> Array:
    """Forward Euler: x_next = x + dt * dx/dt for all 14 rows (a new (14, ncells) array)."""
    d = derivatives(ops, state, p, I_app)
    dt = p["dt"]
    return ops.stack([state[i] + dt * d[name] for i, name in enumerate(STATE_NAMES)])
