"""One candidate of a model audit: the model on a device mode's arithmetic, node by node.

The run is the op-level evaluator on the device's :class:`~hwbench.evaluator.arith.Arith` (every
node's output kept), except on the CPU, whose fp32 run is ONNX Runtime's (a baseline), and on the
GroqChip, whose outputs are its GroqWare program's where the program's runner executes it. Every
node's error is compared with the float64 reference in ulps of the device's storage format, and
with the fp32 ensemble's floor; the first node above it is named with its mechanism where known.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.core.audit_report import CandidateNodes, CandidateVerdict, NodeReport
from hwbench.evaluator.candidate import judged_candidate, node_reports, ulp_format
from hwbench.evaluator.judge import Judgement, judge, output_error
from hwbench.plugins.kernels.model.baselines import Baselines
from hwbench.plugins.kernels.model.runs import ModelRun, OrtUnavailable, evaluator_run
from hwbench.plugins.kernels.model.settings import ModelSettings
from hwbench.plugins.kernels.model.source import ModelFile

if TYPE_CHECKING:
    from hwbench.accuracy.numerics.profile import NumericsProfile
    from hwbench.evaluator.arith import Arith
    from hwbench.evaluator.records import NodeInfo
    from hwbench.plugins.kernels.model.groq_route import GroqProgram


@dataclass
class Target:
    """A device mode to audit, its numerics profile (None: native IEEE) and what else it needs."""

    device: str
    mode: str
    profile: NumericsProfile | None
    registry: Any
    seed: int = 0
    program: GroqProgram | None = None  # the GroqChip's compiled program
    keep_wider: tuple[str, ...] = ()
    wider_mode: str | None = None

    @property
    def label(self) -> str:
        return f"{self.device}:{self.mode}"

    def arith(self, backend: str, mode: str | None = None) -> Arith:
        """The device's arithmetic in its mode (or in ``mode``, a wider one) on ``backend``."""
        from hwbench.plugins.devices.arithmetic import device_arith

        own = mode is None or mode == self.mode
        profile = self.profile if own else None
        return device_arith(self.registry, self.device, mode or self.mode, backend=backend, profile=profile,
                            seed=self.seed)  # fmt: skip

    def native_cpu(self) -> bool:
        """The CPU in its own arithmetic: its run is a baseline (ONNX Runtime fp32, or the reference)."""
        return self.device == "cpu" and (self.profile is None or self.profile.is_native())


@dataclass
class Prepared:
    """A model audit ready to run: its settings, the model, its inputs, the candidates resolved."""

    settings: ModelSettings
    model: ModelFile
    feeds: dict[str, np.ndarray]
    targets: list[Target]


def overrides_for(target: Target, backend: str, names: tuple[str, ...]) -> dict[str, Arith]:
    """The nodes kept wider, each with the wider mode's arithmetic."""
    if not names or target.wider_mode is None:
        return {}
    wide = target.arith(backend, target.wider_mode)
    return dict.fromkeys(names, wide)


def baseline_run(base: Baselines, target: Target) -> ModelRun:
    """The CPU in its own arithmetic: ONNX Runtime's fp32 run, or the float64 reference."""
    return base.reference if target.mode == "fp64" else base.cpu


def evaluated(model: ModelFile, feeds: Mapping[str, np.ndarray], target: Target, backend: str) -> ModelRun:
    """The candidate's run with every node's output kept (on the GroqChip, its program's outputs)."""
    overrides = overrides_for(target, backend, target.keep_wider)
    run = evaluator_run(model.graph, target.arith(backend), feeds, overrides=overrides)
    if target.program is not None:
        run = _groq_outputs(run, target.program, feeds)
    return run


def _groq_outputs(run: ModelRun, program: GroqProgram, feeds: Mapping[str, np.ndarray]) -> ModelRun:
    """The GroqWare program's outputs (node errors stay the evaluator's, same arithmetic)."""
    if program.runner is None:
        run.note = program.fallback_note()
        return run
    prog = program.run(feeds)
    same = all(np.array_equal(prog.outputs[k], v, equal_nan=True) for k, v in run.outputs.items() if k in prog.outputs)
    prog.tensors, prog.arithmetic = run.tensors, run.arithmetic
    prog.note = "the program's outputs " + ("equal" if same else "differ from") + " the evaluator's (same arithmetic)"
    return prog


def nodes_of(model: ModelFile, feeds: Mapping[str, np.ndarray], run: ModelRun, base: Baselines,
             target: Target) -> list[NodeReport]:  # fmt: skip
    """Every node's error against the reference and the ensemble floor; mechanisms where shown."""
    from hwbench.evaluator.mechanism import mechanism
    from hwbench.evaluator.onnx.op_class import NORMALISATIONS, OP_CLASS

    graph = model.graph
    index = {info.name: i for i, info in enumerate(graph.infos)}
    known = {**graph.constants, **feeds, **run.tensors}
    ref = base.reference.tensors

    def explain(info: NodeInfo) -> str | None:
        node = graph.nodes[index[info.name]]
        inputs = [known.get(i) for i in node.input]
        outs = [o for o in node.output if o in run.tensors and o in ref]
        normalized = inputs[0] if node.op_type in NORMALISATIONS and inputs else None
        return mechanism(node.op_type, OP_CLASS.get(node.op_type), target.profile, [run.tensors[o] for o in outs],
                         [ref[o] for o in outs], inputs[:2], normalized=normalized)  # fmt: skip

    bits, _ = ulp_format(target.profile)
    return node_reports(graph.infos, run.tensors, ref, base.floors(), explain, mantissa_bits=bits)


def real_run(model: ModelFile, feeds: Mapping[str, np.ndarray], base: Baselines, target: Target,
             emulated: ModelRun) -> dict[str, Any] | None:  # fmt: skip
    """The real GPU run beside the emulated one, or why it was not possible (None: no such route)."""
    from hwbench.plugins.kernels.model.gpu import gpu_run, plan_here

    plan = plan_here(target.device, target.mode)
    if plan is None:
        return None
    if not plan.possible:
        return {"possible": False, "reason": plan.reason}
    try:
        run = gpu_run(model.proto, feeds, plan)
    except OrtUnavailable as exc:
        return {"possible": False, "reason": str(exc), "chip": plan.chip}
    ref = base.reference.outputs
    return {
        "possible": True,
        "chip": plan.chip,
        "engine": run.engine,
        "outputs": {k: output_error(v, ref[k]) for k, v in run.outputs.items() if k in ref},
        "vs_emulated": {k: output_error(v, emulated.outputs.get(k, v)) for k, v in run.outputs.items()},
    }


def assemble(target: Target, run: ModelRun, nodes: list[NodeReport],
             judged: Judgement) -> tuple[CandidateNodes, CandidateVerdict]:  # fmt: skip
    """The candidate's report and verdict (:func:`hwbench.evaluator.candidate.judged_candidate`)."""
    return judged_candidate(target.device, target.mode, judged, nodes, engine=run.engine, execution=run.execution,
                            arithmetic=run.arithmetic, ulps=ulp_format(target.profile),
                            notes=[run.note] if run.note else [])  # fmt: skip


def judge_run(run: ModelRun, base: Baselines, settings: ModelSettings) -> Judgement:
    return judge(run.outputs, base.reference.outputs, base.floor_outputs(), settings.criteria)
