"""The published performance protocol (Landsmeer et al. 2024, docs/io-ehh.md).

Unconnected and connected networks over a list of sizes; 100 ms of biological time per run; the
minimum wall time of 5 runs with transfers included; setup time (allocation + compilation)
reported apart; 40 steps (1 ms) fused per engine call with the somatic voltage sampled every 1 ms.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hwbench.core.audit_protocol import STUDY_SEED as _STUDY_SEED
from hwbench.core.energy import EnergyMeter
from hwbench.core.errors import UnavailableError
from hwbench.core.peak_memory import PeakMemory
from hwbench.core.plugins import Registry
from hwbench.core.results import BenchResult, Timing
from hwbench.core.runner import build, complete_timing, host_memory_estimate, measure_runs, prepare, timing_record

PUBLISHED_EDGES = (*range(4, 21), *range(30, 101, 10))
DEFAULT_EDGES = (4, 6, 8, 9, 10, 12, 16, 20)
# The seed the study (Landsmeer et al. 2024) gave numpy's global generator: defined with the
# audit contract (hwbench.core.audit_protocol), which the plugin host imports before this module.
STUDY_SEED = _STUDY_SEED


@dataclass
class BenchPlan:
    """What a bench runs: every (device, engine, connectivity, size), each timed ``repeats`` times.

    ``device`` and ``mode`` name one device; ``devices`` (pairs of name and mode), when given, name
    several and replace them.
    """

    kernel: str
    device: str = "cpu"
    mode: str | None = None
    engines: Sequence[str | None] = (None,)
    sizes: Sequence[int] = tuple(n**3 for n in DEFAULT_EDGES)
    connectivity: Sequence[bool] = (False, True)
    simulated_ms: float = 100.0
    repeats: int = 5
    seed: int = STUDY_SEED
    energy: bool = True
    energy_model: bool = False
    devices: Sequence[tuple[str, str | None]] = ()
    shards: int | None = None  # JAX devices each network is split over (None: one)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def targets(self) -> list[tuple[str, str | None]]:
        """The (device, mode) pairs benched, in order."""
        return list(self.devices) or [(self.device, self.mode)]

    def configs(self) -> list[tuple[str, str | None, str | None, bool, int]]:
        """(device, mode, engine, connected, size) of every configuration, in run order."""
        return [
            (device, mode, engine, connected, size)
            for device, mode in self.targets()
            for engine in self.engines
            for connected in self.connectivity
            for size in self.sizes
        ]


def run_bench(
    registry: Registry, plan: BenchPlan, progress: Callable[[str, Timing | None], None] | None = None
) -> BenchResult:
    """Run every configuration; one that is refused (capacity, memory) is recorded, not fatal.

    A usage error (an unknown name, a size the kernel cannot build) ends the whole run. Each
    configuration's host memory (workload, build and timed runs) is measured
    (:mod:`hwbench.core.peak_memory`); JAX, which every build starts, is started before the first,
    so that its start is not counted as the first size's memory.
    """
    from hwbench.core.engines.jax_cache import enable_compilation_cache

    timings: list[Timing] = []
    kernel = registry.kernel(plan.kernel)
    sample_ms = (kernel.info.dt_ms or 1.0) * kernel.info.sample_every
    nsamples = max(1, round(plan.simulated_ms / sample_ms))
    meter = EnergyMeter() if plan.energy else None
    enable_compilation_cache()
    for device, mode, engine, connected, size in plan.configs():
        where = f"{device}{':' + mode if mode else ''} " if len(plan.targets()) > 1 else ""
        label = f"{where}{engine or 'auto'} {'connected' if connected else 'unconnected'} {size:,} cells"
        try:
            timing = _time_config(registry, plan, (device, mode, engine, connected, size), nsamples, meter)
        except UnavailableError as exc:
            skip = {"device": device, "engine": engine, "connected": connected, "ncells": size, "reason": str(exc)}
            plan.skipped.append(skip)
            if progress:
                progress(label, None)
            continue
        timings.append(timing)
        if progress:
            progress(label, timing)
    return BenchResult(protocol=_protocol(plan, kernel.info.sample_every), timings=timings, skipped=plan.skipped)


def _time_config(
    registry: Registry,
    plan: BenchPlan,
    config: tuple[str, str | None, str | None, bool, int],
    nsamples: int,
    meter: EnergyMeter | None,
) -> Timing:
    """One configuration: workload, build (setup), timed runs, its reports and its host memory."""
    device, mode, engine, connected, size = config
    memory = PeakMemory()
    memory.start()
    prep = prepare(
        registry,
        kernel=plan.kernel,
        device=device,
        mode=mode,
        size=size,
        connected=connected,
        seed=plan.seed,
        shards=plan.shards,
    )
    executor, setup_s = build(prep, engine=engine)
    inputs = prep.kernel.default_inputs(prep.workload)
    runs = measure_runs(executor, prep.workload.state0, inputs, nsamples, plan.repeats, meter=meter)
    used = memory.stop(host_memory_estimate(prep.kernel, size, connected))
    timing = timing_record(prep, executor, setup_s, runs.samples, nsamples)
    timing = complete_timing(registry, prep, timing, runs, model=plan.energy_model)
    return timing.model_copy(update={"memory": used})


def _protocol(plan: BenchPlan, steps_per_call: int) -> dict[str, Any]:
    targets = plan.targets()
    return {
        "kernel": plan.kernel,
        "device": ", ".join(d for d, _ in targets),
        "mode": plan.mode if len(targets) == 1 else None,
        "devices": [f"{d}:{m}" if m else d for d, m in targets],
        "sizes": list(plan.sizes),
        "connectivity": ["connected" if c else "unconnected" for c in plan.connectivity],
        "simulated_ms": plan.simulated_ms,
        "repeats": plan.repeats,
        "steps_per_call": steps_per_call,
        "seed": plan.seed,
        "shards": plan.shards or 1,
        "energy": "metered over each timed run (RAPL / NVML where readable)" if plan.energy else "off",
        "energy_model": plan.energy_model,
        "memory": "peak host memory per configuration, measured (Linux VmHWM); see each timing's memory.method",
        "source": "Landsmeer et al., Neurocomputing 2024 (performance protocol); docs/io-ehh.md",
    }
