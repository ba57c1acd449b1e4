"""How the shim's runner executes a compiled program: the op-level evaluator with the GroqChip's arithmetic.

The program's lowered ONNX graph is evaluated by hwbench's one ONNX interpreter
(:mod:`hwbench.evaluator.onnx`): every node with a run-time operand computes with the emulating ops
of the program's numerics profile (an ``Add`` is the profile's ADD, an ``Exp`` its EXP, a
``MatMul`` its matrix unit), so every result is rounded as the fast emulation route rounds the
kernel's own Python code; arithmetic among constants is folded on the host; graph outputs (the
kernel's state) leave through the profile's ``store`` rounding. Stochastic rounding, if a profile
has it, is keyed by the program's ``g0`` input (the global step of the block's first step), one
op sequence across the whole fused block.

The compiler's one-hot products (constant 0/1 matrices) run as the gathers and ordered sums they
are equivalent to, with the matrix unit's rounding (:mod:`.onehot`): the shim's lowering of a node,
given to the evaluator as its ``hook``. Two backends:

* ``numpy`` (the runner's default): node by node, no compile step.
* ``jax``: the whole graph traced once into one XLA program (``jax.jit``), rounding fused in. Fast
  to run but slow to compile: fine for short blocks, impractical for the 40-step io-ehh block
  (~12,000 nodes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hwbench.core.errors import UsageError

BACKENDS = ("jax", "numpy")
STEP_INPUT = "g0"
"""The program input that keys stochastic rounding (the block's first global step)."""


def raw_ops(backend: str, dtype: Any) -> Any:
    """The engine ops namespace the program computes with (matrix products at full fp32)."""
    if backend == "numpy":
        from hwbench.core.engines.numpy_engine import NumpyOps

        return NumpyOps(dtype)
    from hwbench.core.engines.jax_engine import JaxOps

    class ExactJaxOps(JaxOps):
        """JAX ops whose matmul never drops to TF32/bf16 passes on a GPU or TPU host."""

        def matmul(self, a: Any, b: Any, precision: str | None = None) -> Any:
            """Always ``HIGHEST``: the hint ``precision`` is ignored, as the numpy gold ignores it."""
            return self._jnp.matmul(a, b, precision=self._jax.lax.Precision.HIGHEST)

    return ExactJaxOps(dtype)


class ProgramFunction:
    """A program's graph compiled for the evaluator: ``fn(feeds) -> {output name: array}``."""

    def __init__(self, model: Any, profile: Any = None, *, backend: str = "numpy") -> None:
        from hwbench.accuracy.numerics.emulate import emulating_ops
        from hwbench.evaluator.arith import Arith
        from hwbench.evaluator.onnx.evaluate import compile_graph
        from hwbench.evaluator.onnx.graph import OnnxGraph

        if backend not in BACKENDS:
            raise UsageError(f"unknown runner backend '{backend}'; choose from: {', '.join(BACKENDS)}")
        self.graph = OnnxGraph(model)
        self.inputs = {name: spec.dtype for name, spec in self.graph.inputs.items()}
        self.input_shapes = {name: spec.shape for name, spec in self.graph.inputs.items()}
        self.outputs = list(self.graph.outputs)
        floats = [dt for dt in self.inputs.values() if dt.kind == "f"]
        self.dtype = np.dtype(floats[0]) if floats else np.dtype(np.float32)
        if backend == "jax" and self.dtype != np.float32:
            raise UsageError(
                f"the jax backend of the GroqWare-shim runner runs float32 programs; this one is {self.dtype} "
                "(use backend='numpy')"
            )
        raw = raw_ops(backend, self.dtype)
        ops = emulating_ops(profile, counters=False)(raw) if profile is not None else raw
        label = f"groqware-shim ({profile.name})" if profile is not None else "groqware-shim (native)"
        arith = Arith(ops, backend, label=label)
        hook = onehot_hook(self.graph, profile, self.dtype)
        self._fn = compile_graph(self.graph, arith, hook=hook, step_input=STEP_INPUT, store_every_node=False)

    def __call__(self, feeds: dict[str, Any]) -> dict[str, np.ndarray]:
        return self._fn(self._check(feeds)).outputs

    def _check(self, feeds: dict[str, Any]) -> dict[str, np.ndarray]:
        missing = sorted(set(self.inputs) - set(feeds))
        extra = sorted(set(feeds) - set(self.inputs))
        if missing or extra:
            raise UsageError(
                f"program inputs: missing {', '.join(missing) or 'none'}, unknown {', '.join(extra) or 'none'}; "
                f"it takes: {', '.join(sorted(self.inputs))}"
            )
        out = {}
        for name, dt in self.inputs.items():
            arr = np.asarray(feeds[name], dtype=dt)
            want = self.input_shapes[name]
            if len(arr.shape) != len(want) or any(isinstance(d, int) and d != n for d, n in zip(want, arr.shape)):
                raise UsageError(f"program input '{name}' has shape {arr.shape}; the program takes {want}")
            out[name] = arr
        return out


def onehot_plans(graph: Any) -> dict[int, Any]:
    """Node index -> plan, for the compiler's one-hot products (see :mod:`.onehot`)."""
    from hwbench.plugins.groqware_shim.lowering import ONEHOT_DOC
    from hwbench.plugins.groqware_shim.onehot import plan_for

    consts = graph.constants
    cast_of = {n.output[0]: n.input[0] for n in graph.nodes if n.op_type == "Cast" and n.input[0] in consts}
    plans: dict[str, Any] = {}
    out: dict[int, Any] = {}
    for i, node in enumerate(graph.nodes):
        if node.op_type != "MatMul" or node.doc_string != ONEHOT_DOC:
            continue
        source = cast_of.get(node.input[1], node.input[1])
        if source not in consts:
            continue
        if source not in plans:
            plans[source] = plan_for(consts[source])
        if plans[source] is not None:
            out[i] = plans[source]
    return out


def onehot_hook(graph: Any, profile: Any, dtype: np.dtype) -> Callable[[int, Any], list[Any] | None] | None:
    """The evaluator hook that runs each planned one-hot product with the matrix unit's rounding
    (a run-time left operand, the constant one-hot matrix on the right); None when the program has
    no such product or the profile makes the shortcut unsafe (then they run as dense products)."""
    from hwbench.plugins.groqware_shim.onehot import MatrixUnit

    plans = onehot_plans(graph)
    unit = MatrixUnit(profile, dtype.name)
    if not plans or not unit.usable:
        return None

    def hook(index: int, call: Any) -> list[Any] | None:
        plan = plans.get(index)
        if plan is None or not call.dynamic[0] or call.dynamic[1]:
            return None
        ar = call.arith
        return [ar.lift(unit.apply(ar.xp, ar.lower(call.arg(0)), plan))]

    return hook
