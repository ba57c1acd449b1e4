"""A user's JAX function on devices' arithmetic: ``hwbench.run(fn, ...)`` and ``hwbench.audit(fn, ...)``.

The function is traced once (:class:`~hwbench.evaluator.jaxpr.program.FunctionProgram`) and
compiled for each arithmetic: the float64 reference (native float64, dtypes widened), the fp32
floor (native fp32 on the inputs as given and on the inputs moved one ulp: the noise any correct
fp32 computation shows) and each device mode (its :class:`~hwbench.evaluator.arith.Arith`, from
:func:`hwbench.plugins.devices.arithmetic.device_arith`). Every equation's output is compared with
the reference's (:mod:`hwbench.evaluator.compare`), in ulps of the device's storage format; the
first above its floor is named with its source line and, where known, the device's mechanism
(:mod:`hwbench.evaluator.mechanism`). The outputs are judged by :mod:`hwbench.evaluator.judge`, and
each device's report is built as a model's is (:mod:`hwbench.evaluator.candidate`).
``hwbench.audit`` wraps the result in an :class:`~hwbench.library.audit.Audit` like any other:
one protocol report, ``jax-function``, with a verdict per device and its equations (``candidates``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from hwbench.core.audit_report import AuditReport, CandidateNodes, CandidateVerdict, RunSummary
from hwbench.core.errors import UsageError
from hwbench.evaluator.candidate import ulp_format
from hwbench.evaluator.judge import Criteria, judge, nudged
from hwbench.library.function_cache import compiled_for, program_for

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
    def execution(self) -> Literal["real", "emulated"]:
        native = self.profile is None or self.profile.is_native()
        return "real" if native and self.device == "cpu" else "emulated"


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


def baselines(program: FunctionProgram, flat: Sequence[np.ndarray]) -> Baselines:
    from hwbench.evaluator.arith import native_arith

    reference, seconds = _timed(compiled_for(program, "float64", lambda: native_arith("float64"), True), flat)
    fp32 = compiled_for(program, "float32", lambda: native_arith("float32"), True)
    given, s1 = _timed(fp32, flat)
    moved, s2 = _timed(fp32, [nudged(x) for x in flat])
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


Audited = tuple[tuple[CandidateNodes, CandidateVerdict], RunSummary]


def audit_target(
    program: FunctionProgram, flat: Sequence[np.ndarray], base: Baselines, target: Target, criteria: Criteria
) -> Audited:
    """One device: its run with every equation kept, the equations' errors, the outputs' verdict
    (the candidate's report and verdict, and its row of the audit table)."""
    from hwbench.evaluator.candidate import candidate_summary, judged_candidate, node_reports

    run, seconds = _timed(compiled_for(program, target.key, lambda: target.arith, True), flat)
    ulps = ulp_format(target.profile)
    floors = [f.tensors for f in base.floors]
    explain = functools.partial(_mechanism, program, flat, run=run, ref=base.reference, profile=target.profile)
    nodes = node_reports(program.infos, run.tensors, base.reference.tensors, floors, explain, mantissa_bits=ulps[0])
    judged = judge(
        run.outputs, base.reference.outputs, [f.outputs for f in base.floors], criteria, program.output_names
    )
    report, verdict = judged_candidate(target.device, target.mode, judged, nodes, engine=ENGINE,
                                       execution=target.execution, arithmetic=target.arith.describe(),
                                       ulps=ulps)  # fmt: skip
    return (report, verdict), candidate_summary(report, verdict, target.profile, 0.0, seconds)


def _mechanism(
    program: FunctionProgram,
    flat: Sequence[np.ndarray],
    info: NodeInfo,
    *,
    run: Evaluation,
    ref: Evaluation,
    profile: NumericsProfile | None,
) -> str | None:
    """What the device's arithmetic shows at equation ``info`` (:mod:`hwbench.evaluator.mechanism`)."""
    from hwbench.evaluator.jaxpr.primitives import OP_CLASS
    from hwbench.evaluator.mechanism import mechanism

    outs = [o for o in info.outputs if o in run.tensors and o in ref.tensors]
    operands = program.operand_values(info.name, run.tensors, flat)
    cand, want = [run.tensors[o] for o in outs], [ref.tensors[o] for o in outs]
    return mechanism(info.op_type, OP_CLASS.get(info.op_type), profile, cand, want, operands)


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
    from hwbench.evaluator.candidate import baseline_summaries, protocol_report
    from hwbench.evaluator.judge import output_floor

    runs = [*baseline_summaries([(ENGINE, 0.0, s) for s in base.seconds]), *[s for _, s in audited]]
    shapes = ", ".join(f"{x.dtype}{list(x.shape)}" for x in flat)
    description = (
        f"{program.name}({shapes}): {program.equations} equations, each against the float64 reference "
        "(run times include tracing and compiling)"
    )
    floor = output_floor(base.reference.outputs, [f.outputs for f in base.floors])
    judged = [j for j, _ in audited]
    protocol = protocol_report(PROTOCOL, f"{PROTOCOL} {program.name}", description, "equation-by-equation", floor,
                               runs, judged)  # fmt: skip
    reasons = [
        f"{protocol.name}: {v.device} [{v.mode}] {v.verdict.value} - {v.reasons[0] if v.reasons else ''}"
        for v in protocol.verdicts
    ]
    settings = {
        "function": program.name,
        "inputs": [{"shape": list(x.shape), "dtype": str(x.dtype)} for x in flat],
        "devices": [f"{c.device}:{c.mode}" for c, _ in judged],
        **{"rtol": criteria.rtol, "atol": criteria.atol, "ulps": criteria.ulps, "seed": seed},
        "protocols": [PROTOCOL],
    }
    return AuditReport(
        settings=settings, protocols=[protocol], verdict=protocol.verdict, reasons=reasons, elapsed_s=elapsed
    )


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
