"""A candidate's report, the same for a model and a function: every node's error against the float64
reference and the fp32 floor (:mod:`.compare`), the mechanism of each node above its floor
(:mod:`.mechanism`, read through the front end's ``explain``), the verdict on its outputs
(:mod:`.judge`) with the first node above the floor named among its reasons, and its row of the
audit table. Each front end supplies what only it knows: its runs, its nodes' op classes and operands.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from hwbench.core.audit_report import (
    CandidateNodes,
    CandidateVerdict,
    NodeReport,
    ProtocolReport,
    Role,
    RunSummary,
    combine,
)
from hwbench.evaluator.compare import node_errors
from hwbench.evaluator.judge import Judgement

if TYPE_CHECKING:
    from hwbench.accuracy.numerics.profile import NumericsProfile
    from hwbench.evaluator.records import NodeInfo

Explain = Callable[["NodeInfo"], "str | None"]
"""A front end's mechanism of a node above its floor (:func:`hwbench.evaluator.mechanism.mechanism`)."""

BASELINES: tuple[tuple[str, Role, str], ...] = (
    ("float64 reference", "gold", "fp64"),
    ("cpu fp32", "reference", "fp32"),
    ("cpu fp32, inputs +1 ulp", "ensemble", "fp32"),
)
"""The runs every candidate is judged against (label, role, CPU mode): the reference and the fp32
floor's two members (the inputs as given and moved one ulp)."""


def ulp_format(profile: NumericsProfile | None) -> tuple[int, str]:
    """Fraction bits and name of the format nodes' errors are counted in: the storage format's, else
    the carrier's."""
    entry = profile.op("store") if profile is not None else None
    fmt = entry.resolved_format() if entry is not None else None
    if fmt is not None and fmt.kind == "float":
        return int(fmt.mantissa_bits), str(fmt.name)
    carrier = profile.carrier if profile is not None else "float32"
    return (52, "fp64") if carrier == "float64" else (23, "fp32")


def node_reports(
    infos: Sequence[NodeInfo],
    cand: Mapping[str, np.ndarray],
    ref: Mapping[str, np.ndarray],
    floors: Sequence[Mapping[str, np.ndarray]],
    explain: Explain,
    *,
    mantissa_bits: int,
) -> list[NodeReport]:
    """Every node's error in graph order, against the reference and the floor runs; the mechanism of
    each node above its floor, where ``explain`` finds one."""
    by_name = {info.name: info for info in infos}
    out = []
    for error in node_errors(infos, cand, ref, floors, mantissa_bits=mantissa_bits):
        node = NodeReport.model_validate(error.model_dump())
        if node.above_floor:
            node.mechanism = explain(by_name[node.name])
        out.append(node)
    return out


def place(node: NodeReport) -> str:
    """Where a report points: the source line (a jaxpr equation's), else the node's name, and its op."""
    return f"{node.source or node.name} {node.op_type}"


def first_above(node: NodeReport, fmt: str, device: str) -> str:
    """``solver.py:42 (step) exp: 310 ulp of fp32 on groq, first above the floor (mechanism)``."""
    size = f"{node.max_ulps:.3g} ulp of {fmt}" + (f", {node.nonfinite} non-finite" if node.nonfinite else "")
    why = f" ({node.mechanism})" if node.mechanism else ""
    return f"{place(node)}: {size} on {device}, first above the floor ({node.floor_ulps or 0:.3g} ulp){why}"


def judged_candidate(
    device: str,
    mode: str,
    judged: Judgement,
    nodes: list[NodeReport],
    *,
    engine: str,
    execution: Literal["real", "emulated"],
    arithmetic: dict[str, str],
    ulps: tuple[int, str],
    notes: Sequence[str] = (),
) -> tuple[CandidateNodes, CandidateVerdict]:
    """The candidate's report (its nodes, the first above its floor and its mechanism; ``notes``: how
    it ran) and its verdict (the judgement's reasons, then the first node above the floor)."""
    first = next((n for n in nodes if n.above_floor), None)
    bits, fmt = ulps
    report = CandidateNodes(
        device=device,
        mode=mode,
        verdict=judged.verdict,
        engine=engine,
        execution=execution,
        arithmetic=arithmetic,
        ulp_format=f"{fmt} ({bits} fraction bits)",
        nodes=nodes,
        first_divergent_node=None if first is None else first.name,
        mechanism=None if first is None else first.mechanism,
        outputs=judged.outputs,
        notes=list(notes),
    )
    reasons = [*judged.reasons, *([] if first is None else [first_above(first, fmt, device)])]
    return report, CandidateVerdict(device=device, mode=mode, verdict=judged.verdict, score=judged.score,
                                    reasons=reasons)  # fmt: skip


def deviation(report: CandidateNodes, verdict: CandidateVerdict) -> dict[str, Any]:
    """The candidate's row of the audit table: its worst output (and top-1 agreement, a classifier's),
    its score, its first node above the floor, how its matrix products were computed."""
    outs = list(report.outputs.values())
    worst = max(outs, key=lambda o: o["max_ulps_fp32"]) if outs else {}
    first = next((n for n in report.nodes if n.name == report.first_divergent_node), None)
    return {
        "max_rel": worst.get("max_rel_error"),
        "max_ulps_fp32": worst.get("max_ulps_fp32"),
        "floor_ulps_fp32": worst.get("floor_ulps_fp32"),
        "top1_agreement": worst.get("top1_agreement"),
        "score": verdict.score,
        "first_divergent_node": "-" if first is None else place(first),
        "matmul": report.arithmetic.get("matmul"),
    }


def baseline_summaries(timings: Sequence[tuple[str, float, float]]) -> list[RunSummary]:
    """The :data:`BASELINES` as an audit's runs, from each one's (engine, setup_s, run_s)."""
    return [
        RunSummary(label=label, role=role, device="cpu", mode=mode, execution="real", engine=engine, setup_s=s, run_s=r)
        for (label, role, mode), (engine, s, r) in zip(BASELINES, timings)
    ]


def candidate_summary(
    report: CandidateNodes, verdict: CandidateVerdict, profile: NumericsProfile | None, setup_s: float, run_s: float
) -> RunSummary:
    """The candidate's run as an audit's run, with its row of the audit table (:func:`deviation`)."""
    return RunSummary(
        label=f"{report.device}:{report.mode}",
        role="candidate",
        device=report.device,
        mode=report.mode,
        execution=report.execution,
        engine=report.engine,
        profile=None if profile is None else profile.name,
        setup_s=setup_s,
        run_s=run_s,
        deviation=deviation(report, verdict),
    )


def protocol_report(
    protocol: str,
    name: str,
    description: str,
    regime: str,
    floor: float,
    runs: list[RunSummary],
    judged: Sequence[tuple[CandidateNodes, CandidateVerdict]],
) -> ProtocolReport:
    """A node-by-node protocol's report: the runs, each candidate's verdict and nodes, the outputs'
    fp32 floor (``floor``, fp32 ulps)."""
    verdicts = [v for _, v in judged]
    return ProtocolReport(
        name=name,
        protocol=protocol,
        description=description,
        probe_unit="",
        sample_ms=0.0,
        regime=regime,
        floor={"max_ulps_fp32": floor},
        runs=runs,
        verdicts=verdicts,
        verdict=combine([v.verdict for v in verdicts]),
        candidates=[c for c, _ in judged],
    )
