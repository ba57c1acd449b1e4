"""Control flow on a device's arithmetic: ``scan``, ``while`` and ``cond`` stay JAX control flow.

Each body is walked with the device's arithmetic while JAX traces it (:meth:`Walk.body`); a loop's
carry and stacked outputs are written to the device's memory each iteration (its ``store``), as a
time-stepped kernel's state is. The loops carry an iteration counter beside the user's values, so
that random streams (stochastic rounding, error models) are keyed by the iteration, not repeated
from one to the next.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np

from hwbench.evaluator.arith import Arith


class Walk(Protocol):
    """What control flow needs of the walk (:class:`hwbench.evaluator.jaxpr.walk.Walk`)."""

    keep: dict[str, Any] | None

    def body(
        self, closed: Any, arith: Arith, *, stored: bool = False, path: tuple[int, ...] | None = None
    ) -> Callable[..., tuple[list[Any], dict[str, Any]]]: ...
    def stream(self, arith: Arith, step: Any) -> AbstractContextManager[None]: ...


def scan(
    walk: Walk, eqn: Any, ins: list[Any], flags: list[bool], arith: Arith, path: tuple[int, ...] | None = None
) -> list[Any]:
    """``lax.scan`` of the walked body; with ``path`` (a reported scan) its body's equations are
    reported under it, their outputs kept per iteration (stacked) when the walk keeps outputs."""
    from jax import lax

    p = eqn.params
    nconsts, ncarry = int(p["num_consts"]), int(p["num_carry"])
    raws = [arith.lower(v) for v in ins]
    consts, init, xs = raws[:nconsts], raws[nconsts : nconsts + ncarry], raws[nconsts + ncarry :]
    body = walk.body(p["jaxpr"], arith, stored=True, path=path)

    def step(carry: tuple[Any, list[Any]], x: list[Any]) -> tuple[tuple[Any, list[Any]], Any]:
        i, values = carry
        with walk.stream(arith, i):
            outs, kept = body(*consts, *values, *x)
        return (i + 1, outs[:ncarry]), (outs[ncarry:], kept)

    (_, final), (ys, kept) = lax.scan(
        step,
        (np.int32(0), init),
        xs,
        length=int(p["length"]),
        reverse=bool(p["reverse"]),
        unroll=p.get("unroll", 1),
    )
    if walk.keep is not None:
        walk.keep.update(kept)
    return [arith.lift(v) for v in (*final, *ys)]


def while_loop(walk: Walk, eqn: Any, ins: list[Any], flags: list[bool], arith: Arith) -> list[Any]:
    from jax import lax

    p = eqn.params
    nc, nb = int(p["cond_nconsts"]), int(p["body_nconsts"])
    raws = [arith.lower(v) for v in ins]
    cconsts, bconsts, init = raws[:nc], raws[nc : nc + nb], raws[nc + nb :]
    cond_fn, body_fn = walk.body(p["cond_jaxpr"], arith), walk.body(p["body_jaxpr"], arith, stored=True)

    def keep_going(state: tuple[Any, list[Any]]) -> Any:
        i, values = state
        with walk.stream(arith, -1 - i):
            return cond_fn(*cconsts, *values)[0][0]

    def step(state: tuple[Any, list[Any]]) -> tuple[Any, list[Any]]:
        i, values = state
        with walk.stream(arith, i):
            return i + 1, body_fn(*bconsts, *values)[0]

    _, final = lax.while_loop(keep_going, step, (np.int32(0), init))
    return [arith.lift(v) for v in final]


def cond(walk: Walk, eqn: Any, ins: list[Any], flags: list[bool], arith: Arith) -> list[Any]:
    from jax import lax

    raws = [arith.lower(v) for v in ins]
    index, operands = raws[0], raws[1:]
    branches = [walk.body(b, arith) for b in eqn.params["branches"]]

    def branch(k: int) -> Any:
        def fn(*ops: Any) -> list[Any]:
            with walk.stream(arith, np.int32(k)):
                return branches[k](*ops)[0]

        return fn

    index = lax.convert_element_type(index, np.int32)
    outs = lax.switch(index, [branch(k) for k in range(len(branches))], *operands)
    return [arith.lift(v) for v in outs]
