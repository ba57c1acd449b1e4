"""``hwbench run``: one kernel on one device, probed traces and timings to a JSON file."""

from __future__ import annotations

from pathlib import Path

import click

from hwbench.cli import validate
from hwbench.cli.command import Command
from hwbench.cli.common import (
    device_option,
    energy_options,
    engine_option,
    json_option,
    kernel_option,
    mode_option,
    parse_set,
)
from hwbench.cli.model_options import model_inputs, model_settings
from hwbench.cli.output import print_json, print_table, stderr, stdout
from hwbench.cli.record import record_result, store_options
from hwbench.cli.sharding import shard_options
from hwbench.cli.system_view import EVENT_COLUMNS, event_cells, execution_cell, footnotes
from hwbench.core.bench import STUDY_SEED
from hwbench.core.distributed import Cluster
from hwbench.core.plugins import get_registry
from hwbench.core.results import Timing


@click.command(cls=Command)
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
@shard_options
@energy_options
@json_option
@model_inputs
@click.option("--outputs", type=validate.OutFile(), help="A model's outputs as .npz, keyed by output name (--model).")
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
    shard: int | None,
    cluster: Cluster | None,
    no_energy: bool,
    energy_model: bool,
    as_json: bool,
    model: str | None,
    outputs: str | None,
    **model_params: object,
) -> None:
    """Run a kernel on a device once and report traces and timings (--model: a user's ONNX model)."""
    from hwbench.core.distributed import is_leader
    from hwbench.library.run import run as run_library

    _check_options()
    if model:
        return _run_model(device, mode, model, seed, repeats, out, outputs, as_json, model_params)
    outcome = run_library(
        kernel, device, mode=mode, engine=engine, cells=cells, connected=not unconnected, ms=ms, seed=seed,
        overrides=parse_set(sets), repeats=repeats, workload=workload_file, save_workload=save_workload,
        probe_cells=probe_cells, out=out, energy=not no_energy, energy_model=energy_model,
        notify=lambda text: stderr.print(text, highlight=False), shard=shard, cluster=cluster,
    )  # fmt: skip
    result = outcome.result
    if not is_leader():
        stderr.print("done; process 0 of the run writes, records and reports the result", highlight=False)
        return
    record_result(result)
    if as_json:
        print_json(result, exclude={"traces", "spikes"})
        return
    k = get_registry().kernel(kernel)
    print_run(f"{k.name} on {result.timing.device} [{result.timing.execution}]", result.timing)


def _check_options() -> None:
    """Options that exclude each other, refused before any work."""
    ctx = click.get_current_context()
    validate.refuse_together(
        ctx, "workload_file", ["cells", "unconnected", "seed", "sets"], "the workload file fixes size, network and seed"
    )
    kernel_only = ["kernel", "engine", "cells", "unconnected", "ms", "sets", "workload_file", "save_workload"]
    validate.refuse_together(ctx, "model", [*kernel_only, "probe_cells"], "the model file and its inputs fix the run")


def _run_model(
    device: str, mode: str | None, model: str, seed: int, repeats: int, out: str | None, outputs: str | None,
    as_json: bool, params: dict[str, object],
) -> None:  # fmt: skip
    """``hwbench run --model m.onnx``: one run, its outputs to ``--outputs`` (npz), the result to ``--out``."""
    from hwbench.library.run import run as run_library

    settings = model_settings(params)
    result = run_library(
        device=device, mode=mode, seed=seed, repeats=repeats, out=out, model=model, inputs=settings.get("inputs"),
        outputs=outputs, shapes=settings.get("shapes"), input_range=settings.get("input_range"),
        max_memory=settings.get("max_memory"),
    ).result  # fmt: skip
    record_result(result)
    if as_json:
        print_json(result, exclude={"traces", "spikes"})
        return
    t, w = result.timing, result.workload
    title = f"{Path(str(w.get('model'))).name} on {t.device}:{t.mode} [{t.execution}]"
    rows = [(name, "x".join(map(str, o["shape"])) or "scalar", o["dtype"]) for name, o in w["outputs"].items()]
    print_table(title, ["output", "shape", "dtype"], rows)
    stdout.print(f"  engine: {t.engine}; setup {t.setup_s:.3f} s, run {t.run_s:.4f} s", highlight=False, markup=False)
    if w.get("note"):
        stdout.print(f"  note: {w['note']}", highlight=False, markup=False)
    if outputs:
        stderr.print(f"wrote {outputs}", highlight=False)


def print_run(title: str, timing: Timing) -> None:
    """The timing row (with synaptic events and energy), then every metric that applied."""
    print_table(
        title,
        ["engine", "exec", "dtype", "cells", "gap junctions", "setup s", "run s", "us/step", "RTF", *EVENT_COLUMNS],
        [
            (
                timing.engine,
                execution_cell(timing),
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
    infos = {name: m.info for name, m in get_registry().metrics.items()}
    rows = [
        (name, key, f"{value:.6g}", infos[name].unit_of(key) if name in infos else "")
        for name, values in timing.metrics.items()
        for key, value in values.items()
    ]
    rows += [(name, "error", error, "") for name, error in timing.metric_errors.items()]
    if rows:
        print_table("Metrics (hwbench metrics describes each)", ["metric", "value", "", "unit"], rows)
    for line in footnotes([timing]):
        stdout.print(line, highlight=False, markup=False)


COMMANDS = [run]
