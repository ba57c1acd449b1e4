"""The verdict on a model's outputs, and what made a node diverge.

Outputs are judged against the float64 reference, in this order (docs/models.md):

1. a non-finite output where the reference is finite: FAIL;
2. with ``--rtol`` / ``--atol``: an element beyond ``atol + rtol * |ref|`` is a FAIL naming it;
3. a classifier's output (2-D, batch x classes): top-1 agreement with the reference; fewer rows
   agreeing than in the fp32 ensemble's runs is a FAIL (``--labels`` adds each run's accuracy);
4. the fp32 ensemble floor: an output whose error (fp32 ulps) exceeds every ensemble member's
   (ONNX Runtime on the inputs as given and moved by one ulp) is a WARN when no tolerance is
   given (less accurate than fp32 computes it: whether that matters is the user's tolerance),
   and reported beside a PASS when the tolerances hold. Else PASS.

Mechanisms, where a node's output shows one: non-finite values, values at the storage format's
largest finite value (saturated), zeros where the reference is below the format's smallest normal
(flushed subnormals), matrix-product operands beyond an fp8 input format's range (fp8 overflow),
and a LayerNormalization whose input's mean dwarfs its spread, so that its variance cancels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hwbench.core.audit_report import Verdict
from hwbench.evaluator.compare import ulp_of

MATRIX_OPS = ("MatMul", "Gemm", "Conv", "ConvTranspose", "LSTM", "GRU", "RNN")


@dataclass(frozen=True)
class Criteria:
    """What a user accepts: tolerances (``None``: not given) and labels of a classifier's rows."""

    rtol: float | None = None
    atol: float | None = None
    labels: np.ndarray | None = None

    @property
    def tolerances(self) -> bool:
        return self.rtol is not None or self.atol is not None

    def describe(self) -> str:
        return f"atol {self.atol or 0:g} + rtol {self.rtol or 0:g} x |ref|"


@dataclass
class Judgement:
    verdict: Verdict
    score: float
    reasons: list[str]
    outputs: dict[str, dict[str, Any]]


def output_error(cand: np.ndarray, ref: np.ndarray) -> dict[str, Any]:
    """An output's errors: max abs, max rel, fp32 ulps, non-finite count, the worst element."""
    c, r = np.asarray(cand, np.float64), np.asarray(ref, np.float64)
    finite = np.isfinite(r)
    bad = int((finite & ~np.isfinite(c)).sum())
    keep = finite & np.isfinite(c)
    err = np.where(keep, np.abs(c - r), 0.0)
    ulps = np.where(keep, err / ulp_of(r), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(keep & (r != 0), err / np.abs(r), 0.0)
    worst = np.unravel_index(int(np.argmax(ulps)), ulps.shape) if ulps.size else ()
    return {
        "max_abs_error": float(err.max()) if err.size else 0.0,
        "max_rel_error": float(rel.max()) if rel.size else 0.0,
        "max_ulps_fp32": float(ulps.max()) if ulps.size else 0.0,
        "nonfinite": bad,
        "worst_index": [int(i) for i in worst],
    }


def classifier(ref: np.ndarray) -> bool:
    """A classifier's scores: a float output of shape (rows, classes), classes >= 2."""
    return ref.ndim == 2 and ref.shape[1] >= 2 and ref.dtype.kind == "f"


def top1(values: np.ndarray) -> np.ndarray:
    scores = np.nan_to_num(np.asarray(values, np.float64), nan=-np.inf)
    return np.asarray(np.argmax(scores, axis=1))


def judge(
    cand: Mapping[str, np.ndarray],
    ref: Mapping[str, np.ndarray],
    floors: Sequence[Mapping[str, np.ndarray]],
    criteria: Criteria,
) -> Judgement:
    """The verdict on ``cand``'s outputs (see the module docstring for the rules and their order)."""
    outputs: dict[str, dict[str, Any]] = {}
    fails: list[str] = []
    warns: list[str] = []
    notes: list[str] = []
    score = 0.0
    for name, r in ref.items():
        r = np.asarray(r)
        if r.dtype.kind != "f":
            continue
        e = output_error(cand[name], r)
        floor = max((output_error(f[name], r)["max_ulps_fp32"] for f in floors), default=0.0)
        e["floor_ulps_fp32"] = floor
        outputs[name] = e
        score = max(score, e["max_ulps_fp32"] / max(floor, 1.0))
        if e["nonfinite"]:
            fails.append(f"output {name}: {e['nonfinite']} non-finite values where the float64 reference is finite")
        fails += _tolerance(name, np.asarray(cand[name]), r, criteria)
        fails += _agreement(name, np.asarray(cand[name]), r, floors, criteria, e)
        above = f"output {name}: {e['max_ulps_fp32']:.3g} fp32 ulps from float64, above the fp32 floor ({floor:.3g})"
        if e["max_ulps_fp32"] > max(floor, 1.0):
            (notes if criteria.tolerances else warns).append(above)
    if fails:
        return Judgement(Verdict.FAIL, score, fails + warns, outputs)
    if warns:
        return Judgement(Verdict.WARN, score, warns, outputs)
    within = f"within {criteria.describe()}" if criteria.tolerances else "within the fp32 ensemble floor"
    return Judgement(Verdict.PASS, score, [f"every output {within}", *notes], outputs)


def _tolerance(name: str, c: np.ndarray, r: np.ndarray, criteria: Criteria) -> list[str]:
    if not criteria.tolerances:
        return []
    c64, r64 = c.astype(np.float64), r.astype(np.float64)
    allowed = (criteria.atol or 0.0) + (criteria.rtol or 0.0) * np.abs(r64)
    with np.errstate(invalid="ignore"):
        excess = np.where(np.isfinite(c64), np.abs(c64 - r64) - allowed, np.inf)
    excess = np.where(np.isfinite(r64), excess, -np.inf)
    if not excess.size or excess.max() <= 0:
        return []
    i = np.unravel_index(int(np.argmax(excess)), excess.shape)
    count = int((excess > 0).sum())
    return [
        f"output {name}: {count} element(s) beyond {criteria.describe()}; worst {list(map(int, i))}: "
        f"{float(c64[i]):.6g} vs {float(r64[i]):.6g}"
    ]


def _agreement(
    name: str, c: np.ndarray, r: np.ndarray, floors: Sequence[Mapping[str, np.ndarray]], criteria: Criteria,
    out: dict[str, Any],
) -> list[str]:  # fmt: skip
    """Top-1 agreement of a classifier's rows with the reference (and accuracy against labels)."""
    if not classifier(r):
        return []
    want = top1(r)
    agree = int((top1(c) == want).sum())
    floor = min((int((top1(np.asarray(f[name])) == want).sum()) for f in floors), default=len(want))
    out["top1_agreement"] = agree / len(want)
    out["top1_agreement_floor"] = floor / len(want)
    labels = criteria.labels
    if labels is not None and len(labels) == len(want):
        out["accuracy"] = float((top1(c) == labels).mean())
        out["reference_accuracy"] = float((want == labels).mean())
    if agree < floor:
        return [f"output {name}: top-1 agrees with the reference on {agree} of {len(want)} rows (fp32 floor: {floor})"]
    return []


# --------------------------------------------------------------------------- mechanisms
def mechanism(
    op_type: str,
    inputs: Sequence[np.ndarray | None],
    cand: Sequence[np.ndarray],
    ref: Sequence[np.ndarray],
    formats: Mapping[str, Any],
) -> str | None:
    """What a node's output shows, where known (``formats``: ``store`` and, for matrix products,
    ``matmul_input`` as format objects, or missing for native fp32)."""
    c = np.concatenate([np.asarray(v, np.float64).ravel() for v in cand]) if cand else np.zeros(0)
    r = np.concatenate([np.asarray(v, np.float64).ravel() for v in ref]) if ref else np.zeros(0)
    if c.shape != r.shape:
        return None
    finite = np.isfinite(r)
    bad = int((finite & ~np.isfinite(c)).sum())
    if bad:
        found = _fp8_overflow(op_type, inputs, formats.get("matmul_input"))
        return found or f"non-finite: {bad} values overflowed to inf or NaN where the reference is finite"
    store = formats.get("store")
    if store is not None and getattr(store, "kind", "") == "float":
        top = store.max_value
        saturated = int((finite & np.isfinite(c) & (np.abs(c) >= top) & (np.abs(r) > top)).sum())
        if saturated:
            return f"saturated: {saturated} values held at {store.name}'s largest finite value {top:g}"
        tiny = store.min_normal
        flushed = int(((c == 0) & (r != 0) & (np.abs(r) < tiny)).sum())
        if flushed:
            return f"flushed subnormals: {flushed} values below {store.name}'s smallest normal {tiny:g} computed as 0"
    if op_type == "LayerNormalization" and inputs and inputs[0] is not None:
        return _layernorm_cancellation(np.asarray(inputs[0], np.float64), formats.get("store"))
    return None


def _fp8_overflow(op_type: str, inputs: Sequence[np.ndarray | None], fmt: Any) -> str | None:
    """A matrix product whose operands exceed its fp8 input format (and whose output is not finite:
    operands scaled into range before rounding, as amax scaling does, do not overflow)."""
    if op_type not in MATRIX_OPS or fmt is None or fmt.mantissa_bits > 3:
        return None
    top = fmt.max_value
    beyond = sum(int((np.abs(np.asarray(v, np.float64)) > top).sum()) for v in inputs[:2] if v is not None)
    if not beyond:
        return None
    return f"fp8 overflow: {beyond} operand values beyond {fmt.name}'s largest finite value {top:g}"


def _layernorm_cancellation(x: np.ndarray, fmt: Any) -> str | None:
    """E[x^2] / Var(x) over the normalised (last) axis: the bits a variance computed as
    E[x^2] - E[x]^2 loses; named when it exceeds half the format's significand."""
    mean_sq = np.mean(x * x, axis=-1)
    var = np.var(x, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = float(np.nanmax(np.where(var > 0, mean_sq / var, np.inf))) if var.size else 0.0
    bits = getattr(fmt, "mantissa_bits", 23)
    if ratio <= 2.0 ** (bits / 2):
        return None
    return (
        f"cancellation in the LayerNorm variance: E[x^2] / Var(x) reaches {ratio:.3g} (the input's mean dwarfs "
        f"its spread), so E[x^2] - E[x]^2 loses about {np.log2(ratio):.0f} of {bits + 1} bits"
    )
