"""Built-in metrics, registered through ``hwbench_metrics`` like a third-party plugin's would be.

Accuracy metrics take ``candidate=`` and ``reference=`` traces (:class:`hwbench.core.scenario.Trace`)
and ``kernel=``; performance metrics take ``timing=`` (:class:`hwbench.core.results.Timing`) and
``kernel=`` / ``workload=``. The audit runs every registered accuracy metric on every run.
"""

from __future__ import annotations

from typing import Any

from hwbench.core.hookspecs import hookimpl
from hwbench.core.metric import Metric, MetricInfo


def _traces(data: dict[str, Any]) -> tuple[Any, Any, Any]:
    return data["candidate"], data["reference"], data["kernel"]


class VoltageDeviation(Metric):
    info = MetricInfo(
        name="voltage-deviation",
        kind="accuracy",
        unit="mV",
        summary="max and box statistics of |V - V_ref|, overall and over the first / last second",
        definition="|V - V_ref| of the probed signal at every sample; max, and box statistics (median, quartiles, "
        "whiskers) over the first and the last simulated second",
        source="Landsmeer et al., Neurocomputing 2024 (accuracy protocol); docs/io-ehh.md",
    )

    def compute(self, **data: Any) -> dict[str, float]:
        from hwbench.accuracy.metrics import abs_deviation, box_stats

        cand, ref, kernel = _traces(data)
        dev = abs_deviation(cand.probes, ref.probes)
        per_s = max(1, round(1000.0 / ((kernel.info.dt_ms or 1.0) * kernel.info.sample_every)))
        out = {"max": float(dev.max()) if dev.size else 0.0}
        for name, part in (("first_s", dev[:per_s]), ("last_s", dev[-per_s:])):
            out.update({f"{name}_{k}": v for k, v in box_stats(part).items()})
        return out


class SpikeAgreement(Metric):
    info = MetricInfo(
        name="spike-agreement",
        kind="accuracy",
        unit="spikes / ms",
        summary="spikes at step resolution: count difference, matched fraction, |dt| median/p99/max, van Rossum",
        definition="spikes (kernel's spike rule) of candidate and reference matched at step resolution",
        source="docs/io-ehh.md; docs/audit.md",
    )

    def compute(self, **data: Any) -> dict[str, float]:
        from hwbench.accuracy.metrics import spike_metrics, spike_steps

        cand, ref, kernel = _traces(data)
        every = kernel.info.sample_every
        return spike_metrics(spike_steps(cand.spikes, every), spike_steps(ref.spikes, every), kernel.info.dt_ms or 1.0)


class HardChecks(Metric):
    info = MetricInfo(
        name="hard-checks",
        kind="check",
        unit="violations",
        summary="non-finite values, voltages out of bounds, gates outside [0, 1], negative calcium",
        definition="1 if any hard check of the kernel's state failed during or at the end of the run, else 0",
        source="docs/audit.md",
    )

    def compute(self, **data: Any) -> dict[str, float]:
        from hwbench.accuracy.checks import state_checker

        cand, _, kernel = _traces(data)
        found = cand.violation or state_checker(kernel)(cand.final_state)
        return {"violations": float(found is not None)}


class Throughput(Metric):
    info = MetricInfo(
        name="throughput",
        kind="performance",
        unit="various",
        summary="us/step, real-time factor, cell-steps/s and GFLOP/s (from the kernel's FLOP count)",
        definition="over the timed state propagation (min of the repeats, transfers included, setup excluded): "
        "T_wall / steps; RTF = T_wall / T_model; cells x steps / T_wall; kernel's dense FLOP count x steps / T_wall",
        source="HPC-benchmarking guide (Protocol 1); Landsmeer et al. 2024 (performance protocol)",
        units={"us_per_step": "us", "rtf": "wall / simulated", "cell_steps_per_s": "cell-steps/s", "gflops": "GFLOP/s"},
    )

    def compute(self, **data: Any) -> dict[str, float]:
        timing, kernel, workload = data.get("timing"), data["kernel"], data.get("workload")
        if timing is None or workload is None:
            return {}
        flops = kernel.flops_per_step(workload) * timing.steps / timing.run_s
        return {
            "us_per_step": timing.us_per_step,
            "rtf": timing.rtf,
            "cell_steps_per_s": timing.cell_steps_per_s,
            "gflops": flops / 1e9,
        }


@hookimpl
def hwbench_metrics() -> list[Metric]:
    return [VoltageDeviation(), SpikeAgreement(), HardChecks(), Throughput()]
