"""Running a kernel on a device: resolve names, guard memory, build, time, collect.

Shared by ``hwbench run``, ``hwbench bench`` and the audit protocols, so that every number a user
sees was measured the same way: setup (allocation + compilation) timed apart from running, run
time as wall time with host transfers included, the minimum over repeats.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from hwbench.core.activity import Activity, Structure
from hwbench.core.device import Device, RunRequest
from hwbench.core.energy import EnergyMeter, EnergyReading, modelled, published
from hwbench.core.engine import Executor, RunOutput
from hwbench.core.errors import UnavailableError, UsageError, unknown_name
from hwbench.core.host import GIB, available_memory_bytes
from hwbench.core.interrupts import deferred_interrupt
from hwbench.core.kernel import Kernel, Workload
from hwbench.core.metric import RUN_KINDS, evaluate
from hwbench.core.plugins import Registry
from hwbench.core.published import published_for
from hwbench.core.results import Timing

# What an engine holds in host memory whatever the size: JAX's compiler and runtime measured
# 0.09-0.15 GiB, numpy none. TensorFlow and ONNX Runtime hold far more (measured 2.3-3.6 and 0.7-1.4
# GiB peak at 8,000-64,000 cells, mostly their import and compiler); the estimate does not cover
# them, and bench's measured peaks show them. It is the host guard's, not the kernel's: a device
# plugin compares Kernel.memory_estimate (the workload's own bytes) with its chip's memory.
ENGINE_WORKING_BYTES = 256 * 1024**2


def host_memory_estimate(kernel: Kernel, size: int, connected: bool) -> int:
    """Host bytes a run of ``size`` cells needs, traces apart: the kernel's estimate plus the engine's."""
    return ENGINE_WORKING_BYTES + kernel.memory_estimate(size, connected=connected)


def disconnectable(kernel: Kernel) -> bool:
    """Whether ``connected=False`` (``--unconnected``) changes ``kernel``'s workload: built at the
    default size with and without connections, its arrays, parameters or initial state differ. Not
    for a GEMM or a feed-forward LIF network, which have no connections to remove."""
    from hwbench.core.disk_cache import workload_digest

    size = kernel.info.default_size
    with_, without = (workload_digest(kernel.make_workload(size, connected=flag, seed=0)) for flag in (True, False))
    return with_ != without


def check_disconnectable(kernel: Kernel) -> None:
    """Refuse ``connected=False`` for a kernel it would not change, rather than ignore it."""
    if not disconnectable(kernel):
        raise UsageError(
            f"kernel '{kernel.name}' has no connections to remove: unconnected (--unconnected) would change "
            "nothing; leave it out (kernels with connections: io-ehh's gap junctions, lif-recurrent's recurrent "
            "weights, leaky-ring's ring)"
        )


def check_memory(kernel: Kernel, size: int, connected: bool, *, fraction: float = 0.8) -> int:
    """Refuse up front, with the estimate, a size that cannot fit in host RAM (never OOM-kill)."""
    need = host_memory_estimate(kernel, size, connected)
    have = available_memory_bytes()
    if need > fraction * have:
        raise UnavailableError(
            f"{kernel.name} with {size:,} cells needs about {need / GIB:.1f} GiB; "
            f"this host has {have / GIB:.1f} GiB available (limit {fraction:.0%} of it)"
        )
    return need


def trace_bytes(size: int, nsamples: int, kept: int = 0) -> int:
    """Host bytes of a run's probe traces: an upper bound, checked against measured peaks.

    An engine returns every cell's probe in the run's dtype (float64 at most, 8 bytes per sample
    and cell) and its spike offsets (int16, 2 bytes), gathered chunk by chunk and then joined into
    one array, so both exist at once for a moment: 2 x (8 + 2) = 20 bytes per sample and cell
    (measured with JAX float32 at 216,000 cells: about 10). A run result keeps each probed value as
    a Python float in a list (24 + 8 bytes) and its JSON text (about 20 bytes): 64 bytes per kept
    value is a rounded-up estimate.
    """
    return nsamples * (20 * size + 64 * kept)


def check_trace_memory(size: int, nsamples: int, kept: int, *, fraction: float = 0.8) -> int:
    """Refuse up front a run whose probe traces cannot fit in host RAM (``--ms`` too long)."""
    need = trace_bytes(size, nsamples, kept)
    have = available_memory_bytes()
    if need > fraction * have:
        raise UnavailableError(
            f"{nsamples:,} samples of {size:,} cells need about {need / GIB:.1f} GiB of trace memory; "
            f"this host has {have / GIB:.1f} GiB available (limit {fraction:.0%} of it): shorten --ms"
        )
    return need


def resolve_mode(device: Device, mode: str | None) -> str:
    if mode is None:
        return device.default_mode
    if mode not in device.modes:
        raise unknown_name(f"mode of device '{device.name}'", mode, device.modes)
    return mode


@dataclass
class Observation:
    """What the kernel reports about the timed steps (None where it reports nothing)."""

    structure: Structure | None
    activity: Activity | None
    errors: dict[str, str] = field(default_factory=dict)


@dataclass
class Prepared:
    """A kernel, device and workload that passed every check, ready to build."""

    kernel: Kernel
    device: Device
    mode: str
    workload: Workload
    execution: Literal["real", "emulated"]
    shards: int | None = None  # JAX devices the network is split over (None: one device, unsharded)


def prepare(
    registry: Registry,
    *,
    kernel: str,
    device: str,
    mode: str | None = None,
    size: int | None = None,
    connected: bool = True,
    seed: int = 0,
    workload: Workload | None = None,
    overrides: dict[str, Any] | None = None,
    shards: int | None = None,
) -> Prepared:
    """Resolve names, check availability, capacity, memory and the split over ``shards`` devices,
    build the workload."""
    k = registry.kernel(kernel)
    d = registry.device(device)
    m = resolve_mode(d, mode)
    probe = d.probe()
    if probe.status == "unavailable":
        raise UnavailableError(f"device '{d.name}' is unavailable here: {probe.reason}")
    if workload is None:
        if size is None or size <= 0:
            raise UsageError(f"size must be a positive number of cells, got {size}")
        k.check_size(size, connected=connected)
        k.check_parameters(overrides or {})
        check_shards(k, size, shards, connected=connected, overrides=overrides)
        check_memory(k, size, connected)
        workload = k.make_workload(size, connected=connected, seed=seed, **(overrides or {}))
    else:  # a loaded file: the same checks as a built workload, before anything is allocated for it
        k.check_workload(workload)
        connected = bool(workload.meta.get("connected", True))
        check_shards(k, workload.size, shards, connected=connected, overrides=_network_shape(workload))
        check_memory(k, workload.size, connected)
    support = d.supports(k, workload, mode=m)
    if not support.ok:
        raise UnavailableError(f"device '{d.name}' cannot run {k.name} ({workload.size:,} cells): {support.reason}")
    return Prepared(k, d, m, workload, probe.status, shards)


def check_shards(
    kernel: Kernel, size: int, shards: int | None, *, connected: bool, overrides: dict[str, Any] | None = None
) -> None:
    """Refuse (UsageError, with what is allowed) a split the kernel cannot make or this host's JAX
    devices cannot hold, before any workload is built. None: an unsharded run."""
    if shards is None:
        return
    from hwbench.core.engines.jax_sharded import check_devices
    from hwbench.core.sharding import check_shard_count

    kernel.check_shards(size, check_shard_count(shards), connected=connected, overrides=overrides)
    check_devices(shards)


def _network_shape(workload: Workload) -> dict[str, Any]:
    """The network options a saved workload was built with (its meta), as overrides."""
    return {k: workload.meta[k] for k in ("rmax", "mean_degree") if k in workload.meta}


def check_shard_engine(registry: Registry, engine: str | None, shards: int | None) -> None:
    """A named engine that cannot split a run over devices, refused before any work."""
    if shards is not None and engine is not None:
        from hwbench.core.engines.jax_sharded import check_engine

        check_engine(registry.engine(engine))


def build(prep: Prepared, *, engine: str | None = None, dtype: str | None = None) -> tuple[Executor, float]:
    """Build the executor; returns it and the wall time building took (setup)."""
    from hwbench.core.engines.jax_cache import enable_compilation_cache

    with deferred_interrupt():  # importing and starting JAX/XLA is not safe to interrupt
        enable_compilation_cache()
        t0 = time.perf_counter()
        executor = prep.device.executor(
            RunRequest(prep.kernel, prep.workload, mode=prep.mode, engine=engine, dtype=dtype, shards=prep.shards)
        )
        setup_s = time.perf_counter() - t0
    if getattr(executor, "shards", None) != prep.shards:
        raise UnavailableError(
            f"device '{prep.device.name}' cannot split a run over devices (--shard): it ran unsharded"
        )
    return executor, setup_s


@dataclass
class TimedRuns:
    """The timed repeats of one configuration: last output, wall times, and energy of each repeat."""

    output: RunOutput
    samples: list[float]
    energy: list[EnergyReading] = field(default_factory=list)

    @property
    def best(self) -> int:
        """Index of the fastest repeat (the one every reported figure comes from)."""
        return min(range(len(self.samples)), key=self.samples.__getitem__)


def measure_runs(
    executor: Executor,
    state0: Any,
    inputs: dict[str, Any],
    nsamples: int,
    repeats: int,
    *,
    meter: EnergyMeter | None = None,
) -> TimedRuns:
    """Run ``repeats`` times from the same initial state; wall times include host transfers.

    With a ``meter``, its counters are read right before and right after each ``executor.run``, so
    the energy covers exactly the timed state propagation of that repeat.
    """
    samples: list[float] = []
    energy: list[EnergyReading] = []
    out: RunOutput | None = None
    for _ in range(max(1, repeats)):
        out = None  # the previous repeat's traces are not kept while the next one runs
        if meter is not None:
            meter.start()
        t0 = time.perf_counter()
        out = executor.run(state0, inputs, nsamples)
        samples.append(time.perf_counter() - t0)
        if meter is not None:
            energy.append(meter.stop())
    assert out is not None
    return TimedRuns(out, samples, energy)


def timed_runs(
    executor: Executor, state0: Any, inputs: dict[str, Any], nsamples: int, repeats: int
) -> tuple[RunOutput, list[float]]:
    """:func:`measure_runs` without energy, as (last output, wall times)."""
    runs = measure_runs(executor, state0, inputs, nsamples, repeats)
    return runs.output, runs.samples


def timing_record(prep: Prepared, executor: Executor, setup_s: float, samples: list[float], nsamples: int) -> Timing:
    kernel, workload = prep.kernel, prep.workload
    sample_every = kernel.info.sample_every
    steps = nsamples * sample_every
    simulated_ms = steps * kernel.info.step_ms(workload.params)
    best = min(samples)
    src = workload.arrays.get("src")
    connected = bool(workload.meta.get("connected", True))
    return Timing(
        kernel=kernel.name,
        device=prep.device.name,
        mode=prep.mode,
        execution=prep.execution,
        engine=executor.engine_name + (f" ({executor.detail})" if executor.detail else ""),
        dtype=str(executor.dtype),
        ncells=workload.size,
        ngj=0 if src is None else int(np.asarray(src).size),
        connected=connected,
        setup_s=setup_s,
        run_s=best,
        run_s_all=samples,
        simulated_ms=simulated_ms,
        steps=steps,
        us_per_step=best / steps * 1e6,
        rtf=best / (simulated_ms / 1000.0),
        cell_steps_per_s=workload.size * steps / best,
        published=published_for(
            prep.device.spec.published_timing, kernel.name, connected=connected, ncells=workload.size
        ),
        shards=getattr(executor, "shards", None) or 1,
    )


def observe(prep: Prepared, steps: int, dtype: str) -> Observation:
    """The kernel's structure (at the run's dtype) and activity over ``steps`` steps, where it reports them.

    A kernel (perhaps a third party's) whose report raises loses only its report: the error is kept
    in ``Observation.errors`` and ends up in the result's ``metric_errors``.
    """
    kernel, workload = prep.kernel, prep.workload
    ftype = dtype if dtype in ("float16", "float32", "float64") else "float32"
    obs = Observation(None, None)
    try:
        obs.structure = kernel.structure(workload, dtype=ftype)
    except Exception as exc:
        obs.errors["kernel.structure"] = f"{exc.__class__.__name__}: {exc}"
    try:
        obs.activity = kernel.activity(workload, steps)
    except Exception as exc:
        obs.errors["kernel.activity"] = f"{exc.__class__.__name__}: {exc}"
    return obs


def phase_energy(prep: Prepared, runs: TimedRuns, *, model: bool = False) -> EnergyReading:
    """The energy figure of the fastest repeat: measured; else, only if asked, modelled; else "not measured".

    An emulated device never gets a measured or modelled energy: the host's counters say nothing
    about the real chip, so the published figures (with sources) are quoted instead.
    """
    seconds = runs.samples[runs.best]
    spec = prep.device.spec
    if prep.execution == "emulated":
        return published(seconds, spec.published_energy, spec.name)
    reading = runs.energy[runs.best] if runs.energy else None
    if reading is not None and reading.status == "measured":
        return reading
    if model:
        estimate = modelled(seconds, spec.tdp_w, f"{spec.name} ({spec.vendor} {spec.model})")
        return estimate.model_copy(update={"domains": reading.domains if reading else []})
    if reading is not None:
        return reading
    return EnergyReading(status="not measured", seconds=seconds, method="energy metering was off")


def complete_timing(registry: Registry, prep: Prepared, timing: Timing, runs: TimedRuns, *, model: bool) -> Timing:
    """The timing with the kernel's reports, the phase's energy and every run metric that applies."""
    obs = observe(prep, timing.steps, timing.dtype)
    energy = phase_energy(prep, runs, model=model)
    found = evaluate(
        registry.metrics.values(),
        RUN_KINDS,
        prep.kernel,
        timing=timing,
        workload=prep.workload,
        activity=obs.activity,
        structure=obs.structure,
        energy=energy,
    )
    return timing.model_copy(
        update={
            "structure": obs.structure,
            "activity": obs.activity,
            "energy": energy,
            "metrics": found.values,
            "metric_errors": {**obs.errors, **found.errors},
        }
    )
