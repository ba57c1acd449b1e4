"""What a kernel can report about a run beyond its probe: activity (spikes, membrane updates, synaptic
operations, synaptic events) and structure (parameters, footprint, zero weights).

A kernel opts in by overriding :meth:`hwbench.core.kernel.Kernel.structure` and / or
:meth:`hwbench.core.kernel.Kernel.activity`; metrics (NeuroBench's, synaptic events per second, energy
per event) are then computed from these records for *any* such kernel, never by naming one. The
records are pydantic models because they travel into result files.

The counting rules are NeuroBench 2.3.0's (``neurobench/metrics/``), written here on plain arrays so
that any kernel can use them: :func:`connection_activity` for one weight matrix (synaptic operations),
:func:`layer_activity` for one neuron population (spikes, membrane updates).
:func:`hwbench.core.engines.replay.replay` records a workload's state after every step with the numpy
reference ops, for kernels whose activity depends on
the dynamics (which neurons spiked, which potentials changed). A map that is not a matrix product
(a convolution) fills :class:`ConnectionActivity` itself, by the same rule: per step, the sum over
outputs of (nonzero inputs) x (nonzero weights) reaching them, i.e. the map applied to the
binarised input with binarised weights and no bias.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
from pydantic import BaseModel, Field

REPORTS = ("structure", "activity", "layers", "connections", "synaptic-events")
"""What a kernel can declare in :attr:`Kernel.reports` (metrics name what they require from it)."""


# defer_build=True: pydantic builds such a model's validator when it is first used, not at import;
# hwbench devices imports this module and validates none of them (docs/cli.md, "Start-up time").
class LayerActivity(BaseModel, defer_build=True):
    """One population of neurons over the recorded steps (NeuroBench's activation hooks)."""

    name: str
    model: str = Field(description="neuron model, e.g. 'Leaky', 'Synaptic', 'RLeaky' (snnTorch names), 'HH'")
    reset: str | None = Field(None, description="reset mechanism ('subtract' / 'zero') where the model has one")
    neurons: int
    steps: int
    outputs: int = Field(description="neurons x steps: every output the layer produced")
    spikes: int = Field(description="nonzero outputs over all steps")
    membrane_updates: int = Field(description="every neuron at the first step, then those whose potential changed")


class ConnectionActivity(BaseModel, defer_build=True):
    """One weight matrix over the recorded steps (NeuroBench's connection hooks), bias ignored.

    ``effective_acs`` / ``effective_macs``: per step, (nonzero inputs) x (their nonzero weights),
    counted as accumulates when every input of that step lies in {-1, 0, 1} (spikes), else as
    multiply-accumulates. ``dense``: inputs and weights all taken as nonzero.
    """

    name: str
    n_pre: int
    n_post: int
    weights: int
    zero_weights: int
    effective_acs: int
    effective_macs: int
    dense: int


class Activity(BaseModel, defer_build=True):
    """What one run did, in counts a metric can turn into rates and per-sample averages."""

    steps: int = Field(description="time steps the counts cover")
    samples: float | None = Field(
        None, description="input presentations the counts cover (NeuroBench averages per sample); None: no samples"
    )
    layers: list[LayerActivity] = Field(default_factory=list)
    connections: list[ConnectionActivity] = Field(default_factory=list)
    synaptic_events: int | None = Field(None, description="synaptic events over the steps (see convention)")
    synaptic_event_convention: str | None = Field(None, description="what one synaptic event is, for this kernel")
    recorded_by: str = Field("", description="how the counts were obtained (e.g. a float32 reference replay)")


class Buffer(BaseModel, defer_build=True):
    """A non-trainable constant or state a layer keeps (counted in the footprint)."""

    name: str
    elements: int
    bytes_per_element: int


class Structure(BaseModel, defer_build=True):
    """Static facts of a workload's network (NeuroBench's static metrics)."""

    parameters: int = Field(description="trainable weights and biases")
    parameter_bytes: int = Field(description="bytes of the parameters at the stated dtype")
    dtype: str
    buffers: list[Buffer] = Field(default_factory=list)
    weights: int = Field(description="entries of the connection matrices (what connection sparsity divides by)")
    zero_weights: int


def connection_activity(name: str, pre: np.ndarray, weights: np.ndarray) -> ConnectionActivity:
    """NeuroBench's synaptic operations of one bias-free linear map ``post = pre @ weights``.

    ``pre`` is (steps, n_pre): the map's input at every step; ``weights`` is (n_pre, n_post).
    """
    import numpy as np

    pre = np.asarray(pre)
    w = np.asarray(weights)
    if pre.ndim != 2 or w.ndim != 2 or pre.shape[1] != w.shape[0]:
        raise ValueError(f"connection {name}: input {pre.shape} does not feed weights {w.shape}")
    fan_out = np.count_nonzero(w, axis=1).astype(np.int64)
    active = pre != 0
    per_step = active.astype(np.int64) @ fan_out
    spiking = np.all((pre == 0) | (pre == 1) | (pre == -1), axis=1)
    return ConnectionActivity(
        name=name,
        n_pre=int(w.shape[0]),
        n_post=int(w.shape[1]),
        weights=int(w.size),
        zero_weights=int(w.size - np.count_nonzero(w)),
        effective_acs=int(per_step[spiking].sum()),
        effective_macs=int(per_step[~spiking].sum()),
        dense=int(pre.shape[0]) * int(w.size),
    )


def layer_activity(
    name: str, model: str, membrane: np.ndarray, outputs: np.ndarray, reset: str | None = None
) -> LayerActivity:
    """NeuroBench's activation counts of one population.

    ``membrane`` and ``outputs`` are (steps, neurons): the potential after each step's update and
    reset, and the layer's output (spikes) of that step. A membrane update is every neuron at the
    first step, then each neuron whose potential differs from the step before.
    """
    import numpy as np

    mem = np.asarray(membrane)
    out = np.asarray(outputs)
    if mem.shape != out.shape or mem.ndim != 2:
        raise ValueError(f"layer {name}: membrane {mem.shape} and outputs {out.shape} must both be (steps, neurons)")
    steps, neurons = mem.shape
    changed = int(np.count_nonzero(mem[1:] != mem[:-1])) if steps > 1 else 0
    return LayerActivity(
        name=name,
        model=model,
        reset=reset,
        neurons=int(neurons),
        steps=int(steps),
        outputs=int(out.size),
        spikes=int(np.count_nonzero(out)),
        membrane_updates=(int(neurons) if steps else 0) + changed,
    )
