"""The published performance protocol (Landsmeer et al. 2024, specs/io-ehh.md).

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
from hwbench.core.plugins import Registry
from hwbench.core.results import BenchResult, Timing
from hwbench.core.runner import build, complete_timing, measure_runs, prepare, timing_record

PUBLISHED_EDGES = (*range(4, 21), *range(30, 101, 10))
DEFAULT_EDGES = (4, 6, 8, 9, 10, 12, 16, 20)
# The seed the study (Landsmeer et al. 2024) gave numpy's global generator: defined with the
# audit contract (hwbench.core.audit_protocol), which the plugin host imports before this module.
STUDY_SEED = _STUDY_SEED


@dataclass
class BenchPlan:
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
    shards: int | None = None  # JAX devices each network is split over (None: one)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def configs(self) -> list[tuple[str | None, bool, int]]:
        return [(e, c, s) for e in self.engines for c in self.connectivity for s in self.sizes]


def run_bench(
    registry: Registry, plan: BenchPlan, progress: Callable[[str, Timing | None], None] | None = None
) -> BenchResult:
    """Run every configuration; one that is refused (capacity, memory) is recorded, not fatal.

    A usage error (an unknown name, a size the kernel cannot build) ends the whole run.
    """
    timings: list[Timing] = []
    kernel = registry.kernel(plan.kernel)
    sample_ms = (kernel.info.dt_ms or 1.0) * kernel.info.sample_every
    nsamples = max(1, round(plan.simulated_ms / sample_ms))
    meter = EnergyMeter() if plan.energy else None
    for engine, connected, size in plan.configs():
        label = f"{engine or 'auto'} {'connected' if connected else 'unconnected'} {size:,} cells"
        try:
            prep = prepare(
                registry,
                kernel=plan.kernel,
                device=plan.device,
                mode=plan.mode,
                size=size,
                connected=connected,
                seed=plan.seed,
                shards=plan.shards,
            )
            executor, setup_s = build(prep, engine=engine)
            inputs = kernel.default_inputs(prep.workload)
            runs = measure_runs(executor, prep.workload.state0, inputs, nsamples, plan.repeats, meter=meter)
            timing = timing_record(prep, executor, setup_s, runs.samples, nsamples)
            timing = complete_timing(registry, prep, timing, runs, model=plan.energy_model)
        except UnavailableError as exc:
            plan.skipped.append({"engine": engine, "connected": connected, "ncells": size, "reason": str(exc)})
            if progress:
                progress(label, None)
            continue
        timings.append(timing)
        if progress:
            progress(label, timing)
    protocol = {
        "kernel": plan.kernel,
        "device": plan.device,
        "mode": plan.mode,
        "sizes": list(plan.sizes),
        "connectivity": ["connected" if c else "unconnected" for c in plan.connectivity],
        "simulated_ms": plan.simulated_ms,
        "repeats": plan.repeats,
        "steps_per_call": kernel.info.sample_every,
        "seed": plan.seed,
        "shards": plan.shards or 1,
        "energy": "metered over each timed run (RAPL / NVML where readable)" if plan.energy else "off",
        "energy_model": plan.energy_model,
        "source": "Landsmeer et al., Neurocomputing 2024 (performance protocol); specs/io-ehh.md",
    }
    return BenchResult(protocol=protocol, timings=timings, skipped=plan.skipped)
