"""``hwbench bench``: the published performance protocol with progress, JSON and a plot."""

from __future__ import annotations

from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

from hwbench.cli import validate
from hwbench.cli.command import Command, given
from hwbench.cli.common import energy_options, json_option, kernel_option, mode_option
from hwbench.cli.output import print_json, print_table, stderr, stdout
from hwbench.cli.record import record_result, store_options
from hwbench.cli.sharding import SHARD_OPTION
from hwbench.cli.system_view import EVENT_COLUMNS, event_cells, execution_cell, footnotes
from hwbench.core.bench import DEFAULT_EDGES, PUBLISHED_EDGES, STUDY_SEED, BenchPlan
from hwbench.core.errors import UsageError
from hwbench.core.plugins import get_registry
from hwbench.core.results import BenchResult, Timing
from hwbench.library.bench import bench_plan, check_sizes, default_out, networks, resolve_devices
from hwbench.library.progress import RichProgress

# Options of one kind of kernel only: given with the other, they would be ignored, so they are refused.
DL_ONLY = ("dl_config", "dl_precision", "scale_down", "max_gflop", "half_double_batch")
STEPPED_ONLY = (
    "mode",
    "sizes",
    "cells_list",
    "full",
    "connected_only",
    "unconnected_only",
    "ms",
    "no_energy",
    "energy_model",
    "shard",
)
BENCH_COLUMNS = [
    *("engine", "exec", "dtype", "conn", "cells", "gap j.", "setup s", "run s", "us/step", "RTF", "cell-steps/s"),
    "peak MiB",
]


@click.command(cls=Command)
@kernel_option()
@click.option(
    "--device",
    "-d",
    "devices",
    multiple=True,
    default=("cpu",),
    show_default=True,
    help="Device NAME or NAME:MODE (hwbench devices); repeat to bench several in one figure.",
)
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
@SHARD_OPTION
@json_option
@store_options
def bench(
    kernel: str,
    devices: tuple[str, ...],
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
    shard: int | None,
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
    _refuse_other_kind(ctx, kernel, dl=k.info.family == "dl")
    if k.info.family == "dl":
        seed_given = seed if given(ctx, "seed") else None  # else the DL inputs' own default
        return _bench_dl(registry, kernel, devices, engines, repeats, out, as_json, seed_given, dl_options)
    targets = resolve_devices(registry, k, devices, mode, engines)
    if connected_only and unconnected_only:
        raise UsageError("--connected-only and --unconnected-only exclude each other")
    size_list = cells_list or sizes or [n**3 for n in (PUBLISHED_EDGES if full else DEFAULT_EDGES)]
    connectivity = networks(k, (True,) if connected_only else (False,) if unconnected_only else (False, True))
    check_sizes(k, size_list, connectivity, ms, shard)
    names = "+".join(d for d, _ in targets)
    out_dir = default_out(out, names, kernel)
    plan = BenchPlan(
        kernel=kernel,
        devices=targets,
        engines=engines or (None,),
        sizes=size_list,
        connectivity=connectivity,
        simulated_ms=ms,
        repeats=repeats,
        energy=not no_energy,
        energy_model=energy_model,
        seed=seed,
        shards=shard,
    )
    bars = RichProgress((TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()),
                        console=stderr, transient=True)  # fmt: skip  # the table (or the error) says how it went
    result = bench_plan(registry, plan, out_dir, bars).result
    stderr.print(f"wrote {out_dir}/bench.json and bench.png", highlight=False)
    record_result(result)
    _report(result, kernel, names, ms, repeats, as_json)


def _bench_dl(
    registry: Any,
    kernel: str,
    devices: tuple[str, ...],
    engines: tuple[str, ...],
    repeats: int,
    out: str | None,
    as_json: bool,
    seed: int | None,
    dl_options: dict[str, Any],
) -> None:
    """A DL primitive's bench (one device), per --config and --precision."""
    from hwbench.cli.dl_bench import DLBenchOptions, run_dl_cli

    if len(devices) != 1:
        raise UsageError(f"{kernel} is benched on one --device at a time")
    run_dl_cli(registry, DLBenchOptions(kernel, devices[0], engines, repeats, out, as_json, seed, **dl_options))


def _refuse_other_kind(ctx: click.Context, kernel: str, *, dl: bool) -> None:
    """The options of the other kind of kernel, given, are refused (they would be ignored)."""
    if dl:
        why = f"does not apply to the DL primitive {kernel}, which is timed per --config and --precision"
        validate.refuse_given(ctx, STEPPED_ONLY, why)
    else:
        why = f"applies to the DL primitives (family 'dl' in hwbench kernels); {kernel} is timed over --sizes / --cells"
        validate.refuse_given(ctx, DL_ONLY, why)


def _report(result: BenchResult, kernel: str, device: str, ms: float, repeats: int, as_json: bool) -> None:
    for skip in result.skipped:
        stderr.print(f"[yellow]skipped[/yellow] {skip['ncells']:,} cells: {skip['reason']}", highlight=False)
    if as_json:
        print_json(result)
        return
    emulated = " [emulated]" if any(t.execution == "emulated" for t in result.timings) else ""
    print_bench(f"{kernel} on {device}{emulated}: {ms:g} ms simulated, min of {repeats}", result)


def print_bench(title: str, result: BenchResult) -> None:
    """One row per configuration (RTF, peak memory, synaptic events/s, energy per event), then the footnotes.

    The device is a column when several were benched."""
    several = len({t.device for t in result.timings}) > 1
    print_table(
        title,
        [*(["device"] if several else []), *BENCH_COLUMNS, *EVENT_COLUMNS],
        [
            (
                *([t.device] if several else []),
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
                _peak_mib(t),
                *event_cells(t),
            )
            for t in result.timings
        ],
    )
    for line in footnotes(result.timings):
        stdout.print(line, highlight=False, markup=False)


def _peak_mib(t: Timing) -> str:
    """The measured peak host memory of a configuration, in MiB ('-' where not measured)."""
    m = t.memory
    return "-" if m is None or m.peak_bytes is None else f"{m.peak_bytes / 2**20:,.0f}"


COMMANDS = [bench]
