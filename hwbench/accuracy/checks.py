"""Hard checks on the full state, and forensics that pin the first violation to a step.

Any violation fails an audit, whatever the deviations: a non-finite value, a membrane voltage
outside the span the reversal potentials allow (with a margin), a gating variable outside [0, 1],
a negative concentration. The bounds are physical, not statistical (docs/audit.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hwbench.core.kernel import Kernel

# io-ehh: reversal potentials span V_K = -75 mV .. V_Ca = +120 mV; a margin of 25 / 10 mV keeps
# honest dynamics (with applied pulses) inside while catching runaway values.
VOLTAGE_BOUNDS_MV = (-100.0, 130.0)
GATE_TOLERANCE = 1e-6  # forward Euler with dt/tau < 1 keeps gates in [0, 1] up to rounding

# Removable singularities of io-ehh (0/0 forms) that a reduced-precision exp turns into NaN/inf.
SINGULARITIES = {
    "V_soma": (-25.0, "soma K-fast alpha_x = 0.13 (V+25) / (1 - exp(-(V+25)/10))"),
    "V_axon": (-25.0, "axon K alpha_x = 0.13 (V+25) / (1 - exp(-(V+25)/10))"),
    "V_dend": (-8.5, "dendrite CaH beta_r = 0.02 (V+8.5) / (exp((V+8.5)/5) - 1)"),
}


@dataclass
class RowRule:
    kind: str  # "voltage" | "gate" | "concentration"
    low: float
    high: float


def row_rules(state_names: list[str]) -> dict[int, RowRule]:
    """Bounds per state row, from the names (V_* voltages, *_Ca concentrations, others gates)."""
    rules = {}
    for i, name in enumerate(state_names):
        if name.startswith("V_"):
            rules[i] = RowRule("voltage", *VOLTAGE_BOUNDS_MV)
        elif name.endswith("_Ca"):
            rules[i] = RowRule("concentration", 0.0, np.inf)
        else:
            rules[i] = RowRule("gate", -GATE_TOLERANCE, 1.0 + GATE_TOLERANCE)
    return rules


def state_checker(kernel: Kernel) -> Callable[[Any], dict[str, Any] | None]:
    """A check for ``run_scenario``: the first violation in a state, or None.

    Only kernels with a (rows, cells) float state (the conductance family) get bounds; every
    kernel gets the non-finite check.
    """
    names = kernel.info.state_names
    rules = row_rules(names) if kernel.info.family == "conductance" else {}

    def check(state: Any) -> dict[str, Any] | None:
        arrays = state if isinstance(state, (tuple, list)) else [state]
        for part, arr in enumerate(arrays):
            a = np.asarray(arr, dtype=np.float64)
            bad = ~np.isfinite(a)
            if bad.any():
                return _describe(a, bad, "non-finite value", names if len(arrays) == 1 else None, part)
        if not rules:
            return None
        a = np.asarray(arrays[0], dtype=np.float64)
        for row, rule in rules.items():
            bad = (a[row] < rule.low) | (a[row] > rule.high)
            if bad.any():
                what = {
                    "voltage": f"voltage outside [{rule.low:g}, {rule.high:g}] mV",
                    "gate": "gating variable outside [0, 1]",
                    "concentration": "negative concentration",
                }[rule.kind]
                mask = np.zeros_like(a, dtype=bool)
                mask[row] = bad
                return _describe(a, mask, what, names, 0)
        return None

    return check


def _describe(a: np.ndarray, mask: np.ndarray, what: str, names: list[str] | None, part: int) -> dict[str, Any]:
    idx = np.argwhere(mask)[0]
    row = int(idx[0]) if a.ndim > 1 else 0
    cell = int(idx[-1])
    name = names[row] if names and a.ndim > 1 else f"state[{part}]"
    return {"kind": what, "row": row, "variable": name, "cell": cell, "value": float(a[tuple(idx)])}


_EVENT_WORDS = {
    "ieee": {"overflow": "overflowed to infinity in {op}", "nonfinite": "NaN or infinity born in {op}"},
    "saturate": {
        "overflow": "saturated to the largest finite value in {op}",
        "nonfinite": "an invalid result (0/0) replaced by 0 in {op}",
    },
}


def _mechanisms(counters: dict[str, int], policy: str) -> list[str]:
    """What happened in which op class, in the words of the profile's special-value policy.

    Under ``saturate`` an overflow (division by zero included) became the largest finite value
    and an invalid result 0, so the run stayed finite; under ``ieee`` they are infinity and NaN.
    """
    words = _EVENT_WORDS.get(policy, _EVENT_WORDS["ieee"])
    out = []
    for key, count in counters.items():
        op, _, event = key.partition(".")
        if event in words and count:
            out.append(f"{words[event].format(op=op)} ({count} element{'s' if count != 1 else ''})")
    return out


def explain(found: dict[str, Any]) -> str:
    """Words for the report: where, what, and the most likely cause from counters and state."""
    t = found.get("t_ms")
    head = f"t = {t / 1000:.6g} s, " if t is not None else ""
    text = f"{head}cell {found['cell']}, {found['variable']}: {found['kind']} ({found['value']:.4g})"
    counters = found.get("counters") or {}
    mechanisms = _mechanisms(counters, found.get("special_values", "ieee"))
    if mechanisms:
        text += "; " + "; ".join(mechanisms)
    ops = {key.split(".")[0] for key in counters if key.endswith("nonfinite") or key.endswith("overflow")}
    before = found.get("cell_state_before") or {}
    for var, (v0, formula) in SINGULARITIES.items():
        v = before.get(var)
        if v is not None and abs(v - v0) < 0.5:
            text += f"; {var} = {v:.4f} mV is next to the removable singularity of {formula}"
            if any(k.startswith("exp") for k in counters) or "div" in ops:
                text += ", where a reduced-precision exp rounds to exactly 1 and the division becomes " + (
                    "x/0, saturated" if found.get("special_values") == "saturate" else "0/0"
                )
            break
    return text
