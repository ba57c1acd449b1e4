"""Is B slower than A? Ratios of medians with confidence intervals from the repeat samples.

Like asv, a difference is only called when a real test says so: the two-sided Mann–Whitney U test
(no normality assumed; :mod:`hwbench.store.mannwhitney`, equal to scipy.stats.mannwhitneyu) when
both sides have at least 3 repeats, a percentile bootstrap confidence interval of the ratio of
medians otherwise (2 repeats), and "too few repeats" with a single sample (a ratio, no claim). With
3 repeats a side the exact U test cannot reach p < 0.05 (its smallest two-sided p is 0.1); then the
bootstrap interval decides and the note says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from hwbench.store.mannwhitney import mann_whitney_u

Method = Literal["mann-whitney-u", "bootstrap-ci", "too-few-repeats"]
Change = Literal["slower", "faster", "same", "undecided"]

BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95


class SampleComparison(BaseModel):
    """Candidate B against baseline A on one timed configuration (ratio > 1: B is slower)."""

    config: str
    baseline_n: int
    candidate_n: int
    baseline_median_s: float
    candidate_median_s: float
    ratio: float = Field(description="median(B) / median(A)")
    ci_low: float | None = Field(None, description="95% bootstrap CI of the ratio of medians")
    ci_high: float | None = None
    method: Method
    p_value: float | None = Field(None, description="two-sided Mann–Whitney U p-value")
    note: str = ""
    change: Change
    regression: bool = Field(False, description="slower, significant, and above the gate's threshold")
    execution: str = Field("", description="'A/B': each side's execution, real or emulated (a host's time)")


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


def bootstrap_ratio_ci(a: np.ndarray, b: np.ndarray, seed: int = 0) -> Interval:
    """Percentile bootstrap CI of median(b)/median(a), resampling each side (seeded: reproducible)."""
    rng = np.random.default_rng(seed)
    ma = np.median(a[rng.integers(0, len(a), (BOOTSTRAP_RESAMPLES, len(a)))], axis=1)
    mb = np.median(b[rng.integers(0, len(b), (BOOTSTRAP_RESAMPLES, len(b)))], axis=1)
    ratios = mb / ma
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return Interval(float(low), float(high))


def smallest_p(na: int, nb: int) -> float:
    """The smallest two-sided p-value an exact Mann–Whitney U test can give for these sample sizes."""
    return 2.0 / math.comb(na + nb, na)


def compare_samples(
    config: str, baseline: list[float], candidate: list[float], *, alpha: float = 0.05, fail_above_pct: float = 0.0
) -> SampleComparison:
    """Compare repeat samples of one configuration; see the module docstring for the decision rule."""
    a, b = np.asarray(baseline, dtype=float), np.asarray(candidate, dtype=float)
    if len(a) == 0 or len(b) == 0 or np.any(a <= 0) or np.any(b <= 0):
        raise ValueError(f"{config}: timing samples must be positive and non-empty")
    ratio = float(np.median(b) / np.median(a))
    common: dict[str, Any] = {  # the fields both outcomes share
        "config": config,
        "baseline_n": len(a),
        "candidate_n": len(b),
        "baseline_median_s": float(np.median(a)),
        "candidate_median_s": float(np.median(b)),
        "ratio": ratio,
    }
    if min(len(a), len(b)) < 2:
        return SampleComparison(
            **common, method="too-few-repeats", change="undecided", note="1 repeat on a side: no test, no interval"
        )
    ci = bootstrap_ratio_ci(a, b)
    low, high = ci.low, ci.high
    excludes_one = low > 1.0 or high < 1.0
    p_value, note = None, ""
    if min(len(a), len(b)) >= 3:
        p_value = mann_whitney_u(b, a).p_value
        floor = smallest_p(len(a), len(b))
        if floor >= alpha:
            significant = excludes_one
            note = f"U test cannot reach p < {alpha:g} with {len(a)}/{len(b)} repeats (min p {floor:.3g}): CI decides"
        else:
            significant = p_value < alpha
        method: Method = "mann-whitney-u"
    else:
        significant, method = excludes_one, "bootstrap-ci"
        note = "2 repeats on a side: bootstrap CI only"
    change: Change = ("slower" if ratio > 1 else "faster") if significant else "same"
    regression = change == "slower" and (ratio - 1.0) * 100.0 > fail_above_pct
    return SampleComparison(
        **common,
        ci_low=low,
        ci_high=high,
        method=method,
        p_value=p_value,
        note=note,
        change=change,
        regression=regression,
    )
