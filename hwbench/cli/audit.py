"""``hwbench audit``: every audit protocol that applies to the kernel, on the one audit engine.

The command is a thin layer over :mod:`hwbench.library.audit` (resolving, running, writing, the same
code path as ``hwbench.audit(...)``); rendering and exit codes are here."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape

from hwbench.cli import validate
from hwbench.cli.command import Command
from hwbench.cli.common import parse_set
from hwbench.cli.function_audit import function_options, with_function_route
from hwbench.cli.model_options import model_criteria, model_inputs, model_settings, render_nodes
from hwbench.cli.output import VERDICT_COLOR, print_json, print_overall, print_table, stderr, stdout
from hwbench.cli.record import record_result, store_options
from hwbench.cli.sharding import SHARD_OPTION
from hwbench.core.audit_protocol import STUDY_SEED
from hwbench.core.errors import EXIT_CHECK_FAILED, EXIT_OK
from hwbench.core.results import HOST_TIME
from hwbench.library.progress import RichProgress
from hwbench.plugins import DEFAULT_KERNEL

if TYPE_CHECKING:
    from hwbench.accuracy.report import AuditReport
    from hwbench.core.plugins import Registry


def _fmt(x: float | None, unit: str = "") -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and not math.isfinite(x):
        return "inf"
    return f"{x:.3g}{unit}"


@click.command(cls=Command)
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
@SHARD_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON only on stdout.")
@model_inputs
@model_criteria
@store_options
@function_options
@with_function_route
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
    shard: int | None,
    as_json: bool,
    model: str | None,
    **model_params: object,
) -> int:
    """Audit devices against the CPU reference: verdict, table, plots, JSON report.

    With --model, a user's ONNX model node by node on every device (docs/models.md); with
    --function MODULE:NAME --inputs args.npz, a user's JAX function equation by equation on every
    device (docs/testing.md). Exit code 0 on PASS (and WARN unless --strict), 1 on FAIL.
    """
    from hwbench.core.plugins import get_registry
    from hwbench.library.audit import audit as library_audit

    ctx = click.get_current_context()
    validate.refuse_together(ctx, "sets", ["profile_path"], "set the parameters in the profile file instead")
    validate.refuse_together(ctx, "model", ["kernel", "dl_config"], "the model is what is audited")
    result = library_audit(  # the same call as hwbench.audit(...); the CLI records the result itself
        devices, kernel=kernel, config=dl_config, mode=mode, overrides=parse_set(sets), profile=profile_path,
        protocols=protocols, quick=quick, dt_refine=dt_refine, seed=seed, engine=engine, cache=not no_cache,
        out=out, progress=RichProgress(console=stderr, transient=as_json), shard=shard,
        **({"model": model, **model_settings(model_params)} if model else {}),
    )  # fmt: skip
    registry = get_registry()
    report = result.report
    if out:
        stderr.print(f"wrote {Path(out) / 'report.json'} and {len(result.written) - 1} more file(s)", highlight=False)
    record_result(report)
    if as_json:
        print_json(report)
    else:
        _render(registry, report)
    if report.verdict.value == "FAIL" or (strict and report.verdict.value == "WARN"):
        return EXIT_CHECK_FAILED
    return EXIT_OK


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
        unit_head = f" ({p.probe_unit})" if p.probe_unit else ""  # the unit once, in the header: cells stay short
        columns = _columns(registry, p.protocol)
        rows = [
            (
                r.label,
                "emul." if r.execution == "emulated" else r.execution,
                *[_cell(_value(r, path), "") for _, path, _ in columns],
                "FAIL" if r.violation else "",
                f"{r.run_s:.1f}",
            )
            for r in p.runs
        ]
        headers = ["run", "exec", *[h + (unit_head if with_unit else "") for h, _, with_unit in columns], "check", "s"]
        print_table(title, headers, rows, narrow=True)
        if any(r.execution == "emulated" for r in p.runs):
            stdout.print(f"  s: wall time here; an emulated run's is {HOST_TIME}", highlight=False)
        floor = ", ".join(f"{k} {_fmt(v)}" for k, v in p.floor.items())
        stdout.print(f"  regime: {p.regime}; floor: {floor}", highlight=False)
        for r in p.runs:  # how a device's matrix products were computed (block-FMA model or approximation)
            method = (r.deviation or {}).get("matmul")
            if method:
                stdout.print(escape(f"  {r.label}: matrix products by the {method}"), highlight=False)
        cached = [r.label for r in p.runs if r.from_cache]
        if cached:
            stdout.print(
                escape(f"  from the baseline cache (--no-cache reruns them): {', '.join(cached)}"), highlight=False
            )
        for v in p.verdicts:
            color = VERDICT_COLOR[v.verdict.value]
            stdout.print(
                f"  [{color}]{v.verdict.value}[/{color}] " + escape(f"{v.device} [{v.mode}]: " + "; ".join(v.reasons)),
                highlight=False,
            )
        render_nodes(p)
    _print_native_parts(report)
    print_overall(report.verdict.value, report.elapsed_s)


def _print_native_parts(report: AuditReport) -> None:
    """What the emulated runs computed natively by design (``RunSummary.native``), once per device mode."""
    seen: dict[str, list[str]] = {}
    for r in (r for p in report.protocols for r in p.runs if r.native):
        seen.setdefault(f"{r.device} [{r.mode}]", r.native)
    for name, parts in seen.items():
        stdout.print(escape(f"not emulated in {name}, by design:"), highlight=False)
        for part in parts:
            stdout.print(escape(f"  - {part}"), highlight=False)


COMMANDS = [audit]
