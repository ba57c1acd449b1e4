"""Verdict rules: judge a candidate against the noise floor of legitimate IEEE fp32 variants.

Raw max |dV| cannot be the criterion: in the stress test an honest fp32 run already differs from
the reference by tens of mV because spike upstrokes shift by a fraction of a millisecond. So the
audit measures the floor — how far legitimate variants (fp64 gold, another summation order, a
1-ulp perturbation of the initial state) land from the CPU fp32 reference — and scores the
candidate as a ratio to that floor. Rationale and thresholds: docs/audit.md.
"""

from __future__ import annotations

from typing import Any

from hwbench.core.audit_report import Verdict, combine
from hwbench.core.protocol_facts import CONTRACT2_FLOORS

__all__ = [
    "CHAOTIC_RATIOS",
    "STABLE_MATCHED",
    "STABLE_RATIOS",
    "Verdict",
    "combine",
    "floor",
    "judge",
    "ratio_verdict",
    "regime",
]

# A trajectory-stable regime lets the candidate be judged on the probe's deviation directly: the
# ensemble's spread outside spikes below the kernel's ``AuditFacts.floors.stable_spread`` ...
STABLE_MATCHED = 0.99  # ... and (almost) every spike matched
# Ratios to the floor: PASS up to the first, WARN up to the second, FAIL beyond. (Ratios are
# dimensionless; the absolute floors, which carry the probe's unit, are kernel facts.)
STABLE_RATIOS = (10.0, 100.0)
CHAOTIC_RATIOS = (3.0, 10.0)


def regime(ensemble: list[dict[str, Any]], stable_spread: float | None = None) -> str:
    """'trajectory-stable' when legitimate variants track the reference closely (spread outside
    spikes below ``stable_spread``, in the probe's unit; default contract 2's 1 mV), else 'chaotic'."""
    if not ensemble:
        return "trajectory-stable"
    limit = CONTRACT2_FLOORS.stable_spread if stable_spread is None else stable_spread
    spread = max(m["deviation"]["max_outside_spikes"] for m in ensemble)
    matched = min(m["spikes"]["matched_fraction"] for m in ensemble)
    return "trajectory-stable" if spread < limit and matched >= STABLE_MATCHED else "chaotic"


def ratio_verdict(score: float, limits: tuple[float, float]) -> Verdict:
    """PASS up to ``limits[0]`` times the floor, WARN up to ``limits[1]``, FAIL beyond."""
    return Verdict.PASS if score <= limits[0] else Verdict.WARN if score <= limits[1] else Verdict.FAIL


def floor(ensemble: list[dict[str, Any]], minimum: dict[str, float] | None = None) -> dict[str, float]:
    """The worst legitimate variant, per judged metric, never below the absolute floors ``minimum``
    (the kernel's ``AuditFacts.floors``; default contract 2's, in mV)."""
    lowest = CONTRACT2_FLOORS.minimum() if minimum is None else minimum

    def worst(get: Any) -> float:
        return max([get(m) for m in ensemble], default=0.0)

    values = {
        "max_outside_spikes": worst(lambda m: m["deviation"]["max_outside_spikes"]),
        "van_rossum_mean": worst(lambda m: m["spikes"]["van_rossum_mean"]),
        "count_diff_total": worst(lambda m: m["spikes"]["count_diff_total"]),
        "unmatched": worst(lambda m: 1.0 - m["spikes"]["matched_fraction"]),
    }
    return {k: max(v, lowest[k]) for k, v in values.items()}


def judge(
    metrics: dict[str, Any],
    violation: dict[str, Any] | None,
    floor_values: dict[str, float],
    regime_name: str,
    unit: str = "mV",
) -> tuple[Verdict, float, list[str]]:
    """Verdict, score (worst ratio to the floor) and the reasons in words (deviations in the probe's ``unit``)."""
    reasons: list[str] = []
    if violation is not None:
        reasons.append(f"hard check failed: {violation.get('explanation') or violation['kind']}")
        return Verdict.FAIL, float("inf"), reasons
    dev = metrics["deviation"]["max_outside_spikes"]
    spikes = metrics["spikes"]
    if regime_name == "trajectory-stable":
        ratios = {"max |dV| outside spikes": dev / floor_values["max_outside_spikes"]}
        limits = STABLE_RATIOS
    else:
        ratios = {
            "max |dV| outside spikes": dev / floor_values["max_outside_spikes"],
            "van Rossum distance": spikes["van_rossum_mean"] / floor_values["van_rossum_mean"],
            "spike count difference": spikes["count_diff_total"] / floor_values["count_diff_total"],
            "unmatched spikes": (1.0 - spikes["matched_fraction"]) / floor_values["unmatched"],
        }
        limits = CHAOTIC_RATIOS
    worst_name, score = max(ratios.items(), key=lambda kv: kv[1])
    if score <= limits[0]:
        verdict = Verdict.PASS
        reasons.append(f"within {limits[0]:g}x the floor of legitimate fp32 variants ({regime_name} regime)")
    elif score <= limits[1]:
        verdict = Verdict.WARN
        reasons.append(
            f"{worst_name} is {score:.3g}x the floor (PASS up to {limits[0]:g}x, FAIL beyond {limits[1]:g}x)"
        )
    else:
        verdict = Verdict.FAIL
        reasons.append(f"{worst_name} is {score:.3g}x the floor (FAIL beyond {limits[1]:g}x)")
    u = f" {unit}" if unit else ""
    reasons.append(f"max |dV| = {metrics['deviation']['max']:.4g}{u} ({dev:.4g}{u} outside +-1 ms of spikes)")
    return verdict, score, reasons
