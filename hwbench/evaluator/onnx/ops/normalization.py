"""Normalisations: BatchNormalization, LayerNormalization, InstanceNormalization,
GroupNormalization, MeanVarianceNormalization, LRN.

The statistics are the device's arithmetic: the mean a sum (in the device's adder order) divided
by the count, the variance the mean of the squared deviations from it (two passes, as XLA's
``jax.nn`` / Flax layer norm and ONNX Runtime's instance norm compute it), ``1 / sqrt(var + eps)``
the device's ``rsqrt`` (one POW-class function: CUDA's ``rsqrtf`` where XLA emits ``rsqrt`` on a
GPU). ``MeanVarianceNormalization`` is its schema's function body (``E[x^2] - E[x]^2``: the
cancellation a device's rounding can expose).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.evaluator.onnx.op_table import op

if TYPE_CHECKING:
    from hwbench.evaluator.arith import Arith
    from hwbench.evaluator.onnx.call import Call


def _scalar(x: Any, ar: Arith, value: float) -> np.ndarray:
    return np.asarray(value, dtype=ar.lower(x).dtype)


def _reshaped(c: Call, value: Any, shape: tuple[int, ...]) -> Any:
    """A per-channel parameter reshaped to broadcast (a constant stays a host array)."""
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return value.reshape(shape)
    return c.arith.move(lambda v: c.xp.reshape(v, shape), value)


@op("BatchNormalization")
def batch_norm(c: Call) -> list[Any]:
    """Inference form: ``x * a + b`` per channel with ``a = scale / sqrt(var + eps)`` and
    ``b = bias - mean * a``. With constant statistics ``a`` and ``b`` are folded on the host, as
    TensorRT and ONNX Runtime fold them; the multiply and the add are the chip's. Opsets 6 to 8's
    ``spatial=0`` gives statistics per activation, not per channel; training mode is refused."""
    if (c.opset < 7 and c.attrs.get("is_test", 0) == 0 and len(c.node.output) > 1) or c.attrs.get("training_mode", 0):
        raise UsageError(f"node '{c.name}' (BatchNormalization): training mode is not supported; export for inference")
    x = c.arg(0)
    ar, f = c.arith, c.folding(1, 2, 3, 4)
    eps = float(c.attrs.get("epsilon", 1e-5))
    dtype = c.raw(0).dtype
    a = f.binary("div", c.arg(1), f.function("sqrt", f.binary("add", c.arg(4), np.asarray(eps, dtype))))
    b = f.binary("sub", c.arg(2), f.binary("mul", c.arg(3), a))
    stat = tuple(np.shape(f.lower(a)))
    per_activation = len(stat) > 1 or (c.opset < 9 and c.attrs.get("spatial", 1) == 0)
    d = c.raw(0).ndim - 2
    shape = (1, *stat) if per_activation else (1, -1) + (1,) * d
    a2 = ar.move(lambda v: c.xp.reshape(v, shape), a) if f is ar else np.reshape(a, shape)
    b2 = ar.move(lambda v: c.xp.reshape(v, shape), b) if f is ar else np.reshape(b, shape)
    return [ar.binary("add", ar.binary("mul", x, a2), b2)]


def normalise(ar: Arith, x: Any, axes: list[int], eps: float) -> tuple[Any, Any, Any]:
    """(x - mean) * rsqrt(var + eps) over ``axes``, with the mean and the inverse deviation (kept
    dimensions): the device's sums, divisions, products and rsqrt."""
    count = float(math.prod(ar.lower(x).shape[a] for a in axes))
    mean = ar.binary("div", ar.sum(x, axes, True), count)
    centred = ar.binary("sub", x, mean)
    var = ar.binary("div", ar.sum(ar.binary("mul", centred, centred), axes, True, once=False), count)
    inv = ar.function("rsqrt", ar.binary("add", var, _scalar(x, ar, eps)))
    return ar.binary("mul", centred, inv), mean, inv


def _affine(ar: Arith, y: Any, scale: Any, bias: Any) -> Any:
    if scale is not None:
        y = ar.binary("mul", y, scale)
    if bias is not None:
        y = ar.binary("add", y, bias)
    return y


@op("LayerNormalization")
def layer_norm(c: Call) -> list[Any]:
    """Normalised over the axes from ``axis`` on, then ``* scale + bias``; the optional outputs
    are the mean and the inverse standard deviation."""
    ar = c.arith
    ndim = c.raw(0).ndim
    axis = int(c.attrs.get("axis", -1)) % ndim
    y, mean, inv = normalise(ar, c.arg(0), list(range(axis, ndim)), float(c.attrs.get("epsilon", 1e-5)))
    return [_affine(ar, y, c.arg(1), c.arg(2)), mean, inv][: len(c.node.output)]


@op("InstanceNormalization")
def instance_norm(c: Call) -> list[Any]:
    """Normalised per sample and channel over the spatial axes, then per-channel scale and bias."""
    ar = c.arith
    ndim = c.raw(0).ndim
    y, _, _ = normalise(ar, c.arg(0), list(range(2, ndim)), float(c.attrs.get("epsilon", 1e-5)))
    shape = (1, -1) + (1,) * (ndim - 2)
    return [_affine(ar, y, _reshaped(c, c.arg(1), shape), _reshaped(c, c.arg(2), shape))]


@op("GroupNormalization")
def group_norm(c: Call) -> list[Any]:
    """Channels split into ``num_groups``, each normalised over its channels and the spatial axes;
    scale and bias per channel (opset 21) or per group (opset 18)."""
    ar, xp = c.arith, c.xp
    shape = tuple(c.raw(0).shape)
    groups = int(c.attrs["num_groups"])
    grouped = (shape[0], groups, -1)
    x = ar.move(lambda v: xp.reshape(v, grouped), c.arg(0))
    y, _, _ = normalise(ar, x, [2], float(c.attrs.get("epsilon", 1e-5)))
    if c.opset < 21:
        y = _affine(ar, y, _reshaped(c, c.arg(1), (1, groups, 1)), _reshaped(c, c.arg(2), (1, groups, 1)))
        return [ar.move(lambda v: xp.reshape(v, shape), y)]
    y = ar.move(lambda v: xp.reshape(v, shape), y)
    per_channel = (1, -1) + (1,) * (len(shape) - 2)
    return [_affine(ar, y, _reshaped(c, c.arg(1), per_channel), _reshaped(c, c.arg(2), per_channel))]


@op("MeanVarianceNormalization")
def mean_variance_norm(c: Call) -> list[Any]:
    """The schema's body: ``(x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9)`` over ``axes``."""
    ar = c.arith
    x = c.arg(0)
    axes = [int(a) % c.raw(0).ndim for a in c.attrs.get("axes", [0, 2, 3])]
    count = float(math.prod(c.raw(0).shape[a] for a in axes))
    mean = ar.binary("div", ar.sum(x, axes, True), count)
    mean_sq = ar.binary("div", ar.sum(ar.binary("mul", x, x), axes, True), count)
    std = ar.function("sqrt", ar.binary("sub", mean_sq, ar.binary("mul", mean, mean)))
    return [ar.binary("div", ar.binary("sub", x, mean), ar.binary("add", std, _scalar(x, ar, 1e-9)))]


@op("LRN")
def lrn(c: Call) -> list[Any]:
    """``x * (bias + alpha / size * sum of x^2 over the channel window) ^ -beta`` (ONNX Runtime's
    CPU kernel: a power with the negated exponent, then a product)."""
    ar, xp = c.arith, c.xp
    x = c.arg(0)
    size = int(c.attrs["size"])
    alpha, beta, bias = (float(c.attrs.get(k, d)) for k, d in (("alpha", 1e-4), ("beta", 0.75), ("bias", 1.0)))
    channels = c.raw(0).shape[1]
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    square = ar.binary("mul", x, x)

    def windows(v: Any) -> Any:
        pad = [(0, 0)] * v.ndim
        pad[1] = (before, after)
        padded = xp.pad(v, pad)
        return xp.stack([padded[:, i : i + channels] for i in range(size)], axis=0)

    total = ar.sum(ar.move(windows, square), [0], once=False)
    scale = ar.binary("add", _scalar(x, ar, bias), ar.binary("mul", _scalar(x, ar, alpha / size), total))
    return [ar.binary("mul", x, ar.power(scale, _scalar(x, ar, -beta)))]
