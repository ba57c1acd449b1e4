"""Versioned result schemas of SNN training (pydantic, in the style of :mod:`hwbench.core.results`).

``train/1``: one ``hwbench train`` run (configuration, dataset, loss and accuracy per epoch,
training throughput, precision audit, deployments). ``train-bench/1``: the throughput sweeps.
Written atomically with :func:`hwbench.core.results.write_json`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from hwbench.core.results import Provenance


class ThroughputPoint(BaseModel):
    """One timed training configuration: throughput = batch / wall time of one minibatch
    (forward through all steps, BPTT gradient, AdamW update), after compilation."""

    net: str
    neuron: str
    precision: str
    batch: int
    hidden: int
    channels: list[int]
    n_steps: int
    encoding: str
    repeats: int
    step_s_min: float
    step_s_median: float
    images_per_s: float = Field(description="batch / minimum step time")
    images_per_s_median: float
    flops_per_step: float = Field(description="model FLOPs of one training step, one FMA = one FLOP")
    tflops: float = Field(description="flops_per_step / minimum step time / 1e12")
    matmul_flop_share: float = Field(description="share of the model FLOPs in matrix products / convolutions")
    matmul_time_share: float | None = Field(
        None, description="measured: step time of the network with its neuron dynamics removed / full step time"
    )


class TrainBenchResult(BaseModel):
    schema_: Literal["hwbench.train-bench/1"] = Field("hwbench.train-bench/1", alias="schema")
    provenance: Provenance = Field(default_factory=Provenance)
    backend: str = Field(description="JAX backend and device the steps ran on")
    dataset: str
    sweeps: dict[str, list[ThroughputPoint]]
    notes: list[str] = Field(default_factory=list)

    model_config = {"populate_by_name": True}


class EpochRecord(BaseModel):
    epoch: int
    loss: float = Field(description="mean training loss over the epoch's minibatches")
    test_accuracy: float | None = None


class DeploymentRecord(BaseModel):
    device: str
    mode: str
    execution: Literal["emulated"] = "emulated"
    accuracy: float
    float_accuracy: float = Field(description="the same lif workload on the numpy engine, float64, same rasters")
    agreement: float
    n_test: int
    counters: dict[str, int] = Field(default_factory=dict)


class TrainResult(BaseModel):
    schema_: Literal["hwbench.train/1"] = Field("hwbench.train/1", alias="schema")
    provenance: Provenance = Field(default_factory=Provenance)
    config: dict[str, Any]
    dataset: str
    backend: str
    epochs: list[EpochRecord]
    final_test_accuracy: float | None
    images_per_s: float = Field(description="batch / minimum training-step time over the run (after compilation)")
    deployments: list[DeploymentRecord] = Field(default_factory=list)
    audit: dict[str, Any] | None = Field(
        None, description="precision audit against an fp64 run (hwbench train --audit)"
    )

    model_config = {"populate_by_name": True}
