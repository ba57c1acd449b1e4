"""The ``onnx-model`` audit protocol: a user's model on each device's arithmetic, node by node.

Runs: the float64 reference (the evaluator on numpy, every node kept), the CPU's fp32 run and the
fp32 ensemble floor (ONNX Runtime, inputs as given and moved one ulp; the evaluator's fp32 path
where ORT does not implement the graph), then each candidate (:mod:`.candidate`). Verdicts on the
outputs (:mod:`.judge`); per candidate every node's error and the first node above its floor; the
precision map on request (:mod:`.precision_map`). Options: :mod:`.settings`.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from hwbench.core.audit_protocol import AuditContext, AuditProtocol, Candidate, Compared, ProtocolInfo
from hwbench.core.audit_report import CandidateNodes, CandidateVerdict, ProtocolReport, RunSummary
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.kernel import Kernel
from hwbench.evaluator.candidate import baseline_summaries, candidate_summary, protocol_report
from hwbench.evaluator.judge import output_floor
from hwbench.plugins.kernels.model import candidate as cand
from hwbench.plugins.kernels.model.baselines import Baselines, baselines
from hwbench.plugins.kernels.model.inputs import feeds_digest, make_feeds
from hwbench.plugins.kernels.model.kernel import PROTOCOL, model_protocol_refusal
from hwbench.plugins.kernels.model.memory import check_memory, footprint
from hwbench.plugins.kernels.model.runs import ModelRun
from hwbench.plugins.kernels.model.settings import KEYS, ModelSettings
from hwbench.plugins.kernels.model.source import ModelFile, open_model

INFO = ProtocolInfo(
    name=PROTOCOL,
    summary="every node of a user's ONNX model against the float64 reference, per device, with a verdict",
    applies_to="the onnx kernel: a user's model (hwbench audit --model m.onnx)",
    runs=[
        "reference: the same graph in float64 (the op-level evaluator on numpy), every node kept",
        "cpu: ONNX Runtime's CPU provider in fp32 (the evaluator's fp32 path where ORT lacks the graph's opset)",
        "floor: the same with every float input moved one ulp (the fp32 ensemble), every node marked",
        "candidate: each device mode's arithmetic (the evaluator; groq: its GroqWare program); a100/h100 "
        "also on the real GPU through ONNX Runtime where one is present",
    ],
    compares=[
        Compared(header="max rel", path="deviation.max_rel"),
        Compared(header="fp32 ulps", path="deviation.max_ulps_fp32"),
        Compared(header="floor ulps", path="deviation.floor_ulps_fp32"),
        Compared(header="top-1", path="deviation.top1_agreement"),
        Compared(header="first above floor", path="deviation.first_divergent_node"),
    ],
    floor="the fp32 ensemble: ONNX Runtime on the inputs as given and moved one ulp (per node and per output)",
    verdict="non-finite outputs, outputs beyond --rtol/--atol, or fewer top-1 agreements than the floor: FAIL; "
    "outputs above the fp32 floor without tolerances: WARN; else PASS (docs/models.md)",
    forensics="every node's error and the first node above its floor, with its mechanism where known "
    "(saturation, flushed subnormals, fp8 overflow, LayerNorm variance cancellation); the precision map",
    sources=["NVIDIA Polygraphy (run --onnx-outputs mark all; debug precision)", "ONNX Runtime"],
)


class ModelProtocol(AuditProtocol):
    """One report for the model, every candidate side by side."""

    info = INFO

    def refusal(self, kernel: Kernel) -> str | None:
        return model_protocol_refusal(kernel)

    def takes(self) -> frozenset[str]:
        """The model options (:class:`ModelSettings`); neither ``config`` nor ``dt_refine``."""
        return frozenset(KEYS)

    def prepare(self, ctx: AuditContext) -> cand.Prepared:
        """Settings, model, inputs, the memory check and the candidates: everything that can be
        refused before a run starts."""
        settings = ModelSettings.from_options(ctx.settings.options, ctx.settings.seed)
        model = open_model(settings.model)
        feeds = make_feeds(model.graph, settings.inputs)
        fp = footprint(model.proto, {k: v.shape for k, v in feeds.items()})
        unknown = f", {fp.unknown} tensors of unknown shape not counted" if fp.unknown else ""
        check_memory(fp.audit_bytes(len(ctx.candidates)), settings.max_memory, f"auditing {model.name}",
                     f"estimated from its shapes: {fp.weights:,} weights, {fp.intermediates:,} intermediate "
                     f"values{unknown}")  # fmt: skip
        if not ctx.candidates:
            raise UsageError("give at least one --device to audit the model on")
        targets = [_target(ctx, c, settings, model) for c in ctx.candidates]
        return cand.Prepared(settings, model, feeds, targets)

    def preflight(self, ctx: AuditContext) -> None:
        self.prepare(ctx)

    def planned_runs(self, ctx: AuditContext) -> list[tuple[str, float]]:
        modes = [c.mode or ctx.registry.device(c.device).default_mode for c in ctx.candidates]
        labels = ["reference fp64", "cpu fp32 + floor", *[f"{c.device}:{m}" for c, m in zip(ctx.candidates, modes)]]
        return [(f"{PROTOCOL}: {label}", 1.0) for label in labels]

    def run(self, ctx: AuditContext) -> list[ProtocolReport]:
        """The baselines and every candidate's run at once (one per core: the audit's run slots),
        then each candidate judged against the baselines."""
        from hwbench.accuracy.stepped import concurrently

        prep = self.prepare(ctx)
        s, model, feeds = prep.settings, prep.model, prep.feeds
        key = (PROTOCOL, model.sha256, feeds_digest(feeds), s.backend)

        def base_part() -> Any:
            with ctx.run_slot(2.0):
                found = ctx.baseline(key, lambda: baselines(model, feeds, s.backend))
            for label in ("reference fp64", "cpu fp32 + floor"):
                ctx.tick(f"{PROTOCOL}: {label}", 1.0, 1.0)
            return found

        def run_part(target: cand.Target) -> ModelRun | None:
            if target.native_cpu() and not target.keep_wider:
                return None  # a baseline
            with ctx.run_slot(1.0):
                return cand.evaluated(model, feeds, target, s.backend)

        parts: list[Any] = [base_part, *[partial(run_part, t) for t in prep.targets]]
        done: list[Any] = concurrently(ctx.settings.threads, parts, ctx.slots)
        base: Baselines = done[0]
        runs = baseline_summaries([(r.engine, r.setup_s, r.run_s) for r in (base.reference, base.cpu, base.floor)])
        judged = []
        for target, run in zip(prep.targets, done[1:]):
            summary, candidate = _audit_one(prep, base, target, run or cand.baseline_run(base, target))
            ctx.tick(f"{PROTOCOL}: {target.device}:{target.mode}", 1.0, 1.0)
            runs.append(summary)
            judged.append(candidate)
        return [_report(prep, base, runs, judged)]


def _target(ctx: AuditContext, c: Candidate, settings: ModelSettings, model: ModelFile) -> cand.Target:
    """A candidate resolved: device and mode, profile (a sweep's, a file's, or with --set), the
    wider mode of the precision map, the GroqChip's program (its capacity checked)."""
    from hwbench.accuracy.numerics.profile import NumericsProfile
    from hwbench.core.runner import resolve_mode
    from hwbench.plugins.devices.arithmetic import float_device_refusal

    registry = ctx.registry
    why = float_device_refusal(registry, c.device, "a model")
    if why:
        raise UnavailableError(why)
    device = registry.device(c.device)
    if device.probe().status == "unavailable":
        raise UnavailableError(f"device '{device.name}' is unavailable here: {device.probe().reason}")
    mode = resolve_mode(device, c.mode)
    profile = c.profile
    if profile is None and c.profile_path:
        profile = NumericsProfile.load(c.profile_path)
    if profile is None:
        profile = device.numerics(mode, dict(c.overrides)) if c.overrides else device.numerics(mode)
    target = cand.Target(c.device, mode, profile, registry, ctx.settings.seed, keep_wider=settings.keep_wider)
    if settings.precision_map or settings.keep_wider:
        target.wider_mode = wider_mode(device, mode, settings.wider)
    _check_nodes(model, settings.keep_wider)
    if device.spec.kind == "lpu":
        from hwbench.plugins.kernels.model.groq_route import compile_program

        target.program = compile_program(model, profile)
    return target


def wider_mode(device: Any, mode: str, asked: str | None) -> str:
    """The mode whose arithmetic kept nodes use: ``asked``, else the other mode with the widest
    matrix-unit input format (native fp32 counts as 23 fraction bits; ties: the wider range)."""
    others = [m for m in device.modes if m != mode]
    if asked is not None:
        if asked not in device.modes or asked == mode:
            raise UsageError(f"--wider {asked}: choose another mode of device '{device.name}': {', '.join(others)}")
        return asked
    if not others:
        raise UsageError(f"device '{device.name}' offers no other mode to keep nodes wider in")

    def width(m: str) -> tuple[int, int]:
        entry = device.numerics(m).op("matmul_input")
        fmt = entry.resolved_format() if entry is not None else None
        return (getattr(fmt, "mantissa_bits", 23), getattr(fmt, "emax", 127))

    return str(max(others, key=width))


def _check_nodes(model: ModelFile, names: tuple[str, ...]) -> None:
    known = {info.name for info in model.graph.infos}
    missing = [n for n in names if n not in known]
    if missing:
        raise UsageError(f"--keep-wider names node '{missing[0]}', which {model.name} does not have")


def _audit_one(
    prep: cand.Prepared, base: Baselines, target: cand.Target, run: ModelRun
) -> tuple[RunSummary, tuple[CandidateNodes, CandidateVerdict]]:
    """A candidate's run judged: its nodes, its verdict, the real run beside it, its precision map."""
    from hwbench.plugins.kernels.model.mapping import precision_map

    s = prep.settings
    nodes = cand.nodes_of(prep.model, prep.feeds, run, base, target)
    judged = cand.judge_run(run, base, s)
    report, verdict = cand.assemble(target, run, nodes, judged)
    report.real_run = cand.real_run(prep.model, prep.feeds, base, target, run)
    if s.precision_map and judged.verdict.value != "PASS":
        report.precision_map = precision_map(prep, base, target, run)
    return candidate_summary(report, verdict, target.profile, run.setup_s, run.run_s), (report, verdict)


def _report(prep: cand.Prepared, base: Baselines, runs: list[RunSummary],
            judged: list[tuple[CandidateNodes, CandidateVerdict]]) -> ProtocolReport:  # fmt: skip
    shapes = ", ".join(f"{k} {list(v.shape)}" for k, v in prep.feeds.items())
    note = f"; {base.cpu.note}" if base.cpu.note else ""
    description = (
        f"{prep.model.name} (sha256 {prep.model.sha256[:12]}), inputs {shapes} {prep.settings.inputs.describe()}; "
        f"every node vs the float64 reference{note}"
    )
    floor = output_floor(base.reference.outputs, base.floor_outputs())
    return protocol_report(PROTOCOL, f"{PROTOCOL} {prep.model.name}", description, "node-by-node", floor, runs, judged)
