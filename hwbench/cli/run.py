"""``hwbench run``: one kernel on one device, probed traces and timings to a JSON file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import numpy as np

from hwbench.cli import validate
from hwbench.cli.common import (
    device_option,
    energy_options,
    engine_option,
    json_option,
    kernel_option,
    mode_option,
    parse_set,
)
from hwbench.cli.output import print_json, print_table, stderr, stdout
from hwbench.cli.record import record_result, store_options
from hwbench.cli.system_view import EVENT_COLUMNS, event_cells, footnotes
from hwbench.core.bench import STUDY_SEED
from hwbench.core.energy import EnergyMeter
from hwbench.core.engine import RunOutput
from hwbench.core.errors import UsageError
from hwbench.core.files import OutputFiles
from hwbench.core.kernel import Kernel, Workload
from hwbench.core.plugins import get_registry
from hwbench.core.results import RunResult, Timing, write_json
from hwbench.core.runner import (
    Prepared,
    build,
    check_memory,
    check_trace_memory,
    complete_timing,
    measure_runs,
    prepare,
    timing_record,
)


def samples_for(kernel: Kernel, ms: float, params: dict[str, Any] | None = None) -> int:
    """How many probe samples ``ms`` of biological time is (at the time step ``params`` set, else the
    kernel's); it must be a whole number of them."""
    sample_ms = kernel.info.step_ms(params or {}) * kernel.info.sample_every
    nsamples = round(ms / sample_ms)
    if nsamples < 1 or abs(nsamples * sample_ms - ms) > 1e-9 * max(ms, 1.0):
        raise UsageError(f"--ms must be a positive multiple of the sample interval {sample_ms:g} ms, got {ms:g}")
    return nsamples


def spike_lists(spikes: np.ndarray | None, sample_every: int) -> list[list[int]]:
    """Per cell, the global step index of every spike (from per-block first-crossing offsets)."""
    if spikes is None:
        return []
    blocks, cells = np.nonzero(spikes >= 0)
    steps = blocks * sample_every + spikes[blocks, cells]
    out: list[list[int]] = [[] for _ in range(spikes.shape[1])]
    for c, s in zip(cells.tolist(), steps.tolist(), strict=True):
        out[c].append(int(s))
    return out


@click.command()
@kernel_option()
@device_option()
@mode_option
@engine_option
@click.option(
    "--cells", type=validate.CELLS, default=None, help="Network size in cells (io-ehh connected: a cube n^3)."
)
@click.option("--unconnected", is_flag=True, help="No gap junctions.")
@click.option(
    "--ms",
    type=validate.POSITIVE_MS,
    default=100.0,
    show_default=True,
    help="Biological time to simulate (a multiple of the sample interval).",
)
@click.option(
    "--seed", type=validate.SEED, default=STUDY_SEED, show_default=True, help="Workload seed (default: the study's)."
)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Kernel parameter override (e.g. reset=zero).")
@click.option(
    "--repeats", type=validate.REPEATS, default=1, show_default=True, help="Timed repeats (minimum reported)."
)
@click.option("--workload", "workload_file", type=validate.InFile(), help="Load a saved workload (.npz).")
@click.option("--save-workload", type=validate.OutFile(), help="Save the workload (.npz) for another machine.")
@click.option(
    "--probe-cells", type=validate.CELLS, default=None, help="Keep traces of the first N cells only (default all)."
)
@click.option("--out", type=validate.OutFile(), help="Write the result (traces + timings) as JSON.")
@energy_options
@json_option
@store_options
def run(
    kernel: str,
    device: str,
    mode: str | None,
    engine: str | None,
    cells: int | None,
    unconnected: bool,
    ms: float,
    seed: int,
    sets: tuple[str, ...],
    repeats: int,
    workload_file: str | None,
    save_workload: str | None,
    probe_cells: int | None,
    out: str | None,
    no_energy: bool,
    energy_model: bool,
    as_json: bool,
) -> None:
    """Run a kernel on a device once and report traces and timings."""
    _check_options(out, save_workload)
    registry = get_registry()
    k = registry.kernel(kernel)
    if engine:
        registry.engine(engine)  # unknown names fail before any work
    workload = Workload.load(workload_file) if workload_file else None
    size = workload.size if workload is not None else cells or k.info.default_size
    overrides = parse_set(sets)
    if workload is not None:  # another kernel's file, or a time step out of range (dt = 0), before it divides
        k.check_workload(workload)
    k.check_parameters(overrides)
    nsamples = samples_for(k, ms, workload.params if workload is not None else overrides)
    check_memory(k, size, not unconnected)  # the network first, then its traces: both before building
    check_trace_memory(size, nsamples, min(size, probe_cells or size))
    prep = prepare(
        registry,
        kernel=kernel,
        device=device,
        mode=mode,
        size=size,
        connected=not unconnected,
        seed=seed,
        workload=workload,
        overrides=overrides,
    )
    stderr.print(f"building {k.name} on {prep.device.name} ({prep.execution}, mode {prep.mode}) ...", highlight=False)
    executor, setup_s = build(prep, engine=engine)
    meter = None if no_energy else EnergyMeter()
    runs = measure_runs(executor, prep.workload.state0, k.default_inputs(prep.workload), nsamples, repeats, meter=meter)
    timing = timing_record(prep, executor, setup_s, runs.samples, nsamples)
    timing = complete_timing(registry, prep, timing, runs, model=energy_model)
    result = run_result(prep, timing, runs.output, probe_cells)
    _write_outputs(prep, result, out, save_workload)
    record_result(result)
    if as_json:
        print_json(result.model_dump(mode="json", by_alias=True, exclude={"traces", "spikes"}))
        return
    print_run(f"{k.name} on {prep.device.name} [{prep.execution}]", timing)


def _check_options(out: str | None, save_workload: str | None) -> None:
    """Options that exclude each other, refused before any work."""
    validate.refuse_together(
        click.get_current_context(),
        "workload_file",
        ["cells", "unconnected", "seed", "sets"],
        "the workload file fixes size, network and seed",
    )
    if out and save_workload and Path(out).resolve() == Path(save_workload).resolve():
        raise UsageError("--out and --save-workload name the same file; give two different paths")


def _write_outputs(prep: Prepared, result: RunResult, out: str | None, save_workload: str | None) -> None:
    """The result and the workload files, only once the run has succeeded, and both or neither."""
    with OutputFiles() as files:
        if save_workload:
            prep.workload.save(save_workload, files)
        if out:
            write_json(result, Path(out), files)
    if out:
        stderr.print(f"wrote {out}", highlight=False)


def run_result(prep: Prepared, timing: Timing, out: RunOutput, probe_cells: int | None) -> RunResult:
    """The result file's content: timing, the first ``probe_cells`` cells' traces, spikes, annotations."""
    k = prep.kernel
    probes = np.asarray(out.probes)
    ncols = probes.shape[1] if probes.ndim == 2 else 1
    keep = list(range(min(ncols, probe_cells) if probe_cells else ncols))
    profile = prep.device.numerics(prep.mode) if prep.execution == "emulated" else None
    return RunResult(
        timing=timing,
        profile=None if profile is None else profile.name,
        workload={"kernel": k.name, "size": prep.workload.size, **prep.workload.meta},
        sample_interval_ms=k.info.step_ms(prep.workload.params) * k.info.sample_every,
        probe=k.info.probe,
        probe_cells=keep,
        cell_annotations={
            name: np.asarray(values)[keep].tolist()
            for name, values in prep.workload.annotations.items()
            if np.shape(values) == (prep.workload.size,)
        },
        traces=probes.reshape(len(probes), -1)[:, keep].astype(float).tolist(),
        spikes=spike_lists(out.spikes, k.info.sample_every),
        counters=out.counters,
    )


def print_run(title: str, timing: Timing) -> None:
    """The timing row (with synaptic events and energy), then every metric that applied."""
    print_table(
        title,
        ["engine", "dtype", "cells", "gap junctions", "setup s", "run s", "us/step", "RTF", *EVENT_COLUMNS],
        [
            (
                timing.engine,
                timing.dtype,
                timing.ncells,
                timing.ngj,
                f"{timing.setup_s:.3f}",
                f"{timing.run_s:.4f}",
                f"{timing.us_per_step:.2f}",
                f"{timing.rtf:.3g}",
                *event_cells(timing),
            )
        ],
    )
    print_metrics(timing)


def print_metrics(timing: Timing) -> None:
    """Every run metric that applied, one row per value, then the energy / event footnotes."""
    rows = [(name, key, f"{value:.6g}") for name, values in timing.metrics.items() for key, value in values.items()]
    rows += [(name, "error", error) for name, error in timing.metric_errors.items()]
    if rows:
        print_table("Metrics (hwbench metrics describes each)", ["metric", "value", ""], rows)
    for line in footnotes([timing]):
        stdout.print(line, highlight=False, markup=False)


COMMANDS = [run]
