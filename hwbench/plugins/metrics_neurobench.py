"""NeuroBench's algorithm-track metrics, registered through ``hwbench_metrics`` like any plugin's.

Definitions are neurobench 2.3.0's (``neurobench/metrics/static`` and ``.../workload``), computed
from what a kernel reports (:mod:`hwbench.core.activity`) instead of from PyTorch hooks; for the LIF
networks they equal neurobench's own numbers on the same weights and input
(``tests/data/neurobench_metrics.json``, made by ``scripts/make_neurobench_vectors.py``). Workload
metrics are per sample (one presentation of the input), as NeuroBench averages them.
"""

from __future__ import annotations

from typing import Any

from hwbench.core.hookspecs import hookimpl
from hwbench.core.metric import Metric, MetricInfo

SOURCE = "NeuroBench (Yik et al., Nature Communications 2025), neurobench 2.3.0 neurobench/metrics/"

# neurobench 2.3.0 neurobench/metrics/workload/neuron_operations.py: operations per membrane update
NEURON_OPS: dict[str, dict[str, int]] = {
    "Leaky": {"subtract": 4, "zero": 4},
    "Synaptic": {"subtract": 6, "zero": 8},
    "Lapicque": {"subtract": 11, "zero": 11},
    "Alpha": {"subtract": 18, "zero": 24},
}


def _info(name: str, kind: str, unit: str, summary: str, definition: str, requires: list[str]) -> MetricInfo:
    return MetricInfo(
        name=name,
        kind=kind,  # type: ignore[arg-type]  # the Literal is checked by MetricInfo's validation
        unit=unit,
        summary=summary,
        definition=definition,
        source=SOURCE,
        requires=requires,
    )


class Footprint(Metric):
    info = _info(
        "footprint",
        "static",
        "bytes",
        "memory of the network's parameters and buffers",
        "sum over parameters of elements x bytes per element at the run's dtype, plus the layers' buffers "
        "(NeuroBench: Footprint = parameters + buffers of the torch module)",
        ["structure"],
    )

    def compute(self, **data: Any) -> dict[str, float]:
        s = data.get("structure")
        if s is None:
            return {}
        return {"bytes": s.parameter_bytes + sum(b.elements * b.bytes_per_element for b in s.buffers)}


class ConnectionSparsity(Metric):
    info = _info(
        "connection-sparsity",
        "static",
        "fraction",
        "zero weights / all weights of the connection matrices",
        "zero entries / all entries over every connection (linear, conv, recurrent) weight matrix; biases "
        "not counted. NeuroBench rounds it to 4 decimals; hwbench reports it unrounded",
        ["structure"],
    )

    def compute(self, **data: Any) -> dict[str, float]:
        s = data.get("structure")
        if s is None or not s.weights:
            return {}
        return {"sparsity": s.zero_weights / s.weights}


class ParameterCount(Metric):
    info = _info(
        "parameter-count",
        "static",
        "parameters",
        "trainable weights and biases",
        "number of trainable parameter elements (NeuroBench: sum of numel() over module.parameters())",
        ["structure"],
    )

    def compute(self, **data: Any) -> dict[str, float]:
        s = data.get("structure")
        return {} if s is None else {"count": s.parameters}


class SynapticOperations(Metric):
    info = _info(
        "synaptic-operations",
        "workload",
        "operations / sample",
        "effective accumulates (spiking inputs), multiply-accumulates (other inputs) and dense operations",
        "per connection and step: (nonzero inputs) x (their nonzero weights), bias ignored; an AC when every "
        "input of that step is in {-1, 0, 1}, else a MAC; Dense takes every input and weight as nonzero; "
        "summed over steps and connections, divided by the samples",
        ["connections"],
    )

    def compute(self, **data: Any) -> dict[str, float]:
        a = data.get("activity")
        if a is None or not a.connections or not a.samples:
            return {}
        conns = a.connections
        return {
            "effective_macs": sum(c.effective_macs for c in conns) / a.samples,
            "effective_acs": sum(c.effective_acs for c in conns) / a.samples,
            "dense": sum(c.dense for c in conns) / a.samples,
        }


class ActivationSparsity(Metric):
    info = _info(
        "activation-sparsity",
        "workload",
        "fraction",
        "1 - nonzero / all outputs of the neuron layers",
        "over every neuron layer (input excluded), step and sample: (outputs - nonzero outputs) / outputs",
        ["layers"],
    )

    def compute(self, **data: Any) -> dict[str, float]:
        a = data.get("activity")
        if a is None:
            return {}
        total = sum(layer.outputs for layer in a.layers)
        if not total:
            return {}
        return {"sparsity": (total - sum(layer.spikes for layer in a.layers)) / total}


class MembraneUpdates(Metric):
    info = _info(
        "membrane-updates",
        "workload",
        "updates / sample",
        "membrane potential updates of all neurons",
        "every neuron at the first step, then each neuron whose potential differs from the step before; "
        "summed over layers, divided by the samples",
        ["layers"],
    )

    def compute(self, **data: Any) -> dict[str, float]:
        a = data.get("activity")
        if a is None or not a.layers or not a.samples:
            return {}
        return {"updates": sum(layer.membrane_updates for layer in a.layers) / a.samples}


class NeuronOperations(Metric):
    info = _info(
        "neuron-operations",
        "workload",
        "operations / sample",
        "membrane updates x the neuron model's operation count (effective) and every neuron every step (dense)",
        "per layer: membrane updates (effective) or neurons x steps (dense) times NeuroBench's operations per "
        "update of its model and reset (Leaky 4/4, Synaptic 6/8, Lapicque 11/11, Alpha 18/24 for "
        "subtract/zero); divided by the samples. Not defined (left out) for a model NeuroBench has no count "
        "for, e.g. RLeaky",
        ["layers"],
    )

    def compute(self, **data: Any) -> dict[str, float]:
        a = data.get("activity")
        if a is None or not a.layers or not a.samples:
            return {}
        costs = [NEURON_OPS.get(layer.model, {}).get(layer.reset or "") for layer in a.layers]
        if any(c is None for c in costs):
            return {}
        return {
            "effective": sum(c * layer.membrane_updates for c, layer in zip(costs, a.layers, strict=True)) / a.samples,
            "dense": sum(c * layer.outputs for c, layer in zip(costs, a.layers, strict=True)) / a.samples,
        }


METRICS = (Footprint, ConnectionSparsity, ParameterCount, SynapticOperations, ActivationSparsity, MembraneUpdates)


@hookimpl
def hwbench_metrics() -> list[Metric]:
    return [cls() for cls in (*METRICS, NeuronOperations)]
