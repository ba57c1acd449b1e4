"""Pooling and the small layers around it: MaxPool (with indices), AveragePool, LpPool, their
global forms, Sum / Mean of several inputs, Dropout at inference."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.evaluator.onnx.op_table import op
from hwbench.evaluator.onnx.ops.linalg import conv_geometry

if TYPE_CHECKING:
    from hwbench.evaluator.onnx.call import Call


def _geometry(c: Call) -> tuple[list[int], list[int], list[tuple[int, int]], list[int], list[tuple[int, int]]]:
    """(kernel, strides, pads, dilations, pads with ceil_mode's extra end padding)."""
    spatial = c.raw(0).shape[2:]
    kernel = [int(k) for k in c.attrs["kernel_shape"]]
    strides, pads, dilations = conv_geometry(c, spatial, kernel)
    padded = _ceil_pads(spatial, kernel, strides, pads, dilations) if c.attrs.get("ceil_mode", 0) else pads
    return kernel, strides, pads, dilations, padded


@op("MaxPool")
def max_pool(c: Call) -> list[Any]:
    """Windows (exact moves, padded with -inf) and their max (exact); the optional indices are the
    flat positions of each window's first maximum in the input (row-major, or column-major with
    ``storage_order=1``)."""
    ar = c.arith
    kernel, strides, _, dilations, pads = _geometry(c)
    axes = list(range(2, 2 + len(kernel)))
    w = ar.windows(c.arg(0), kernel, strides=strides, pads=pads, dilations=dilations, fill=-np.inf)
    out = [ar.reduce_max(w, axes)]
    if len(c.node.output) > 1 and c.node.output[1]:
        out.append(_max_indices(c, w, kernel, strides, pads, dilations))
    return out


def _max_indices(c: Call, w: Any, kernel: Any, strides: Any, pads: Any, dilations: Any) -> Any:
    shape = c.raw(0).shape
    flat = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    if c.attrs.get("storage_order", 0):
        flat = np.arange(math.prod(shape), dtype=np.int64).reshape(shape[::-1]).T
    from hwbench.evaluator.convolution import patches

    positions = np.asarray(patches(np, flat, kernel, strides, pads, dilations, fill=-1))  # N, C, K.., O..
    d = len(kernel)
    xp = c.xp
    values = xp.reshape(c.arith.lower(w), (*shape[:2], -1, *positions.shape[2 + d :]))
    first = xp.argmax(values, axis=2)  # the first maximum of each window
    table = positions.reshape(*shape[:2], -1, *positions.shape[2 + d :])
    return xp.take_along_axis(xp.asarray(table), xp.expand_dims(first, 2), axis=2)[:, :, 0]


@op("AveragePool")
def average_pool(c: Call) -> list[Any]:
    """Windows and their sum (the device's adds) divided by the count (its division): the whole
    window with ``count_include_pad``, else the input elements it covers."""
    ar = c.arith
    kernel, strides, pads, dilations, padded = _geometry(c)
    spatial = c.raw(0).shape[2:]
    axes = list(range(2, 2 + len(kernel)))
    total = ar.sum(ar.windows(c.arg(0), kernel, strides=strides, pads=padded, dilations=dilations), axes, once=False)
    if padded == [(0, 0)] * len(kernel):
        return [ar.binary("div", total, float(math.prod(kernel)))]
    ones = np.ones((1, 1, *spatial), dtype=c.raw(0).dtype)
    if c.attrs.get("count_include_pad", 0):  # explicit padding counts, ceil_mode's overhang does not
        ones = np.pad(ones, [(0, 0), (0, 0), *pads], constant_values=1)
        extra = [(0, e - p[1]) for p, (_, e) in zip(pads, padded)]
        counts = np.sum(_np_windows(ones, kernel, strides, extra, dilations), axis=tuple(axes))
    else:
        counts = np.sum(_np_windows(ones, kernel, strides, padded, dilations), axis=tuple(axes))
    return [ar.binary("div", total, counts.astype(c.raw(0).dtype))]


@op("LpPool")
def lp_pool(c: Call) -> list[Any]:
    """(sum over the window of |x|^p)^(1/p): the device's powers, adds and root."""
    ar = c.arith
    kernel, strides, _, dilations, pads = _geometry(c)
    axes = list(range(2, 2 + len(kernel)))
    p = int(c.attrs.get("p", 2))
    w = ar.windows(c.arg(0), kernel, strides=strides, pads=pads, dilations=dilations)
    return [_lp(c, w, axes, p, keep=False)]


def _lp(c: Call, x: Any, axes: list[int], p: int, keep: bool) -> Any:
    ar = c.arith
    dtype = c.raw(0).dtype
    total = ar.sum(ar.power(ar.absolute(x), np.asarray(p, dtype)), axes, keep, once=False)
    if p == 2:
        return ar.function("sqrt", total)
    return ar.power(total, np.asarray(1.0 / p, dtype))


def _np_windows(x: np.ndarray, kernel: Any, strides: Any, pads: Any, dilations: Any) -> np.ndarray:
    from hwbench.evaluator.convolution import patches

    return np.asarray(patches(np, x, kernel, strides, pads, dilations))


def _ceil_pads(spatial: Any, kernel: Any, strides: Any, pads: Any, dilations: Any) -> list[tuple[int, int]]:
    """Extra end padding so that the output size rounds up (``ceil_mode``), windows starting inside."""
    out = []
    for i, (b, e) in enumerate(pads):
        span = dilations[i] * (kernel[i] - 1) + 1
        size = spatial[i] + b + e
        n = -(-(size - span) // strides[i]) + 1
        if (n - 1) * strides[i] >= spatial[i] + b:
            n -= 1
        out.append((b, e + max(0, (n - 1) * strides[i] + span - size)))
    return out


@op("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def global_pool(c: Call) -> list[Any]:
    ar = c.arith
    shape = c.raw(0).shape
    axes = list(range(2, len(shape)))
    if c.op == "GlobalMaxPool":
        return [ar.reduce_max(c.arg(0), axes, True)]
    if c.op == "GlobalLpPool":
        return [_lp(c, c.arg(0), axes, int(c.attrs.get("p", 2)), keep=True)]
    return [ar.binary("div", ar.sum(c.arg(0), axes, True, once=False), float(math.prod(shape[2:])))]


@op("Sum", "Mean")
def variadic_sum(c: Call) -> list[Any]:
    """The inputs added left to right (then divided by their count for Mean)."""
    ar = c.arith
    present = [v for v in c.args if v is not None]
    acc = present[0]
    for v in present[1:]:
        acc = ar.binary("add", acc, v)
    if c.op == "Mean":
        acc = ar.binary("div", acc, float(len(present)))
    return [acc]


@op("Dropout")
def dropout(c: Call) -> list[Any]:
    """Inference: the identity (and an all-true mask where one is asked for). A constant
    ``training_mode`` of true is refused: a random mask is not a model's arithmetic."""
    training = c.const(2, "Dropout's training_mode") if len(c.args) > 2 else None
    if training is not None and bool(np.asarray(training).reshape(-1)[0]):
        raise UsageError(f"node '{c.name}' (Dropout): training mode is not supported; export for inference")
    outs: list[Any] = [c.arg(0)]
    if len(c.node.output) > 1 and c.node.output[1]:
        outs.append(c.xp.ones(c.raw(0).shape, dtype=bool))
    return outs
