"""``hwbench audit``: numerical validation and spike stress test against the CPU reference."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape

from hwbench.cli import validate
from hwbench.cli.common import parse_set
from hwbench.cli.output import print_json, print_table, stderr, stdout
from hwbench.cli.record import record_result, store_options
from hwbench.core.bench import STUDY_SEED
from hwbench.core.errors import EXIT_CHECK_FAILED, EXIT_OK, UsageError
from hwbench.library.progress import RichProgress
from hwbench.plugins import DEFAULT_KERNEL

if TYPE_CHECKING:
    from hwbench.accuracy.report import AuditReport


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
    from hwbench.library.audit import audit_candidates, resolve_candidates

    validate.refuse_together(
        click.get_current_context(), "sets", ["profile_path"], "set the parameters in the profile file instead"
    )
    registry = get_registry()
    candidates = resolve_candidates(registry, devices, mode, parse_set(sets), profile_path)
    settings = AuditSettings(
        kernel=kernel, quick=quick, dt_refine=dt_refine, seed=seed, protocols=tuple(protocols), engine=engine
    )
    result = audit_candidates(
        registry, settings, candidates, out=out, progress=RichProgress(console=stderr, transient=as_json)
    )
    report = result.report
    if out:
        stderr.print(f"wrote {Path(out) / 'report.json'} and {len(result.written) - 1} plots", highlight=False)
    record_result(report)
    if as_json:
        print_json(report)
    else:
        _render(report)
    if report.verdict.value == "FAIL" or (strict and report.verdict.value == "WARN"):
        return EXIT_CHECK_FAILED
    return EXIT_OK


def _render(report: AuditReport) -> None:
    for p in report.protocols:
        title = f"{p.name}: {p.description}" + (f"  [{p.reduced}]" if p.reduced else "")
        rows = []
        for r in p.runs:
            dev, spk = r.deviation or {}, r.spikes or {}
            rows.append(
                (
                    r.label,
                    "emul." if r.execution == "emulated" else r.execution,
                    _fmt(dev.get("max")) if dev else "-",
                    _fmt(dev.get("max_outside_spikes")) if dev else "-",
                    f"{spk.get('matched_fraction', 1):.3f}" if spk else "-",
                    _fmt(spk.get("van_rossum_mean")) if spk else "-",
                    "FAIL" if r.violation else "",
                    f"{r.run_s:.1f}",
                )
            )
        unit, unit_text = (f" ({p.probe_unit})", f" {p.probe_unit}") if p.probe_unit else ("", "")
        headers = ["run", "exec", f"max |dV|{unit}", f"outside spikes{unit}", "matched", "vRossum", "check", "s"]
        print_table(title, headers, rows, narrow=True)
        stdout.print(
            f"  regime: {p.regime}; floor: max |dV| outside spikes {_fmt(p.floor['max_outside_spikes'], unit_text)}",
            highlight=False,
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
