"""``hwbench.audit``: a numerical audit against the CPU reference, as a library call.

The ``hwbench audit`` command is a thin layer over :func:`audit_candidates` (its rendering and exit
codes stay in ``hwbench/cli/audit.py``); a script or a notebook calls :func:`audit`, which resolves
device names the same way and returns an :class:`Audit` (the report, with ``.verdict``, and the
in-memory traces the plots draw).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from hwbench.core import interrupts
from hwbench.core.audit_protocol import STUDY_SEED
from hwbench.core.errors import UsageError
from hwbench.library.progress import Progress, ProgressChoice, make_progress
from hwbench.library.store import record_if
from hwbench.plugins import DEFAULT_KERNEL

if TYPE_CHECKING:
    from hwbench.accuracy.audit import AuditSettings, Candidate
    from hwbench.accuracy.report import AuditReport
    from hwbench.core.kernel import Kernel
    from hwbench.core.plugins import Registry
    from hwbench.library.model import Inputs

# What an audit writes into ``out``; on success, earlier files matching these that the new run did not
# write again (e.g. the stress plots of an earlier full audit, after a --protocol validation run) go.
AUDIT_OUTPUTS = ("report.json", "*_box.png", "*_traces.png", "keep_wider_*.json")


@dataclass
class Audit:
    """An audit's outcome: ``report`` (the published JSON's model) and ``data`` (in-memory traces).

    Attributes not found here are the report's (``audit.verdict``, ``audit.protocols``), so code that
    reads a report reads this too. In Jupyter it shows as the verdict, the tables and the plots.
    """

    report: AuditReport
    data: dict[str, Any]  # per protocol report: the in-memory results the plots draw
    written: list[Path] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("report", "result", "data"):  # not set yet (copy, unpickle)
            raise AttributeError(name)
        return getattr(self.report, name)

    def to_json(self) -> str:
        """The report as strict RFC 8259 JSON (non-finite numbers as the strings docs/cli.md names)."""
        from hwbench.core.strict_json import dump_model

        return dump_model(self.report, indent=1)

    def _repr_html_(self) -> str:
        from hwbench.library.display import audit_html

        return audit_html(self.report, self.data)


@overload
def audit(
    fn: Callable[..., Any],
    /,
    *args: Any,
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
) -> Audit: ...


@overload
def audit(
    devices: str | Sequence[str] = (),
    *,
    kernel: str = DEFAULT_KERNEL,
    config: str | None = None,
    mode: str | None = None,
    overrides: dict[str, Any] | None = None,
    profile: str | None = None,
    protocols: Sequence[str] = (),
    quick: bool = False,
    dt_refine: bool = False,
    seed: int = STUDY_SEED,
    engine: str | None = None,
    cache: bool = True,
    out: str | Path | None = None,
    store: str | bool = False,
    tags: Sequence[str] = (),
    progress: ProgressChoice | Progress = "auto",
    shard: int | None = None,
    model: str | Path | None = None,
    inputs: Inputs = None,
    **model_settings: Any,
) -> Audit: ...


def audit(*args: Any, **kwargs: Any) -> Audit:
    """Audit a kernel on devices (``hwbench.audit("groq", quick=True)``), or a JAX function:
    ``hwbench.audit(fn, *example_args, devices=["groq", "a100:tensorrt"], rtol=..., atol=..., ulps=...)``
    (a callable first argument selects it; :func:`hwbench.library.function.audit_function_call`)."""
    if args and callable(args[0]):
        from hwbench.library.function import audit_function_call

        report, data, written = audit_function_call(args[0], args[1:], **kwargs)
        return Audit(report, data, written)
    return audit_kernel(*args, **kwargs)


def audit_kernel(
    devices: str | Sequence[str] = (),
    *,
    kernel: str = DEFAULT_KERNEL,
    config: str | None = None,
    mode: str | None = None,
    overrides: dict[str, Any] | None = None,
    profile: str | None = None,
    protocols: Sequence[str] = (),
    quick: bool = False,
    dt_refine: bool = False,
    seed: int = STUDY_SEED,
    engine: str | None = None,
    cache: bool = True,
    out: str | Path | None = None,
    store: str | bool = False,
    tags: Sequence[str] = (),
    progress: ProgressChoice | Progress = "auto",
    shard: int | None = None,
    model: str | Path | None = None,
    inputs: Inputs = None,
    **model_settings: Any,
) -> Audit:
    """Audit one device (``"groq"``, ``"ipu:fp16"``) or several side by side against the CPU reference.

    Every protocol that applies to ``kernel`` runs (or those named in ``protocols``; ``config``: a
    named kernel configuration, where the protocol has one, e.g. ``gemm_k4``).
    ``quick`` runs the smaller protocols (stated in the report); ``cache=False`` reruns the
    baselines instead of reading them from the baseline cache; ``out`` also writes ``report.json``
    and the PNG plots there; ``store`` records the report (``True``: the default store, or a URL);
    ``shard`` splits each candidate's network over that many JAX devices (docs/scaling.md).
    Wrong names and options raise :class:`hwbench.core.errors.UsageError` before any work.

    ``model``: a user's ONNX file audited node by node with ``inputs`` (``.npz`` or arrays; default
    generated) and :func:`hwbench.library.model.model_options`'s keywords (docs/models.md).
    """
    from hwbench.accuracy.audit import AuditSettings
    from hwbench.core.plugins import get_registry

    kernel, options = _kernel_options(kernel, config, model, inputs, model_settings)
    registry = get_registry()
    check_shardable(registry.kernel(kernel), shard)  # an unknown kernel: a UsageError naming the registered ones
    names = (devices,) if isinstance(devices, str) else tuple(devices)  # none: the protocols say what they need
    candidates = resolve_candidates(registry, names, mode, dict(overrides or {}), profile)
    settings = AuditSettings(kernel=kernel, quick=quick, dt_refine=dt_refine, seed=seed, protocols=tuple(protocols),
                             engine=engine, options=options, cache=cache, shards=shard)  # fmt: skip
    result = audit_candidates(registry, settings, candidates, out=out, progress=make_progress(progress))
    record_if(store, result.report, tags)
    return result


def _kernel_options(
    kernel: str, config: str | None, model: str | Path | None, inputs: Inputs, model_settings: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """The kernel audited and its protocols' options: ``config``, or a model's (``model=``)."""
    from hwbench.library.model import AUDIT_KEYWORDS, check_keywords

    given = {**model_settings, **({"inputs": inputs} if inputs is not None else {})}
    check_keywords("audit", given, (*AUDIT_KEYWORDS, "inputs"), model)
    if model is not None:
        return _model_kernel(kernel, model, inputs, model_settings)
    return kernel, {"config": config} if config else {}


def _model_kernel(
    kernel: str, model: str | Path, inputs: Inputs, settings: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """``audit(model=...)``: the ``onnx`` kernel and its protocol's options."""
    from hwbench.library.model import model_options
    from hwbench.plugins import MODEL_KERNEL

    if kernel not in (DEFAULT_KERNEL, MODEL_KERNEL):
        raise UsageError(f"model= audits the model file; it cannot be combined with kernel='{kernel}'")
    return MODEL_KERNEL, model_options(model, inputs=inputs, **settings)


def check_shardable(kernel: Kernel, shard: int | None) -> None:
    """``shard`` for a kernel that does not split its cells over devices is refused, not ignored."""
    from hwbench.core.kernel import partitions
    from hwbench.core.sharding import check_shard_count

    if shard is not None and check_shard_count(shard) and not partitions(kernel):
        raise UsageError(f"kernel '{kernel.name}' cannot be sharded over devices (it does not partition its cells)")


def resolve_candidates(
    registry: Registry,
    devices: Sequence[str],
    mode: str | None,
    overrides: dict[str, Any],
    profile_path: str | None,
) -> list[Candidate]:
    """One candidate per ``NAME[:MODE]``; unknown devices fail now, with suggestions."""
    from hwbench.accuracy.audit import Candidate

    names = []
    for spec in devices:
        name, _, spec_mode = spec.partition(":")
        registry.device(name)
        if mode and len(devices) > 1 and not spec_mode:
            raise UsageError("with several --device, give each its mode as NAME:MODE")
        names.append((name, spec_mode or mode))
    profile_for = _profile_device(profile_path, [n for n, _ in names])
    return [Candidate(n, m, overrides, profile_path if n == profile_for else None) for n, m in names]


def _profile_device(profile_path: str | None, names: list[str]) -> str | None:
    """The device a profile file applies to: the one it names, which must be among them."""
    if not profile_path:
        return None
    from hwbench.accuracy.numerics.profile import NumericsProfile

    profile = NumericsProfile.load(profile_path)
    if profile.device not in names:
        raise UsageError(
            f"--profile {profile_path} is for device '{profile.device}', which is not audited here "
            f"(--device {', '.join(names)}); a profile applies only to the device it names"
        )
    return profile.device


def audit_candidates(
    registry: Registry,
    settings: AuditSettings,
    candidates: list[Candidate],
    *,
    out: str | Path | None = None,
    progress: Progress | None = None,
) -> Audit:
    """Run the audit (``out`` locked while it runs); report.json and the plots appear together."""
    from hwbench.core.files import OutputDir
    from hwbench.library.divergence import attach_divergence_traces

    with OutputDir(out, AUDIT_OUTPUTS, "audit") if out else contextlib.nullcontext() as folder:
        report, data = run_audit(registry, settings, candidates, progress or Progress())
        attach_divergence_traces(report, data)  # the page of a stored audit can then draw them
        result = Audit(report, data)
        if folder is not None:
            from hwbench.core.results import write_json
            from hwbench.library.model import write_precision_maps
            from hwbench.library.plots import audit_plots

            result.written.append(write_json(report, folder.path / "report.json", folder.files))
            result.written += audit_plots(data, folder.path, folder.files)
            result.written += write_precision_maps(report, folder.path, folder.files)
    return result


def run_audit(
    registry: Registry, settings: AuditSettings, candidates: list[Candidate], progress: Progress
) -> tuple[AuditReport, dict[str, Any]]:
    """THE one call into the audit engine: preflight, plan, run with progress; report and traces."""
    from hwbench.accuracy.audit import Auditor

    auditor = Auditor(registry, settings)
    auditor.preflight(candidates)  # a protocol the kernel refuses: a UsageError with the kernel's reason
    with progress:
        auditor.progress = _ticker(progress)
        for label, total in auditor.planned_runs(candidates):
            progress.add(label, total)
        report = auditor.run(candidates)
    return report, auditor.data


def _ticker(progress: Progress) -> Callable[[str, float, float], None]:
    def tick(label: str, ms: float, total: float) -> None:
        interrupts.check()  # an interrupt something swallowed stops the audit here
        progress.advance(label, ms, total=total)

    return tick
