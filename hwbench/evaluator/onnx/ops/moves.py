"""Ops that move data and compute nothing: shapes, reshapes, slices, gathers, constants, casts.

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


def _axes(c: Call, what: str) -> list[int]:
    """Axes from input 1 (opset 13 on) or the ``axes`` attribute."""
    given = c.const(1, f"{what}'s axes") if len(c.args) > 1 else None
    if given is not None:
        return [int(a) for a in given.reshape(-1)]
    return [int(a) for a in c.attrs.get("axes", [])]


@op("Identity")
def identity(c: Call) -> list[Any]:
    return [c.arg(0)]


@op("Reshape")
def reshape(c: Call) -> list[Any]:
    target = c.const(1, "Reshape's shape")
    shape = [int(s) for s in (target.reshape(-1) if target is not None else c.attrs.get("shape", []))]
    src = c.raw(0).shape
    if not c.attrs.get("allowzero", 0):
        shape = [src[i] if s == 0 else s for i, s in enumerate(shape)]
    return [c.arith.move(lambda v: c.xp.reshape(v, shape), c.arg(0))]


@op("Flatten")
def flatten(c: Call) -> list[Any]:
    shape = c.raw(0).shape
    axis = int(c.attrs.get("axis", 1)) % (len(shape) + 1) if shape else 0
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
    axis = int(c.attrs.get("axis", 0))
    present = [v for v in c.args if v is not None]
    return [c.arith.move(lambda *vs: c.xp.concatenate([c.xp.asarray(v) for v in vs], axis=axis), *present)]


@op("Slice")
def slice_(c: Call) -> list[Any]:
    shape = c.raw(0).shape
    if c.opset < 10:
        starts, ends = list(c.attrs["starts"]), list(c.attrs["ends"])
        axes = list(c.attrs.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = list(_ints(c.const(1, "Slice's starts")))
        ends = list(_ints(c.const(2, "Slice's ends")))
        given_axes, given_steps = c.const(3, "Slice's axes"), c.const(4, "Slice's steps")
        axes = list(_ints(given_axes)) if given_axes is not None else list(range(len(starts)))
        steps = list(_ints(given_steps)) if given_steps is not None else [1] * len(starts)
    index = [slice(None)] * len(shape)
    for s, e, a, k in zip(starts, ends, axes, steps):
        a = int(a) % len(shape)
        lim = 2**62
        index[a] = slice(*slice(max(min(s, lim), -lim), max(min(e, lim), -lim), k).indices(shape[a]))
    return [c.arith.move(lambda v: v[tuple(index)], c.arg(0))]


def _ints(a: np.ndarray | None) -> list[int]:
    return [] if a is None else [int(v) for v in a.reshape(-1)]


@op("Gather")
def gather(c: Call) -> list[Any]:
    rank = max(c.raw(0).ndim, 1)
    axis = int(c.attrs.get("axis", 0)) % rank
    index = c.raw(1)
    size = c.raw(0).shape[axis]
    index = c.xp.where(index < 0, index + size, index)
    return [c.arith.move(lambda v, i: c.xp.take(v, i, axis=axis), c.arg(0), index)]


@op("Expand")
def expand(c: Call) -> list[Any]:
    target = tuple(_ints(c.const(1, "Expand's shape")))
    shape = np.broadcast_shapes(c.raw(0).shape, target)
    return [c.arith.move(lambda v: c.xp.broadcast_to(v, shape), c.arg(0))]


@op("Tile")
def tile(c: Call) -> list[Any]:
    reps = tuple(_ints(c.const(1, "Tile's repeats")))
    return [c.arith.move(lambda v: c.xp.tile(v, reps), c.arg(0))]


@op("Split")
def split(c: Call) -> list[Any]:
    x = c.raw(0)
    axis = int(c.attrs.get("axis", 0)) % x.ndim
    given = c.const(1, "Split's sizes") if len(c.args) > 1 else None
    outputs = len(c.node.output)
    if given is not None:
        sizes = _ints(given)
    elif "split" in c.attrs:
        sizes = [int(s) for s in c.attrs["split"]]
    else:
        parts = int(c.attrs.get("num_outputs", outputs))
        n = x.shape[axis]
        sizes = [-(-n // parts)] * (parts - 1)
        sizes.append(n - sum(sizes))
    cuts = np.cumsum(sizes)[:-1].tolist()
    pieces = c.xp.split(x, cuts, axis=axis)
    return [c.arith.move(lambda v, p=p: p, c.arg(0)) for p in pieces]


@op("Shape")
def shape(c: Call) -> list[Any]:
    dims = np.asarray(c.raw(0).shape, dtype=np.int64)
    start, end = c.attrs.get("start", 0), c.attrs.get("end", len(dims))
    return [dims[start:end]]


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
    dims = tuple(_ints(c.const(0, "ConstantOfShape's shape")))
    return [np.full(dims, fill.reshape(-1)[0], dtype=fill.dtype)]


@op("Cast")
def cast(c: Call) -> list[Any]:
    return [c.arith.cast(c.arg(0), element_dtype(int(c.attrs["to"])))]
