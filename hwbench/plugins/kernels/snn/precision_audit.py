"""Audit a training run's precision against an fp64 run, with hwbench's verdict machinery.

Three runs from the same initial weights on the same minibatches: the fp64 *reference*, the
fp32 *floor* (a legitimate full-precision variant: how far honest fp32 already lands from fp64,
spikes flipping included) and the *candidate* precision. Per run and against the reference:
the loss curve (largest relative deviation of an epoch's mean loss), the weight divergence
(largest ``||w - w_ref|| / ||w_ref||`` over the weight matrices, after every epoch) and the final
held-out accuracy (drop below the reference's). As in the simulation audits
(:mod:`hwbench.accuracy.verdict`), the candidate is scored by its worst ratio to the floor, each
floor no lower than an absolute minimum (1% loss, 1% weights, 1 point of accuracy), with the
chaotic-regime limits (PASS up to 3x, WARN up to 10x, FAIL beyond): spike trains of a trained
network diverge under any rounding change, so only a ratio to honest fp32 is meaningful.
When the candidate is fp32 itself it is judged against the absolute floors.

It runs on the audit engine as the ``training-precision`` protocol (``hwbench train --audit``;
registered by :mod:`hwbench.plugins.kernels.snn.precision_protocol`, which runs
:func:`precision_audit` as :func:`audit` passes it, so registering costs nothing of this module):
the session passes its plan and its candidate run in ``AuditSettings.options["training"]``, the
engine runs the protocol and returns the report, and :func:`audit` hands the session its
:class:`PrecisionAudit`. It is never run by a bare ``hwbench audit`` (there is no training run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
from pydantic import BaseModel, Field

from hwbench.accuracy.report import CandidateVerdict
from hwbench.accuracy.verdict import CHAOTIC_RATIOS, Verdict
from hwbench.plugins.kernels.snn.precision_protocol import NAME

# the registered kernel of each training neuron (its equations: hwbench/plugins/kernels/lif.py)
NEURON_KERNEL = {"leaky": "lif", "synaptic": "lif-current", "rleaky": "lif-recurrent"}

MIN_FLOOR = {"loss_curve": 0.01, "weight_divergence": 0.01, "accuracy_drop": 0.01}


class RunCurve(BaseModel, defer_build=True):
    precision: str
    role: str
    loss: list[float]
    test_accuracy: list[float | None]
    weight_divergence: list[float] = Field(description="max relative Frobenius distance to fp64, per epoch")
    metrics: dict[str, float] = Field(default_factory=dict)


class PrecisionAudit(BaseModel, defer_build=True):
    reference: str = "fp64"
    runs: list[RunCurve]
    floor: dict[str, float]
    verdict: CandidateVerdict


def _divergence(snaps: list[dict[str, np.ndarray]], ref: list[dict[str, np.ndarray]]) -> list[float]:
    import numpy as np

    return [
        max(float(np.linalg.norm(s[k] - r[k])) / max(float(np.linalg.norm(r[k])), 1e-300) for k in r)
        for s, r in zip(snaps, ref)
    ]


def _curve(role: str, precision: str, prog: Any, ref: Any) -> RunCurve:
    loss = [e.loss for e in prog.epochs]
    acc = [e.test_accuracy for e in prog.epochs]
    div = _divergence(prog.snapshots, ref.snapshots) if ref is not None else [0.0] * len(loss)
    curve = RunCurve(precision=precision, role=role, loss=loss, test_accuracy=acc, weight_divergence=div)
    if ref is not None:
        ref_loss = [e.loss for e in ref.epochs]
        ref_acc = ref.epochs[-1].test_accuracy
        curve.metrics = {
            "loss_curve": max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(loss, ref_loss)),
            "weight_divergence": max(div),
            "accuracy_drop": max(0.0, (ref_acc or 0.0) - (acc[-1] or 0.0)) if ref_acc is not None else 0.0,
        }
    return curve


def judge(candidate: dict[str, float], floor: dict[str, float], precision: str) -> CandidateVerdict:
    """Worst ratio to the floor -> PASS / WARN / FAIL (the chaotic-regime limits of the audits)."""
    ratios = {k: candidate[k] / floor[k] for k in floor}
    worst, score = max(ratios.items(), key=lambda kv: kv[1])
    lo, hi = CHAOTIC_RATIOS
    verdict = Verdict.PASS if score <= lo else Verdict.WARN if score <= hi else Verdict.FAIL
    reasons = [
        f"worst: {worst.replace('_', ' ')} at {score:.3g}x the fp32 floor (PASS up to {lo:g}x, FAIL beyond {hi:g}x)"
    ]
    reasons += [f"{k.replace('_', ' ')}: {candidate[k]:.4g} (floor {floor[k]:.4g})" for k in floor]
    return CandidateVerdict(device="cpu", mode=precision, verdict=verdict, score=score, reasons=reasons)


def audit(
    plan: Any, split: Any, candidate_prog: Any, *, train: Callable[..., Any], with_precision: Callable[..., Any]
) -> PrecisionAudit:
    """Judge ``candidate_prog`` (trained like ``plan``) on the audit engine; the fp64 reference and
    the fp32 floor are trained with the session's ``train`` and ``with_precision`` (passed in, so
    this module does not import the session that calls it)."""
    from hwbench.accuracy.audit import AuditSettings, Candidate, run_audit
    from hwbench.core.plugins import get_registry

    training = {
        "plan": plan,
        "split": split,
        "candidate": candidate_prog,
        "train": train,
        "with_precision": with_precision,
        "run": precision_audit,  # what the protocol runs (precision_protocol imports nothing of this module)
    }
    settings = AuditSettings(
        kernel=NEURON_KERNEL.get(plan.cfg.spec.neuron, "lif"),
        seed=plan.cfg.seed,
        protocols=(NAME,),
        options={"training": training},
    )
    _, data = run_audit(get_registry(), settings, [Candidate("cpu", plan.cfg.precision)])
    found: PrecisionAudit = data[NAME]
    return found


def precision_audit(training: dict[str, Any]) -> PrecisionAudit:
    """The three training runs and the verdict (what the protocol runs)."""
    plan, split, train, with_precision = (training[k] for k in ("plan", "split", "train", "with_precision"))
    precision = plan.cfg.precision
    ref = train(with_precision(plan, "fp64"), split, with_precision(plan, "fp64").cfg, snapshot=True)[1]
    runs = [_curve("reference", "fp64", ref, None)]
    floor = dict(MIN_FLOOR)
    if precision != "fp32":
        f32 = train(with_precision(plan, "fp32"), split, with_precision(plan, "fp32").cfg, snapshot=True)[1]
        runs.append(_curve("floor", "fp32", f32, ref))
        floor = {k: max(v, runs[-1].metrics[k]) for k, v in MIN_FLOOR.items()}
    runs.append(_curve("candidate", precision, training["candidate"], ref))
    return PrecisionAudit(runs=runs, floor=floor, verdict=judge(runs[-1].metrics, floor, precision))
