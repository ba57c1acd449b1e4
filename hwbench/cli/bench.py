"""``hwbench bench``: the published performance protocol with progress, JSON and a plot."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from hwbench.cli import validate
from hwbench.cli.common import device_option, energy_options, json_option, kernel_option, mode_option
from hwbench.cli.output import print_json, print_table, stderr, stdout
from hwbench.cli.plots import bench_plot
from hwbench.cli.record import record_result, store_options
from hwbench.cli.run import samples_for
from hwbench.cli.system_view import EVENT_COLUMNS, event_cells, footnotes
from hwbench.core import interrupts
from hwbench.core.bench import DEFAULT_EDGES, PUBLISHED_EDGES, STUDY_SEED, BenchPlan, run_bench
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.files import OutputDir
from hwbench.core.kernel import Kernel
from hwbench.core.plugins import Registry, get_registry
from hwbench.core.results import BenchResult, Timing, write_json
from hwbench.core.runner import check_trace_memory, resolve_mode

BENCH_COLUMNS = ["engine", "dtype", "conn", "cells", "gap j.", "setup s", "run s", "us/step", "RTF", "cell-steps/s"]


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
    _check_device(registry, k, device, mode, engines)
    if connected_only and unconnected_only:
        raise UsageError("--connected-only and --unconnected-only exclude each other")
    size_list = cells_list or sizes or [n**3 for n in (PUBLISHED_EDGES if full else DEFAULT_EDGES)]
    connectivity = (True,) if connected_only else (False,) if unconnected_only else (False, True)
    _check_sizes(k, size_list, connectivity, ms)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out_dir = Path(out or f"results/bench-{device}-{kernel}-{stamp}")
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
    result = _run_and_write(registry, plan, out_dir, as_json)
    record_result(result)
    _report(result, kernel, device, ms, repeats, as_json)


BENCH_OUTPUTS = ("bench.json", "bench.png")


def _run_and_write(registry: Registry, plan: BenchPlan, out_dir: Path, as_json: bool) -> BenchResult:
    """Run the plan into ``out_dir`` (locked and checked before any run); bench.json and bench.png
    appear together, and only if something was measured."""
    with OutputDir(out_dir, BENCH_OUTPUTS, "bench") as folder:
        result = _run_plan(registry, plan, as_json)
        if not result.timings:
            reasons = "; ".join(dict.fromkeys(f"{s['ncells']:,} cells: {s['reason']}" for s in result.skipped))
            raise UnavailableError(f"every configuration was skipped, nothing measured ({reasons})")
        write_json(result, folder.path / "bench.json", folder.files)
        bench_plot(result, folder.path / "bench.png", folder.files)
    stderr.print(f"wrote {out_dir}/bench.json and bench.png", highlight=False)
    return result


def _check_device(registry: Registry, kernel: Kernel, device: str, mode: str | None, engines: tuple[str, ...]) -> None:
    """Unknown device, mode or engine names, and a device that runs no size of the kernel: refused now."""
    dev = registry.device(device)
    support = dev.supports(kernel, None, mode=resolve_mode(dev, mode))
    if not support.ok:
        raise UnavailableError(f"device '{dev.name}' cannot run {kernel.name}: {support.reason}")
    for name in engines:
        registry.engine(name)


def _check_sizes(kernel: Kernel, sizes: list[int], connectivity: tuple[bool, ...], ms: float) -> None:
    """A size the kernel cannot build, or whose traces would not fit, fails now, not after the others ran."""
    nsamples = samples_for(kernel, ms)
    for size in sizes:
        for connected in connectivity:
            kernel.check_size(size, connected=connected)
        check_trace_memory(size, nsamples, 0)


def _run_plan(registry: Registry, plan: BenchPlan, as_json: bool) -> BenchResult:
    """Run the plan with a progress bar on stderr."""
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,  # the table (or the error) that follows says how it went
    ) as progress:
        task = progress.add_task("bench", total=len(plan.configs()))

        def tick(label: str, timing: Timing | None) -> None:
            interrupts.check()
            status = "skipped" if timing is None else f"{timing.us_per_step:.1f} us/step"
            progress.update(task, advance=1, description=f"{label}: {status}")

        return run_bench(registry, plan, tick)


def _report(result: BenchResult, kernel: str, device: str, ms: float, repeats: int, as_json: bool) -> None:
    for skip in result.skipped:
        stderr.print(f"[yellow]skipped[/yellow] {skip['ncells']:,} cells: {skip['reason']}", highlight=False)
    if as_json:
        print_json(result.model_dump(mode="json", by_alias=True))
        return
    print_bench(f"{kernel} on {device}: {ms:g} ms simulated, min of {repeats}", result)


def print_bench(title: str, result: BenchResult) -> None:
    """One row per configuration (RTF, synaptic events/s, energy per event), then the footnotes."""
    print_table(
        title,
        [*BENCH_COLUMNS, *EVENT_COLUMNS],
        [
            (
                t.engine,
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
