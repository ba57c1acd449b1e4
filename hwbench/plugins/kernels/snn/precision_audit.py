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

It runs on the audit engine as the ``training-precision`` protocol (``hwbench train --audit``):
the session passes its plan and its candidate run in ``AuditSettings.options["training"]``, the
engine runs the protocol and returns the report, and :func:`audit` hands the session its
:class:`PrecisionAudit`. It is never run by a bare ``hwbench audit`` (there is no training run).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
from pydantic import BaseModel, Field

from hwbench.accuracy.report import CandidateVerdict
from hwbench.accuracy.verdict import CHAOTIC_RATIOS, Verdict
from hwbench.core.audit_protocol import AuditContext, AuditProtocol, Compared, ProtocolInfo
from hwbench.core.audit_report import ProtocolReport, Role, RunSummary
from hwbench.core.errors import UsageError
from hwbench.core.hookspecs import hookimpl
from hwbench.core.kernel import Kernel

HWBENCH_CONTRACT = 3
NAME = "training-precision"
# the registered kernel of each training neuron (its equations: hwbench/plugins/kernels/lif.py)
NEURON_KERNEL = {"leaky": "lif", "synaptic": "lif-current", "rleaky": "lif-recurrent"}

MIN_FLOOR = {"loss_curve": 0.01, "weight_divergence": 0.01, "accuracy_drop": 0.01}


class RunCurve(BaseModel):
    precision: str
    role: str
    loss: list[float]
    test_accuracy: list[float | None]
    weight_divergence: list[float] = Field(description="max relative Frobenius distance to fp64, per epoch")
    metrics: dict[str, float] = Field(default_factory=dict)


class PrecisionAudit(BaseModel):
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


INFO = ProtocolInfo(
    name=NAME,
    summary="a training run's precision against fp64 training from the same weights on the same minibatches",
    applies_to="the LIF family, on a training session (hwbench train --audit passes it)",
    runs=["reference: training at fp64", "ensemble: training at fp32 (the floor)", "candidate: the session's run"],
    compares=[
        Compared(header="loss curve", path="deviation.loss_curve"),
        Compared(header="weights", path="deviation.weight_divergence"),
        Compared(header="accuracy drop", path="deviation.accuracy_drop"),
    ],
    floor="the fp32 run's deviations from fp64, never below 1% loss, 1% weights, 1 point of accuracy",
    verdict="worst ratio to the floor: PASS up to 3x, WARN up to 10x, FAIL beyond (the chaotic-regime limits)",
    automatic=False,
)


class TrainingPrecisionProtocol(AuditProtocol):
    """The precision audit of a training session, on the audit engine."""

    info = INFO

    def refusal(self, kernel: Kernel) -> str | None:
        return None if kernel.info.family == "lif" else "it audits the training of LIF networks"

    def preflight(self, ctx: AuditContext) -> None:
        if "training" not in ctx.settings.options:
            raise UsageError(f"the {NAME} protocol audits a training session: run `hwbench train --audit`")

    def run(self, ctx: AuditContext) -> list[ProtocolReport]:
        t0 = time.perf_counter()
        found = precision_audit(ctx.settings.options["training"])
        ctx.data[NAME] = found
        share = (time.perf_counter() - t0) / max(1, len(found.runs))
        report = ProtocolReport(
            name=NAME,
            protocol=NAME,
            description=f"training at {found.verdict.mode} vs fp64",
            probe_unit="",
            sample_ms=0.0,
            regime="chaotic",
            floor=found.floor,
            runs=[_summary(r, share) for r in found.runs],
            verdicts=[found.verdict],
            verdict=found.verdict.verdict,
        )
        return [report]


_ROLES: dict[str, Role] = {"reference": "reference", "floor": "ensemble", "candidate": "candidate"}


def _summary(run: RunCurve, seconds: float) -> RunSummary:
    """One training run as the audit report keeps it (the fp32 floor is the ensemble member)."""
    return RunSummary(
        label=f"{run.role} ({run.precision})",
        role=_ROLES[run.role],
        device="cpu",
        mode=run.precision,
        execution="real" if run.precision in ("fp64", "fp32") else "emulated",
        engine="jax training",
        setup_s=0.0,
        run_s=seconds,
        deviation=run.metrics or None,
        metrics={"loss": {"final": run.loss[-1]}} if run.loss else {},
    )


@hookimpl
def hwbench_audit_protocols() -> list[AuditProtocol]:
    return [TrainingPrecisionProtocol()]
