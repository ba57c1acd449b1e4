"""Reductions and the normalisations built on them: ReduceSum / Mean / Max / Min, Softmax,
LayerNormalization. Sums use the device's adder order (:meth:`Arith.sum`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.evaluator.onnx.op_table import op

if TYPE_CHECKING:
    from hwbench.evaluator.onnx.call import Call


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


@op("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin")
def reduce(c: Call) -> list[Any]:
    x = c.arg(0)
    ndim = c.raw(0).ndim
    axes = reduce_axes(c, ndim)
    if axes is None:
        return [x]
    keep = bool(c.attrs.get("keepdims", 1))
    ar = c.arith
    if c.op == "ReduceMax":
        return [ar.reduce_max(x, axes, keep)]
    if c.op == "ReduceMin":
        return [ar.reduce_min(x, axes, keep)]
    total = ar.sum(x, axes, keep)
    if c.op == "ReduceSum":
        return [total]
    count = math.prod(c.raw(0).shape[a] for a in axes)
    return [ar.binary("div", total, float(count))]


@op("Softmax")
def softmax(c: Call) -> list[Any]:
    """exp(x - max) / sum(exp(x - max)) along the axis (opsets < 13: over the 2-D coercion at
    ``axis``, default 1; since 13: along ``axis``, default -1). The max is exact; the subtraction,
    the exps, the sum and the division are the device's."""
    ar, xp = c.arith, c.xp
    x = c.arg(0)
    shape = c.raw(0).shape
    ndim = len(shape)
    if c.opset < 13:
        axis = int(c.attrs.get("axis", 1)) % max(ndim, 1)
        flat = (math.prod(shape[:axis]), math.prod(shape[axis:]))
        x = ar.move(lambda v: xp.reshape(v, flat), x)
        red = 1
    else:
        red = int(c.attrs.get("axis", -1)) % ndim
    peak = ar.reduce_max(x, [red], True)
    e = ar.function("exp", ar.binary("sub", x, peak))
    out = ar.binary("div", e, ar.sum(e, [red], True))
    if c.opset < 13:
        out = ar.move(lambda v: xp.reshape(v, shape), out)
    return [out]


@op("LayerNormalization")
def layer_norm(c: Call) -> list[Any]:
    """(x - mean) / sqrt(var + eps) * scale + bias over the axes from ``axis`` on: the mean and the
    variance are the device's sums and divisions, the root a sqrt and a division (an rsqrt is
    assumed to be a sqrt then a reciprocal division where the device has no rsqrt of its own)."""
    ar = c.arith
    x = c.arg(0)
    ndim = c.raw(0).ndim
    axis = int(c.attrs.get("axis", -1)) % ndim
    axes = list(range(axis, ndim))
    count = float(math.prod(c.raw(0).shape[axis:]))
    mean = ar.binary("div", ar.sum(x, axes, True), count)
    centred = ar.binary("sub", x, mean)
    var = ar.binary("div", ar.sum(ar.binary("mul", centred, centred), axes, True), count)
    eps = float(c.attrs.get("epsilon", 1e-5))
    inv = ar.reciprocal(ar.function("sqrt", ar.binary("add", var, np.asarray(eps, c.raw(0).dtype))))
    out = ar.binary("mul", centred, inv)
    if c.arg(1) is not None:
        out = ar.binary("mul", out, c.arg(1))
    if c.arg(2) is not None:
        out = ar.binary("add", out, c.arg(2))
    return [out, mean, inv][: len([o for o in c.node.output])]
