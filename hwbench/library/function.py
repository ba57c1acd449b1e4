"""A user's JAX function on devices' arithmetic: ``hwbench.run(fn, ...)`` and ``hwbench.audit(fn, ...)``.

The function is traced once (:class:`~hwbench.evaluator.jaxpr.program.FunctionProgram`) and
compiled for each arithmetic: the float64 reference (native float64, dtypes widened), the fp32
floor (native fp32 on the inputs as given and on the inputs moved one ulp: the noise any correct
fp32 computation shows) and each device mode (its :class:`~hwbench.evaluator.arith.Arith`, from
:func:`hwbench.plugins.devices.arithmetic.device_arith`). Every equation's output is compared with
the reference's (:mod:`hwbench.evaluator.compare`), in ulps of the device's storage format; the
first above its floor is named with its source line and, where known, the device's mechanism
(:mod:`hwbench.evaluator.mechanism`). The outputs are judged by :mod:`.function_judge`.
``hwbench.audit`` wraps the result in an :class:`~hwbench.library.audit.Audit` like any other:
one protocol report, ``jax-function``, with a verdict per device and its equations (``candidates``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.core.audit_report import (
    AuditReport,
    CandidateNodes,
    CandidateVerdict,
    NodeReport,
    ProtocolReport,
    RunSummary,
    combine,
)
from hwbench.core.errors import UsageError
from hwbench.library.function_cache import compiled_for, program_for
from hwbench.library.function_judge import Criteria, judge, output_error

if TYPE_CHECKING:
    from hwbench.accuracy.numerics.profile import NumericsProfile
    from hwbench.core.plugins import Registry
    from hwbench.evaluator.arith import Arith
    from hwbench.evaluator.jaxpr.program import FunctionProgram
    from hwbench.evaluator.records import Evaluation, NodeInfo
    from hwbench.library.progress import Progress, ProgressChoice

PROTOCOL = "jax-function"
ENGINE = "hwbench evaluator (jaxpr on the device's arithmetic, jitted)"


@dataclass
class Target:
    """A device mode a function runs on: its numerics profile (None: native IEEE) and arithmetic."""

    device: str
    mode: str
    profile: NumericsProfile | None
    arith: Arith
    seed: int = 0

    @property
    def key(self) -> tuple[str, str, int]:
        """What names its compiled programs (:mod:`.function_cache`)."""
        return (self.device, self.mode, self.seed)

    @property
    def label(self) -> str:
        return f"{self.device}:{self.mode}"

    @property
    def execution(self) -> str:
        native = self.profile is None or self.profile.is_native()
        return "real" if native and self.device == "cpu" else "emulated"

    def ulp_format(self) -> tuple[int, str]:
        """Fraction bits and name of the format equations' errors are counted in: the storage format's."""
        entry = self.profile.op("store") if self.profile is not None else None
        fmt = entry.resolved_format() if entry is not None else None
        if getattr(fmt, "kind", "") == "float":
            return int(fmt.mantissa_bits), str(fmt.name)  # type: ignore[union-attr]
        return (52, "fp64") if self.arith.dtype == np.float64 else (23, "fp32")


def refusal(registry: Registry, name: str) -> str | None:
    """Why device ``name`` cannot run a function (no floating-point arithmetic), or None."""
    from hwbench.plugins.devices.arithmetic import float_device_refusal

    return float_device_refusal(registry, name, "a function")


def resolve_target(registry: Registry, spec: str, mode: str | None = None, seed: int = 0) -> Target:
    """``NAME`` or ``NAME:MODE`` as a target; a device without float arithmetic is a UsageError."""
    from hwbench.plugins.devices.arithmetic import device_arith

    if not isinstance(spec, str) or not spec:
        raise UsageError(f"a device is named by a string NAME or NAME:MODE, got {spec!r}")
    name, _, spec_mode = spec.partition(":")
    device = registry.device(name)  # unknown: a UsageError with suggestions
    why = refusal(registry, name)
    if why:
        raise UsageError(why)
    chosen = spec_mode or mode or device.default_mode
    arith = device_arith(registry, name, chosen, seed=seed, what="a function")
    return Target(name, chosen, device.numerics(chosen), arith, seed)


def native_arith(dtype: str) -> Arith:
    """The host's native IEEE arithmetic (the float64 reference, the fp32 floor)."""
    from hwbench.core.engines.jax_engine import JaxOps
    from hwbench.evaluator.arith import Arith

    label = "float64 reference" if dtype == "float64" else "cpu fp32 (native IEEE)"
    return Arith(JaxOps(dtype), "jax", label=label)


def run_function(
    fn: Callable[..., Any], args: Sequence[Any], device: str, *, mode: str | None = None, seed: int = 0
) -> Any:
    """``fn(*args)`` with every float operation on ``device``'s arithmetic, in ``fn``'s output tree."""
    from hwbench.core.plugins import get_registry

    program = program_for(fn, args)
    flat = program.flat_inputs(args)
    target = resolve_target(get_registry(), device, mode, seed)
    return program.unflatten(compiled_for(program, target.key, lambda: target.arith, False)(flat).outputs)


@dataclass
class Baselines:
    """The reference and the fp32 floor's two runs, every equation kept."""

    reference: Evaluation
    floors: list[Evaluation]
    seconds: list[float]


def nudged(flat: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The float inputs moved one ulp (of their own format) toward +inf; others unchanged."""
    return [np.nextafter(x, np.asarray(np.inf, x.dtype)) if x.dtype.kind == "f" else x for x in flat]


def baselines(program: FunctionProgram, flat: Sequence[np.ndarray]) -> Baselines:
    reference, seconds = _timed(compiled_for(program, "float64", lambda: native_arith("float64"), True), flat)
    fp32 = compiled_for(program, "float32", lambda: native_arith("float32"), True)
    given, s1 = _timed(fp32, flat)
    moved, s2 = _timed(fp32, nudged(flat))
    return Baselines(reference, [given, moved], [seconds, s1, s2])


def _timed(run: Callable[[Sequence[np.ndarray]], Evaluation], flat: Sequence[np.ndarray]) -> tuple[Evaluation, float]:
    start = time.perf_counter()
    out = run(flat)
    return out, time.perf_counter() - start


def audit_function(
    fn: Callable[..., Any],
    args: Sequence[Any],
    devices: str | Sequence[str],
    *,
    mode: str | None = None,
    criteria: Criteria | None = None,
    seed: int = 0,
    progress: Progress | None = None,
) -> tuple[AuditReport, dict[str, Any]]:
    """Audit ``fn(*args)`` on each of ``devices`` (see the module docstring): the report, and the
    audit's in-memory data (none: :func:`run_function` gives a device's outputs). UsageErrors come
    before any run."""
    from hwbench.core.plugins import get_registry
    from hwbench.library.progress import Progress

    start = time.perf_counter()
    names = [devices] if isinstance(devices, str) else list(devices)
    if not names:
        raise UsageError("give at least one device to audit the function on (devices=['groq', 'a100:tensorrt'])")
    if mode is not None and len(names) > 1:
        raise UsageError("with several devices, give each its mode as NAME:MODE")
    criteria = criteria or Criteria()
    program = program_for(fn, args)
    flat = program.flat_inputs(args)
    registry = get_registry()
    targets = [resolve_target(registry, n, mode, seed) for n in names]
    progress = progress or Progress()
    with progress:
        for label in ("reference fp64 + fp32 floor", *(t.label for t in targets)):
            progress.add(f"{PROTOCOL}: {label}", 1.0)
        base = baselines(program, flat)
        progress.advance(f"{PROTOCOL}: reference fp64 + fp32 floor", 1.0)
        audited = []
        for target in targets:
            audited.append(audit_target(program, flat, base, target, criteria))
            progress.advance(f"{PROTOCOL}: {target.label}", 1.0)
    report = assemble(program, flat, base, audited, criteria, seed, time.perf_counter() - start)
    return report, {}  # no traces to plot: the report holds every equation's error


Audited = tuple[CandidateNodes, RunSummary]


def audit_target(
    program: FunctionProgram, flat: Sequence[np.ndarray], base: Baselines, target: Target, criteria: Criteria
) -> Audited:
    """One device: its run with every equation kept, the equations' errors, the outputs' verdict
    (the candidate's report and its row of the audit table)."""
    from hwbench.evaluator.compare import node_errors

    run, seconds = _timed(compiled_for(program, target.key, lambda: target.arith, True), flat)
    bits, fmt = target.ulp_format()
    floors = [f.tensors for f in base.floors]
    errors = node_errors(program.infos, run.tensors, base.reference.tensors, floors, mantissa_bits=bits)
    nodes = [NodeReport.model_validate(e.model_dump()) for e in errors]
    infos = {i.name: i for i in program.infos}
    for node in nodes:
        if node.above_floor:
            node.mechanism = _mechanism(program, flat, infos[node.name], run, base.reference, target)
    judged = judge(
        run.outputs, base.reference.outputs, [f.outputs for f in base.floors], criteria, program.output_names
    )
    first = next((n for n in nodes if n.above_floor), None)
    reasons = list(judged.reasons)
    if first is not None:
        reasons.append(first_above(first, fmt, target.device))
    candidate = CandidateNodes(
        device=target.device,
        mode=target.mode,
        verdict=judged.verdict,
        engine=ENGINE,
        execution=target.execution,  # type: ignore[arg-type]
        arithmetic=target.arith.describe(),
        ulp_format=f"{fmt} ({bits} fraction bits)",
        nodes=nodes,
        first_divergent_node=None if first is None else first.name,
        mechanism=None if first is None else first.mechanism,
        outputs=judged.outputs,
        notes=reasons,
    )
    summary = _summary(target.label, "candidate", target.device, target.mode, target.execution, seconds, target.profile)
    summary.deviation = _deviation(candidate, judged.score, first)
    return candidate, summary


def first_above(node: NodeReport, fmt: str, device: str) -> str:
    """``solver.py:42 (step) exp: 310 ulp of fp32 on groq, first above the floor (mechanism)``."""
    where = f"{node.source} {node.op_type}" if node.source else f"{node.name} {node.op_type}"
    size = f"{node.max_ulps:.3g} ulp of {fmt}" + (f", {node.nonfinite} non-finite" if node.nonfinite else "")
    why = f" ({node.mechanism})" if node.mechanism else ""
    return f"{where}: {size} on {device}, first above the floor ({node.floor_ulps or 0:.3g} ulp){why}"


def _mechanism(
    program: FunctionProgram,
    flat: Sequence[np.ndarray],
    info: NodeInfo,
    run: Evaluation,
    ref: Evaluation,
    target: Target,
) -> str | None:
    """What the device's arithmetic shows at equation ``info`` (:mod:`hwbench.evaluator.mechanism`)."""
    from hwbench.evaluator.jaxpr.primitives import OP_CLASS
    from hwbench.evaluator.mechanism import mechanism

    outs = [o for o in info.outputs if o in run.tensors and o in ref.tensors]
    operands = program.operand_values(info.name, run.tensors, flat)
    cand, want = [run.tensors[o] for o in outs], [ref.tensors[o] for o in outs]
    return mechanism(info.op_type, OP_CLASS.get(info.op_type), target.profile, cand, want, operands)


def _deviation(candidate: CandidateNodes, score: float, first: NodeReport | None) -> dict[str, Any]:
    """The candidate's row of the audit table: its worst output and its first equation above the floor."""
    outs = list(candidate.outputs.values())
    worst = max(outs, key=lambda o: o["max_ulps_fp32"]) if outs else {}
    return {
        "max_rel": worst.get("max_rel_error"),
        "max_ulps_fp32": worst.get("max_ulps_fp32"),
        "floor_ulps_fp32": worst.get("floor_ulps_fp32"),
        "score": score,
        "first_divergent_node": "-" if first is None else f"{first.source or first.name} {first.op_type}",
        "matmul": candidate.arithmetic.get("matmul"),
    }


def _summary(label: str, role: Any, device: str, mode: str, execution: str, seconds: float, profile: Any) -> RunSummary:
    return RunSummary(
        label=label,
        role=role,
        device=device,
        mode=mode,
        execution=execution,  # type: ignore[arg-type]
        engine=ENGINE,
        profile=None if profile is None else profile.name,
        setup_s=0.0,
        run_s=seconds,
    )


def assemble(
    program: FunctionProgram,
    flat: Sequence[np.ndarray],
    base: Baselines,
    audited: Sequence[Audited],
    criteria: Criteria,
    seed: int,
    elapsed: float,
) -> AuditReport:
    """The audit report: one ``jax-function`` protocol report, every device's equations in it."""
    runs = [*_baseline_runs(base), *[s for _, s in audited]]
    verdicts = [
        CandidateVerdict(device=c.device, mode=c.mode, verdict=c.verdict, score=_score(s), reasons=c.notes)
        for c, s in audited
    ]
    shapes = ", ".join(f"{x.dtype}{list(x.shape)}" for x in flat)
    protocol = ProtocolReport(
        name=f"{PROTOCOL} {program.name}",
        protocol=PROTOCOL,
        description=f"{program.name}({shapes}): {program.equations} equations, each against the float64 reference "
        "(run times include tracing and compiling)",
        probe_unit="",
        sample_ms=0.0,
        regime="equation-by-equation",
        floor={"max_ulps_fp32": _floor(base)},
        runs=runs,
        verdicts=verdicts,
        verdict=combine([v.verdict for v in verdicts]),
        candidates=[c for c, _ in audited],
    )
    reasons = [
        f"{protocol.name}: {v.device} [{v.mode}] {v.verdict.value} - {v.reasons[0] if v.reasons else ''}"
        for v in verdicts
    ]
    settings = {
        "function": program.name,
        "inputs": [{"shape": list(x.shape), "dtype": str(x.dtype)} for x in flat],
        "devices": [f"{c.device}:{c.mode}" for c, _ in audited],
        **{"rtol": criteria.rtol, "atol": criteria.atol, "ulps": criteria.ulps, "seed": seed},
        "protocols": [PROTOCOL],
    }
    return AuditReport(
        settings=settings, protocols=[protocol], verdict=protocol.verdict, reasons=reasons, elapsed_s=elapsed
    )


def _baseline_runs(base: Baselines) -> list[RunSummary]:
    return [
        _summary("float64 reference", "gold", "cpu", "fp64", "real", base.seconds[0], None),
        _summary("cpu fp32", "reference", "cpu", "fp32", "real", base.seconds[1], None),
        _summary("cpu fp32, inputs +1 ulp", "ensemble", "cpu", "fp32", "real", base.seconds[2], None),
    ]


def _floor(base: Baselines) -> float:
    """The fp32 floor of the outputs: the largest error (fp32 ulps) of the two native fp32 runs."""
    ref = base.reference.outputs
    errors = [
        output_error(f.outputs[k], v)["max_ulps_fp32"]
        for f in base.floors
        for k, v in ref.items()
        if v.dtype.kind == "f"
    ]
    return max(errors, default=0.0)


def _score(summary: RunSummary) -> float:
    return float((summary.deviation or {}).get("score", 0.0))


def audit_function_call(
    fn: Callable[..., Any],
    args: Sequence[Any],
    *,
    devices: str | Sequence[str],
    mode: str | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    ulps: float | None = None,
    seed: int = 0,
    out: str | Path | None = None,
    store: str | bool = False,
    tags: Sequence[str] = (),
    progress: ProgressChoice | Progress = "auto",
) -> tuple[AuditReport, dict[str, Any], list[Path]]:
    """``hwbench.audit(fn, *args, devices=...)``: :func:`audit_function`, ``report.json`` written to
    ``out`` (checked, and locked, before any work; the files written are the third result) and the
    report recorded where ``store`` says."""
    import contextlib

    from hwbench.core.files import OutputDir
    from hwbench.library.progress import make_progress
    from hwbench.library.store import record_if

    criteria = Criteria(rtol, atol, ulps)
    with OutputDir(out, ("report.json",), "audit") if out else contextlib.nullcontext() as folder:
        written: list[Path] = []
        report, data = audit_function(
            fn, args, devices, mode=mode, criteria=criteria, seed=seed, progress=make_progress(progress)
        )
        if folder is not None:
            from hwbench.core.results import write_json

            written.append(write_json(report, folder.path / "report.json", folder.files))
    record_if(store, report, tags)
    return report, data, written
