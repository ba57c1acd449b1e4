"""The verdict on a function's outputs on one device, against the float64 reference.

In this order (docs/testing.md, "Audit a JAX function"):

1. a non-finite output element where the reference is finite: FAIL;
2. with tolerances (``rtol``, ``atol``, ``ulps``): an element beyond all of them, that is beyond
   ``max(atol + rtol * |ref|, ulps * ulp_fp32(ref))``, is a FAIL naming the worst one;
3. without tolerances, an output whose error (fp32 ulps) exceeds the fp32 floor (the function on
   native fp32, on the inputs as given and moved one ulp) is a WARN: less accurate than fp32
   computes it, and whether that matters is the user's tolerance; with tolerances it is a note;
4. else PASS.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hwbench.core.audit_report import Verdict
from hwbench.core.errors import UsageError
from hwbench.evaluator.compare import ulp_of


@dataclass(frozen=True)
class Criteria:
    """What a user accepts (None: not given). An element passes within any of the bounds."""

    rtol: float | None = None
    atol: float | None = None
    ulps: float | None = None

    def __post_init__(self) -> None:
        for name in ("rtol", "atol", "ulps"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int | float) and np.isfinite(value) and value >= 0):
                raise UsageError(f"{name} must be a finite number >= 0, got {value!r}")

    @property
    def given(self) -> bool:
        return self.rtol is not None or self.atol is not None or self.ulps is not None

    def describe(self) -> str:
        parts = [f"atol {self.atol or 0:g} + rtol {self.rtol or 0:g} x |ref|"]
        if self.ulps is not None:
            parts.append(f"{self.ulps:g} fp32 ulps")
        return " or ".join(parts)

    def allowed(self, ref: np.ndarray) -> np.ndarray:
        """The largest accepted |cand - ref| per element."""
        bound = (self.atol or 0.0) + (self.rtol or 0.0) * np.abs(ref)
        if self.ulps is not None:
            bound = np.maximum(bound, self.ulps * ulp_of(ref))
        return np.asarray(bound, np.float64)


@dataclass
class Judgement:
    verdict: Verdict
    score: float  # worst output error over its floor (fp32 ulps); how far above fp32 it is
    reasons: list[str]
    outputs: dict[str, dict[str, Any]]


def output_error(cand: np.ndarray, ref: np.ndarray) -> dict[str, Any]:
    """An output's errors: max abs, max rel, fp32 ulps, non-finite count, the worst element's index."""
    c, r = np.asarray(cand, np.float64), np.asarray(ref, np.float64)
    finite = np.isfinite(r)
    bad = finite & ~np.isfinite(c)
    keep = finite & np.isfinite(c)
    err = np.where(keep, np.abs(c - r), 0.0)
    ulps = np.where(keep, err / ulp_of(r), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(keep & (r != 0), err / np.abs(r), 0.0)
    score = np.where(bad, np.inf, ulps)
    worst = np.unravel_index(int(np.argmax(score)), score.shape) if score.size else ()
    return {
        "max_abs_error": float(err.max()) if err.size else 0.0,
        "max_rel_error": float(rel.max()) if rel.size else 0.0,
        "max_ulps_fp32": float(ulps.max()) if ulps.size else 0.0,
        "nonfinite": int(bad.sum()),
        "worst_index": [int(i) for i in worst],
        "worst": [float(c[worst]), float(r[worst])] if score.size else [],
    }


def judge(
    cand: Mapping[str, np.ndarray],
    ref: Mapping[str, np.ndarray],
    floors: Sequence[Mapping[str, np.ndarray]],
    criteria: Criteria,
    names: Mapping[str, str],
) -> Judgement:
    """The verdict on ``cand``'s float outputs (``names``: how a report names each output)."""
    outputs: dict[str, dict[str, Any]] = {}
    fails: list[str] = []
    above: list[str] = []
    score = 0.0
    for key, r in ref.items():
        r = np.asarray(r)
        if r.dtype.kind != "f":
            continue
        name = names.get(key, key)
        e = output_error(cand[key], r)
        floor = max((output_error(f[key], r)["max_ulps_fp32"] for f in floors), default=0.0)
        e["floor_ulps_fp32"] = floor
        outputs[name] = e
        score = max(score, np.inf if e["nonfinite"] else e["max_ulps_fp32"] / max(floor, 1.0))
        if e["nonfinite"]:
            fails.append(f"output {name}: {e['nonfinite']} non-finite values where the float64 reference is finite")
        fails += _beyond(name, np.asarray(cand[key], np.float64), r.astype(np.float64), criteria)
        if e["max_ulps_fp32"] > max(floor, 1.0):
            above.append(
                f"output {name}: {e['max_ulps_fp32']:.3g} fp32 ulps from float64, above the fp32 floor ({floor:.3g})"
            )
    if fails:
        return Judgement(Verdict.FAIL, score, fails + above, outputs)
    if above and not criteria.given:
        return Judgement(Verdict.WARN, score, above, outputs)
    within = f"within {criteria.describe()}" if criteria.given else "within the fp32 floor"
    return Judgement(Verdict.PASS, score, [f"every output {within}", *above], outputs)


def beyond(c: np.ndarray, r: np.ndarray, criteria: Criteria) -> tuple[tuple[int, ...], int] | None:
    """The worst element beyond every tolerance (a non-finite one first) and how many are, or None.
    Elements whose reference is not finite are not judged."""
    c, r = np.asarray(c, np.float64), np.asarray(r, np.float64)
    with np.errstate(invalid="ignore"):
        excess = np.where(np.isfinite(c), np.abs(c - r) - criteria.allowed(r), np.inf)
    excess = np.where(np.isfinite(r), excess, -np.inf)
    if not excess.size or excess.max() <= 0:
        return None
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(excess)), excess.shape))
    return index, int((excess > 0).sum())


def _beyond(name: str, c: np.ndarray, r: np.ndarray, criteria: Criteria) -> list[str]:
    """The elements beyond every tolerance, the worst named (where the reference is finite)."""
    found = beyond(c, r, criteria) if criteria.given else None
    if found is None:
        return []
    i, count = found
    return [
        f"output {name}: {count} of {c.size} elements beyond {criteria.describe()}; worst at "
        f"{list(i)}: {float(c[i]):.7g} vs float64 {float(r[i]):.7g}"
    ]
