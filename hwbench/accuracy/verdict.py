"""Verdict rules: judge a candidate against the noise floor of legitimate IEEE fp32 variants.

Raw max |dV| cannot be the criterion: in the stress test an honest fp32 run already differs from
the reference by tens of mV because spike upstrokes shift by a fraction of a millisecond. So the
audit measures the floor — how far legitimate variants (fp64 gold, another summation order, a
1-ulp perturbation of the initial state) land from the CPU fp32 reference — and scores the
candidate as a ratio to that floor. Rationale and thresholds: docs/audit.md.
"""

from __future__ import annotations

from enum import Enum
from typing import Any


class Verdict(str, Enum):
    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"

    def __str__(self) -> str:
        """``PASS``, ``WARN`` or ``FAIL``, as a script prints it (``print(hwbench.audit(...).verdict)``)."""
        return self.value


# A trajectory-stable regime lets the candidate be judged on voltage deviation directly.
STABLE_MAX_DEV_MV = 1.0  # ensemble spread outside spikes below this ...
STABLE_MATCHED = 0.99  # ... and (almost) every spike matched
# Ratios to the floor: PASS up to the first, WARN up to the second, FAIL beyond.
STABLE_RATIOS = (10.0, 100.0)
CHAOTIC_RATIOS = (3.0, 10.0)
# Absolute floors: deviations below these are irrelevant whatever the ensemble says.
MIN_FLOOR = {"max_outside_spikes": 1e-3, "van_rossum_mean": 0.05, "count_diff_total": 1.0, "unmatched": 0.01}


def regime(ensemble: list[dict[str, Any]]) -> str:
    """'trajectory-stable' when legitimate variants track the reference closely, else 'chaotic'."""
    if not ensemble:
        return "trajectory-stable"
    spread = max(m["deviation"]["max_outside_spikes"] for m in ensemble)
    matched = min(m["spikes"]["matched_fraction"] for m in ensemble)
    return "trajectory-stable" if spread < STABLE_MAX_DEV_MV and matched >= STABLE_MATCHED else "chaotic"


def floor(ensemble: list[dict[str, Any]]) -> dict[str, float]:
    """The worst legitimate variant, per judged metric, never below the absolute floors."""

    def worst(get: Any) -> float:
        return max([get(m) for m in ensemble], default=0.0)

    values = {
        "max_outside_spikes": worst(lambda m: m["deviation"]["max_outside_spikes"]),
        "van_rossum_mean": worst(lambda m: m["spikes"]["van_rossum_mean"]),
        "count_diff_total": worst(lambda m: m["spikes"]["count_diff_total"]),
        "unmatched": worst(lambda m: 1.0 - m["spikes"]["matched_fraction"]),
    }
    return {k: max(v, MIN_FLOOR[k]) for k, v in values.items()}


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


def combine(verdicts: list[Verdict]) -> Verdict:
    order = [Verdict.PASS, Verdict.WARN, Verdict.FAIL]
    return max(verdicts, key=order.index, default=Verdict.PASS)
