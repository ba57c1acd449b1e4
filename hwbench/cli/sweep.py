"""``hwbench sweep``: many audits (op-class widths, rounding, parameters, seeds, dt) on Dask.

Exit codes: 0 every cell was audited (whatever the verdicts: a precision sweep is meant to find
FAILs), 1 some cells could not be audited (listed), 2 bad input, 4 scheduler unreachable,
130 interrupted (pending cells cancelled; finished cells stay recorded for ``--resume``).
"""

from __future__ import annotations

import datetime as _dt
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from hwbench.accuracy.verdict import Verdict
from hwbench.cli import validate
from hwbench.cli.command import Command
from hwbench.cli.model_options import model_inputs, model_settings, model_tolerances
from hwbench.cli.output import VERDICT_COLOR, print_json, print_table, stderr, stdout
from hwbench.cli.record import store_options
from hwbench.core.errors import EXIT_CHECK_FAILED, EXIT_OK, UsageError

if TYPE_CHECKING:  # Dask and the audit stack load only when a sweep runs
    from hwbench.cli.sweep_io import SweepPlan
    from hwbench.stress.sensitivity import SweepResult
    from hwbench.stress.sweep import Tally

SWEEP_DIR_VAR = "HWBENCH_SWEEP_DIR"
_ID_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def sweeps_dir(option: str | None) -> Path:
    """``--dir`` > ``$HWBENCH_SWEEP_DIR`` > ``$XDG_DATA_HOME/hwbench/sweeps``."""
    if option:
        return Path(option)
    if os.environ.get(SWEEP_DIR_VAR):
        return Path(os.environ[SWEEP_DIR_VAR])
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "hwbench" / "sweeps"


def _new_id() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:4]


def _check_id(sweep_id: str) -> str:
    if not sweep_id or not set(sweep_id) <= _ID_CHARS or sweep_id.startswith("."):
        raise UsageError(f"sweep id '{sweep_id}' may use only letters, digits, '-', '_' and '.'")
    return sweep_id


@click.command(cls=Command)
@click.option("--spec", "spec_path", type=validate.InFile(), help="Sweep spec file (.toml/.json).")
@click.option("--kernel", "-k", default=None, help="Kernel every cell audits (default: hwbench's default kernel).")
@click.option("--device", "-d", "devices", multiple=True, help="NAME or NAME:MODE (repeatable; default cpu:fp32).")
@click.option(
    "--protocol",
    "protocols",
    multiple=True,
    help="Protocols each cell runs (default: the kernel's sweep protocols, e.g. io-ehh's stress; else all).",
)
@click.option("--quick", is_flag=True, help="The quick protocols (stated in every report).")
@click.option("--set", "sets", multiple=True, metavar="KEY=V1,V2", help="Values to try for a profile parameter.")
@click.option("--grid", "grids", multiple=True, metavar="OPS:WIDTHS", help="e.g. exp,div:7..23 or exp+div:10,16.")
@click.option("--rounding", default=None, metavar="MODES", help="Rounding of the --grid formats (nearest-even,...).")
@click.option("--seeds", default=None, metavar="LIST", help="Seeds (network realisations), e.g. 42,1,2 or 0..9.")
@click.option("--dt", "dts", default=None, metavar="LIST", help="dt divisors: 1 (the kernel's dt), 10 (dt/10), ...")
@click.option("--scheduler", default=None, metavar="tcp://HOST:PORT", help="Use this Dask cluster (default: local).")
@click.option(
    "--workers",
    type=validate.BoundedInt(1, 4096),
    default=None,
    help="Worker processes of the local cluster (default: cores).",
)
@click.option("--id", "sweep_id", default=None, help="Name the new sweep (default: time + random suffix).")
@click.option("--resume", "resume_id", default=None, metavar="SWEEP_ID", help="Finish this sweep; skip done cells.")
@click.option(
    "--dir",
    "dir_option",
    type=validate.OutDir(),
    default=None,
    help=f"Where sweeps are kept (default ${SWEEP_DIR_VAR} or XDG).",
)
@click.option(
    "--no-cache", is_flag=True, help="The audits neither read nor write the baseline cache (every base run computed)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the sweep result as JSON only on stdout.")
@model_inputs
@model_tolerances
@store_options
def sweep(
    spec_path: str | None,
    kernel: str | None,
    devices: tuple[str, ...],
    protocols: tuple[str, ...],
    quick: bool,
    sets: tuple[str, ...],
    grids: tuple[str, ...],
    rounding: str | None,
    seeds: str | None,
    dts: str | None,
    scheduler: str | None,
    workers: int | None,
    sweep_id: str | None,
    resume_id: str | None,
    dir_option: str | None,
    no_cache: bool,
    as_json: bool,
    **model_params: object,
) -> int:
    """Run many audits on Dask and answer which precision each op class needs.

    Each cell is an ordinary audit; finished cells are recorded as they finish, so an interrupted
    sweep resumes with --resume SWEEP_ID. Writes sweep.json and sensitivity.png in the sweep's
    folder. Exit code 0 when every cell was audited, 1 when some could not be.
    """
    from hwbench.cli.sweep_io import open_sweep

    axes = {
        "kernel": kernel,
        "devices": devices,
        "protocols": protocols,
        "quick": quick,
        "sets": sets,
        "grids": grids,
        "rounding": rounding,
        "seeds": seeds,
        "dts": dts,
        "model": model_params.pop("model", None),
        "model_settings": model_settings(model_params),
    }
    if scheduler and workers is not None:
        raise UsageError("--workers applies to the local cluster only; an existing cluster has its own workers")
    if workers is not None and workers < 1:
        raise UsageError(f"--workers must be >= 1, got {workers}")
    root = sweeps_dir(dir_option)
    if resume_id:
        if sweep_id or spec_path or any(axes.values()):
            raise UsageError("--resume takes the sweep's saved spec: give no --spec, axes or --id with it")
        plan = open_sweep(root, _check_id(resume_id), resume=True)
    else:
        plan = open_sweep(root, _check_id(sweep_id or _new_id()), spec_path=spec_path, axes=axes)
    plan.baseline_cache = not no_cache
    stderr.print(f"sweep {plan.sweep_id}: {len(plan.cells)} cells -> {plan.folder}", highlight=False)
    result = _run_with_progress(plan, scheduler, workers, transient=as_json)
    if as_json:
        print_json(result)
    else:
        _render(result, plan.folder)
    return EXIT_CHECK_FAILED if any(c.status == "failed" for c in result.cells) else EXIT_OK


def _run_with_progress(plan: SweepPlan, scheduler: str | None, workers: int | None, *, transient: bool) -> SweepResult:
    """The sweep with a progress bar of cells done / running / failed on stderr, and a last line."""
    from hwbench.cli.sweep_io import execute

    last = [""]
    with Progress(
        TextColumn("cells"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=stderr,
        transient=transient,
    ) as progress:
        task = progress.add_task("cells", total=len(plan.cells), status="")

        def monitor(t: Tally) -> None:
            audited = t.done - t.skipped
            last[0] = f"sweep {plan.sweep_id}: {audited} cells audited (+{t.skipped} resumed), {t.failed} failed"
            status = f"done {audited} (+{t.skipped} resumed)  running {t.running}  failed {t.failed}"
            progress.update(task, completed=t.done + t.failed, status=status)

        result = execute(plan, scheduler=scheduler, workers=workers, monitor=monitor)
    stderr.print(last[0], highlight=False)
    return result


def _render(result: SweepResult, folder: Path) -> None:
    from hwbench.stress.sensitivity import summary_line

    if result.sensitivity:
        widths = sorted({b for r in result.sensitivity for b in r.verdicts})
        rows = []
        for r in result.sensitivity:
            marks = [r.verdicts[b].value[0] if b in r.verdicts else "." for b in widths]
            rows.append(
                (
                    f"{r.device}{':' + r.mode if r.mode else ''}",
                    r.group,
                    r.rounding + (f" dt/{r.dt}" if r.dt > 1 else ""),
                    "-" if r.min_pass_bits is None else str(r.min_pass_bits),
                    "-" if r.first_fail_bits is None else str(r.first_fail_bits),
                    " ".join(marks),
                )
            )
        print_table(
            f"precision sensitivity (widths {widths[0]}..{widths[-1]}: P/W/F)",
            ["device", "op class", "rounding", "min PASS", "first FAIL", "verdict by width"],
            rows,
        )
        for r in result.sensitivity:
            stdout.print("  " + escape(summary_line(r)), highlight=False)
            if r.first_fail_reason:
                stdout.print("    " + escape(r.first_fail_reason[:300]), highlight=False)
    else:
        cells = [(c.key, c.verdict.value if c.verdict else c.status, c.reason[:90]) for c in result.cells]
        print_table("cells", ["cell", "verdict", "reason"], cells)
    _render_seeds(result)
    failed = [c for c in result.cells if c.status == "failed"]
    for c in failed:
        stdout.print(f"  [red]not audited[/red] {escape(c.key)}: {escape(c.reason)}", highlight=False)
    done = len(result.cells) - len(failed)
    stdout.print(
        f"\n{done}/{len(result.cells)} cells audited in {result.elapsed_s:.1f} s on {result.cluster['kind']} "
        f"cluster ({result.cluster['workers']} workers); wrote {folder / 'sweep.json'}",
        highlight=False,
    )
    for verdict, col in VERDICT_COLOR.items():
        n = sum(1 for cell in result.cells if cell.verdict and cell.verdict.value == verdict)
        if n:
            stdout.print(f"  [{col}]{verdict}[/{col}] {n}", highlight=False)


def _render_seeds(result: SweepResult) -> None:
    """With several seeds: how each row's verdicts split over them (PASS/WARN/FAIL counts)."""
    splits = [s for s in result.seeds if len(s.seeds) > 1]
    if not splits:
        return
    rows = [
        (
            s.device,
            s.group,
            "-" if s.bits is None else str(s.bits),
            s.rounding + (f" dt/{s.dt}" if s.dt > 1 else ""),
            *(str(s.counts.get(v, 0)) for v in Verdict),  # PASS, WARN, FAIL
        )
        for s in splits
    ]
    print_table("verdicts over seeds", ["device", "op class", "bits", "rounding", "PASS", "WARN", "FAIL"], rows)


COMMANDS = [sweep]
