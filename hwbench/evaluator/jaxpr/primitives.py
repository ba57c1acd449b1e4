"""jaxpr primitives on a device's arithmetic: each maps onto :class:`~hwbench.evaluator.arith.Arith`.

Three kinds. Arithmetic primitives (``add``, ``exp``, ``dot_general``, ``reduce_sum``, ``cumsum``,
``gather``, ``scatter-add`` ...) are the device's operations, each with the order or assumption
its :class:`Arith` method states. Moves (``reshape``, ``pad``, ``select_n`` of exact values ...)
create no number: they are bound natively and keep what is known of the values' format. Anything
on integers and booleans only is exact and bound natively. A float primitive in neither table is
refused, named with the user's line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hwbench.core.ops import OpClass
from hwbench.evaluator.arith import FUNCTIONS, Arith
from hwbench.evaluator.jaxpr import indexing

Impl = Callable[[Arith, list[Any], dict[str, Any]], list[Any]]

_FUNCTIONS = (
    "exp",
    "log",
    "sqrt",
    "tanh",
    "erf",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "log1p",
    "expm1",
    "cbrt",
    "erfc",
    "erf_inv",
    "exp2",
    "lgamma",
    "digamma",
)
_COMPARE = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal"}

MOVES = frozenset(
    {
        "broadcast_in_dim",
        "reshape",
        "transpose",
        "squeeze",
        "expand_dims",
        "concatenate",
        "pad",
        "slice",
        "dynamic_slice",
        "dynamic_update_slice",
        "scatter",
        "rev",
        "copy",
        "copy_p",
        "stop_gradient",
        "sign",
        "floor",
        "ceil",
        "round",
        "is_finite",
        "sort",
        "argmax",
        "argmin",
        "iota",
        "split",
        "reduce_precision",
        "optimization_barrier",
        "real",
        "imag",
        "tile",
        "stack",
        "unstack",
        "top_k",
        "rem",
        "nextafter",
    }
)
"""Primitives that create no number (or, ``reduce_precision``, round where the user asked to; ``rem``
and ``nextafter``, whose IEEE results are exact)."""


def _binary(op: str) -> Impl:
    def impl(a: Arith, v: list[Any], p: dict[str, Any]) -> list[Any]:
        return [a.binary(op, v[0], v[1])]

    return impl


def _function(name: str) -> Impl:
    def impl(a: Arith, v: list[Any], p: dict[str, Any]) -> list[Any]:
        return [a.function(name, v[0])]

    return impl


def _compare(op: str) -> Impl:
    def impl(a: Arith, v: list[Any], p: dict[str, Any]) -> list[Any]:
        return [a.compare(op, v[0], v[1])]

    return impl


def _select_n(a: Arith, v: list[Any], p: dict[str, Any]) -> list[Any]:
    """``select_n(pred, *cases)``: a selection (exact); two cases with a boolean predicate are the
    device's ``where``, more cases are picked natively."""
    pred, cases = v[0], v[1:]
    if len(cases) == 2 and np.dtype(a.lower(pred).dtype) == np.bool_:
        return [a.where(pred, cases[1], cases[0])]
    from jax import lax

    return [a.move(lambda q, *c: lax.select_n(q, *c), pred, *cases)]


def _clamp(a: Arith, v: list[Any], p: dict[str, Any]) -> list[Any]:
    """``clamp(lo, x, hi)``: two selections."""
    lo, x, hi = v
    return [a.maximum(a.minimum(x, hi), lo)]


def _integer_pow(a: Arith, v: list[Any], p: dict[str, Any]) -> list[Any]:
    return [a.power(v[0], int(p["y"]))]


def _square(a: Arith, v: list[Any], p: dict[str, Any]) -> list[Any]:
    return [a.binary("mul", v[0], v[0])]


def _convert(a: Arith, v: list[Any], p: dict[str, Any]) -> list[Any]:
    return [a.cast(v[0], p["new_dtype"])]


def _reduce(kind: str) -> Impl:
    def impl(a: Arith, v: list[Any], p: dict[str, Any]) -> list[Any]:
        axes = [int(x) for x in p["axes"]]
        if kind == "sum":
            return [a.sum(v[0], axes)]
        return [a.reduce_max(v[0], axes) if kind == "max" else a.reduce_min(v[0], axes)]

    return impl


def _cumulative(op: str) -> Impl:
    def impl(a: Arith, v: list[Any], p: dict[str, Any]) -> list[Any]:
        return [a.cumulative(op, v[0], int(p["axis"]), bool(p.get("reverse", False)))]

    return impl


def _dot_general(a: Arith, v: list[Any], p: dict[str, Any]) -> list[Any]:
    """``dot_general`` as one batched matrix product on the matrix unit: both operands moved
    (exactly) to (batch, M, K) and (batch, K, N), the result to JAX's (batch, lhs free, rhs free)."""
    (lc, rc), (lb, rb) = p["dimension_numbers"]
    lhs, rhs = v
    ls, rs = a.lower(lhs).shape, a.lower(rhs).shape
    lfree = [d for d in range(len(ls)) if d not in lc and d not in lb]
    rfree = [d for d in range(len(rs)) if d not in rc and d not in rb]
    batch = [ls[d] for d in lb]
    m, n, k = _prod(ls, lfree), _prod(rs, rfree), _prod(ls, lc)
    xp = a.xp
    left = a.move(lambda x: xp.reshape(xp.transpose(x, (*lb, *lfree, *lc)), (*batch, m, k)), lhs)
    right = a.move(lambda x: xp.reshape(xp.transpose(x, (*rb, *rc, *rfree)), (*batch, k, n)), rhs)
    out = a.matmul(left, right)
    shape = (*batch, *[ls[d] for d in lfree], *[rs[d] for d in rfree])
    return [a.move(lambda x: xp.reshape(x, shape), out)]


def _prod(shape: Sequence[int], dims: Sequence[int]) -> int:
    return math.prod(shape[d] for d in dims)


def _conv(a: Arith, v: list[Any], p: dict[str, Any]) -> list[Any]:
    """``conv_general_dilated`` as :meth:`Arith.conv`: operands moved to (N, C, spatial) and
    (O, I, spatial), an input dilation as interior zero padding (a transposed convolution),
    negative padding as a slice, the result moved to the output layout."""
    from hwbench.core.errors import UsageError

    if int(p.get("batch_group_count", 1)) != 1:
        raise UsageError("conv_general_dilated with batch_group_count > 1 is not supported")
    dn = p["dimension_numbers"]
    lhs_spec, rhs_spec, out_spec = dn.lhs_spec, dn.rhs_spec, dn.out_spec
    xp = a.xp
    x = a.move(lambda t: xp.transpose(t, lhs_spec), v[0])
    w = a.move(lambda t: xp.transpose(t, rhs_spec), v[1])
    d = len(lhs_spec) - 2
    lhs_dil = [int(s) for s in (p.get("lhs_dilation") or [1] * d)]
    pads = [(int(lo), int(hi)) for lo, hi in p["padding"]]
    if any(s > 1 for s in lhs_dil) or any(lo < 0 or hi < 0 for lo, hi in pads):
        from jax import lax

        config = [(0, 0, 0), (0, 0, 0), *((lo, hi, s - 1) for (lo, hi), s in zip(pads, lhs_dil))]
        x = a.move(lambda t: lax.pad(t, np.zeros((), t.dtype), config), x)
        pads = [(0, 0)] * d
    out = a.conv(
        x,
        w,
        strides=[int(s) for s in p["window_strides"]],
        pads=pads,
        dilations=[int(s) for s in (p.get("rhs_dilation") or [1] * d)],
        groups=int(p.get("feature_group_count", 1)),
    )
    inverse = [0] * len(out_spec)
    for i, dim in enumerate(out_spec):
        inverse[dim] = i
    return [a.move(lambda t: xp.transpose(t, inverse), out)]


ARITHMETIC: dict[str, Impl] = {
    "add": _binary("add"),
    "sub": _binary("sub"),
    "mul": _binary("mul"),
    "div": _binary("div"),
    "neg": lambda a, v, p: [a.negative(v[0])],
    "abs": lambda a, v, p: [a.absolute(v[0])],
    "max": lambda a, v, p: [a.maximum(v[0], v[1])],
    "min": lambda a, v, p: [a.minimum(v[0], v[1])],
    "pow": lambda a, v, p: [a.power(v[0], v[1])],
    "integer_pow": _integer_pow,
    "square": _square,
    "rsqrt": lambda a, v, p: [a.rsqrt(v[0])],
    "logistic": lambda a, v, p: [a.logistic(v[0])],
    **{name: _function(name) for name in _FUNCTIONS},
    **{name: _compare(op) for name, op in _COMPARE.items()},
    "select_n": _select_n,
    "clamp": _clamp,
    "convert_element_type": _convert,
    "reduce_sum": _reduce("sum"),
    "reduce_max": _reduce("max"),
    "reduce_min": _reduce("min"),
    "reduce_prod": lambda a, v, p: [a.prod(v[0], [int(x) for x in p["axes"]])],
    "cumsum": _cumulative("add"),
    "cumprod": _cumulative("mul"),
    "cummax": _cumulative("max"),
    "cummin": _cumulative("min"),
    "atan2": lambda a, v, p: [a.atan2(v[0], v[1])],
    "gather": indexing.gather,
    "scatter-add": indexing.scatter_add,
    "scatter_add": indexing.scatter_add,
    "dot_general": _dot_general,
    "conv_general_dilated": _conv,
}
"""The arithmetic primitives, each on the device's arithmetic."""

SUPPORTED = tuple(sorted({*ARITHMETIC, *MOVES}))

_MATRIX = ("dot_general", "conv_general_dilated")
OP_CLASS: dict[str, OpClass] = {
    **{name: FUNCTIONS.get(name, OpClass.EXP) for name in _FUNCTIONS},
    **dict.fromkeys(("add", "sub", "reduce_sum", "cumsum"), OpClass.ADD),
    **dict.fromkeys(("mul", "square", "integer_pow", "reduce_prod", "cumprod"), OpClass.MUL),
    **dict.fromkeys(("div", "rsqrt"), OpClass.DIV),
    **dict.fromkeys(("logistic", "atan2"), OpClass.EXP),
    "pow": OpClass.POW,
    **dict.fromkeys(("max", "min", "clamp", "select_n", "cummax", "cummin", *_COMPARE), OpClass.COMPARE),
    **dict.fromkeys(("gather", "scatter-add", "scatter_add"), OpClass.GATHER),
    **dict.fromkeys(_MATRIX, OpClass.MATMUL_INPUT),
}
"""The op class whose arithmetic computes each primitive (what a report names as its mechanism)."""
