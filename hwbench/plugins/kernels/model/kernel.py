"""``onnx``: a user's ONNX model as a hwbench kernel, fed a file.

The kernel is the model's record in the registry (``hwbench kernels``) and builds its workload:
the model file (path and sha256) and its inputs (from ``--inputs``, or generated from the graph's
declared shapes), so the audit engine, the results store, the HTML report and sweeps serve a model
as they serve any kernel. The model itself is computed op by op by the op-level evaluator
(:mod:`hwbench.evaluator`) on each device's arithmetic, not stepped by the time-stepped engines: a
graph has no time step, so :meth:`OnnxKernel.step` refuses and says where a model runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwbench.core.errors import UsageError
from hwbench.core.kernel import Kernel, KernelInfo, Workload
from hwbench.core.ops import OpClass, Ops
from hwbench.core.protocol_facts import AuditFacts

if TYPE_CHECKING:  # numpy, onnx and the evaluator load when a model is read, not when the registry is
    from hwbench.plugins.kernels.model.inputs import InputOptions
    from hwbench.plugins.kernels.model.source import ModelFile

NAME = "onnx"
PROTOCOL = "onnx-model"
NOT_STEPPED = (
    "a model is one graph evaluated once, not a time-stepped network; its protocol compares every node's output "
    f"with the float64 reference ({PROTOCOL})"
)


class OnnxKernel(Kernel):
    """A user's ONNX model; ``make_workload(model=PATH, ...)`` reads it and its inputs."""

    info = KernelInfo(
        name=NAME,
        summary="a user's ONNX model, fed a file (hwbench run/audit --model m.onnx)",
        family="model",
        state_names=["outputs"],
        probe="outputs",
        op_classes=[
            OpClass.MATMUL_INPUT,
            OpClass.MATMUL_ACCUMULATE,
            OpClass.ADD,
            OpClass.MUL,
            OpClass.DIV,
            OpClass.EXP,
            OpClass.POW,
            OpClass.COMPARE,
            OpClass.STORE,
        ],
        default_size=1,
        sources=["ONNX specification (onnx.ai/onnx/operators), opsets 6 to 21"],
        audit=AuditFacts(
            refused={"validation": NOT_STEPPED, "stress": NOT_STEPPED, "spike-train": NOT_STEPPED},
            sweep_protocols=[PROTOCOL],
        ),
    )

    def make_workload(self, size: int, *, connected: bool = True, seed: int = 0, **overrides: Any) -> Workload:
        """The model named by ``model`` and its inputs (``inputs``: a ``.npz`` path or arrays;
        ``shapes``, ``input_range``: for generated inputs, seeded by ``seed``)."""
        from hwbench.plugins.kernels.model.inputs import InputOptions
        from hwbench.plugins.kernels.model.source import open_model

        path = overrides.pop("model", None)
        if path is None:
            raise UsageError(f"kernel '{NAME}' runs a model file: give it with --model FILE (or model=... in Python)")
        given = overrides.pop("inputs", None)
        opts = InputOptions(
            path=str(given) if isinstance(given, str | Path) else None,
            arrays=given if given is not None and not isinstance(given, str | Path) else None,
            shapes=dict(overrides.pop("shapes", None) or {}),
            input_range=overrides.pop("input_range", None),
            seed=seed,
        )
        if overrides:
            raise UsageError(f"kernel '{NAME}' has no parameter {', '.join(sorted(overrides))}")
        return model_workload(open_model(path), opts)

    def step(self, ops: Ops, state: Any, params: dict[str, Any], inputs: dict[str, Any], t: Any) -> Any:
        raise UsageError(f"kernel '{NAME}' is not stepped by the time-stepped engines: {NOT_STEPPED}")

    def memory_estimate(self, size: int, *, connected: bool = True) -> int:
        return 0  # a model's memory is estimated from its shapes (model/memory.py), not from a size


def model_workload(model: ModelFile, opts: InputOptions) -> Workload:
    """The workload of ``model``: its inputs (in ``params``, by graph input name) and what identifies it."""
    import numpy as np

    from hwbench.plugins.kernels.model.inputs import make_feeds

    feeds = make_feeds(model.graph, opts)
    meta = {
        "model": str(model.path),
        "model_sha256": model.sha256,
        "inputs": {n: {"shape": list(v.shape), "dtype": str(v.dtype)} for n, v in feeds.items()},
        "inputs_from": opts.describe(),
        "connected": False,
    }
    size = int(sum(np.size(v) for v in feeds.values())) or 1
    return Workload(NAME, size, meta, dict(feeds), {}, np.zeros(0, np.float32))


def kernels() -> list[Kernel]:
    return [OnnxKernel()]


def model_protocol_refusal(kernel: object) -> str | None:
    """Why the onnx-model protocol does not apply to ``kernel`` (None: it does)."""
    if isinstance(kernel, OnnxKernel):
        return None
    return "it audits a user's model (hwbench audit --model m.onnx); this kernel is none"
