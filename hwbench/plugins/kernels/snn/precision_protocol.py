"""The ``training-precision`` audit protocol: its record and the hook that registers it.

The work (three training runs and the verdict) is in :mod:`hwbench.plugins.kernels.snn.precision_audit`,
whose :func:`~hwbench.plugins.kernels.snn.precision_audit.audit` starts the audit and hands this
protocol its ``run`` function with the training session (``options["training"]["run"]``).
Registering the protocol, which every command that loads the plugins does (``hwbench devices``
among them: issue 31's 0.3 s), so costs neither that module nor the audit-report and result
models it builds on (about 10 ms); and this module does not import it back.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from hwbench.core.audit_protocol import AuditContext, AuditProtocol, Compared, ProtocolInfo
from hwbench.core.errors import UsageError
from hwbench.core.hookspecs import hookimpl
from hwbench.core.kernel import Kernel

if TYPE_CHECKING:
    from hwbench.core.audit_report import ProtocolReport, Role, RunSummary

HWBENCH_CONTRACT = 3
NAME = "training-precision"


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

    def takes(self) -> frozenset[str]:
        return frozenset({"training"})

    def preflight(self, ctx: AuditContext) -> None:
        if "training" not in ctx.settings.options:
            raise UsageError(f"the {NAME} protocol audits a training session: run `hwbench train --audit`")

    def run(self, ctx: AuditContext) -> list[ProtocolReport]:
        from hwbench.core.audit_report import ProtocolReport

        t0 = time.perf_counter()
        training = ctx.settings.options["training"]
        found = training["run"](training)  # precision_audit.precision_audit
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


def _summary(run: Any, seconds: float) -> RunSummary:
    """One training run (a ``precision_audit.RunCurve``) as the audit report keeps it (the fp32
    floor is the ensemble member)."""
    from hwbench.core.audit_report import RunSummary

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
