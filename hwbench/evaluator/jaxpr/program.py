"""A user's JAX function as a program on a device's arithmetic: trace once, transform, jit.

:class:`FunctionProgram` traces the function at its example arguments (:mod:`.trace`), lists the
equations a report names (:attr:`infos`: top-level equations and those of inlined calls, each with
its source line), and :meth:`compile` builds, for one :class:`~hwbench.evaluator.arith.Arith`, the
jitted function whose every float primitive is the device's (:mod:`.walk`). The float64 reference
is the same jaxpr on native float64 arithmetic (under JAX's x64 mode), dtypes widened.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.evaluator.arith import Arith
from hwbench.evaluator.jaxpr.trace import Traced, check_arguments, source_of, trace
from hwbench.evaluator.jaxpr.walk import CALLS, Walk, check_supported, eqn_name
from hwbench.evaluator.records import Evaluation, NodeInfo


class FunctionProgram:
    """``fn`` traced at ``args``; :meth:`compile` gives it a device's arithmetic."""

    def __init__(self, fn: Callable[..., Any], args: Sequence[Any]) -> None:
        self.traced: Traced = trace(fn, args)
        self.name = self.traced.name
        closed = self.traced.closed
        self.in_avals = [(tuple(v.aval.shape), np.dtype(v.aval.dtype)) for v in closed.jaxpr.invars]
        self.outputs = [f"out{i}" for i in range(len(closed.jaxpr.outvars))]
        self.infos: list[NodeInfo] = []
        self._collect(closed.jaxpr, ())

    @property
    def equations(self) -> int:
        """How many equations a report names (inlined calls counted by their own equations)."""
        return len(self.infos)

    def _collect(self, jaxpr: Any, path: tuple[int, ...], outer: str = "") -> None:
        """The reported equations (inlined calls' own), each with its source line (an equation JAX
        kept no user frame for, inside a library call, takes the line of the call)."""
        for i, eqn in enumerate(jaxpr.eqns):
            here = (*path, i)
            name = eqn.primitive.name
            source = source_of(eqn) or outer
            if name in CALLS:
                inner = eqn.params[CALLS[name]]
                self._collect(inner.jaxpr if hasattr(inner, "consts") else inner, here, source)
                continue
            check_supported(eqn, source)
            outs = tuple(f"{eqn_name(here)}.{k}" for k in range(len(eqn.outvars)))
            self.infos.append(NodeInfo(eqn_name(here), name, outs, source))

    def flat_inputs(self, args: Sequence[Any]) -> list[np.ndarray]:
        """The flat arrays of ``args``, checked against the traced shapes and dtypes."""
        import jax

        leaves = check_arguments(args)
        _, tree = jax.tree_util.tree_flatten(tuple(args))
        if tree != self.traced.in_tree or len(leaves) != len(self.in_avals):
            raise UsageError(f"arguments do not match the traced structure of {self.name}: {self.traced.in_tree}")
        for i, (leaf, (shape, dtype)) in enumerate(zip(leaves, self.in_avals)):
            if leaf.shape != shape:
                raise UsageError(f"argument leaf {i} has shape {leaf.shape}; {self.name} was traced with {shape}")
            if np.dtype(leaf.dtype).kind != dtype.kind:
                raise UsageError(f"argument leaf {i} has dtype {leaf.dtype}; {self.name} was traced with {dtype}")
        return leaves

    def compile(
        self, arith: Arith, *, intermediates: bool = False, overrides: Mapping[str, Arith] | None = None
    ) -> Callable[[Sequence[np.ndarray]], Evaluation]:
        """A callable from the flat input arrays to an :class:`Evaluation` (outputs ``out0``...,
        and with ``intermediates`` every reported equation's float outputs), jitted on first call."""
        import jax

        from hwbench.core.engines.jax_engine import x64_mode

        if arith.backend != "jax":
            raise UsageError("a JAX function is evaluated on the jax backend")
        closed = self.traced.closed
        carrier = arith.dtype

        def program(flat: list[Any], zero: Any) -> tuple[list[Any], dict[str, Any]]:
            keep: dict[str, Any] = {} if intermediates else None  # type: ignore[assignment]
            for a in {id(arith): arith, **{id(o): o for o in (overrides or {}).values()}}.values():
                a.begin(0, zero)
            walk = Walk(arith, keep=keep, overrides=overrides)
            values = [arith.lift(x) for x in flat]
            outs = walk.run(closed.jaxpr, closed.consts, values, [True] * len(values))
            return [arith.lower(o) for o in outs], keep or {}

        with x64_mode(carrier):
            jitted = jax.jit(program)

        def run(flat: Sequence[np.ndarray]) -> Evaluation:
            inputs = [np.asarray(x).astype(carrier) if np.asarray(x).dtype.kind == "f" else np.asarray(x) for x in flat]
            with x64_mode(carrier):
                outs, kept = jax.block_until_ready(jitted(inputs, np.int32(0)))
            return Evaluation(
                {name: np.asarray(v) for name, v in zip(self.outputs, outs)},
                {k: np.asarray(v) for k, v in kept.items()},
            )

        return run

    def unflatten(self, outputs: Mapping[str, np.ndarray]) -> Any:
        """The outputs in the tree the function returns."""
        import jax

        return jax.tree_util.tree_unflatten(self.traced.out_tree, [outputs[n] for n in self.outputs])
