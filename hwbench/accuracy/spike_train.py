"""The spike-train protocol: spiking kernels judged spike train against spike train.

A kernel whose probe is spikes (the LIF family: the output layer's 0/1 spikes) cannot be judged
on a continuous deviation. Here the network runs free on its own input (the workload's seeded
Poisson raster) for ``steps`` steps, with the workload parameters the kernel's record names (the
reset the neuromorphic chips implement), on the same runs as every time-stepped protocol
(reference CPU fp32, gold CPU fp64, ensemble members, candidates). Per run, against the
reference: spike counts, timing (van Rossum distance, Kistler's coincidence factor), and the
first divergent spike located step by step (step, neuron, which run spiked). The floor is the
worst of gold and the ensemble, per metric, never below the kernel's absolute minima
(``SpikeTrainFacts``); the verdict is the worst ratio to it with the chaotic-regime limits (spike
trains flip under any rounding change). Rationale: docs/audit.md, "Spike-train protocol".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hwbench.accuracy.metrics import coincidence_factor, first_divergence, spike_metrics
from hwbench.accuracy.stepped import Job, SteppedProtocol, verdict_of
from hwbench.accuracy.verdict import CHAOTIC_RATIOS, ratio_verdict
from hwbench.core.audit_protocol import AuditContext, AuditSettings, Compared, ProtocolInfo
from hwbench.core.audit_report import ProtocolReport, Verdict
from hwbench.core.errors import UsageError
from hwbench.core.kernel import Kernel, KernelInfo
from hwbench.core.protocol_facts import SpikeTrainFacts
from hwbench.core.scenario import Scenario, Segment, Trace

NAME = "spike-train"
JUDGED = {"van_rossum_mean": "van Rossum distance", "count_diff_total": "spike count difference",
          "incoincidence": "1 - coincidence factor"}  # fmt: skip

INFO = ProtocolInfo(
    name=NAME,
    summary="spike trains of a spiking kernel against the CPU fp32 reference: counts, timing, first divergence",
    applies_to="kernels whose record declares the spike-train protocol (KernelInfo.audit.spike_train)",
    runs=[
        "reference: CPU fp32",
        "gold: CPU fp64",
        "ensemble: the sums in reverse order (where the kernel has a connection list)",
        "ensemble: the membranes + 1 fp32 ulp",
        "candidate: each device and mode",
    ],
    compares=[
        Compared(header="spikes", path="spikes.candidate_spikes"),
        Compared(header="count diff", path="spikes.count_diff_total"),
        Compared(header="vRossum", path="spikes.van_rossum_mean"),
        Compared(header="coincidence", path="spikes.coincidence_factor"),
        Compared(header="1st diverg. step", path="spikes.first_divergence.step"),
    ],
    floor="per metric the worst of gold and the ensemble, never below the kernel's minima (SpikeTrainFacts)",
    verdict="a hard-check violation is a FAIL; else the worst ratio to the floor, PASS up to 3x, WARN up to 10x, "
    "FAIL beyond (docs/audit.md)",
    forensics="the first divergent spike, located step by step: step, time, neuron, which run spiked",
    sources=[
        "van Rossum, Neural Comput. 13 (2001) (spike train distance)",
        "Kistler, Gerstner, van Hemmen, Neural Comput. 9 (1997); Jolivet et al., J. Neurosci. Methods 169 (2008) "
        "(coincidence factor)",
    ],
)


def spike_train_scenario(info: KernelInfo, *, seed: int, quick: bool) -> Scenario:
    """The free run the kernel's record declares (its own input; its protocol parameters)."""
    facts = info.audit.spike_train
    if facts is None:
        raise UsageError(f"kernel '{info.name}' has no {NAME} protocol: {info.audit.reason(NAME)}")
    size, steps, reduced = facts.size, facts.steps, None
    if quick:
        size, steps = facts.quick_size, facts.quick_steps
        reduced = f"quick: {size:,} neurons for {steps} steps instead of {facts.size:,} for {facts.steps}"
    dt = info.dt_ms or 1.0
    params = ", ".join(f"{k}={v}" for k, v in facts.params.items())
    return Scenario(
        name=NAME,
        kernel=info.name,
        size=size,
        connected=True,
        seed=seed,
        segments=[Segment(steps * dt, {}, "free run on the workload's input")],
        overrides=dict(facts.params),
        reduced=reduced,
        description=f"{size:,} neurons, {steps} steps on the workload's own input"
        + (f" ({params})" if params else "")
        + f", {info.probe} every step",
    )


class SpikeTrainProtocol(SteppedProtocol):
    """The time-stepped runs of :class:`SteppedProtocol`, compared and judged as spike trains."""

    def __init__(self) -> None:
        super().__init__(INFO, self._scenario)

    @staticmethod
    def _scenario(settings: AuditSettings, info: KernelInfo) -> Scenario:
        return spike_train_scenario(info, seed=settings.seed, quick=settings.quick)

    @staticmethod
    def facts(kernel: Kernel) -> SpikeTrainFacts:
        facts = kernel.info.audit.spike_train
        assert facts is not None  # refusal() let only such kernels through
        return facts

    def compare(
        self, kernel: Kernel, trace: Trace, ref: Trace, deviations: dict[str, np.ndarray], label: str
    ) -> dict[str, Any]:
        """Spike counts, van Rossum distance, coincidence factor and the first divergent spike."""
        facts = self.facts(kernel)
        dt = (kernel.info.dt_ms or 1.0) * kernel.info.sample_every
        cand, refr = spike_raster(trace), spike_raster(ref)
        n = min(len(cand), len(refr))
        c_steps = [np.nonzero(cand[:n, c])[0] for c in range(cand.shape[1])]
        r_steps = [np.nonzero(refr[:n, c])[0] for c in range(refr.shape[1])]
        found: dict[str, Any] = spike_metrics(c_steps, r_steps, dt, tol_ms=facts.window_ms, tau_ms=facts.tau_ms)
        gammas = [coincidence_factor(a * dt, b * dt, facts.window_ms, n * dt) for a, b in zip(c_steps, r_steps)]
        found["coincidence_factor"] = float(np.mean(gammas)) if gammas else 1.0
        found["incoincidence"] = max(0.0, 1.0 - found["coincidence_factor"])
        found["first_divergence"] = first_divergence(cand, refr, dt)
        deviations[label] = (cand[:n] != refr[:n]).sum(axis=1).astype(np.float64)  # differing neurons per step
        return {"spikes": found}

    def run(self, ctx: AuditContext) -> list[ProtocolReport]:
        reports = super().run(ctx)
        ctx.data[self.name].deviation_label = "neurons whose spike differs from the reference's"
        return reports

    def report(
        self,
        ctx: AuditContext,
        scenario: Scenario,
        kernel: Kernel,
        jobs: list[Job],
        traces: dict[str, Trace],
        compared: dict[str, dict[str, Any]],
    ) -> ProtocolReport:
        facts = self.facts(kernel)
        minimum = {"van_rossum_mean": facts.min_van_rossum, "count_diff_total": facts.min_count_diff,
                   "incoincidence": facts.min_incoincidence}  # fmt: skip
        legit = [compared[j.label]["spikes"] for j in jobs if j.role in ("gold", "ensemble")]
        floor_values = {k: max([m[k] for m in legit] + [minimum[k]]) for k in JUDGED}
        verdicts = []
        for job in [j for j in jobs if j.role in ("candidate", "dt-refine")]:
            verdict, score, reasons = judge_spikes(compared[job.label]["spikes"], traces[job.label].violation,
                                                   floor_values)  # fmt: skip
            verdicts.append(verdict_of(job, verdict, score, reasons))
        return self.protocol_report(scenario, kernel, jobs, traces, compared, "spike trains", floor_values, verdicts)


def spike_raster(trace: Trace) -> np.ndarray:
    """(samples, cells) booleans: the probe where it is spikes (0/1), else the engine's spike records."""
    if trace.spikes is not None:
        return np.asarray(trace.spikes) >= 0
    return np.asarray(trace.probes) > 0.5


def judge_spikes(
    spikes: dict[str, Any], violation: dict[str, Any] | None, floor_values: dict[str, float]
) -> tuple[Verdict, float, list[str]]:
    """Verdict, score (worst ratio to the floor) and the reasons, the first divergence named."""
    if violation is not None:
        return Verdict.FAIL, float("inf"), [f"hard check failed: {violation.get('explanation') or violation['kind']}"]
    ratios = {JUDGED[k]: spikes[k] / floor_values[k] for k in JUDGED}
    worst, score = max(ratios.items(), key=lambda kv: kv[1])
    lo, hi = CHAOTIC_RATIOS
    verdict = ratio_verdict(score, CHAOTIC_RATIOS)
    if verdict is Verdict.PASS:
        reasons = [f"within {lo:g}x the floor of legitimate fp32 variants (worst: {worst}, {score:.3g}x)"]
    else:
        reasons = [f"{worst} is {score:.3g}x the floor (PASS up to {lo:g}x, FAIL beyond {hi:g}x)"]
    reasons.append(
        f"{spikes['candidate_spikes']} spikes vs {spikes['reference_spikes']} in the reference; "
        f"coincidence factor {spikes['coincidence_factor']:.3g}"
    )
    first = spikes.get("first_divergence")
    if first is None:
        reasons.append("spike trains identical to the reference, step for step")
    else:
        who = "the candidate spiked, the reference did not" if first["candidate_spiked"] else "the reference spiked"
        reasons.append(
            f"first divergent spike at step {first['step']} ({first['time_ms']:g} ms), neuron {first['cell']}: "
            f"{who} ({first['cells_differing']} neuron(s) differ at that step)"
        )
    return verdict, score, reasons
