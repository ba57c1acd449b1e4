"""``hwbench results compare``: timings matched configuration by configuration, and accuracy deltas.

Timed configurations are matched on their full identity (kernel, device, mode, engine, dtype, size,
connectivity); when two results share none (e.g. two chips or two precisions on one kernel), they are
matched on kernel, size and connectivity alone, so "which chip is better on my kernel" compares too.
Audits are compared run by run (max |dV|, matched spike fraction) and verdict by verdict; a verdict
that got worse counts as a regression for the gate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from hwbench.core.errors import UsageError
from hwbench.store.extract import timing_rows, timings_of
from hwbench.store.models import StoredResult
from hwbench.store.stats import SampleComparison, compare_samples

_VERDICT_RANK = {"PASS": 0, "WARN": 1, "FAIL": 2}


class AccuracyDelta(BaseModel):
    """One audit run (protocol/label) in both audits; delta = B - A (smaller |dV| is better)."""

    protocol: str
    label: str
    max_dv_a: float | None = None
    max_dv_b: float | None = None
    max_dv_delta: float | None = None
    matched_a: float | None = None
    matched_b: float | None = None
    matched_delta: float | None = None


class VerdictChange(BaseModel):
    protocol: str
    device: str
    mode: str
    verdict_a: str | None
    verdict_b: str | None
    regression: bool


class ComparisonReport(BaseModel):
    baseline: int
    candidate: int
    matched_on: str = Field(description="'full identity' or 'kernel, size, connectivity'")
    alpha: float
    fail_above_pct: float | None
    timings: list[SampleComparison]
    accuracy: list[AccuracyDelta]
    verdicts: list[VerdictChange]
    regressions: int


def _timing_map(result: StoredResult, full: bool) -> dict[str, dict[str, Any]]:
    document = result.document or {}
    rows = timing_rows(result.kind, document)
    for row, timing in zip(rows, timings_of(result.kind, document), strict=True):
        row["execution"] = timing.get("execution") or "?"
    if full:
        return {r["config"]: r for r in rows}
    keyed: dict[str, dict[str, Any]] = {}
    for r in rows:
        kernel = r["config"].split("|", 1)[0]
        keyed.setdefault(f"{kernel}|{r['ncells']}|{'connected' if r['connected'] else 'unconnected'}", r)
    return keyed


@dataclass(frozen=True)
class _Matched:
    matched_on: str
    comparisons: list[SampleComparison]


def _timing_comparisons(a: StoredResult, b: StoredResult, alpha: float, pct: float) -> _Matched:
    ma, mb = _timing_map(a, True), _timing_map(b, True)
    matched_on = "full identity"
    if not set(ma) & set(mb):
        ma, mb, matched_on = _timing_map(a, False), _timing_map(b, False), "kernel, size, connectivity"
    out = []
    for key in sorted(set(ma) & set(mb)):
        if ma[key]["samples"] and mb[key]["samples"]:
            found = compare_samples(key, ma[key]["samples"], mb[key]["samples"], alpha=alpha, fail_above_pct=pct)
            out.append(found.model_copy(update={"execution": f"{ma[key]['execution']}/{mb[key]['execution']}"}))
    return _Matched(matched_on, out)


def _audit_runs(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(p["name"], r["label"]): r for p in doc.get("protocols", []) for r in p.get("runs", [])}


def _number(d: dict[str, Any] | None, key: str) -> float | None:
    value = (d or {}).get(key)
    return float(value) if isinstance(value, (int, float)) else None


def _delta(x: float | None, y: float | None) -> float | None:
    return None if x is None or y is None else y - x


def _accuracy(a: dict[str, Any], b: dict[str, Any]) -> list[AccuracyDelta]:
    ra, rb = _audit_runs(a), _audit_runs(b)
    out = []
    for key in sorted(set(ra) & set(rb)):
        dva, dvb = _number(ra[key].get("deviation"), "max"), _number(rb[key].get("deviation"), "max")
        sa, sb = _number(ra[key].get("spikes"), "matched_fraction"), _number(rb[key].get("spikes"), "matched_fraction")
        out.append(
            AccuracyDelta(
                protocol=key[0],
                label=key[1],
                max_dv_a=dva,
                max_dv_b=dvb,
                max_dv_delta=_delta(dva, dvb),
                matched_a=sa,
                matched_b=sb,
                matched_delta=_delta(sa, sb),
            )
        )
    return out


def _verdicts(a: dict[str, Any], b: dict[str, Any]) -> list[VerdictChange]:
    def table(doc: dict[str, Any]) -> dict[tuple[str, str, str], str]:
        protocols = doc.get("protocols", [])
        return {(p["name"], v["device"], v["mode"]): v["verdict"] for p in protocols for v in p["verdicts"]}

    va, vb = table(a), table(b)
    out = []
    for key in sorted(set(va) | set(vb)):
        x, y = va.get(key), vb.get(key)
        worse = x is not None and y is not None and _VERDICT_RANK.get(y, 0) > _VERDICT_RANK.get(x, 0)
        protocol, device, mode = key
        change = VerdictChange(protocol=protocol, device=device, mode=mode, verdict_a=x, verdict_b=y, regression=worse)
        out.append(change)
    return out


def compare_results(
    a: StoredResult, b: StoredResult, *, alpha: float = 0.05, fail_above_pct: float | None = None
) -> ComparisonReport:
    """Compare candidate ``b`` against baseline ``a`` (both loaded with their documents)."""
    if not 0 < alpha < 1:
        raise UsageError(f"--alpha must be between 0 and 1, got {alpha:g}")
    matched = _timing_comparisons(a, b, alpha, fail_above_pct or 0.0)
    timings = matched.comparisons
    doc_a, doc_b = a.document or {}, b.document or {}
    accuracy = _accuracy(doc_a, doc_b) if a.kind == b.kind == "audit" else []
    verdicts = _verdicts(doc_a, doc_b) if a.kind == b.kind == "audit" else []
    if not timings and not accuracy and not verdicts:
        raise UsageError(
            f"results {a.id} ({a.kind}) and {b.id} ({b.kind}) have nothing in common to compare: "
            "no timed configuration with the same kernel, size and connectivity, and not two audits"
        )
    regressions = sum(t.regression for t in timings) + sum(v.regression for v in verdicts)
    return ComparisonReport(
        baseline=a.id,
        candidate=b.id,
        matched_on=matched.matched_on,
        alpha=alpha,
        fail_above_pct=fail_above_pct,
        timings=timings,
        accuracy=accuracy,
        verdicts=verdicts,
        regressions=regressions,
    )
