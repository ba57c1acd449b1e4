"""The stress test: a warm-up, then pulses of input to random subsets of cells (for io-ehh, the
spike stress test of Landsmeer et al. 2024, docs/io-ehh.md).

What is pulsed, how hard, how often and which parameter varies from cell to cell come from the
kernel's record (:class:`hwbench.core.protocol_facts.StressFacts`). All randomness comes from one
seed, so every device sees the same network, per-cell parameters and pulses; the default seed is
the study's (42), which for io-ehh gives the study's own network (its per-cell conductances and
pulses come from hwbench's own stream of that seed: the study's draws of them are not reproduced).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hwbench.core.bench import STUDY_SEED
from hwbench.core.errors import UsageError
from hwbench.core.kernel import KernelInfo
from hwbench.core.protocol_facts import StressFacts
from hwbench.core.scenario import Scenario, Segment


def spike_stress(info: KernelInfo, *, seed: int = STUDY_SEED, quick: bool = False) -> Scenario:
    """The stress scenario of the kernel ``info`` describes; ``quick`` shortens the warm-up and the
    number of pulses to the kernel's declared short variant."""
    facts = info.audit.stress
    if facts is None:
        raise UsageError(f"kernel '{info.name}' has no stress protocol: {info.audit.reason('stress')}")
    warmup_ms, pulses, reduced = facts.warmup_ms, facts.pulses, None
    if quick:
        warmup_ms, pulses = facts.quick_warmup_ms, facts.quick_pulses
        reduced = (
            f"quick: warm-up {warmup_ms / 1000:g} s instead of {facts.warmup_ms / 1000:g} s, "
            f"{pulses} pulses instead of {facts.pulses}"
        )
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x57E55]))
    overrides = _per_cell(facts, rng)
    return Scenario(
        name="stress",
        kernel=info.name,
        size=facts.size,
        connected=facts.connected,
        seed=seed,
        segments=_pulses(facts, rng, warmup_ms, pulses),
        overrides=overrides,
        reduced=reduced,
        description=_describe(facts, warmup_ms, pulses),
    )


def _per_cell(facts: StressFacts, rng: np.random.Generator) -> dict[str, Any]:
    """One value per cell of each heterogeneous parameter: ``low + span * U(0, 1)``."""
    return {name: low + span * rng.uniform(0.0, 1.0, facts.size) for name, (low, span) in facts.heterogeneous.items()}


def _pulses(facts: StressFacts, rng: np.random.Generator, warmup_ms: float, pulses: int) -> list[Segment]:
    """The warm-up at rest, then each pulse to a random share of the cells (with replacement) and its rest."""
    zero = np.zeros(facts.size)
    segments = [Segment(warmup_ms, {facts.drive: zero}, "warm-up")]
    for k in range(pulses):
        drive = np.zeros(facts.size)
        chosen = rng.integers(0, facts.size, size=round(facts.size * facts.fraction))
        drive[chosen] = rng.normal(facts.amplitude_mean, facts.amplitude_sd, size=chosen.size)
        segments.append(Segment(facts.pulse_ms, {facts.drive: drive}, f"pulse {k + 1}"))
        segments.append(Segment(facts.rest_ms, {facts.drive: zero}, f"rest {k + 1}"))
    return segments


def _describe(facts: StressFacts, warmup_ms: float, pulses: int) -> str:
    varied = "".join(f", {name} = {low:g} + {span:g} U(0,1)" for name, (low, span) in facts.heterogeneous.items())
    share = "a random third" if abs(facts.fraction - 1 / 3) < 1e-12 else f"a random {facts.fraction:.0%}"
    return (
        f"{facts.size:,} cells {'connected' if facts.connected else 'unconnected'}{varied}, "
        f"{warmup_ms / 1000:g} s warm-up, {pulses} x ({facts.pulse_ms:g} ms pulse to {share} of cells, "
        f"{facts.drive} ~ N({facts.amplitude_mean:g}, {facts.amplitude_sd:g}); {facts.rest_ms:g} ms rest)"
    )
