"""``hwbench audit``: every audit protocol that applies to the kernel, on the one audit engine."""

from __future__ import annotations

import contextlib
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from hwbench.cli import validate
from hwbench.cli.common import parse_set
from hwbench.cli.output import print_json, print_table, stderr, stdout
from hwbench.cli.record import record_result, store_options
from hwbench.core import interrupts
from hwbench.core.bench import STUDY_SEED
from hwbench.core.errors import EXIT_CHECK_FAILED, EXIT_OK, UsageError
from hwbench.core.files import OutputDir
from hwbench.plugins import DEFAULT_KERNEL

if TYPE_CHECKING:
    from hwbench.accuracy.audit import AuditSettings, Candidate
    from hwbench.accuracy.report import AuditReport
    from hwbench.core.plugins import Registry


def _fmt(x: float | None, unit: str = "") -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and not math.isfinite(x):
        return "inf"
    return f"{x:.3g}{unit}"


@click.command()
@click.option(
    "--device",
    "-d",
    "devices",
    multiple=True,
    help="Device to audit, NAME or NAME:MODE (repeatable: devices side by side).",
)
@click.option("--kernel", "-k", default=DEFAULT_KERNEL, show_default=True, help="Kernel to audit (hwbench kernels).")
@click.option("--config", "dl_config", default=None, help="Named kernel configuration, where the protocol has one.")
@click.option("--mode", default=None, help="Numerics mode (for a single --device without :MODE).")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a documented profile parameter (e.g. reduced_mantissa_bits=12).",
)
@click.option(
    "--profile",
    "profile_path",
    type=validate.InFile(),
    help="Use this numerics profile file (.toml/.json) for the device it names, instead of that device's own.",
)
@click.option(
    "--protocol",
    "protocols",
    multiple=True,
    help="Run only these protocols (default: every one that applies to the kernel; hwbench protocols).",
)
@click.option("--quick", is_flag=True, help="Smaller, shorter protocols for CI and first looks (stated in the report).")
@click.option("--dt-refine", is_flag=True, help="Repeat each candidate at dt/10 and dt/100, as the study did.")
@click.option(
    "--seed", type=validate.SEED, default=STUDY_SEED, show_default=True, help="Network and stimulus seed (the study's)."
)
@click.option("--engine", default=None, help="Engine for reference, gold and ensemble runs (default: fastest).")
@click.option(
    "--no-cache",
    is_flag=True,
    help="Run the reference, gold and ensemble runs again: neither read nor write the baseline cache.",
)
@click.option("--strict", is_flag=True, help="Exit 1 on WARN too.")
@click.option(
    "--out",
    type=validate.OutDir(),
    default=None,
    help="Write report.json and PNG plots here (replacing an earlier audit's; locked while running).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON only on stdout.")
@store_options
def audit(
    devices: tuple[str, ...],
    kernel: str,
    dl_config: str | None,
    mode: str | None,
    sets: tuple[str, ...],
    profile_path: str | None,
    protocols: tuple[str, ...],
    quick: bool,
    dt_refine: bool,
    seed: int,
    engine: str | None,
    no_cache: bool,
    strict: bool,
    out: str | None,
    as_json: bool,
) -> int:
    """Audit devices against the CPU reference: verdict, table, plots, JSON report.

    Exit code 0 on PASS (and WARN unless --strict), 1 on FAIL.
    """
    from hwbench.accuracy.audit import AuditSettings
    from hwbench.core.plugins import get_registry
    from hwbench.core.results import write_json

    validate.refuse_together(
        click.get_current_context(), "sets", ["profile_path"], "set the parameters in the profile file instead"
    )
    registry = get_registry()
    candidates = _candidates(registry, devices, mode, parse_set(sets), profile_path)
    options = {"config": dl_config} if dl_config else {}
    settings = AuditSettings(
        kernel=kernel,
        quick=quick,
        dt_refine=dt_refine,
        seed=seed,
        protocols=tuple(protocols),
        engine=engine,
        options=options,
    )
    settings.cache = not no_cache
    with OutputDir(out, AUDIT_OUTPUTS, "audit") if out else contextlib.nullcontext() as folder:
        report, data = _run_audit(registry, settings, candidates, as_json)
        plots: list[Path] = []
        if folder is not None:
            from hwbench.cli.plots import audit_plots

            write_json(report, folder.path / "report.json", folder.files)
            plots = audit_plots(data, folder.path, folder.files)
    if out:
        stderr.print(f"wrote {Path(out) / 'report.json'} and {len(plots)} plots", highlight=False)
    record_result(report)
    if as_json:
        print_json(report.model_dump(mode="json", by_alias=True))
    else:
        _render(registry, report)
    if report.verdict.value == "FAIL" or (strict and report.verdict.value == "WARN"):
        return EXIT_CHECK_FAILED
    return EXIT_OK


# What an audit writes into --out; on success, earlier files matching these that the new run did not
# write again (e.g. the stress plots of an earlier full audit, after a --protocol validation run) go.
AUDIT_OUTPUTS = ("report.json", "*_box.png", "*_traces.png")


def _candidates(
    registry: Registry,
    devices: tuple[str, ...],
    mode: str | None,
    overrides: dict[str, Any],
    profile_path: str | None,
) -> list[Candidate]:
    """One candidate per ``--device NAME[:MODE]``; unknown devices fail now, with suggestions."""
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
    """The --device a profile file applies to: the one it names, which must be among them."""
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


def _run_audit(
    registry: Registry, settings: AuditSettings, candidates: list[Candidate], as_json: bool
) -> tuple[AuditReport, dict[str, Any]]:
    """Preflight and run the audit with progress bars; returns the report and the in-memory data."""
    from hwbench.accuracy.audit import Auditor

    auditor = Auditor(registry, settings)
    auditor.preflight(candidates)  # a protocol the kernel refuses: a UsageError with the kernel's reason
    tasks: dict[str, TaskID] = {}
    with Progress(
        TextColumn("{task.description:<44}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=as_json,
    ) as progress:

        def tick(label: str, done: float, total: float) -> None:
            interrupts.check()  # an interrupt something swallowed stops the audit here
            if label not in tasks:
                tasks[label] = progress.add_task(label, total=total)
            progress.advance(tasks[label], done)

        auditor.progress = tick
        for label, total in auditor.planned_runs(candidates):
            tasks[label] = progress.add_task(label, total=total)
        report = auditor.run(candidates)
    return report, auditor.data


# Columns of reports whose protocol is not registered here (reports from before protocols were
# plugins: the simulation audit's).
_LEGACY_COLUMNS = [
    ("max |dV|", "deviation.max", True),
    ("outside spikes", "deviation.max_outside_spikes", True),
    ("matched", "spikes.matched_fraction", False),
    ("vRossum", "spikes.van_rossum_mean", False),
]


def _columns(registry: Registry, protocol: str) -> list[tuple[str, str, bool]]:
    """What the protocol compares (its declared columns), or the simulation audit's."""
    found = registry.protocols.get(protocol)
    if found is None:
        return _LEGACY_COLUMNS
    return [(c.header, c.path, c.unit) for c in found.info.compares]


def _value(run: Any, path: str) -> Any:
    """``"deviation.max"`` of a RunSummary: the field, then keys into it (None where absent)."""
    field, *keys = path.split(".")
    value = getattr(run, field, None)
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _cell(value: Any, unit: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, (bool, int)):
        return str(int(value))
    return _fmt(float(value), unit) if isinstance(value, float) else str(value)


def _render(registry: Registry, report: AuditReport) -> None:
    for p in report.protocols:
        title = f"{p.name}: {p.description}" + (f"  [{p.reduced}]" if p.reduced else "")
        unit = f" {p.probe_unit}" if p.probe_unit else ""
        columns = _columns(registry, p.protocol)
        rows = [
            (
                r.label,
                r.execution[:4] + ".",
                *[_cell(_value(r, path), unit if with_unit else "") for _, path, with_unit in columns],
                "yes" if r.violation else "",
                f"{r.run_s:.1f}",
            )
            for r in p.runs
        ]
        print_table(title, ["run", "exec", *[c[0] for c in columns], "hard check", "s"], rows)
        floor = ", ".join(f"{k} {_fmt(v)}" for k, v in p.floor.items())
        stdout.print(f"  regime: {p.regime}; floor: {floor}", highlight=False)
        for r in p.runs:  # how a device's matrix products were computed (block-FMA model or approximation)
            if (r.deviation or {}).get("matmul"):
                stdout.print(escape(f"  {r.label}: matrix products by the {r.deviation['matmul']}"), highlight=False)
        cached = [r.label for r in p.runs if r.from_cache]
        if cached:
            stdout.print(
                escape(f"  from the baseline cache (--no-cache reruns them): {', '.join(cached)}"), highlight=False
            )
        for v in p.verdicts:
            color = {"PASS": "green", "WARN": "yellow", "FAIL": "red"}[v.verdict.value]
            stdout.print(
                f"  [{color}]{v.verdict.value}[/{color}] " + escape(f"{v.device} [{v.mode}]: " + "; ".join(v.reasons)),
                highlight=False,
            )
    color = {"PASS": "green", "WARN": "yellow", "FAIL": "red"}[report.verdict.value]
    stdout.print(
        f"\n[bold {color}]Overall: {report.verdict.value}[/bold {color}]  ({report.elapsed_s:.1f} s)", highlight=False
    )


COMMANDS = [audit]
