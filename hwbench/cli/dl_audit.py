"""``hwbench audit --kernel gemm|conv2d|conv2d-bw|relu|lstm``: the DL-primitives accuracy protocol."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.markup import escape

from hwbench.cli.output import print_json, print_table, stderr, stdout
from hwbench.cli.record import record_result
from hwbench.core.errors import EXIT_CHECK_FAILED, EXIT_OK, UsageError


@dataclass
class DLAuditOptions:
    kernel: str
    config: str | None
    devices: tuple[str, ...]
    mode: str | None
    overrides: dict[str, Any]
    quick: bool
    seed: int
    strict: bool
    out: str | None
    as_json: bool


def run_dl_audit_cli(opts: DLAuditOptions) -> int:
    from hwbench.core.plugins import get_registry
    from hwbench.core.results import write_json
    from hwbench.plugins.kernels.dl.audit import DLAuditor, DLAuditSettings, resolve_candidates

    registry = get_registry()
    devices = opts.devices
    if opts.mode:
        if len(devices) != 1 or ":" in devices[0]:
            raise UsageError("--mode needs exactly one --device NAME (or give NAME:MODE)")
        devices = (f"{devices[0]}:{opts.mode}",)
    auditor = DLAuditor(
        registry, DLAuditSettings(kernel=opts.kernel, config=opts.config, quick=opts.quick, seed=opts.seed)
    )
    if opts.config:
        auditor.kernel.shape(opts.config)  # an unknown configuration fails now
    candidates = resolve_candidates(registry, devices, opts.overrides)
    with stderr.status("auditing") as status:
        auditor.progress = lambda label: status.update(f"auditing {opts.kernel}: {label}")
        report = auditor.run(candidates)
    if opts.out:
        path = write_json(report, Path(opts.out) / "report.json")
        stderr.print(f"wrote {path}", highlight=False)
    record_result(report)
    if opts.as_json:
        print_json(report)
    else:
        _render(report)
    if report.verdict.value == "FAIL" or (opts.strict and report.verdict.value == "WARN"):
        return EXIT_CHECK_FAILED
    return EXIT_OK


def _render(report: Any) -> None:
    for p in report.protocols:
        rows = []
        for r, v in zip(p.runs, [None, *p.verdicts]):
            m = r.deviation or {}
            rows.append(
                (
                    r.label,
                    r.execution[:4] + ".",
                    f"{m.get('max_rel', 0):.3g}",
                    f"{m.get('normwise_rel', 0):.3g}",
                    _ratio(m, "max_over_det"),
                    _ratio(m, "max_over_prob"),
                    str(m.get("beyond_det", "-")),
                    "floor" if v is None else v.verdict.value,
                )
            )
        title = f"{p.name}: {p.description}" + (f"  [{p.reduced}]" if p.reduced else "")
        print_table(title, ["run", "exec", "max rel", "normwise", "/det bound", "/sqrt(K)u", "beyond", "verdict"], rows)
        for v in p.verdicts:
            if v.verdict.value != "PASS":
                stdout.print(
                    "  [red]FAIL[/red] " + escape(f"{v.device} [{v.mode}]: " + "; ".join(v.reasons)), highlight=False
                )
    color = {"PASS": "green", "WARN": "yellow", "FAIL": "red"}[report.verdict.value]
    stdout.print(
        f"\n[bold {color}]Overall: {report.verdict.value}[/bold {color}]  ({report.elapsed_s:.1f} s)", highlight=False
    )


def _ratio(m: dict[str, Any], key: str) -> str:
    return "-" if key not in m else f"{m[key]:.3g}"
