"""The verdict on a candidate's outputs against the float64 reference and the fp32 floor.

Front-end neutral: a model's outputs and a function's are judged by the same rules, in this order
(docs/models.md, "Audit it"; docs/testing.md, "Audit a JAX function"):

1. a non-finite output element where the reference is finite: FAIL;
2. with tolerances (``rtol``, ``atol``, ``ulps``): an element beyond all of them, that is beyond
   ``max(atol + rtol * |ref|, ulps * ulp_fp32(ref))``, is a FAIL naming the worst one;
3. with ``top1`` (a model's outputs), a classifier's output (2-D float, rows x classes): fewer rows
   whose top-1 class agrees with the reference's than in every fp32 floor run is a FAIL (``labels``
   add each run's accuracy);
4. an output whose error (fp32 ulps) exceeds the fp32 floor (the same computation in native fp32 on
   the inputs as given and moved one ulp: the noise any correct fp32 computation shows) is a WARN
   without tolerances (less accurate than fp32 computes it: whether that matters is the user's
   tolerance), and a note beside the verdict with them;
5. else PASS.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hwbench.core.audit_report import Verdict
from hwbench.core.errors import UsageError
from hwbench.evaluator.compare import ulp_of


@dataclass(frozen=True)
class Criteria:
    """What a user accepts (None: not given): tolerances, any one of which an element may meet;
    ``top1``: judge classifier outputs by top-1 agreement; ``labels``: a classifier's true classes."""

    rtol: float | None = None
    atol: float | None = None
    ulps: float | None = None
    top1: bool = False
    labels: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in ("rtol", "atol", "ulps"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int | float) and np.isfinite(value) and value >= 0):
                raise UsageError(f"{name} must be a finite number >= 0, got {value!r}")

    @property
    def tolerances(self) -> bool:
        """Whether any tolerance is given (else the verdict is against the fp32 floor alone)."""
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
    score: float  # worst output error over its floor (fp32 ulps; inf for a non-finite output)
    reasons: list[str]
    outputs: dict[str, dict[str, Any]]


def output_error(cand: np.ndarray, ref: np.ndarray) -> dict[str, Any]:
    """An output's errors: max abs, max rel, fp32 ulps, non-finite count, and the worst element
    (a non-finite one first): its index and both values."""
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


def output_floor(ref: Mapping[str, np.ndarray], floors: Sequence[Mapping[str, np.ndarray]]) -> float:
    """The fp32 floor of the outputs: the largest error (fp32 ulps) of any floor run's float output."""
    errors = [
        output_error(f[k], v)["max_ulps_fp32"]
        for f in floors
        for k, v in ref.items()
        if np.asarray(v).dtype.kind == "f"
    ]
    return max(errors, default=0.0)


def nudged(value: np.ndarray) -> np.ndarray:
    """A float input moved one ulp (of its own format) toward +inf, the fp32 floor's second member;
    any other input unchanged."""
    x = np.asarray(value)
    return np.nextafter(x, np.asarray(np.inf, x.dtype)) if x.dtype.kind == "f" else x


def judge(
    cand: Mapping[str, np.ndarray],
    ref: Mapping[str, np.ndarray],
    floors: Sequence[Mapping[str, np.ndarray]],
    criteria: Criteria,
    names: Mapping[str, str] | None = None,
) -> Judgement:
    """The verdict on ``cand``'s float outputs (the module docstring's rules; ``names``: how a
    report names each output, by key)."""
    outputs: dict[str, dict[str, Any]] = {}
    fails: list[str] = []
    above: list[str] = []
    score = 0.0
    for key, r in ref.items():
        r = np.asarray(r)
        if r.dtype.kind != "f":
            continue
        name = (names or {}).get(key, key)
        c = np.asarray(cand[key])
        e = output_error(c, r)
        floor = max((output_error(f[key], r)["max_ulps_fp32"] for f in floors), default=0.0)
        e["floor_ulps_fp32"] = floor
        outputs[name] = e
        score = max(score, math.inf if e["nonfinite"] else e["max_ulps_fp32"] / max(floor, 1.0))
        if e["nonfinite"]:
            fails.append(f"output {name}: {e['nonfinite']} non-finite values where the float64 reference is finite")
        fails += _beyond(name, c, r, criteria)
        fails += _agreement(name, c, r, [np.asarray(f[key]) for f in floors], criteria, e)
        if e["max_ulps_fp32"] > max(floor, 1.0):
            above.append(
                f"output {name}: {e['max_ulps_fp32']:.3g} fp32 ulps from float64, above the fp32 floor ({floor:.3g})"
            )
    if fails:
        return Judgement(Verdict.FAIL, score, fails + above, outputs)
    if above and not criteria.tolerances:
        return Judgement(Verdict.WARN, score, above, outputs)
    within = f"within {criteria.describe()}" if criteria.tolerances else "within the fp32 floor"
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
    found = beyond(c, r, criteria) if criteria.tolerances else None
    if found is None:
        return []
    i, count = found
    c64, r64 = c.astype(np.float64), r.astype(np.float64)
    return [
        f"output {name}: {count} of {c.size} elements beyond {criteria.describe()}; worst at "
        f"{list(i)}: {float(c64[i]):.7g} vs float64 {float(r64[i]):.7g}"
    ]


def classifier(ref: np.ndarray) -> bool:
    """A classifier's scores: a float output of shape (rows, classes), classes >= 2."""
    return ref.ndim == 2 and ref.shape[1] >= 2 and ref.dtype.kind == "f"


def top1(values: np.ndarray) -> np.ndarray:
    """Each row's class of largest score (NaN scores lose)."""
    scores = np.nan_to_num(np.asarray(values, np.float64), nan=-np.inf)
    return np.asarray(np.argmax(scores, axis=1))


def _agreement(
    name: str, c: np.ndarray, r: np.ndarray, floors: Sequence[np.ndarray], criteria: Criteria, out: dict[str, Any]
) -> list[str]:
    """Top-1 agreement of a classifier's rows with the reference (and accuracy against labels),
    recorded in ``out``; a FAIL when fewer rows agree than in every floor run."""
    if not criteria.top1 or not classifier(r):
        return []
    want = top1(r)
    agree = int((top1(c) == want).sum())
    floor = min((int((top1(f) == want).sum()) for f in floors), default=len(want))
    out["top1_agreement"] = agree / len(want)
    out["top1_agreement_floor"] = floor / len(want)
    labels = criteria.labels
    if labels is not None and len(labels) == len(want):
        out["accuracy"] = float((top1(c) == labels).mean())
        out["reference_accuracy"] = float((want == labels).mean())
    if agree < floor:
        return [f"output {name}: top-1 agrees with the reference on {agree} of {len(want)} rows (fp32 floor: {floor})"]
    return []
