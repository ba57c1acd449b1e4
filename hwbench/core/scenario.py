"""Scenarios: a workload plus a schedule of input segments, run on any executor.

Both accuracy protocols (numerical validation, spike stress test) are scenarios. Every candidate,
reference and ensemble member runs exactly the same scenario, in chunks, so that the full state can
be checked between chunks (the hard checks) and a violation can be replayed step by step from the
last good checkpoint (forensics).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from hwbench.core.engine import Executor, RunOutput
from hwbench.core.kernel import Kernel, Workload


@dataclass
class Segment:
    """``ms`` of biological time with the inputs held fixed (e.g. one current pulse)."""

    ms: float
    inputs: dict[str, np.ndarray]
    label: str = ""


@dataclass
class Scenario:
    """What to simulate: the workload recipe and the input schedule; ``reduced`` says what a
    ``--quick`` variant shortened, so reports can state it."""

    name: str
    kernel: str
    size: int
    connected: bool
    seed: int
    segments: list[Segment]
    overrides: dict[str, Any] = field(default_factory=dict)
    reduced: str | None = None
    description: str = ""

    @property
    def total_ms(self) -> float:
        return float(sum(s.ms for s in self.segments))

    def make_workload(self, kernel: Kernel) -> Workload:
        return kernel.make_workload(self.size, connected=self.connected, seed=self.seed, **self.overrides)


@dataclass
class Checkpoint:
    """State at the start of a chunk, to replay from when the chunk turns out bad."""

    sample: int  # index of the first sample of the chunk
    segment: int
    state: Any


@dataclass
class Trace:
    """Everything one run of a scenario produced (host numpy arrays)."""

    label: str
    probes: np.ndarray  # (nsamples, ncells)
    spikes: np.ndarray | None  # (nsamples, ncells) first-crossing offsets or -1
    counters: dict[str, int]
    final_state: Any
    violation: dict[str, Any] | None = None
    checkpoints: list[Checkpoint] = field(default_factory=list)
    run_s: float = 0.0
    setup_s: float = 0.0
    execution: Literal["real", "emulated"] = "real"
    detail: str = ""
    refine: int = 1  # dt was divided by this (dt-refinement runs); spikes are on that finer grid
    from_cache: bool = False  # read from the audit's baseline cache, not run (timings: the run that made it)


StateCheck = Callable[[Any], dict[str, Any] | None]


def run_scenario(
    executor: Executor,
    kernel: Kernel,
    workload: Workload,
    scenario: Scenario,
    *,
    label: str,
    check: StateCheck | None = None,
    chunk_ms: float = 250.0,
    progress: Callable[[float], None] | None = None,
    stop_on_violation: bool = False,
) -> Trace:
    """Run ``scenario`` in chunks of at most ``chunk_ms``; check the state after every chunk.

    ``check(state)`` returns None or a description of the first hard-check violation found in the
    state. The first violating chunk's starting checkpoint is kept for forensics; the run goes on
    (an unstable chip keeps producing numbers, and the report shows them) unless
    ``stop_on_violation``.
    """
    import time

    sample_ms = (kernel.info.dt_ms or 1.0) * kernel.info.sample_every
    record = _Recording()
    state = workload.state0
    t0 = time.perf_counter()
    for seg_index, segment, n in _chunks(scenario.segments, sample_ms, chunk_ms):
        out = executor.run(state, segment.inputs, n)
        record.add(out)
        found = check(out.state) if check is not None and record.violation is None else None
        if found is not None:
            record.violation = found
            record.checkpoints.append(Checkpoint(record.sample, seg_index, state))
        state = out.state
        record.sample += n
        if progress:
            progress(n * sample_ms)
        if record.violation is not None and stop_on_violation:
            break
    return Trace(
        label=label,
        probes=np.concatenate(record.probes) if record.probes else np.zeros((0, workload.size)),
        spikes=np.concatenate(record.spikes) if record.spikes else None,
        counters=record.counters,
        final_state=state,
        violation=record.violation,
        checkpoints=record.checkpoints,
        run_s=time.perf_counter() - t0,
        setup_s=executor.setup_s,
        detail=executor.detail,
    )


def _chunks(segments: list[Segment], sample_ms: float, chunk_ms: float) -> Iterator[tuple[int, Segment, int]]:
    """(segment index, segment, samples) of every chunk: each segment cut into at most ``chunk_ms``."""
    per_chunk = max(1, round(chunk_ms / sample_ms))
    for index, segment in enumerate(segments):
        remaining = round(segment.ms / sample_ms)
        while remaining > 0:
            n = min(per_chunk, remaining)
            yield index, segment, n
            remaining -= n


@dataclass
class _Recording:
    """What a scenario's chunks have produced so far."""

    probes: list[np.ndarray] = field(default_factory=list)
    spikes: list[np.ndarray] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    violation: dict[str, Any] | None = None
    checkpoints: list[Checkpoint] = field(default_factory=list)
    sample: int = 0  # index of the next sample

    def add(self, out: RunOutput) -> None:
        self.probes.append(np.asarray(out.probes))
        if out.spikes is not None:
            self.spikes.append(np.asarray(out.spikes))
        for key, value in out.counters.items():
            self.counters[key] = self.counters.get(key, 0) + int(value)
