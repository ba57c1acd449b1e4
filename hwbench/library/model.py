"""A user's model in the library: ``hwbench.run(model=...)`` and the options of
``hwbench.audit(model=..., devices=[...])``.

A model is the ``onnx`` kernel fed a file: the audit goes through the one audit engine (the
``onnx-model`` protocol reads :func:`model_options` from ``AuditSettings.options``); a run resolves
the device as every run does (its probe, its float arithmetic) and computes the model once with
the engine the device mode calls for: ONNX Runtime on the CPU (the evaluator's fp32 path where ORT
does not implement the graph), the real GPU through ONNX Runtime where an A100 / H100 is present,
the GroqWare program on the GroqChip (its capacity checked: a model that does not fit exits 4),
and the op-level evaluator on the device's arithmetic everywhere else (emulated).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.core.errors import UnavailableError, UsageError

if TYPE_CHECKING:
    from hwbench.core.kernel import Workload
    from hwbench.core.results import RunResult
    from hwbench.plugins.kernels.model.runs import ModelRun

Inputs = str | Path | Mapping[str, np.ndarray] | None
AUDIT_KEYWORDS: tuple[str, ...] = (
    "shapes",
    "input_range",
    "rtol",
    "atol",
    "labels",
    "precision_map",
    "keep_wider",
    "wider",
)
AUDIT_KEYWORDS += ("max_memory", "backend")
RUN_KEYWORDS = ("inputs", "outputs", "shapes", "input_range", "max_memory")


def check_keywords(function: str, given: Mapping[str, Any], known: Sequence[str], model: Any) -> None:
    """``function``'s model keywords: an unknown one is a TypeError (as Python's own), a known one
    without ``model=`` a UsageError."""
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise TypeError(f"{function}() got an unexpected keyword argument '{unknown[0]}'")
    if given and model is None:
        raise UsageError(f"{', '.join(sorted(given))}: options of a model, only with model=")


Shapes = Mapping[str, Sequence[int]] | Sequence[str] | None


def model_options(
    model: str | Path,
    *,
    inputs: Inputs = None,
    shapes: Shapes = None,
    input_range: tuple[float, float] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    labels: str | Path | np.ndarray | None = None,
    precision_map: bool = False,
    keep_wider: str | Path | Sequence[str] | None = None,
    wider: str | None = None,
    max_memory: int | str | None = None,
    backend: str | None = None,
) -> dict[str, Any]:
    """The ``onnx-model`` protocol's options (JSON values; arrays under ``_``-prefixed keys, which
    reports leave out). Paths are made absolute, so a sweep's workers find the files."""
    from hwbench.plugins.kernels.model.memory import parse_memory

    out: dict[str, Any] = {"model": _absolute(model)}
    if isinstance(inputs, str | Path):
        out["inputs"] = _absolute(inputs)
    elif inputs is not None:
        out["_inputs"] = dict(inputs)
        out["inputs"] = "in memory: " + ", ".join(sorted(inputs))
    if shapes:
        out["shapes"] = parse_shape_items(shapes)
    if input_range is not None:
        out["input_range"] = [float(input_range[0]), float(input_range[1])]
    out |= {k: v for k, v in (("rtol", rtol), ("atol", atol), ("wider", wider), ("backend", backend)) if v is not None}
    if isinstance(labels, str | Path):
        out["labels"] = _absolute(labels)
    elif labels is not None:
        out["_labels"] = np.asarray(labels)
    if precision_map:
        out["precision_map"] = True
    if keep_wider is not None:
        out["keep_wider"] = _absolute(keep_wider) if isinstance(keep_wider, str | Path) else list(keep_wider)
    if max_memory is not None:
        out["max_memory"] = parse_memory(str(max_memory)) if isinstance(max_memory, str) else int(max_memory)
    return out


def parse_shape_items(shapes: Mapping[str, Sequence[int]] | Sequence[str]) -> dict[str, list[int]]:
    """``{"x": (1, 3)}`` or ``["x:1,3"]`` (as ``--shape`` gives them) -> ``{"x": [1, 3]}``."""
    from hwbench.plugins.kernels.model.inputs import parse_shape, parse_shapes

    if isinstance(shapes, Mapping):
        return {str(k): list(parse_shape(f"{k}:{','.join(str(d) for d in v)}")[1]) for k, v in shapes.items()}
    return {k: list(v) for k, v in parse_shapes([str(s) for s in shapes]).items()}


def _absolute(path: str | Path) -> str:
    return str(Path(path).absolute())


def model_workload(options: Mapping[str, Any], seed: int) -> Workload:
    """The ``onnx`` kernel's workload for these options: the model read, its inputs made and checked."""
    from hwbench.plugins.kernels.model.kernel import model_workload as build
    from hwbench.plugins.kernels.model.settings import ModelSettings
    from hwbench.plugins.kernels.model.source import open_model

    settings = ModelSettings.from_options(options, seed)
    return build(open_model(settings.model), settings.inputs)


def run_model(
    device: str,
    mode: str | None,
    options: Mapping[str, Any],
    *,
    seed: int,
    repeats: int = 1,
    outputs: str | Path | None = None,
    out: str | Path | None = None,
) -> tuple[RunResult, dict[str, np.ndarray]]:
    """One run of the model on ``device`` (``repeats`` timed calls after the first); ``outputs``
    writes the outputs as ``.npz`` keyed by the graph's output names, ``out`` the result JSON, both
    or neither, atomically, once the run has succeeded."""
    from hwbench.core.files import check_output_file

    for path, what in ((outputs, "outputs file"), (out, "output file")):
        if path is not None:
            check_output_file(path, what)
    if outputs is not None and out is not None and Path(outputs).resolve() == Path(out).resolve():
        raise UsageError("--outputs and --out name the same file; give two different paths")
    target, workload = _prepare(device, mode, options, seed)
    run = _execute(target, workload, options, repeats)
    result = _result(target, workload, run)
    _write(result, run.outputs, outputs, out)
    return result, run.outputs


def _prepare(device: str, mode: str | None, options: Mapping[str, Any], seed: int) -> tuple[Any, Workload]:
    """The device mode resolved and refused where it cannot compute a model (exit 4), the workload
    built, its memory estimated from the model's shapes and checked."""
    from hwbench.core.plugins import get_registry
    from hwbench.core.runner import resolve_mode
    from hwbench.plugins.devices.arithmetic import float_device_refusal
    from hwbench.plugins.kernels.model.candidate import Target
    from hwbench.plugins.kernels.model.memory import check_memory, footprint
    from hwbench.plugins.kernels.model.source import open_model

    registry = get_registry()
    d = registry.device(device)
    m = resolve_mode(d, mode)
    why = float_device_refusal(registry, device, "a model")
    if why:
        raise UnavailableError(why)
    if d.probe().status == "unavailable":
        raise UnavailableError(f"device '{d.name}' is unavailable here: {d.probe().reason}")
    workload = model_workload(options, seed)
    model = open_model(workload.meta["model"])
    fp = footprint(model.proto, {k: np.shape(v) for k, v in workload.params.items()})
    detail = f"estimated from its shapes: {fp.weights:,} weights, {fp.intermediates:,} intermediate values"
    check_memory(fp.run_bytes(), options.get("max_memory"), f"running {model.name}", detail)
    return Target(device, m, d.numerics(m), registry, seed), workload


def _execute(target: Any, workload: Workload, options: Mapping[str, Any], repeats: int) -> ModelRun:
    """The run with the engine the device mode calls for (see the module docstring)."""
    from hwbench.plugins.kernels.model.baselines import evaluator_fp32, reference_run
    from hwbench.plugins.kernels.model.gpu import gpu_run, plan_here
    from hwbench.plugins.kernels.model.runs import OrtUnavailable, evaluator_run, ort_run
    from hwbench.plugins.kernels.model.source import open_model

    model = open_model(workload.meta["model"])
    feeds = {k: np.asarray(v) for k, v in workload.params.items()}
    from hwbench.plugins.kernels.model.settings import DEFAULT_BACKEND

    backend = str(options.get("backend") or DEFAULT_BACKEND)
    if target.native_cpu():
        if target.mode == "fp64":
            return reference_run(model, feeds)
        try:
            return ort_run(model.proto, feeds, repeats=repeats)
        except OrtUnavailable as exc:
            run = evaluator_fp32(model, feeds, backend)
            run.note = f"ONNX Runtime cannot run this graph ({exc}); the evaluator's fp32 path ran instead"
            return run
    plan = plan_here(target.device, target.mode)
    if plan is not None and plan.possible:
        return gpu_run(model.proto, feeds, plan, repeats=repeats)
    note = "" if plan is None else f"emulated: the real run was not possible ({plan.reason})"
    if target.registry.device(target.device).spec.kind == "lpu":
        from hwbench.plugins.kernels.model.groq_route import compile_program

        program = compile_program(model, target.profile)  # a model that does not fit: exit 4
        if program.runner is not None:
            return program.run(feeds)
        note = program.fallback_note()
    run = evaluator_run(model.graph, target.arith(backend), feeds, intermediates=False, repeats=repeats)
    run.note = note
    return run


def _result(target: Any, workload: Workload, run: ModelRun) -> RunResult:
    from hwbench.core.results import RunResult, Timing
    from hwbench.plugins import MODEL_KERNEL

    size = workload.size
    dtype = "float64" if target.mode == "fp64" else "float32"
    timing = Timing(
        kernel=MODEL_KERNEL, device=target.device, mode=target.mode, execution=run.execution, engine=run.engine,
        dtype=dtype, ncells=size, ngj=0, connected=False, setup_s=run.setup_s, run_s=run.run_s,
        run_s_all=[run.run_s], simulated_ms=None, steps=1, us_per_step=run.run_s * 1e6, rtf=None,
        cell_steps_per_s=size / run.run_s if run.run_s > 0 else 0.0,
    )  # fmt: skip
    shapes = {k: {"shape": list(np.shape(v)), "dtype": str(np.asarray(v).dtype)} for k, v in run.outputs.items()}
    meta = {"kernel": MODEL_KERNEL, "size": size, **workload.meta, "outputs": shapes, "arithmetic": run.arithmetic}
    if run.note:
        meta["note"] = run.note
    profile = target.profile.name if run.execution == "emulated" and target.profile is not None else None
    first = next(iter(run.outputs), "")
    return RunResult(timing=timing, profile=profile, workload=meta, sample_interval_ms=0.0, probe=first,
                     probe_cells=[])  # fmt: skip


def _write(result: RunResult, arrays: Mapping[str, np.ndarray], outputs: Any, out: Any) -> None:
    """The outputs ``.npz`` and the result JSON, together, only after the run succeeded."""
    from hwbench.core.files import OutputFiles
    from hwbench.core.results import write_json

    with OutputFiles() as files:
        if outputs is not None:
            named: dict[str, Any] = {k: np.asarray(v) for k, v in arrays.items()}  # savez's stubs: see Workload.save
            files.write(outputs, lambda fh: np.savez(fh, **named))
        if out is not None:
            write_json(result, Path(out), files)


def write_precision_maps(report: Any, folder: Path, files: Any) -> list[Path]:
    """Each candidate's precision map as ``keep_wider_<device>_<mode>.json`` (``--keep-wider`` reads it)."""
    import json

    written = []
    for protocol in report.protocols:
        for c in protocol.candidates:
            if c.precision_map is None:
                continue
            doc = {"device": c.device, "mode": c.mode, "wider_mode": c.precision_map.wider_mode,
                   "keep_wider": c.precision_map.keep_wider, "verdict": c.precision_map.verdict.value}  # fmt: skip
            name = f"keep_wider_{c.device}_{c.mode}.json".replace("/", "-")
            written.append(files.write_text(folder / name, json.dumps(doc, indent=1) + "\n"))
    return written
