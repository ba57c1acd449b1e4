"""Resize (opsets 10 to 19) and Upsample (7 to 9): nearest, linear and cubic interpolation.

The sample positions and the interpolation weights depend on shapes and attributes only: they are
computed on the host (a compiler's constants, in float64 then stored in the value's type). Each
resized axis is interpolated in turn (separable, as ``jax.image.resize`` does): nearest is an exact
gather; linear and cubic are, per output element, the neighbours' products with their weights
summed in order with the device's arithmetic. Coordinate modes follow the ONNX standard.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.evaluator.onnx.op_table import op

if TYPE_CHECKING:
    from hwbench.evaluator.onnx.call import Call


def _text(value: Any, default: str) -> str:
    if value is None:
        return default
    return value.decode() if isinstance(value, bytes) else str(value)


def _targets(c: Call) -> tuple[list[int], list[float], np.ndarray | None]:
    """(output sizes, scales, roi) of every axis, from Upsample's or Resize's inputs."""
    shape = list(c.raw(0).shape)
    if c.op == "Upsample":
        given = c.attrs.get("scales") if c.opset < 9 else c.const(1, "Upsample's scales")
        scales = [float(s) for s in np.asarray(given).reshape(-1)]
        return [math.floor(n * s) for n, s in zip(shape, scales)], scales, None
    roi = c.const(1, "Resize's roi") if c.opset >= 11 else None
    index = 2 if c.opset >= 11 else 1
    scales_given = c.const(index, "Resize's scales")
    sizes_given = c.const(3, "Resize's sizes") if c.opset >= 11 and len(c.args) > 3 else None
    axes = [int(a) % len(shape) for a in c.attrs.get("axes", range(len(shape)))]
    sizes, scales = list(shape), [1.0] * len(shape)
    if sizes_given is not None and sizes_given.size:
        for a, n in zip(axes, sizes_given.reshape(-1)):
            sizes[a], scales[a] = int(n), int(n) / shape[a]
        policy = _text(c.attrs.get("keep_aspect_ratio_policy"), "stretch")
        if policy in ("not_larger", "not_smaller"):  # one scale for every axis, sizes rounded half up
            common = (min if policy == "not_larger" else max)(scales[a] for a in axes)
            for a in axes:
                scales[a], sizes[a] = common, int(common * shape[a] + 0.5)
        elif policy != "stretch":
            raise UsageError(f"node '{c.name}' (Resize): keep_aspect_ratio_policy '{policy}' is not supported")
    elif scales_given is not None and scales_given.size:
        for a, s in zip(axes, scales_given.reshape(-1)):
            scales[a], sizes[a] = float(s), math.floor(shape[a] * float(s))
    if roi is not None and roi.size:
        full = np.tile(np.array([[0.0], [1.0]]), (1, len(shape)))
        full[:, axes] = np.asarray(roi, dtype=np.float64).reshape(2, -1)
        roi = full
    else:
        roi = None
    return sizes, scales, roi


def _source(mode: str, out: int, size_in: int, scale: float, roi: tuple[float, float] | None) -> np.ndarray:
    """The input coordinate of every output position (the standard's coordinate_transformation_mode;
    ``width`` is the unrounded output length ``scale * size_in``)."""
    x = np.arange(out, dtype=np.float64)
    width = scale * size_in
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        offset = size_in / 2 * (1 - out / width)
        return offset + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if width > 1 else np.full(out, -0.5)
    if mode == "align_corners":
        return x * (size_in - 1) / (width - 1) if width != 1 else np.zeros(out)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    if mode == "tf_crop_and_resize":
        start, end = roi if roi is not None else (0.0, 1.0)
        if width > 1:
            return start * (size_in - 1) + x * (end - start) * (size_in - 1) / (width - 1)
        return np.full(out, start * (size_in - 1) + (end - start) * (size_in - 1) / 2)
    raise UsageError(f"Resize: coordinate_transformation_mode '{mode}' is not supported")


def _nearest(where: np.ndarray, rule: str) -> np.ndarray:
    half = where - np.floor(where) == 0.5
    if rule == "round_prefer_floor":
        out = np.where(half, np.floor(where), np.round(where))
    elif rule == "round_prefer_ceil":
        out = np.where(half, np.ceil(where), np.round(where))
    elif rule in ("floor", "ceil"):
        out = np.floor(where) if rule == "floor" else np.ceil(where)
    else:
        raise UsageError(f"Resize: nearest_mode '{rule}' is not supported")
    return np.asarray(out)


def _cubic(t: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution weights of the four neighbours at offsets -1, 0, 1, 2 (t in [0, 1))."""
    d = np.stack([1 + t, t, 1 - t, 2 - t], axis=-1)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.asarray(np.where(d <= 1, near, far))


def _taps(
    c: Call, axis: int, size_in: int, out: int, scale: float, roi: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(neighbour indices (out, taps), weights (out, taps), inside mask (out,)) along one axis."""
    mode = _text(c.attrs.get("mode"), "nearest")
    coord_default = "asymmetric" if c.op == "Upsample" or c.opset < 11 else "half_pixel"
    coord = _text(c.attrs.get("coordinate_transformation_mode"), coord_default)
    where = _source(coord, out, size_in, scale, None if roi is None else (float(roi[0, axis]), float(roi[1, axis])))
    inside = (where >= 0) & (where <= size_in - 1) if coord == "tf_crop_and_resize" else np.ones(out, bool)
    if mode == "nearest":
        rule = (
            "floor" if c.op == "Upsample" or c.opset < 11 else _text(c.attrs.get("nearest_mode"), "round_prefer_floor")
        )
        index = np.clip(_nearest(where, rule), 0, size_in - 1).astype(np.int64)
        return index[:, None], np.ones((out, 1)), inside
    base = np.floor(where)
    t = where - base
    if mode in ("linear", "bilinear", "trilinear"):
        offsets, weights = np.array([0, 1]), np.stack([1 - t, t], axis=-1)
    elif mode in ("cubic", "bicubic"):
        offsets, weights = np.array([-1, 0, 1, 2]), _cubic(t, float(c.attrs.get("cubic_coeff_a", -0.75)))
    else:
        raise UsageError(f"node '{c.name}' ({c.op}): mode '{mode}' is not supported")
    index = base.astype(np.int64)[:, None] + offsets[None, :]
    if c.attrs.get("exclude_outside", 0):
        weights = np.where((index >= 0) & (index < size_in), weights, 0.0)
        weights = weights / weights.sum(axis=1, keepdims=True)
    return np.clip(index, 0, size_in - 1), weights, inside


@op("Resize", "Upsample")
def resize(c: Call) -> list[Any]:
    if c.attrs.get("antialias", 0):
        raise UsageError(f"node '{c.name}' (Resize): antialias is not supported")
    ar, xp = c.arith, c.xp
    shape = list(c.raw(0).shape)
    sizes, scales, roi = _targets(c)
    dtype = c.raw(0).dtype
    fill = np.asarray(float(c.attrs.get("extrapolation_value", 0.0)), dtype)
    x = c.arg(0)
    for axis, (n, out) in enumerate(zip(shape, sizes)):
        if n == out and scales[axis] == 1.0:
            continue
        index, weights, inside = _taps(c, axis, n, out, scales[axis], roi)
        acc = None
        for k in range(index.shape[1]):
            picked = ar.move(lambda v, i=index[:, k], a=axis: xp.take(v, i, axis=a), x)
            if weights.shape[1] == 1:
                acc = picked
                continue
            w = weights[:, k].astype(dtype).reshape((-1, *(1,) * (len(shape) - axis - 1)))
            term = ar.binary("mul", picked, w)
            acc = term if acc is None else ar.binary("add", acc, term)
        if not inside.all():
            mask = inside.reshape((-1, *(1,) * (len(shape) - axis - 1)))
            acc = ar.where(mask, acc, fill)
        x = acc
    return [x]
