"""Gather, elementwise map, scatter-add: found in a jaxpr and computed as one exchange.

Message passing over a fixed connection list, ``zeros(n).at[tgt].add(f(x[src], x[tgt]))`` (the
gap junctions of a neuron network, a graph network's edges), is a gather, a map and a scatter-add
in a jaxpr. Computed equation by equation, every connection's values are materialised three
times; an engine fuses the three into one loop per pass over the connections
(:func:`hwbench.core.ops.gather_map_scatter`, whose emulated form gives the composition's values
bit for bit, random streams included). :func:`find` recognises the pattern in the jaxpr's
structure, before the walk; the walk hands it to the device's ops once :func:`plan` finds the
indices known (compile-time constants: the scatter's and one gather's the same list) and the
scattered-into operand a compile-time zero, and otherwise evaluates the equations one by one.
Not used when every equation's output is kept (an audit's reference and candidates): the map's
equations are then reported one by one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hwbench.evaluator.jaxpr.trace import is_literal

ELEMENTWISE = frozenset(
    {"add", "sub", "mul", "div", "neg", "abs", "max", "min", "pow", "integer_pow", "square", "rsqrt", "logistic"}
    | {"exp", "log", "tanh", "erf", "sin", "cos", "sqrt", "expm1", "log1p", "select_n", "clamp", "atan2"}
    | {"eq", "ne", "lt", "le", "gt", "ge", "convert_element_type"}
)
"""Elementwise primitives a message may be made of (each keeps its operands' shape)."""


@dataclass(frozen=True)
class Exchange:
    """A scatter-add (equation ``scatter``) of a map (``body``, in order) of two gathers of ``x``."""

    scatter: int
    gathers: tuple[int, int]
    body: tuple[int, ...]

    @property
    def members(self) -> frozenset[int]:
        return frozenset((*self.gathers, *self.body))


def find(jaxpr: Any, constant: set[Any] | None = None) -> dict[int, Exchange]:
    """The exchanges of ``jaxpr`` by their scatter-add's index (structure only: values are checked
    by :func:`plan` when the walk reaches them); ``constant``: inputs known when traced (a loop
    body's constants)."""
    eqns = jaxpr.eqns
    producer = {v: j for j, e in enumerate(eqns) for v in e.outvars}
    uses: Counter[Any] = Counter(v for e in eqns for v in e.invars if not is_literal(v))
    uses.update(v for v in jaxpr.outvars if not is_literal(v))
    static = _static_vars(jaxpr, constant or set())
    found = {}
    for s, eqn in enumerate(eqns):
        if eqn.primitive.name not in ("scatter-add", "scatter_add"):
            continue
        operand, index, updates = eqn.invars
        if not all(is_literal(v) or v in static for v in (operand, index)) or len(operand.aval.shape) != 1:
            continue
        exchange = _trace_back(eqns, producer, static, s, updates)
        if exchange is not None and _private(eqns, exchange, uses):
            found[s] = exchange
    return found


def _static_vars(jaxpr: Any, constant: set[Any]) -> set[Any]:
    """Variables known when the function is traced: constants and what is computed from them alone."""
    static = set(jaxpr.constvars) | constant
    for eqn in jaxpr.eqns:
        if all(is_literal(v) or v in static for v in eqn.invars):
            static.update(eqn.outvars)
    return static


def _trace_back(eqns: Any, producer: dict[Any, int], static: set[Any], s: int, updates: Any) -> Exchange | None:
    """The map behind ``updates`` down to two gathers of one 1-D operand, or None."""
    body: set[int] = set()
    gathers: set[int] = set()
    stack = [updates]
    shape = tuple(updates.aval.shape)
    while stack:
        var = stack.pop()
        if is_literal(var) or var in static:
            if tuple(var.aval.shape):
                return None  # a constant array would have to be cut into the passes
            continue
        j = producer.get(var)
        if j is None:
            return None
        eqn = eqns[j]
        if eqn.primitive.name == "gather":
            gathers.add(j)
            continue
        if eqn.primitive.name not in ELEMENTWISE or any(tuple(v.aval.shape) != shape for v in eqn.outvars):
            return None
        if j not in body:
            body.add(j)
            stack.extend(eqn.invars)
    pair = sorted(gathers)
    if len(pair) != 2 or eqns[pair[0]].invars[0] is not eqns[pair[1]].invars[0]:
        return None
    if any(len(eqns[g].invars[0].aval.shape) != 1 or eqns[g].invars[1] not in static for g in pair):
        return None
    return Exchange(s, (pair[0], pair[1]), tuple(sorted(body)))


def _private(eqns: Any, exchange: Exchange, uses: Counter[Any]) -> bool:
    """Whether the gathers' and the map's results are read by the exchange only."""
    inside: Counter[Any] = Counter()
    for j in (*exchange.body, exchange.scatter):
        inside.update(v for v in eqns[j].invars if not is_literal(v))
    return all(uses[v] == inside[v] for j in exchange.members for v in eqns[j].outvars)


def plan(exchange: Exchange, eqns: Any, value: Callable[[Any], Any]) -> tuple[int, np.ndarray, np.ndarray] | None:
    """(the gather reading the sources, src, tgt) once the values are known, or None where they do
    not make an exchange: the scatter's index is one gather's (the targets'), the operand zero."""
    scatter = eqns[exchange.scatter]
    operand, index = (value(v) for v in scatter.invars[:2])
    if not isinstance(operand, np.ndarray) or np.any(operand) or not isinstance(index, np.ndarray):
        return None
    first, second = exchange.gathers
    a, b = (value(eqns[g].invars[1]) for g in (first, second))
    if not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray) or index.shape[-1:] != (1,):
        return None
    tgt = index[..., 0].reshape(-1)
    if np.array_equal(b[..., 0].reshape(-1), tgt):
        return first, a[..., 0].reshape(-1), tgt
    if np.array_equal(a[..., 0].reshape(-1), tgt):
        return second, b[..., 0].reshape(-1), tgt
    return None
