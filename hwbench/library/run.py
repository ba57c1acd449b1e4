"""``hwbench.run``: one kernel on one device, its probed traces and timings, as a library call.

``hwbench run`` is a thin layer over :func:`run` (the CLI parses options and renders the tables).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from hwbench.core.audit_protocol import STUDY_SEED
from hwbench.core.errors import UsageError
from hwbench.library.store import record_if
from hwbench.plugins import DEFAULT_KERNEL

if TYPE_CHECKING:
    from hwbench.core.distributed import Cluster
    from hwbench.core.engine import RunOutput
    from hwbench.core.kernel import Kernel, Workload
    from hwbench.core.results import RunResult, Timing
    from hwbench.core.runner import Prepared

Notify = Callable[[str], None]


@dataclass
class Run:
    """A run's outcome: ``result`` (the published run JSON's model: timing, traces, spikes).

    Attributes not found here are the result's (``run.timing``, ``run.traces``); it renders in Jupyter.
    """

    result: RunResult
    outputs: dict[str, np.ndarray] = field(default_factory=dict)  # a model's outputs, by output name

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("report", "result", "data", "outputs"):  # not set yet (copy, unpickle)
            raise AttributeError(name)
        return getattr(self.result, name)

    def _repr_html_(self) -> str:
        from hwbench.library.display import document_html

        return document_html(self.result.model_dump(mode="json", by_alias=True), "run")


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


@overload
def run(fn: Callable[..., Any], /, *args: Any, device: str, mode: str | None = None, seed: int = 0) -> Any: ...


@overload
def run(
    kernel: str = DEFAULT_KERNEL,
    device: str = "cpu",
    *,
    mode: str | None = None,
    engine: str | None = None,
    cells: int | None = None,
    connected: bool = True,
    ms: float = 100.0,
    seed: int = STUDY_SEED,
    overrides: dict[str, Any] | None = None,
    repeats: int = 1,
    workload: str | Path | Workload | None = None,
    save_workload: str | Path | None = None,
    probe_cells: int | None = None,
    out: str | Path | None = None,
    energy: bool = True,
    energy_model: bool = False,
    store: str | bool = False,
    notify: Notify | None = None,
    shard: int | None = None,
    cluster: Cluster | None = None,
    model: str | Path | None = None,
    **model_settings: Any,
) -> Run: ...


def run(*args: Any, **kwargs: Any) -> Any:
    """Run a kernel (``hwbench.run(kernel="io-ehh", device="cpu")``: a :class:`Run`), or a JAX
    function on a device's arithmetic: ``hwbench.run(fn, *args, device="groq")`` returns ``fn``'s
    outputs, in its own output tree, as the device computes them (a callable first argument)."""
    if args and callable(args[0]):
        from hwbench.library.function import run_function

        if "device" not in kwargs:
            raise UsageError("hwbench.run(fn, *args, device=...) needs the device to compute on")
        return run_function(args[0], args[1:], **kwargs)
    return run_kernel(*args, **kwargs)


def run_kernel(
    kernel: str = DEFAULT_KERNEL,
    device: str = "cpu",
    *,
    mode: str | None = None,
    engine: str | None = None,
    cells: int | None = None,
    connected: bool = True,
    ms: float = 100.0,
    seed: int = STUDY_SEED,
    overrides: dict[str, Any] | None = None,
    repeats: int = 1,
    workload: str | Path | Workload | None = None,
    save_workload: str | Path | None = None,
    probe_cells: int | None = None,
    out: str | Path | None = None,
    energy: bool = True,
    energy_model: bool = False,
    store: str | bool = False,
    notify: Notify | None = None,
    shard: int | None = None,
    cluster: Cluster | None = None,
    model: str | Path | None = None,
    **model_settings: Any,
) -> Run:
    """Run ``kernel`` on ``device`` once (``repeats`` timed runs, minimum reported) for ``ms`` ms.

    ``workload``: a saved workload (.npz path or object) instead of ``cells``/``connected``/``seed``;
    ``out`` writes the result JSON, ``save_workload`` the workload, both or neither; ``store`` records
    the result (``True``: the default store, or a URL); ``notify`` receives one-line progress notes.
    ``shard``: split the network over that many JAX devices (docs/scaling.md); ``cluster``: join a
    multi-process run first (every process calls this; process 0 writes the outputs and records).
    ``model``: a user's ONNX file instead (``inputs``, ``outputs``, ...: :func:`_run_model`, docs/models.md).
    """
    if model is not None or model_settings:
        return _run_model(locals())
    from hwbench.core.kernel import Workload
    from hwbench.core.plugins import get_registry
    from hwbench.core.runner import check_shard_engine, prepare

    say = notify or (lambda _text: None)
    if out and save_workload and Path(out).resolve() == Path(save_workload).resolve():
        raise UsageError("--out and --save-workload name the same file; give two different paths")
    shard = join_cluster(cluster, shard)
    registry = get_registry()
    k = registry.kernel(kernel)
    if engine:
        registry.engine(engine)  # unknown names fail before any work
        check_shard_engine(registry, engine, shard)
    loaded = Workload.load(str(workload)) if isinstance(workload, (str, Path)) else workload
    params = dict(overrides or {})
    size, nsamples = _preflight(k, loaded, cells, connected, params, ms, probe_cells)
    prep = prepare(registry, kernel=kernel, device=device, mode=mode, size=size, connected=connected, seed=seed,
                   workload=loaded, overrides=params, shards=shard)  # fmt: skip
    say(f"building {k.name} on {prep.device.name} ({prep.execution}, mode {prep.mode}) ...")
    timing, runs = _timed(registry, prep, engine, nsamples, repeats, energy=energy, energy_model=energy_model)
    result = run_result(prep, timing, runs.output, probe_cells)
    _write_outputs(prep, result, out, save_workload, say)
    record_if(store, result)
    return Run(result)


def _timed(
    registry: Any, prep: Any, engine: str | None, nsamples: int, repeats: int, *, energy: bool, energy_model: bool
) -> tuple[Timing, Any]:
    """Build (setup, timed apart), the timed runs, and every metric that applies to them."""
    from hwbench.core.energy import EnergyMeter
    from hwbench.core.runner import build, complete_timing, measure_runs, timing_record

    executor, setup_s = build(prep, engine=engine)
    meter = EnergyMeter() if energy else None
    inputs = prep.kernel.default_inputs(prep.workload)
    runs = measure_runs(executor, prep.workload.state0, inputs, nsamples, repeats, meter=meter)
    timing = timing_record(prep, executor, setup_s, runs.samples, nsamples)
    return complete_timing(registry, prep, timing, runs, model=energy_model), runs


def _run_model(args: dict[str, Any]) -> Run:
    """``run(model=...)``: the ``onnx`` kernel fed the file, once on ``device`` (``"h100:fp8-e4m3"``), with
    ``inputs`` (an ``.npz`` path or arrays by input name; else generated: ``shapes``, ``input_range``,
    ``seed``), ``max_memory``; ``outputs`` writes the outputs as ``.npz`` and ``Run.outputs`` holds them."""
    from hwbench.library.model import RUN_KEYWORDS, check_keywords, model_options, run_model
    from hwbench.plugins import MODEL_KERNEL

    if args["kernel"] not in (DEFAULT_KERNEL, MODEL_KERNEL) or args["workload"] is not None:
        raise UsageError("a model run takes its model file and inputs, not a kernel or a workload")
    if args["shard"] is not None or args["cluster"] is not None:
        raise UsageError("a model run is not split over devices or processes: leave out shard / cluster")
    name, _, spec_mode = str(args["device"]).partition(":")
    given = dict(args["model_settings"])
    check_keywords("run", given, RUN_KEYWORDS, args["model"])
    outputs = given.pop("outputs", None)
    options = model_options(args["model"], **given)
    result, arrays = run_model(name, spec_mode or args["mode"], options, seed=args["seed"], repeats=args["repeats"],
                               outputs=outputs, out=args["out"])  # fmt: skip
    record_if(args["store"], result)
    return Run(result, arrays)


def join_cluster(cluster: Cluster | None, shard: int | None) -> int | None:
    """Join ``cluster`` (if any) before JAX starts; the shard count: ``shard``, else with a cluster
    every device of every process (a run over processes spans all of them)."""
    if cluster is None:
        return shard
    import jax

    from hwbench.core.distributed import join

    join(cluster)
    devices = jax.device_count()
    if shard is None:
        return devices
    if shard != devices:
        raise UsageError(
            f"a run over {jax.process_count()} processes splits over all {devices} devices: --shard {devices}"
        )
    return shard


def _preflight(
    k: Kernel,
    loaded: Workload | None,
    cells: int | None,
    connected: bool,
    params: dict[str, Any],
    ms: float,
    probe_cells: int | None,
) -> tuple[int, int]:
    """Size and probe samples, with every check that can fail made before anything is built."""
    from hwbench.core.runner import check_disconnectable, check_memory, check_trace_memory

    if not connected and loaded is None:
        check_disconnectable(k)
    size = loaded.size if loaded is not None else cells or k.info.default_size
    if loaded is not None:  # another kernel's file, or a time step out of range (dt = 0), before it divides
        k.check_workload(loaded)
    k.check_parameters(params)
    nsamples = samples_for(k, ms, loaded.params if loaded is not None else params)
    check_memory(k, size, connected)  # the network first, then its traces: both before building
    check_trace_memory(size, nsamples, min(size, probe_cells or size))
    return size, nsamples


def _write_outputs(
    prep: Prepared, result: RunResult, out: str | Path | None, save_workload: str | Path | None, say: Notify
) -> None:
    """The result and the workload files, only once the run has succeeded, and both or neither
    (of a multi-process run, by process 0 alone)."""
    from hwbench.core.distributed import is_leader
    from hwbench.core.files import OutputFiles
    from hwbench.core.results import write_json

    if not is_leader():
        return
    with OutputFiles() as files:
        if save_workload:
            prep.workload.save(str(save_workload), files)
        if out:
            write_json(result, Path(out), files)
    if out:
        say(f"wrote {out}")


def run_result(prep: Prepared, timing: Timing, out: RunOutput, probe_cells: int | None) -> RunResult:
    """The result file's content: timing, the first ``probe_cells`` cells' traces, spikes, annotations."""
    from hwbench.core.results import RunResult

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
