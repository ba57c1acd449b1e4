"""``hwbench audit --function MODULE:NAME --inputs args.npz --device ...``: a user's JAX function audited
on devices' arithmetic (the same call as ``hwbench.audit(fn, *args, devices=...)``).

The options (``--function``, ``--inputs``, ``--rtol``, ``--atol``, ``--ulps``) are checked while the
command line is parsed or before any work; the verdict table, each device's first equation above
the fp32 floor with its source line, and the equations above the floor follow.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape

from hwbench.cli import validate
from hwbench.cli.command import given
from hwbench.cli.output import VERDICT_COLOR, print_json, print_overall, print_table, stderr, stdout
from hwbench.core.errors import EXIT_CHECK_FAILED, EXIT_OK, UsageError

if TYPE_CHECKING:
    from hwbench.core.audit_report import AuditReport, CandidateNodes, CandidateVerdict

TOLERANCE = validate.FiniteFloat(0.0)
SHOWN = 8
"""Equations above the floor listed per device in the terminal (the JSON report has every one)."""

KERNEL_OPTIONS = ["kernel", "dl_config", "sets", "profile_path", "protocols", "quick", "dt_refine", "engine", "model"]
KERNEL_OPTIONS += ["shard", "shapes", "input_range", "max_memory", "labels", "precision_map", "keep_wider", "wider"]
FUNCTION_ONLY = ["ulps"]


def function_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--function`` and ``--ulps`` on the audit command (``--inputs``, ``--rtol`` and ``--atol``
    are the model options': :mod:`hwbench.cli.model_options`)."""
    options = [
        click.option("--function", "function", default=None, metavar="MODULE:NAME",
                     help="Audit a JAX function instead of a kernel (imported as python -m would; docs/testing.md)."),
        click.option("--ulps", type=TOLERANCE, default=None, help="Outputs: tolerance in fp32 ulps of the reference."),
    ]  # fmt: skip
    for option in reversed(options):
        command = option(command)
    return command


def refuse_mixed(ctx: click.Context) -> None:
    """The kernel's or a model's options with ``--function``, or the function's without it: one error line."""
    if given(ctx, "function"):
        for name in KERNEL_OPTIONS:
            if name in ctx.params:
                validate.refuse_together(ctx, "function", [name], "they configure a kernel or model audit")
        if not given(ctx, "model_inputs"):
            raise UsageError("--function needs --inputs FILE.npz: the function's arguments as arg0, arg1, ...")
        return
    for name in FUNCTION_ONLY:
        if given(ctx, name):
            raise UsageError(f"--{name} applies to a function audit: give --function MODULE:NAME")


def audit_function(
    function: str,
    inputs: str,
    devices: tuple[str, ...],
    mode: str | None,
    tolerances: dict[str, float | None],
    *,
    seed: int,
    strict: bool,
    out: str | None,
    as_json: bool,
) -> int:
    """Load, audit, render; exit 0 (PASS, WARN unless ``strict``) or 1."""
    from hwbench.cli.record import record_result
    from hwbench.library.audit import audit as library_audit
    from hwbench.library.function_source import load_arguments, load_function
    from hwbench.library.progress import RichProgress

    if not devices:
        raise UsageError("give at least one --device to audit the function on")
    args = load_arguments(inputs)
    fn = load_function(function)
    progress = RichProgress(console=stderr, transient=as_json)
    rtol, atol, ulps = (tolerances[k] for k in ("rtol", "atol", "ulps"))
    result = library_audit(fn, *args, devices=list(devices), mode=mode, rtol=rtol, atol=atol, ulps=ulps, seed=seed,
                           out=out, progress=progress)  # fmt: skip
    report = result.report
    if out:
        stderr.print(f"wrote {Path(out) / 'report.json'}", highlight=False)
    record_result(report)
    if as_json:
        print_json(report)
    else:
        render(report)
    if report.verdict.value == "FAIL" or (strict and report.verdict.value == "WARN"):
        return EXIT_CHECK_FAILED
    return EXIT_OK


def _ulps(value: Any) -> str:
    return "-" if value is None else f"{float(value):.3g}"


def render(report: AuditReport) -> None:
    """The verdict table, then per device its first equation above the floor and the others."""
    protocol = report.protocols[0]
    rows = []
    for cand in protocol.candidates:
        worst = max(cand.outputs.values(), key=lambda o: o["max_ulps_fp32"], default={})
        first = next((n for n in cand.nodes if n.name == cand.first_divergent_node), None)
        where = "-" if first is None else f"{first.source or first.name} {first.op_type}"
        rows.append((f"{cand.device}:{cand.mode}", cand.verdict.value, _ulps(worst.get("max_ulps_fp32")),
                     _ulps(worst.get("floor_ulps_fp32")), where))  # fmt: skip
    headers = ["device", "verdict", "fp32 ulps", "floor", "first above floor"]
    print_table(f"{protocol.name}: {protocol.description}", headers, rows, narrow=True)
    for cand, verdict in zip(protocol.candidates, protocol.verdicts):
        _render_candidate(cand, verdict)
    print_overall(report.verdict.value, report.elapsed_s)


def _render_candidate(cand: CandidateNodes, verdict: CandidateVerdict) -> None:
    from hwbench.evaluator.jaxpr.primitives import MOVES

    color = VERDICT_COLOR[cand.verdict.value]
    text = escape(f"{cand.device} [{cand.mode}]: " + "; ".join([*verdict.reasons, *cand.notes]))
    stdout.print(f"\n[{color}]{cand.verdict.value}[/{color}] {text}", highlight=False)
    above = [n for n in cand.nodes if n.above_floor and n.op_type not in MOVES]  # moves carry errors, make none
    for node in above[:SHOWN]:
        why = f"  ({node.mechanism})" if node.mechanism else ""
        size = f"{node.max_ulps:>10.3g} ulp (floor {_ulps(node.floor_ulps)})"
        stdout.print(escape(f"  {node.name:<8} {node.op_type:<12} {size}  {node.source}{why}"), highlight=False)
    if len(above) > SHOWN:
        stdout.print(f"  ... {len(above) - SHOWN} more above the floor (--json lists every equation)", highlight=False)


def with_function_route(command: Callable[..., Any]) -> Callable[..., Any]:
    """Route ``hwbench audit --function ...`` to :func:`audit_function` before the kernel audit starts."""

    @functools.wraps(command)
    def routed(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        refuse_mixed(ctx)
        function = kwargs.pop("function")
        ulps = kwargs.pop("ulps")
        if function is None:
            return command(*args, **kwargs)
        inputs = kwargs["model_inputs"]
        tolerances = {"rtol": kwargs["rtol"], "atol": kwargs["atol"], "ulps": ulps}
        return audit_function(function, inputs, kwargs["devices"], kwargs["mode"], tolerances, seed=kwargs["seed"],
                              strict=kwargs["strict"], out=kwargs["out"], as_json=kwargs["as_json"])  # fmt: skip

    return routed
