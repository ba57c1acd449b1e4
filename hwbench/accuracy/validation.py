"""The numerical-validation protocol: the kernel's network runs free for a while and its probe is
compared with the CPU reference sample by sample (for io-ehh, the study's: 729 connected cells for
10 s, somatic voltage every 1 ms). Sizes, duration and the input held at zero come from the
kernel's record (:class:`hwbench.core.protocol_facts.ValidationFacts`)."""

from __future__ import annotations

import numpy as np

from hwbench.core.bench import STUDY_SEED
from hwbench.core.errors import UsageError
from hwbench.core.kernel import KernelInfo
from hwbench.core.scenario import Scenario, Segment


def validation(info: KernelInfo, *, seed: int = STUDY_SEED, quick: bool = False) -> Scenario:
    """The validation scenario of the kernel ``info`` describes; ``quick`` is its declared short variant."""
    facts = info.audit.validation
    if facts is None:
        raise UsageError(f"kernel '{info.name}' has no validation protocol: {info.audit.reason('validation')}")
    size, ms, reduced = facts.size, facts.ms, None
    if quick:
        size, ms = facts.quick_size, facts.quick_ms
        reduced = f"quick: {size:,} cells for {ms / 1000:g} s instead of {facts.size:,} cells for {facts.ms / 1000:g} s"
    inputs = {facts.drive: np.zeros(size)} if facts.drive else {}
    held = f", {facts.drive} = 0" if facts.drive else ""
    return Scenario(
        name="validation",
        kernel=info.name,
        size=size,
        connected=facts.connected,
        seed=seed,
        segments=[Segment(ms, inputs, "free run")],
        reduced=reduced,
        description=f"{size:,} cells {'connected' if facts.connected else 'unconnected'}, {ms / 1000:g} s{held}, "
        f"{info.probe} every {(info.dt_ms or 1.0) * info.sample_every:g} ms",
    )
