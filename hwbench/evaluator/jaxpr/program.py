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
from hwbench.evaluator.jaxpr.trace import Traced, check_arguments, is_literal, source_of, trace
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
        self.output_names = dict(zip(self.outputs, _paths(self.traced.out_tree, len(self.outputs))))
        self.infos: list[NodeInfo] = []
        self.operands: dict[str, tuple[str | None, ...]] = {}
        names: dict[Any, str | None] = {v: f"in{i}" for i, v in enumerate(closed.jaxpr.invars)}
        names |= {v: f"const{i}" for i, v in enumerate(closed.jaxpr.constvars)}
        self._collect(closed.jaxpr, (), "", names)

    @property
    def equations(self) -> int:
        """How many equations a report names (inlined calls counted by their own equations)."""
        return len(self.infos)

    def _collect(self, jaxpr: Any, path: tuple[int, ...], outer: str, names: dict[Any, str | None]) -> None:
        """The reported equations (inlined calls' own), each with its source line (an equation JAX
        kept no user frame for, inside a library call, takes the line of the call) and the tensors
        it reads (``names``: variable -> tensor name, ``in0``, ``const0``, ``e3.0``)."""
        for i, eqn in enumerate(jaxpr.eqns):
            here = (*path, i)
            name = eqn.primitive.name
            source = source_of(eqn) or outer
            reads = tuple(None if is_literal(v) else names.get(v) for v in eqn.invars)
            if name in CALLS:
                inner = eqn.params[CALLS[name]]
                body = inner.jaxpr if hasattr(inner, "consts") else inner
                inner_names: dict[Any, str | None] = dict(zip(body.invars, reads))
                self._collect(body, here, source, inner_names)
                names |= {o: None if is_literal(v) else inner_names.get(v) for o, v in zip(eqn.outvars, body.outvars)}
                continue
            check_supported(eqn, source)
            if name == "scan":  # its body's equations, reported under it (kept per iteration)
                body = eqn.params["jaxpr"].jaxpr
                nconsts = int(eqn.params["num_consts"])
                self._collect(body, here, source, dict(zip(body.invars, reads[:nconsts])))
            outs = tuple(f"{eqn_name(here)}.{k}" for k in range(len(eqn.outvars)))
            self.infos.append(NodeInfo(eqn_name(here), name, outs, source))
            self.operands[eqn_name(here)] = reads
            names |= dict(zip(eqn.outvars, outs))

    def operand_values(
        self, name: str, tensors: Mapping[str, np.ndarray], flat: Sequence[np.ndarray]
    ) -> list[np.ndarray | None]:
        """The arrays equation ``name`` read in a run (its kept ``tensors``, the flat inputs, the
        closed-over constants); None for literals and values the run did not keep."""
        consts = self.traced.closed.consts
        out: list[np.ndarray | None] = []
        for ref in self.operands.get(name, ()):
            if ref is None:
                out.append(None)
            elif ref.startswith("in"):
                out.append(np.asarray(flat[int(ref[2:])]))
            elif ref.startswith("const"):
                out.append(np.asarray(consts[int(ref[5:])]))
            else:
                found = tensors.get(ref)
                out.append(None if found is None else np.asarray(found))
        return out

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

    def transformed(
        self, arith: Arith, *, intermediates: bool = False, overrides: Mapping[str, Arith] | None = None
    ) -> Callable[[list[Any], Any], tuple[list[Any], dict[str, Any]]]:
        """The transformed function of (flat inputs, an int32 zero the compiler cannot see): the
        walk on ``arith``, to be traced by ``jax.jit``; its outputs written to the device's memory
        in its storage format, and with ``intermediates`` every reported equation's float outputs."""
        closed = self.traced.closed

        def program(flat: list[Any], zero: Any) -> tuple[list[Any], dict[str, Any]]:
            keep: dict[str, Any] | None = {} if intermediates else None
            for a in {id(arith): arith, **{id(o): o for o in (overrides or {}).values()}}.values():
                a.begin(0, zero)
            walk = Walk(arith, keep=keep, overrides=overrides)
            values = [arith.lift(x) for x in flat]
            outs = walk.run(closed.jaxpr, closed.consts, values, [True] * len(values))
            return [arith.lower(arith.store(o)) for o in outs], keep or {}

        return program

    def compile(
        self, arith: Arith, *, intermediates: bool = False, overrides: Mapping[str, Arith] | None = None
    ) -> Callable[[Sequence[np.ndarray]], Evaluation]:
        """A callable from the flat input arrays to an :class:`Evaluation` (outputs ``out0``...; see
        :meth:`transformed`), traced, lowered and compiled on its first call."""
        import jax

        from hwbench.core.engines.jax_engine import compile_lowered, x64_mode

        if arith.backend != "jax":
            raise UsageError("a JAX function is evaluated on the jax backend")
        carrier = arith.dtype
        program = self.transformed(arith, intermediates=intermediates, overrides=overrides)
        compiled: list[Any] = []

        def run(flat: Sequence[np.ndarray]) -> Evaluation:
            inputs = [np.asarray(x).astype(carrier) if np.asarray(x).dtype.kind == "f" else np.asarray(x) for x in flat]
            with x64_mode(carrier):
                if not compiled:  # traced, lowered and compiled once, with the engine's XLA options
                    compiled.append(compile_lowered(jax.jit(program).lower(inputs, np.int32(0)))[0])
                outs, kept = jax.block_until_ready(compiled[0](inputs, np.int32(0)))
            return Evaluation(
                {name: np.asarray(v) for name, v in zip(self.outputs, outs)},
                {k: np.asarray(v) for k, v in kept.items()},
            )

        return run

    def unflatten(self, outputs: Mapping[str, np.ndarray]) -> Any:
        """The outputs in the tree the function returns."""
        import jax

        return jax.tree_util.tree_unflatten(self.traced.out_tree, [outputs[n] for n in self.outputs])


def _paths(tree: Any, n: int) -> list[str]:
    """Each output leaf as the user's code indexes the result: ``out``, ``out[1]``, ``out['loss']``."""
    import jax

    leaves = jax.tree_util.tree_flatten_with_path(jax.tree_util.tree_unflatten(tree, list(range(n))))[0]
    return [f"out{jax.tree_util.keystr(path)}" for path, _ in leaves]
