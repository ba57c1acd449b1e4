"""Ops that move data and compute nothing: shapes, reshapes, slices, padding, constants, casts.

Every one is exact on every device (no number is created), so each goes through
:meth:`Arith.move`, which keeps what is known of the values' format. A ``Cast`` between float
types is a rounding of the engine (float to a narrower float), and only that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.evaluator.onnx.dtypes import element_dtype
from hwbench.evaluator.onnx.op_table import op

if TYPE_CHECKING:
    from hwbench.evaluator.onnx.call import Call


def ints(a: np.ndarray | None) -> list[int]:
    return [] if a is None else [int(v) for v in np.asarray(a).reshape(-1)]


def _axes(c: Call, what: str) -> list[int]:
    """Axes from input 1 (opset 13 on) or the ``axes`` attribute."""
    given = c.const(1, f"{what}'s axes") if len(c.args) > 1 else None
    if given is not None:
        return ints(given)
    return [int(a) for a in c.attrs.get("axes", [])]


@op("Identity")
def identity(c: Call) -> list[Any]:
    return [c.arg(0)]


@op("Reshape")
def reshape(c: Call) -> list[Any]:
    target = c.const(1, "Reshape's shape")
    shape = ints(target) if target is not None else [int(s) for s in c.attrs.get("shape", [])]
    src = c.raw(0).shape
    if not c.attrs.get("allowzero", 0):
        shape = [src[i] if s == 0 else s for i, s in enumerate(shape)]
    return [c.arith.move(lambda v: c.xp.reshape(v, shape), c.arg(0))]


@op("Flatten")
def flatten(c: Call) -> list[Any]:
    shape = c.raw(0).shape
    axis = int(c.attrs.get("axis", 1))
    axis = axis + len(shape) if axis < 0 else axis
    lead = int(np.prod(shape[:axis], dtype=np.int64))
    return [c.arith.move(lambda v: c.xp.reshape(v, (lead, -1)), c.arg(0))]


@op("Transpose")
def transpose(c: Call) -> list[Any]:
    perm = c.attrs.get("perm")
    return [c.arith.move(lambda v: c.xp.transpose(v, perm), c.arg(0))]


@op("Squeeze")
def squeeze(c: Call) -> list[Any]:
    ndim = c.raw(0).ndim
    axes = _axes(c, "Squeeze")
    axis = tuple(a % ndim for a in axes) if axes else tuple(i for i, d in enumerate(c.raw(0).shape) if d == 1)
    return [c.arith.move(lambda v: c.xp.squeeze(v, axis=axis), c.arg(0))]


@op("Unsqueeze")
def unsqueeze(c: Call) -> list[Any]:
    axes = _axes(c, "Unsqueeze")
    rank = c.raw(0).ndim + len(axes)

    def fn(v: Any) -> Any:
        for a in sorted(a % rank for a in axes):
            v = c.xp.expand_dims(v, a)
        return v

    return [c.arith.move(fn, c.arg(0))]


@op("Concat")
def concat(c: Call) -> list[Any]:
    axis = int(c.attrs.get("axis", 1 if c.opset < 4 else 0))
    present = [v for v in c.args if v is not None]
    return [c.arith.move(lambda *vs: c.xp.concatenate([c.xp.asarray(v) for v in vs], axis=axis), *present)]


def _slice_index(shape: Any, starts: list[int], ends: list[int], axes: list[int], steps: list[int]) -> tuple[Any, ...]:
    """numpy indices of an ONNX Slice: bounds clamped as the standard says (to [-1, dim - 1] with
    a negative step, so that a slice may run through index 0)."""
    index: list[Any] = [slice(None)] * len(shape)
    lim = 2**62
    for s, e, a, k in zip(starts, ends, axes, steps):
        a = int(a) % len(shape)
        start, stop, step = slice(max(min(s, lim), -lim), max(min(e, lim), -lim), k).indices(shape[a])
        index[a] = slice(start, None if stop < 0 else stop, step)
    return tuple(index)


@op("Slice")
def slice_(c: Call) -> list[Any]:
    shape = c.raw(0).shape
    if c.opset < 10:
        starts, ends = [int(v) for v in c.attrs["starts"]], [int(v) for v in c.attrs["ends"]]
        axes = [int(v) for v in c.attrs.get("axes", range(len(starts)))]
        steps = [1] * len(starts)
    else:
        starts = ints(c.const(1, "Slice's starts"))
        ends = ints(c.const(2, "Slice's ends"))
        given_axes, given_steps = c.const(3, "Slice's axes"), c.const(4, "Slice's steps")
        axes = ints(given_axes) if given_axes is not None else list(range(len(starts)))
        steps = ints(given_steps) if given_steps is not None else [1] * len(starts)
    index = _slice_index(shape, starts, ends, axes, steps)
    return [c.arith.move(lambda v: v[index], c.arg(0))]


@op("Expand")
def expand(c: Call) -> list[Any]:
    target = tuple(ints(c.const(1, "Expand's shape")))
    shape = np.broadcast_shapes(c.raw(0).shape, target)
    return [c.arith.move(lambda v: c.xp.broadcast_to(v, shape), c.arg(0))]


@op("Tile")
def tile(c: Call) -> list[Any]:
    if c.opset < 6:
        raise UsageError(f"node '{c.name}' (Tile): the opset-1 form is not supported")
    reps = tuple(ints(c.const(1, "Tile's repeats")))
    return [c.arith.move(lambda v: c.xp.tile(v, reps), c.arg(0))]


@op("Split")
def split(c: Call) -> list[Any]:
    x = c.raw(0)
    axis = int(c.attrs.get("axis", 0)) % x.ndim
    given = c.const(1, "Split's sizes") if len(c.args) > 1 else None
    if given is not None:
        sizes = ints(given)
    elif "split" in c.attrs:
        sizes = [int(s) for s in c.attrs["split"]]
    else:
        parts = int(c.attrs.get("num_outputs", len(c.node.output)))
        n = x.shape[axis]
        sizes = [-(-n // parts)] * (parts - 1)
        sizes.append(n - sum(sizes))
    cuts = np.cumsum(sizes)[:-1].tolist()
    return [c.arith.move(lambda v, i=i: c.xp.split(v, cuts, axis=axis)[i], c.arg(0)) for i in range(len(sizes))]


@op("Shape")
def shape(c: Call) -> list[Any]:
    dims = np.asarray(c.raw(0).shape, dtype=np.int64)
    start, end = int(c.attrs.get("start", 0)), c.attrs.get("end")
    return [dims[start : None if end is None else int(end)]]


@op("Size")
def size(c: Call) -> list[Any]:
    return [np.asarray(int(np.prod(c.raw(0).shape, dtype=np.int64)), dtype=np.int64)]


@op("Constant")
def constant(c: Call) -> list[Any]:
    from onnx import numpy_helper

    a = c.attrs
    if "value" in a:
        return [numpy_helper.to_array(a["value"])]
    for key, dtype in (("value_float", np.float32), ("value_int", np.int64), ("value_floats", np.float32)):
        if key in a:
            return [np.asarray(a[key], dtype=dtype)]
    if "value_ints" in a:
        return [np.asarray(a["value_ints"], dtype=np.int64)]
    raise UsageError(f"node '{c.name}': Constant with attributes {sorted(a)} is not supported")


@op("ConstantOfShape")
def constant_of_shape(c: Call) -> list[Any]:
    from onnx import numpy_helper

    fill = numpy_helper.to_array(c.attrs["value"]) if "value" in c.attrs else np.zeros(1, np.float32)
    dims = tuple(ints(c.const(0, "ConstantOfShape's shape")))
    return [np.full(dims, fill.reshape(-1)[0], dtype=fill.dtype)]


@op("EyeLike")
def eye_like(c: Call) -> list[Any]:
    rows, cols = c.raw(0).shape
    dtype = element_dtype(int(c.attrs["dtype"])) if "dtype" in c.attrs else c.raw(0).dtype
    return [np.eye(rows, cols, k=int(c.attrs.get("k", 0)), dtype=dtype)]


@op("Range")
def range_(c: Call) -> list[Any]:
    """Compile-time only: the result's length depends on the values."""
    start, limit, delta = (c.const(i, "Range's bounds") for i in range(3))
    assert start is not None and limit is not None and delta is not None
    n = max(int(np.ceil((limit - start) / delta)), 0)
    return [(start + np.arange(n, dtype=start.dtype) * delta).astype(start.dtype)]


@op("Cast")
def cast(c: Call) -> list[Any]:
    return [c.arith.cast(c.arg(0), element_dtype(int(c.attrs["to"])))]


@op("CastLike")
def cast_like(c: Call) -> list[Any]:
    return [c.arith.cast(c.arg(0), c.raw(1).dtype)]


@op("Pad")
def pad(c: Call) -> list[Any]:
    """Constant (the value is a constant of the model), reflect, edge or wrap padding: exact moves;
    a negative pad crops."""
    ar, xp = c.arith, c.xp
    ndim = c.raw(0).ndim
    mode = c.attrs.get("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if c.opset < 11:
        pads, value = (
            [int(p) for p in c.attrs.get("pads", c.attrs.get("paddings", []))],
            float(c.attrs.get("value", 0.0)),
        )
        axes = list(range(ndim))
    else:
        pads = ints(c.const(1, "Pad's pads"))
        given = c.const(2, "Pad's constant value") if len(c.args) > 2 else None
        value = float(np.asarray(given).reshape(-1)[0]) if given is not None and given.size else 0.0
        axes_given = c.const(3, "Pad's axes") if len(c.args) > 3 else None
        axes = [a % ndim for a in ints(axes_given)] if axes_given is not None else list(range(ndim))
    k = len(axes)
    widths = [(0, 0)] * ndim
    for i, a in enumerate(axes):
        widths[a] = (pads[i], pads[i + k])
    grow = [(max(0, b), max(0, e)) for b, e in widths]
    crop = tuple(slice(-min(0, b), (None if e >= 0 else e)) for b, e in widths)

    def fn(v: Any) -> Any:
        if mode == "constant":
            out = xp.pad(v, grow, constant_values=np.asarray(value, dtype=v.dtype))
        else:
            out = xp.pad(v, grow, mode={"edge": "edge", "reflect": "reflect", "wrap": "wrap"}[mode])
        return out[crop]

    if mode == "constant" and value != 0.0:  # a new number: its format is the carrier's
        return [ar.lift(fn(ar.lower(c.arg(0))))]
    return [ar.move(fn, c.arg(0))]


@op("DepthToSpace", "SpaceToDepth")
def depth_space(c: Call) -> list[Any]:
    xp = c.xp
    n, ch, h, w = c.raw(0).shape
    b = int(c.attrs["blocksize"])
    mode = c.attrs.get("mode", b"DCR")
    crd = (mode.decode() if isinstance(mode, bytes) else mode) == "CRD"

    def fn(v: Any) -> Any:
        if c.op == "SpaceToDepth":
            v = xp.reshape(v, (n, ch, h // b, b, w // b, b))
            return xp.reshape(xp.transpose(v, (0, 3, 5, 1, 2, 4)), (n, ch * b * b, h // b, w // b))
        if crd:
            v = xp.reshape(v, (n, ch // (b * b), b, b, h, w))
            v = xp.transpose(v, (0, 1, 4, 2, 5, 3))
        else:
            v = xp.reshape(v, (n, b, b, ch // (b * b), h, w))
            v = xp.transpose(v, (0, 3, 4, 1, 5, 2))
        return xp.reshape(v, (n, ch // (b * b), h * b, w * b))

    return [c.arith.move(fn, c.arg(0))]


@op("Trilu")
def trilu(c: Call) -> list[Any]:
    k = ints(c.const(1, "Trilu's k"))[0] if len(c.args) > 1 and c.arg(1) is not None else 0
    fn = c.xp.triu if c.attrs.get("upper", 1) else c.xp.tril
    return [c.arith.move(lambda v: fn(v, k), c.arg(0))]
