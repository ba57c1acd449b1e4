"""``hwbench audit``: numerical validation and spike stress test against the CPU reference."""

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
    from hwbench.accuracy.audit import AuditSettings, Candidate, ProtocolData
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
@click.option(
    "--kernel", "-k", default=DEFAULT_KERNEL, show_default=True, help="Kernel to audit (DL primitives: gemm, ...)."
)
@click.option("--config", "dl_config", default=None, help="DL kernels: configuration, e.g. gemm_k4.")
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
    type=click.Choice(["validation", "stress"]),
    help="Run only these protocols (default both).",
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
    from hwbench.core.plugins import get_registry

    if get_registry().kernel(kernel).info.family == "dl":
        from hwbench.cli.dl_audit import DLAuditOptions, run_dl_audit_cli

        return run_dl_audit_cli(
            DLAuditOptions(kernel, dl_config, devices, mode, parse_set(sets), quick, seed, strict, out, as_json)
        )
    if not devices:
        raise UsageError("give at least one --device NAME[:MODE] to audit")
    from hwbench.accuracy.audit import AuditSettings
    from hwbench.core.results import write_json

    validate.refuse_together(
        click.get_current_context(), "sets", ["profile_path"], "set the parameters in the profile file instead"
    )
    registry = get_registry()
    candidates = _candidates(registry, devices, mode, parse_set(sets), profile_path)
    settings = AuditSettings(
        kernel=kernel, quick=quick, dt_refine=dt_refine, seed=seed, protocols=tuple(protocols), engine=engine
    )
    settings.cache = not no_cache
    with OutputDir(out, AUDIT_OUTPUTS, "audit") if out else contextlib.nullcontext() as folder:
        report, data = _run_audit(registry, settings, candidates, as_json)
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
        _render(report)
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
) -> tuple[AuditReport, dict[str, ProtocolData]]:
    """Preflight and run the audit with progress bars; returns the report and the in-memory traces."""
    from hwbench.stress.protocols import standard_auditor

    auditor = standard_auditor(registry, settings)
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

        def tick(label: str, ms: float, total: float) -> None:
            interrupts.check()  # an interrupt something swallowed stops the audit here
            if label not in tasks:
                tasks[label] = progress.add_task(label, total=total)
            progress.advance(tasks[label], ms)

        auditor.progress = tick
        for label, total in auditor.planned_runs(candidates):
            tasks[label] = progress.add_task(label, total=total)
        report = auditor.run(candidates)
    return report, auditor.data


def _render(report: AuditReport) -> None:
    for p in report.protocols:
        title = f"{p.name}: {p.description}" + (f"  [{p.reduced}]" if p.reduced else "")
        unit = f" {p.probe_unit}" if p.probe_unit else ""
        rows = []
        for r in p.runs:
            dev, spk = r.deviation or {}, r.spikes or {}
            rows.append(
                (
                    r.label,
                    r.execution[:4] + ".",
                    _fmt(dev.get("max"), unit) if dev else "-",
                    _fmt(dev.get("max_outside_spikes"), unit) if dev else "-",
                    f"{spk.get('matched_fraction', 1):.3f}" if spk else "-",
                    _fmt(spk.get("van_rossum_mean")) if spk else "-",
                    "yes" if r.violation else "",
                    f"{r.run_s:.1f}",
                )
            )
        print_table(
            title,
            ["run", "exec", "max |dV|", "outside spikes", "matched", "vRossum", "hard check", "s"],
            rows,
        )
        stdout.print(
            f"  regime: {p.regime}; floor: max |dV| outside spikes {_fmt(p.floor['max_outside_spikes'], unit)}",
            highlight=False,
        )
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
