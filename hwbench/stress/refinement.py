"""dt refinement: the candidate again at dt/k, sampled on the same 1 ms grid.

The founding study re-ran the GroqChip at a smaller time step to tell a numerical instability
(which a smaller dt may cure or move) from a modelling error (which it does not). The refined runs
are judged like the candidate; their verdicts carry the factor in the mode (``default dt/10``).
"""

from __future__ import annotations

from hwbench.accuracy.stepped import Job
from hwbench.core.engines._loop import SPIKE_DTYPE
from hwbench.core.errors import UsageError
from hwbench.core.kernel import Kernel
from hwbench.core.scenario import Scenario


def max_factor(kernel: Kernel) -> int:
    """The largest dt divisor ``k`` the engines can run: a sample of ``sample_every x k`` steps must
    number its spike offsets in their 16-bit spike arrays (``core.engines._loop``)."""
    import numpy as np

    return int(np.iinfo(SPIKE_DTYPE).max) // kernel.info.sample_every


def refined(job: Job, kernel: Kernel, k: int) -> Job:
    """``job`` at dt/``k``: the same scenario and samples, ``k`` times as many steps per sample."""
    param = kernel.info.dt_param
    if param is None:
        raise UsageError(f"kernel '{kernel.name}' is discrete-time (no dt parameter): dt refinement does not apply")
    dt = kernel.info.dt_ms or 1.0
    scenario = Scenario(**{**job.scenario.__dict__, "overrides": {**job.scenario.overrides, param: dt / k}})
    return Job(
        f"{job.label} dt/{k}",
        "dt-refine",
        job.device,
        job.mode,
        scenario.make_workload(kernel),
        scenario,
        profile=job.profile,
        sample_every=kernel.info.sample_every * k,
        refine=k,
        shards=job.shards,
    )
