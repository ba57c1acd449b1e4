"""Evaluate a jaxpr with a device's arithmetic, inside ``jax.jit``: the transformed function.

The walk runs once, while JAX traces it; what it leaves is a new program in which every float
primitive is the device's operation (rounding fused in by XLA), so running the audited function
costs what the emulation costs, not an interpreter. Calls (``jit``, ``closed_call``, ``remat``,
``custom_jvp_call``, ``custom_vjp_call``) are inlined: their equations are reported with their own
source lines. Control flow stays control flow: ``scan``, ``while`` and ``cond`` become
``lax.scan`` / ``lax.while_loop`` / ``lax.switch`` whose bodies are walked the same way; a body's
random streams (stochastic rounding, error models) are keyed by its iteration.

An equation whose inputs are all compile-time constants (closed-over arrays, literals) is bound
natively: it is what XLA folds. Float values are carried in the arithmetic's dtype: for the float64
reference a float32 function's dtypes (casts, accumulation types, literals) are widened.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.evaluator.arith import Arith
from hwbench.evaluator.jaxpr import exchange, indexing
from hwbench.evaluator.jaxpr.primitives import ARITHMETIC, MOVES
from hwbench.evaluator.jaxpr.trace import is_literal, source_of

CALLS = {"jit": "jaxpr", "pjit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr"}
CALLS |= {"remat": "jaxpr", "checkpoint": "jaxpr", "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr"}
CALLS |= {"custom_vjp_call_jaxpr": "fun_jaxpr"}
CONTROL = ("scan", "while", "cond")
FOLD_ELEMENTS = 1 << 20
"""Constant equations with larger outputs are left to the compiled program rather than folded."""


def eqn_name(path: Sequence[int]) -> str:
    """An equation's name in reports: its position, ``e12`` or ``e3.1`` inside an inlined call."""
    return "e" + ".".join(str(i) for i in path)


class Walk:
    """One evaluation of a jaxpr on ``arith``; ``keep`` collects the outputs of the equations
    reported (top level and inlined calls) by their names; ``overrides`` maps equation names to
    another arithmetic (the precision map's "keep wider")."""

    def __init__(
        self, arith: Arith, *, keep: dict[str, Any] | None = None, overrides: Mapping[str, Arith] | None = None
    ) -> None:
        self.arith = arith
        self.keep = keep
        self.overrides = dict(overrides or {})
        self.carrier = arith.dtype
        self._scope = 0

    # --- the walk ----------------------------------------------------------------------------
    def run(
        self,
        jaxpr: Any,
        consts: Sequence[Any],
        args: Sequence[Any],
        flags: Sequence[bool],
        path: tuple[int, ...] | None = (),
    ) -> list[Any]:
        """The outputs of ``jaxpr`` (a core Jaxpr) on ``consts`` and ``args`` (values); ``flags``
        say which args are run-time values. ``path`` is the position of a reported jaxpr (``()`` at
        the top level, an inlined call's equation inside it); None for the body of a loop or a
        branch, whose equations are not reported one by one."""
        env: dict[Any, tuple[Any, bool]] = {}
        for var, value in zip(jaxpr.constvars, consts):
            env[var] = (self._const(value), False)
        for var, value, flag in zip(jaxpr.invars, args, flags):
            env[var] = (value, flag)
        constant = {v for v, f in zip(jaxpr.invars, flags) if not f}
        fused = {} if self.keep is not None or self.overrides else exchange.find(jaxpr, constant)
        deferred = {j for found in fused.values() for j in found.members}
        for i, eqn in enumerate(jaxpr.eqns):
            if i in deferred:
                continue  # evaluated with its exchange (or one by one, at its scatter-add)
            if i in fused and self._exchange(jaxpr, fused[i], env):
                continue
            if i in fused:
                for j in sorted(fused[i].members):
                    self._step(env, jaxpr.eqns[j], None)
            self._step(env, eqn, (*path, i) if path is not None else None)
        return [self._read(env, v)[0] for v in jaxpr.outvars]

    def _step(self, env: dict[Any, tuple[Any, bool]], eqn: Any, here: tuple[int, ...] | None) -> None:
        """One equation: its outputs into ``env`` (run-time values where any input is), and kept."""
        ins = [self._read(env, v) for v in eqn.invars]
        outs = self._eqn(eqn, [v for v, _ in ins], [f for _, f in ins], here)
        dyn = any(f for _, f in ins)
        for var, value in zip(eqn.outvars, outs):
            if type(var).__name__ != "DropVar":
                env[var] = (value, dyn)
        if here is not None and self.keep is not None and dyn and eqn.primitive.name not in CALLS:
            for k, value in enumerate(outs):
                raw = self.arith.lower(value)
                if np.dtype(raw.dtype).kind == "f":
                    self.keep[f"{eqn_name(here)}.{k}"] = raw

    def _exchange(self, jaxpr: Any, found: exchange.Exchange, env: dict[Any, tuple[Any, bool]]) -> bool:
        """A gather-map-scatter computed as one exchange of the device's ops (False: the values do
        not make one; its equations are then evaluated one by one)."""
        from hwbench.core.ops import gather_map_scatter

        eqns = jaxpr.eqns
        planned = exchange.plan(found, eqns, lambda v: self._read(env, v)[0])
        x, x_dynamic = self._read(env, eqns[found.gathers[0]].invars[0])
        if planned is None or not x_dynamic:
            return False
        sources, src, tgt = planned
        targets = found.gathers[1] if sources == found.gathers[0] else found.gathers[0]
        n = int(self.arith.lower(x).shape[0])
        for g in found.gathers:
            if indexing.gather_axis(eqns[g].params, (n,), self._read(env, eqns[g].invars[1])[0]) != 0:
                return False

        def message(at_src: Any, at_tgt: Any) -> Any:
            inner = dict(env)
            inner[eqns[sources].outvars[0]] = (at_src, True)
            inner[eqns[targets].outvars[0]] = (at_tgt, True)
            for j in found.body:
                self._step(inner, eqns[j], None)
            return inner[eqns[found.scatter].invars[2]][0]

        ops = self.arith.ops
        value = self.arith.lift(self.arith.lower(x))
        result = gather_map_scatter(ops, message, value, src.astype(np.int32), tgt.astype(np.int32), n)
        env[eqns[found.scatter].outvars[0]] = (self.arith.lift(result), True)
        return True

    def _read(self, env: dict[Any, tuple[Any, bool]], var: Any) -> tuple[Any, bool]:
        if is_literal(var):
            return self._const(var.val), False
        return env[var]

    def _const(self, value: Any) -> Any:
        """A compile-time constant: host float arrays in the carrier dtype."""
        if _concrete(value):
            value = np.asarray(value)
        if isinstance(value, np.ndarray | np.generic | float | int | bool):
            arr = np.asarray(value)
            return arr.astype(self.carrier) if arr.dtype.kind == "f" else arr
        raw = self.arith.lower(value)
        dt = getattr(raw, "dtype", None)
        return raw.astype(self.carrier) if dt is not None and np.dtype(dt).kind == "f" else raw

    def _eqn(self, eqn: Any, ins: list[Any], flags: list[bool], path: tuple[int, ...] | None) -> list[Any]:
        name = eqn.primitive.name
        if name in CALLS:
            return self._call(eqn, ins, flags, path)
        arith = self.overrides.get(eqn_name(path), self.arith) if path is not None else self.arith
        if name in CONTROL and any(flags):
            return self._control(eqn, ins, flags, arith, path)
        if not any(flags):
            return self._fold(eqn, ins)
        if not _involves_float(eqn):
            return self._native(eqn, ins)
        try:
            impl = ARITHMETIC.get(name)
            if impl is not None:
                return impl(
                    arith, [arith.lift(arith.lower(v)) if f else v for v, f in zip(ins, flags)], self._params(eqn)
                )
            if name in MOVES:
                return self._move(eqn, ins, arith)
        except UsageError as exc:
            raise UsageError(f"{source_of(eqn) or name}: {exc}") from None
        check_supported(eqn, source_of(eqn))
        raise AssertionError(f"primitive '{name}' passed the support check but has no implementation")

    # --- kinds of equation ----------------------------------------------------------------------
    def _native(self, eqn: Any, ins: list[Any]) -> list[Any]:
        """Bound as JAX binds it: exact (integers, booleans) or folded (constants only)."""
        out = eqn.primitive.bind(*[self.arith.lower(v) for v in ins], **self._params(eqn))
        outs = list(out) if eqn.primitive.multiple_results else [out]
        return [self.arith.lift(o) for o in outs]

    def _fold(self, eqn: Any, ins: list[Any]) -> list[Any]:
        """An equation of compile-time constants, evaluated now on the host (what XLA folds) and kept
        as numpy, so that what reads it sees its values: a gather's or scatter's indices (their
        order and plan), a scatter's zero operand. Outputs over :data:`FOLD_ELEMENTS` elements stay
        in the program."""
        import jax

        if any(math.prod(getattr(v.aval, "shape", ())) > FOLD_ELEMENTS for v in eqn.outvars):
            return self._native(eqn, ins)
        with jax.ensure_compile_time_eval():
            out = eqn.primitive.bind(*[self.arith.lower(v) for v in ins], **self._params(eqn))
        outs = list(out) if eqn.primitive.multiple_results else [out]
        if any(isinstance(o, jax.core.Tracer) for o in outs):
            return [self.arith.lift(o) for o in outs]
        return [self._const(np.asarray(o)) for o in outs]

    def _move(self, eqn: Any, ins: list[Any], arith: Arith) -> list[Any]:
        params = self._params(eqn)
        if eqn.primitive.multiple_results:
            raws = eqn.primitive.bind(*[arith.lower(v) for v in ins], **params)
            return [arith.move(lambda r=r: r) for r in raws]
        return [arith.move(lambda *raw: eqn.primitive.bind(*raw, **params), *ins)]

    def _call(self, eqn: Any, ins: list[Any], flags: list[bool], path: tuple[int, ...] | None) -> list[Any]:
        """An inlined call: its equations evaluated (and reported) in place."""
        inner = eqn.params[CALLS[eqn.primitive.name]]
        jaxpr, consts = (inner.jaxpr, inner.consts) if hasattr(inner, "consts") else (inner, ())
        return self.run(jaxpr, consts, ins, flags, path)

    def _control(
        self, eqn: Any, ins: list[Any], flags: list[bool], arith: Arith, path: tuple[int, ...] | None
    ) -> list[Any]:
        from hwbench.evaluator.jaxpr.control import cond, scan, while_loop

        if eqn.primitive.name == "scan":
            return scan(self, eqn, ins, flags, arith, path)
        kinds: dict[str, Callable[..., list[Any]]] = {"while": while_loop, "cond": cond}
        return kinds[eqn.primitive.name](self, eqn, ins, flags, arith)

    # --- helpers --------------------------------------------------------------------------------
    def body(
        self, closed: Any, arith: Arith, *, stored: bool = False, path: tuple[int, ...] | None = None
    ) -> Callable[..., tuple[list[Any], dict[str, Any]]]:
        """A control-flow body as a function of raw arrays (values lifted in, lowered out), and the
        outputs of its equations where they are reported (``path``: the scan's position; its body's
        equations are named under it and, when this walk keeps outputs, kept per iteration).
        ``stored``: its results are written to the device's memory (a loop's carry and stacked
        outputs, in its storage format)."""

        def fn(*raws: Any) -> tuple[list[Any], dict[str, Any]]:
            keep: dict[str, Any] | None = {} if path is not None and self.keep is not None else None
            inner = Walk(arith, keep=keep, overrides=self.overrides)
            inner.carrier = self.carrier
            vals = [arith.lift(r) for r in raws]
            flags = [not isinstance(r, np.ndarray) for r in raws]  # constants from outside stay constants
            outs = inner.run(closed.jaxpr, closed.consts, vals, flags, path=path)
            return [arith.lower(arith.store(o) if stored else o) for o in outs], keep or {}

        return fn

    def stream(self, arith: Arith, step: Any) -> AbstractContextManager[None]:
        """Random streams keyed by ``step`` while a body is traced (stochastic rounding, error
        models); nothing for an arithmetic without streams."""
        scope = getattr(arith.ops, "stream_scope", None)
        if scope is None:
            return nullcontext()
        self._scope += 1
        result: AbstractContextManager[None] = scope(step, self._scope)
        return result

    def _params(self, eqn: Any) -> dict[str, Any]:
        """The equation's parameters with float dtypes widened to the carrier (float64 reference)."""
        params = dict(eqn.params)
        if self.carrier == np.float32:
            return params
        for key in ("new_dtype", "preferred_element_type", "dtype"):
            value = params.get(key)
            if value is not None and np.dtype(value).kind == "f" and np.dtype(value).itemsize < self.carrier.itemsize:
                params[key] = self.carrier
        return params


def check_supported(eqn: Any, source: str) -> None:
    """Refuse (one UsageError naming the primitive and the line) a float primitive the evaluator
    has no device arithmetic for, before anything is traced; loop and branch bodies included."""
    name = eqn.primitive.name
    if name in CONTROL:
        for key in ("jaxpr", "cond_jaxpr", "body_jaxpr"):
            if key in eqn.params:
                _check_body(eqn.params[key], source)
        for branch in eqn.params.get("branches", ()):
            _check_body(branch, source)
        return
    if name in CALLS:
        inner = eqn.params[CALLS[name]]
        _check_body(inner, source)
        return
    if name in ARITHMETIC or name in MOVES or not _involves_float(eqn):
        return
    where = f" at {source}" if source else ""
    raise UsageError(
        f"primitive '{name}'{where} is not supported by the evaluator (docs/testing.md lists the supported ones)"
    )


def _check_body(closed: Any, source: str) -> None:
    jaxpr = closed.jaxpr if hasattr(closed, "consts") else closed
    for eqn in jaxpr.eqns:
        check_supported(eqn, source_of(eqn) or source)


def _concrete(value: Any) -> bool:
    """Whether ``value`` is a JAX array with known values (not a tracer)."""
    import jax

    return isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer)


def _involves_float(eqn: Any) -> bool:
    """Whether any input or output of the equation is a float (or complex) array: then it computes
    with the device's arithmetic or is refused, never bound natively."""
    for var in (*eqn.invars, *eqn.outvars):
        aval = getattr(var, "aval", None)
        dtype = getattr(aval, "dtype", None)
        if dtype is not None and np.dtype(dtype).kind in "fc":
            return True
    return False
