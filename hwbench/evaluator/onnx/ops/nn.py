"""Neural-network layers built from the device's primitives: batch normalisation, pooling, Sum."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.evaluator.onnx.op_table import op
from hwbench.evaluator.onnx.ops.linalg import conv_geometry

if TYPE_CHECKING:
    from hwbench.evaluator.onnx.call import Call


@op("BatchNormalization")
def batch_norm(c: Call) -> list[Any]:
    """Inference form: ``x * a + b`` per channel with ``a = scale / sqrt(var + eps)`` and
    ``b = bias - mean * a``. With constant statistics ``a`` and ``b`` are folded on the host, as
    TensorRT and ONNX Runtime fold them; the multiply and the add are the chip's."""
    x = c.arg(0)
    d = c.raw(0).ndim - 2
    eps = float(c.attrs.get("epsilon", 1e-5))
    f = c.folding(1, 2, 3, 4)
    dtype = c.raw(0).dtype
    a = f.binary("div", c.arg(1), f.function("sqrt", f.binary("add", c.arg(4), np.asarray(eps, dtype))))
    b = f.binary("sub", c.arg(2), f.binary("mul", c.arg(3), a))
    shape = (1, -1) + (1,) * d
    ar = c.arith
    a2 = ar.move(lambda v: c.xp.reshape(v, shape), a) if f is ar else np.reshape(a, shape)
    b2 = ar.move(lambda v: c.xp.reshape(v, shape), b) if f is ar else np.reshape(b, shape)
    return [ar.binary("add", ar.binary("mul", x, a2), b2)]


@op("MaxPool", "AveragePool")
def pool(c: Call) -> list[Any]:
    """Windows (exact moves), then their max (exact) or their sum divided by the count (the
    device's adds and division; padding counted only with ``count_include_pad``)."""
    ar = c.arith
    spatial = c.raw(0).shape[2:]
    kernel = list(c.attrs["kernel_shape"])
    strides, pads, dilations = conv_geometry(c, spatial, kernel)
    if c.attrs.get("ceil_mode", 0):
        pads = _ceil_pads(spatial, kernel, strides, pads, dilations)
    d = len(kernel)
    axes = list(range(2, 2 + d))
    if c.op == "MaxPool":
        w = ar.windows(c.arg(0), kernel, strides=strides, pads=pads, dilations=dilations, fill=-np.inf)
        return [ar.reduce_max(w, axes)]
    w = ar.windows(c.arg(0), kernel, strides=strides, pads=pads, dilations=dilations)
    total = ar.sum(w, axes)
    if c.attrs.get("count_include_pad", 0) or not any(p for pair in pads for p in pair):
        return [ar.binary("div", total, float(math.prod(kernel)))]
    ones = np.ones((1, 1, *spatial), dtype=c.raw(0).dtype)
    counts = np.sum(_np_windows(ones, kernel, strides, pads, dilations), axis=tuple(axes))
    return [ar.binary("div", total, counts.astype(c.raw(0).dtype))]


def _np_windows(x: np.ndarray, kernel: Any, strides: Any, pads: Any, dilations: Any) -> np.ndarray:
    from hwbench.evaluator.arith import _patches

    return np.asarray(_patches(np, x, kernel, strides, pads, dilations))


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


@op("GlobalAveragePool", "GlobalMaxPool")
def global_pool(c: Call) -> list[Any]:
    ar = c.arith
    shape = c.raw(0).shape
    axes = list(range(2, len(shape)))
    if c.op == "GlobalMaxPool":
        return [ar.reduce_max(c.arg(0), axes, True)]
    return [ar.binary("div", ar.sum(c.arg(0), axes, True), float(math.prod(shape[2:])))]


@op("Sum", "Mean")
def variadic_sum(c: Call) -> list[Any]:
    """The inputs added left to right (then divided by their count for Mean)."""
    ar = c.arith
    acc = c.arg(0)
    for v in c.args[1:]:
        acc = ar.binary("add", acc, v)
    if c.op == "Mean":
        acc = ar.binary("div", acc, float(len(c.args)))
    return [acc]


@op("Dropout")
def dropout(c: Call) -> list[Any]:
    """Inference: the identity (and an all-true mask where one is asked for)."""
    outs: list[Any] = [c.arg(0)]
    if len(c.node.output) > 1 and c.node.output[1]:
        outs.append(c.xp.ones(c.raw(0).shape, dtype=bool))
    return outs
