"""The runs every candidate of a model audit is judged against (they depend on no candidate):

* the reference: the same graph in float64, the op-level evaluator on numpy, every node kept;
* the CPU's fp32 run: ONNX Runtime's CPU provider (its outputs from an unmarked session, its nodes
  from a marked one), or the evaluator's own fp32 path where ORT does not implement the graph
  (opset-6 forms it dropped): the report names which;
* the fp32 ensemble floor: the same engine on the inputs moved by one ulp. Together with the CPU
  run, its errors are the noise any correct fp32 computation of the model shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from hwbench.evaluator.judge import nudged
from hwbench.plugins.kernels.model.runs import ModelRun, OrtUnavailable, evaluator_run, ort_run
from hwbench.plugins.kernels.model.source import ModelFile


@dataclass
class Baselines:
    reference: ModelRun
    cpu: ModelRun
    floor: ModelRun
    ort_refusal: str = ""  # why ONNX Runtime could not run the graph ('' when it did)

    def floors(self) -> list[Mapping[str, np.ndarray]]:
        """The ensemble's node outputs (for per-node floors)."""
        return [self.cpu.tensors, self.floor.tensors]

    def floor_outputs(self) -> list[Mapping[str, np.ndarray]]:
        return [self.cpu.outputs, self.floor.outputs]


def reference_run(model: ModelFile, feeds: Mapping[str, np.ndarray]) -> ModelRun:
    """The float64 reference: numpy, every node's output kept."""
    from hwbench.evaluator.arith import native_arith

    run = evaluator_run(model.graph, native_arith("float64", "numpy"), feeds, intermediates=True, execution="real")
    run.engine = "hwbench evaluator (numpy float64)"
    return run


def cpu_fp32(model: ModelFile, feeds: Mapping[str, np.ndarray], marks: list[str]) -> ModelRun:
    """ONNX Runtime CPU (outputs unmarked, nodes marked); :class:`OrtUnavailable` when it cannot."""
    plain = ort_run(model.proto, feeds)
    nodes = ort_run(model.proto, feeds, mark=marks)
    plain.tensors = nodes.tensors
    return plain


def evaluator_fp32(model: ModelFile, feeds: Mapping[str, np.ndarray], backend: str) -> ModelRun:
    """The evaluator's own fp32 path (where ONNX Runtime does not implement the graph)."""
    from hwbench.evaluator.arith import native_arith

    return evaluator_run(model.graph, native_arith("float32", backend), feeds, execution="real")


def baselines(model: ModelFile, feeds: Mapping[str, np.ndarray], backend: str = "numpy") -> Baselines:
    """Reference, CPU fp32 run and floor (ONNX Runtime where it runs the graph, else the evaluator)."""
    reference = reference_run(model, feeds)
    marks = [name for name, v in reference.tensors.items() if np.asarray(v).dtype.kind == "f"]
    moved = {name: nudged(value) for name, value in feeds.items()}
    try:
        cpu = cpu_fp32(model, feeds, marks)
        floor = ort_run(model.proto, moved, mark=marks)
        return Baselines(reference, cpu, floor)
    except OrtUnavailable as exc:
        why = str(exc)
    cpu = evaluator_fp32(model, feeds, backend)
    floor = evaluator_fp32(model, moved, backend)
    cpu.note = floor.note = f"ONNX Runtime cannot run this graph ({why}); the evaluator's fp32 path ran instead"
    return Baselines(reference, cpu, floor, why)
