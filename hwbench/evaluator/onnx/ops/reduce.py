"""Reductions and the ops built on them: the Reduce family, ArgMax / ArgMin, Softmax, LogSoftmax,
Hardmax. Sums use the device's adder order (:meth:`Arith.sum`); max and min are exact selections.

Compositions: ``ReduceL1 = sum |x|``, ``ReduceL2 = sqrt(sum x*x)``, ``ReduceSumSquare = sum x*x``,
``ReduceLogSum = log(sum x)``, ``ReduceLogSumExp = m + log(sum exp(x - m))`` with ``m = max x``
(ONNX Runtime's CPU kernel shifts by the max; the schema's ``log(sum(exp x))`` overflows),
``ReduceMean = sum / n``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.evaluator.onnx.op_table import op

if TYPE_CHECKING:
    from hwbench.evaluator.arith import Arith
    from hwbench.evaluator.onnx.call import Call

_FAMILY: tuple[str, ...] = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1")
_FAMILY += ("ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")


def reduce_axes(c: Call, ndim: int) -> list[int] | None:
    """The axes to reduce (from the ``axes`` input since opset 13 / 18, else the attribute);
    None: no reduction (empty axes with ``noop_with_empty_axes``)."""
    given = c.const(1, f"{c.op}'s axes") if len(c.args) > 1 else None
    axes = [int(a) for a in given.reshape(-1)] if given is not None else list(c.attrs.get("axes", []))
    if not axes:
        if c.attrs.get("noop_with_empty_axes", 0):
            return None
        return list(range(ndim))
    return sorted({a % ndim for a in axes}) if ndim else []


@op(*_FAMILY)
def reduce(c: Call) -> list[Any]:
    x = c.arg(0)
    ar = c.arith
    axes = reduce_axes(c, c.raw(0).ndim)
    if axes is None:
        return [x]
    keep = bool(c.attrs.get("keepdims", 1))
    kind = c.op[len("Reduce") :]
    if kind in ("Max", "Min"):
        if any(c.raw(0).shape[a] == 0 for a in axes):  # the identity of an empty reduction
            return [_empty_extreme(c, axes, keep, kind == "Max")]
        fn = ar.reduce_max if kind == "Max" else ar.reduce_min
        return [fn(x, axes, keep)]
    if kind == "Prod":
        return [ar.prod(x, axes, keep)]
    if kind == "LogSumExp":
        return [_log_sum_exp(ar, x, axes, keep)]
    if kind in ("L2", "SumSquare"):
        x = ar.binary("mul", x, x)
    elif kind == "L1":
        x = ar.absolute(x)
    total = ar.sum(x, axes, keep, once=False)
    if kind == "Mean":
        count = math.prod(c.raw(0).shape[a] for a in axes)
        return [ar.binary("div", total, float(count))]
    if kind == "L2":
        return [ar.function("sqrt", total)]
    if kind == "LogSum":
        return [ar.function("log", total)]
    return [total]


def _empty_extreme(c: Call, axes: list[int], keep: bool, largest: bool) -> np.ndarray:
    dtype = c.raw(0).dtype
    shape = [1 if i in axes else n for i, n in enumerate(c.raw(0).shape)]
    if not keep:
        shape = [n for i, n in enumerate(shape) if i not in axes]
    if dtype.kind == "f":
        fill: Any = -np.inf if largest else np.inf
    elif dtype.kind == "b":
        fill = not largest
    else:
        fill = np.iinfo(dtype).min if largest else np.iinfo(dtype).max
    return np.full(shape, fill, dtype=dtype)


def _log_sum_exp(ar: Arith, x: Any, axes: list[int], keep: bool) -> Any:
    peak = ar.reduce_max(x, axes, True)
    finite = ar.where(ar.xp.isfinite(ar.lower(peak)), peak, np.zeros((), ar.lower(peak).dtype))
    total = ar.sum(ar.function("exp", ar.binary("sub", x, finite)), axes, True, once=False)
    out = ar.binary("add", finite, ar.function("log", total))
    return out if keep else ar.move(lambda v: ar.xp.squeeze(v, axis=tuple(axes)), out)


@op("ArgMax", "ArgMin")
def arg_extreme(c: Call) -> list[Any]:
    """The index of the first (or, with ``select_last_index``, the last) extreme element: exact."""
    xp = c.xp
    x = c.raw(0)
    axis = int(c.attrs.get("axis", 0)) % max(x.ndim, 1)
    fn = xp.argmax if c.op == "ArgMax" else xp.argmin
    if c.attrs.get("select_last_index", 0):
        n = x.shape[axis]
        out = n - 1 - fn(xp.flip(x, axis=axis), axis=axis)
    else:
        out = fn(x, axis=axis)
    out = out.astype(np.int64)
    return [xp.expand_dims(out, axis) if c.attrs.get("keepdims", 1) else out]


def _softmax_axis(c: Call) -> tuple[Any, int, tuple[int, ...] | None]:
    """(the input, the axis to normalise, the shape to restore): before opset 13 the input is
    coerced to 2-D at ``axis`` (default 1) and normalised along the second dimension."""
    x = c.arg(0)
    shape = tuple(c.raw(0).shape)
    ndim = len(shape)
    if c.opset >= 13:
        return x, int(c.attrs.get("axis", -1)) % max(ndim, 1), None
    axis = int(c.attrs.get("axis", 1)) % max(ndim, 1)
    flat = (math.prod(shape[:axis]), math.prod(shape[axis:]))
    return c.arith.move(lambda v: c.xp.reshape(v, flat), x), 1, shape


@op("Softmax", "LogSoftmax")
def softmax(c: Call) -> list[Any]:
    """``exp(x - max) / sum(exp(x - max))``; LogSoftmax ``(x - max) - log(sum(exp(x - max)))``
    (ONNX Runtime's CPU kernels). The max is exact; the subtraction, exps, sum, log and division are
    the device's."""
    ar = c.arith
    x, red, restore = _softmax_axis(c)
    shifted = ar.binary("sub", x, ar.reduce_max(x, [red], True))
    e = ar.function("exp", shifted)
    total = ar.sum(e, [red], True, once=False)
    if c.op == "Softmax":
        out = ar.binary("div", e, total)
    else:
        out = ar.binary("sub", shifted, ar.function("log", total))
    if restore is not None:
        out = ar.move(lambda v: c.xp.reshape(v, restore), out)
    return [out]


@op("Hardmax")
def hardmax(c: Call) -> list[Any]:
    """1 at the first maximum along the axis, 0 elsewhere: exact."""
    ar, xp = c.arith, c.xp
    x, red, restore = _softmax_axis(c)
    raw = ar.lower(x)
    first = xp.argmax(raw, axis=red)
    hot = xp.expand_dims(first, red) == xp.expand_dims(
        xp.arange(raw.shape[red]), tuple(i for i in range(raw.ndim) if i != red)
    )
    out = ar.lift(hot.astype(raw.dtype))
    if restore is not None:
        out = ar.move(lambda v: xp.reshape(v, restore), out)
    return [out]
