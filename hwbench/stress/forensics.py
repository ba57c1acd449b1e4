"""First-divergence forensics: replay a failed run step by step to name what broke it.

When a candidate's run breaks a hard check (a non-finite value, a variable out of its physical
range), the audit knows only the sample window. :func:`replay` rebuilds the same device and
profile with one step per sample, replays that window from the last good checkpoint, and reports
the first violating step, the cell and variable, the op classes that produced non-finite values or
overflowed (by recomputing that one step on the numpy engine with counters), the cell's state
before the step, and a plain-language explanation where the kernel has a known singularity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hwbench.accuracy.checks import explain, state_checker
from hwbench.accuracy.stepped import Job
from hwbench.core.device import RunRequest
from hwbench.core.engine import Executor
from hwbench.core.kernel import Kernel
from hwbench.core.scenario import Checkpoint, Scenario, Trace

CHUNK_MS = 250.0
"""How much biological time after the last good checkpoint the replay searches (one audit chunk)."""


def replay(job: Job, kernel: Kernel, trace: Trace) -> dict[str, Any] | None:
    """The violation of ``trace`` located to its step (or the original, with why it could not be)."""
    checkpoint = trace.checkpoints[0]
    profile = job.profile

    def stepper() -> Executor:
        return job.device.executor(
            RunRequest(kernel=kernel, workload=job.workload, mode=job.mode, profile=profile, sample_every=1)
        )

    def attribute(state: Any, inputs: dict[str, Any]) -> dict[str, int]:
        """The violating step once more, on the numpy engine with counters (nothing to compile),
        from the exact state the device had before it."""
        from hwbench.accuracy.numerics.emulate import emulating_ops
        from hwbench.core.engines.numpy_engine import NumpyEngine

        numerics = profile or job.device.numerics(job.mode)
        if numerics is None:
            return {}
        counting = emulating_ops(numerics, counters=True)
        one = NumpyEngine().build(kernel, job.workload, dtype=numerics.carrier, sample_every=1, ops_wrapper=counting)
        return one.run(state, inputs, 1).counters

    chunk_steps = round(CHUNK_MS / (kernel.info.dt_ms or 1.0)) + 1
    try:
        found = locate_violation(
            stepper,
            kernel,
            job.scenario,
            checkpoint,
            state_checker(kernel),
            max_steps=chunk_steps,
            attribute=attribute,
        )
        return _with_policy(found, profile or job.device.numerics(job.mode))
    except Exception as exc:  # forensics must never hide the violation itself
        found = dict(trace.violation or {})
        found["forensics_error"] = f"{exc.__class__.__name__}: {exc}"
        return found


def _with_policy(found: dict[str, Any] | None, numerics: Any) -> dict[str, Any] | None:
    """Name the special-value policy the counters were taken under, and explain in its words
    (a saturating chip's overflow is "saturated to the largest finite value", not infinity)."""
    policy = getattr(numerics, "special_values", "ieee")
    if found is None or policy == "ieee":
        return found
    found["special_values"] = policy
    found["explanation"] = explain(found)
    return found


def locate_violation(
    build_stepper: Callable[[], Executor],
    kernel: Kernel,
    scenario: Scenario,
    checkpoint: Checkpoint,
    check: Callable[[Any], dict[str, Any] | None],
    *,
    max_steps: int,
    attribute: Callable[[Any, dict[str, Any]], dict[str, int]] | None = None,
) -> dict[str, Any] | None:
    """Replay from ``checkpoint`` one step at a time to find the first violating step.

    ``build_stepper`` builds the same device/profile with one step per sample. ``attribute``
    (optional) recomputes the violating step with op-class counters when the stepper has none:
    a counting program costs several times more to compile than the whole replay. Returns the
    violation with its biological time, the op-class counters of that step, the state of the cell
    before the step, and a plain-language explanation where the kernel has a known singularity.
    """
    dt = kernel.info.dt_ms or 1.0
    stepper = build_stepper()
    steps_per_sample = kernel.info.sample_every
    seg_start = 0
    for seg in scenario.segments[: checkpoint.segment]:
        seg_start += round(seg.ms / (dt * steps_per_sample))
    segment = scenario.segments[checkpoint.segment]
    state = checkpoint.state
    step0 = checkpoint.sample * steps_per_sample
    for k in range(max_steps):
        before = state
        out = stepper.run(state, segment.inputs, 1)
        state = out.state
        found = check(state)
        if found is None:
            continue
        step = step0 + k
        found["step"] = step
        found["t_ms"] = (step + 1) * dt
        counts = out.counters if out.counters or attribute is None else attribute(before, segment.inputs)
        found["counters"] = {key: int(v) for key, v in counts.items() if v}
        prev = np.asarray(before if not isinstance(before, (tuple, list)) else before[0], dtype=np.float64)
        names = kernel.info.state_names
        if prev.ndim == 2:
            found["cell_state_before"] = {names[r]: float(prev[r, found["cell"]]) for r in range(len(names))}
        found["explanation"] = explain(found)
        return found
    return None
