"""System metrics of the HPC-benchmarking guide (Protocol 1): synaptic events per second and energy.

Registered through ``hwbench_metrics`` like any plugin's. Both are timed over state propagation
only (the timed ``Executor.run``; setup excluded). What a synaptic event is depends on the kernel,
which states its convention in its activity record (io-ehh: one gap-junction exchange per direction
per step; LIF networks: one spike reaching one target through one nonzero weight).
"""

from __future__ import annotations

import math
from typing import Any

from hwbench.core.hookspecs import hookimpl
from hwbench.core.metric import Metric, MetricInfo

GUIDE = "HPC-benchmarking guide for neuronal network simulators (Protocol 1: system metrics); docs/metrics.md"
IPU_STUDY = "Sun, Eshraghian, Lu et al., arXiv:2211.10725 (2022) (throughput per watt, img/s/W)"


class SynapticEvents(Metric):
    info = MetricInfo(
        name="synaptic-events",
        kind="performance",
        unit="events / s",
        summary="synaptic events processed per second of wall time, per timed run and per step",
        definition="N_syn / T_wall over the timed state propagation; N_syn counted by the kernel's convention "
        "(io-ehh: one gap-junction exchange per direction per step, i.e. each directed junction once per step, so an "
        "undirected pair is two events per step; LIF: one spike reaching one target through one nonzero weight)",
        source=GUIDE,
        requires=["synaptic-events"],
        units={"events": "events", "events_per_step": "events / step", "events_per_s": "events / s"},
    )

    def compute(self, **data: Any) -> dict[str, float]:
        timing, activity = data.get("timing"), data.get("activity")
        if timing is None or activity is None or activity.synaptic_events is None:
            return {}
        events = activity.synaptic_events
        return {"events": events, "events_per_step": events / timing.steps, "events_per_s": events / timing.run_s}


class Energy(Metric):
    info = MetricInfo(
        name="energy",
        kind="energy",
        unit="J",
        summary="energy of the timed phase: joules, watts, per synaptic event / sample / FLOP, energy-delay product",
        definition="E over exactly the timed state propagation (RAPL / NVML counters read at its start and end); "
        "W = E / T_wall; E / N_syn; E / samples; E / FLOP (kernel's FLOP count); EDP = E x T_wall; samples / s / W. "
        "'modelled' = 1 marks an estimate E = TDP x T_wall (only with --energy-model); emulated devices get no "
        "number here, only the published figure with its source",
        source=f"{GUIDE}; {IPU_STUDY}",
        units={
            "joules": "J",
            "watts": "W",
            "edp_js": "J s",
            "modelled": "1: modelled",
            "j_per_synaptic_event": "J / event",
            "j_per_sample": "J / sample",
            "samples_per_s_per_w": "samples / s / W",
            "j_per_flop": "J / FLOP",
        },
    )

    def compute(self, **data: Any) -> dict[str, float]:
        energy, timing = data.get("energy"), data.get("timing")
        if energy is None or timing is None or energy.joules is None or energy.status not in ("measured", "modelled"):
            return {}
        joules, seconds = energy.joules, timing.run_s
        out = {
            "joules": joules,
            "watts": joules / seconds,
            "edp_js": joules * seconds,
            "modelled": float(energy.status == "modelled"),
        }
        activity, kernel, workload = data.get("activity"), data.get("kernel"), data.get("workload")
        if activity is not None and activity.synaptic_events:
            out["j_per_synaptic_event"] = joules / activity.synaptic_events
        if activity is not None and activity.samples:
            out["j_per_sample"] = joules / activity.samples
            if joules > 0:
                out["samples_per_s_per_w"] = (activity.samples / seconds) / (joules / seconds)
        flops = (
            kernel.flops_per_step(workload) * timing.steps if kernel is not None and workload is not None else math.nan
        )
        if math.isfinite(flops) and flops > 0:
            out["j_per_flop"] = joules / flops
        return out


@hookimpl
def hwbench_metrics() -> list[Metric]:
    return [SynapticEvents(), Energy()]
