"""``hwbench bench``: the published performance protocol with progress, JSON and a plot."""

from __future__ import annotations

from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

from hwbench.cli import validate
from hwbench.cli.common import device_option, energy_options, json_option, kernel_option, mode_option
from hwbench.cli.output import print_json, print_table, stderr, stdout
from hwbench.cli.record import record_result, store_options
from hwbench.cli.system_view import EVENT_COLUMNS, event_cells, execution_cell, footnotes
from hwbench.core.bench import DEFAULT_EDGES, PUBLISHED_EDGES, STUDY_SEED, BenchPlan
from hwbench.core.errors import UsageError
from hwbench.core.plugins import get_registry
from hwbench.core.results import BenchResult
from hwbench.library.bench import bench_plan, check_device, check_sizes, default_out
from hwbench.library.progress import RichProgress

BENCH_COLUMNS = ["engine", "exec", "dtype", "conn", "cells", "gap j.", "setup s", "run s", "us/step", "RTF"]
BENCH_COLUMNS.append("cell-steps/s")


@click.command()
@kernel_option()
@device_option()
@mode_option
@click.option("--engine", "engines", multiple=True, help="Engine(s) to compare (repeatable; default: fastest).")
@click.option(
    "--sizes",
    type=validate.SizeList(cube=True),
    default=None,
    help=f"Grid edges n (cells n^3), e.g. '4..20,30'. Default {','.join(map(str, DEFAULT_EDGES))}.",
)
@click.option(
    "--cells",
    "cells_list",
    type=validate.SizeList(cube=False),
    default=None,
    help="Explicit cell counts instead of --sizes, e.g. 729,8000.",
)
@click.option("--full", is_flag=True, help="The study's sizes: n = 4..20 and 30..100 step 10 (long).")
@click.option("--connected-only", is_flag=True)
@click.option("--unconnected-only", is_flag=True)
@click.option(
    "--ms", type=validate.POSITIVE_MS, default=100.0, show_default=True, help="Biological time per timed run."
)
@click.option(
    "--repeats",
    type=validate.REPEATS,
    default=5,
    show_default=True,
    help="Timed runs per configuration (min reported).",
)
@click.option(
    "--seed", type=validate.SEED, default=STUDY_SEED, show_default=True, help="Workload seed (default: the study's)."
)
@click.option("--out", type=validate.OutDir(), default=None, help="Directory for bench.json and bench.png.")
@energy_options
@click.option("--config", "dl_config", default=None, help="DL kernels: 'deepbench' (all four) or names, e.g. gemm_k4.")
@click.option("--precision", "dl_precision", default=None, help="DL kernels: fp32,tf32,bf16,fp16 (default fp32).")
@click.option("--scale-down", is_flag=True, help="DL kernels: halve the batch until the run fits memory/--max-gflop.")
@click.option(
    "--max-gflop",
    type=validate.FiniteFloat(0.0, low_open=True),
    default=None,
    help="DL kernels: work cap per run with --scale-down.",
)
@click.option("--half-double-batch", is_flag=True, help="DL kernels: bf16/fp16 at twice the batch (as the paper).")
@json_option
@store_options
def bench(
    kernel: str,
    device: str,
    mode: str | None,
    engines: tuple[str, ...],
    sizes: list[int] | None,
    cells_list: list[int] | None,
    full: bool,
    connected_only: bool,
    unconnected_only: bool,
    ms: float,
    repeats: int,
    seed: int,
    out: str | None,
    no_energy: bool,
    energy_model: bool,
    as_json: bool,
    **dl_options: Any,  # the DL-only options, as click parsed them (DLBenchOptions' fields)
) -> None:
    """Time a kernel over sizes, connected and unconnected (setup apart, min of N runs).

    DL primitives (gemm, conv2d, conv2d-bw, relu, lstm) are timed per --config and --precision instead.
    """
    ctx = click.get_current_context()
    validate.refuse_together(ctx, "cells_list", ["sizes", "full"], "give the sizes one way")
    validate.refuse_together(ctx, "sizes", ["full"], "--full is a size list of its own")
    registry = get_registry()
    k = registry.kernel(kernel)  # unknown names fail before any work
    if k.info.family == "dl":
        from hwbench.cli.dl_bench import DLBenchOptions, run_dl_cli

        return run_dl_cli(registry, DLBenchOptions(kernel, device, engines, repeats, out, as_json, **dl_options))
    check_device(registry, k, device, mode, engines)
    if connected_only and unconnected_only:
        raise UsageError("--connected-only and --unconnected-only exclude each other")
    size_list = cells_list or sizes or [n**3 for n in (PUBLISHED_EDGES if full else DEFAULT_EDGES)]
    connectivity = (True,) if connected_only else (False,) if unconnected_only else (False, True)
    check_sizes(k, size_list, connectivity, ms)
    out_dir = default_out(out, device, kernel)
    plan = BenchPlan(
        kernel=kernel,
        device=device,
        mode=mode,
        engines=engines or (None,),
        sizes=size_list,
        connectivity=connectivity,
        simulated_ms=ms,
        repeats=repeats,
        energy=not no_energy,
        energy_model=energy_model,
        seed=seed,
    )
    bars = RichProgress((TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()),
                        console=stderr, transient=True)  # fmt: skip  # the table (or the error) says how it went
    result = bench_plan(registry, plan, out_dir, bars).result
    stderr.print(f"wrote {out_dir}/bench.json and bench.png", highlight=False)
    record_result(result)
    _report(result, kernel, device, ms, repeats, as_json)


def _report(result: BenchResult, kernel: str, device: str, ms: float, repeats: int, as_json: bool) -> None:
    for skip in result.skipped:
        stderr.print(f"[yellow]skipped[/yellow] {skip['ncells']:,} cells: {skip['reason']}", highlight=False)
    if as_json:
        print_json(result)
        return
    emulated = " [emulated]" if any(t.execution == "emulated" for t in result.timings) else ""
    print_bench(f"{kernel} on {device}{emulated}: {ms:g} ms simulated, min of {repeats}", result)


def print_bench(title: str, result: BenchResult) -> None:
    """One row per configuration (RTF, synaptic events/s, energy per event), then the footnotes."""
    print_table(
        title,
        [*BENCH_COLUMNS, *EVENT_COLUMNS],
        [
            (
                t.engine,
                execution_cell(t),
                t.dtype,
                "yes" if t.connected else "no",
                f"{t.ncells:,}",
                f"{t.ngj:,}",
                f"{t.setup_s:.2f}",
                f"{t.run_s:.4f}",
                f"{t.us_per_step:.1f}",
                f"{t.rtf:.3g}",
                f"{t.cell_steps_per_s:.3g}",
                *event_cells(t),
            )
            for t in result.timings
        ],
    )
    for line in footnotes(result.timings):
        stdout.print(line, highlight=False, markup=False)


COMMANDS = [bench]
