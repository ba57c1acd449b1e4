"""Indexing ops: gathers, scatters, one-hot, top-k, cumulative sums, sequence reversal.

Gathers are the device's gather (:meth:`Arith.gather`: exact, or through the matrix unit where a
chip lowers gathers to one-hot products); element gathers and scatters without a reduction are
exact moves. A scatter with a reduction (add, mul, max, min) applies the updates in their order,
each with the device's arithmetic: the updates are grouped by how many earlier updates hit the same
element, and each group is one elementwise operation. That needs the indices at compile time on an
emulated device. Ops whose result's shape depends on values (NonZero, Compress) run only on
compile-time constants.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.evaluator.onnx.op_table import op
from hwbench.evaluator.onnx.ops.moves import ints

if TYPE_CHECKING:
    from hwbench.evaluator.onnx.call import Call


def _positive(xp: Any, index: Any, size: int) -> Any:
    """Negative indices counted from the end."""
    return xp.where(index < 0, index + size, index)


@op("Gather")
def gather(c: Call) -> list[Any]:
    rank = max(c.raw(0).ndim, 1)
    axis = int(c.attrs.get("axis", 0)) % rank
    xp = c.xp if not isinstance(c.raw(1), np.ndarray) else np
    index = _positive(xp, c.raw(1), c.raw(0).shape[axis])
    return [c.arith.gather(c.arg(0), index, axis)]


@op("GatherElements")
def gather_elements(c: Call) -> list[Any]:
    xp = c.xp
    axis = int(c.attrs.get("axis", 0)) % c.raw(0).ndim
    index = _positive(xp, c.raw(1), c.raw(0).shape[axis])
    return [c.arith.move(lambda v, i: xp.take_along_axis(v, i, axis=axis), c.arg(0), index)]


@op("GatherND")
def gather_nd(c: Call) -> list[Any]:
    xp = c.xp
    data_shape = c.raw(0).shape
    b = int(c.attrs.get("batch_dims", 0))
    index = c.raw(1)
    depth = index.shape[-1]
    index = _positive(xp, index, xp.asarray(data_shape[b : b + depth]))

    def fn(v: Any, idx: Any) -> Any:
        lead = math.prod(data_shape[:b])
        v = xp.reshape(xp.asarray(v), (lead, *data_shape[b:]))
        idx = xp.reshape(idx, (lead, -1, depth))
        batch = xp.arange(lead)[:, None]
        picked = v[(batch, *(idx[..., k] for k in range(depth)))]  # lead, m, *rest
        return xp.reshape(picked, (*index.shape[:-1], *data_shape[b + depth :]))

    return [c.arith.move(fn, c.arg(0), index)]


def _element_positions(c: Call, index: Any, axis: int) -> Any:
    """Flat positions in the data of ScatterElements' updates (every index resolved on ``axis``)."""
    xp = c.xp if not isinstance(index, np.ndarray) else np
    shape = c.raw(0).shape
    index = _positive(xp, index, shape[axis])
    grids = list(xp.meshgrid(*(xp.arange(n) for n in index.shape), indexing="ij"))
    grids[axis] = index
    return _ravel(xp, grids, shape)


def _ravel(xp: Any, coords: list[Any], shape: Any) -> Any:
    flat = coords[0] * 0
    for coord, n in zip(coords, shape):
        flat = flat * n + coord
    return xp.reshape(flat, (-1,))


def _nd_positions(c: Call, index: Any) -> Any:
    xp = c.xp if not isinstance(index, np.ndarray) else np
    shape = c.raw(0).shape
    depth = index.shape[-1]
    index = _positive(xp, index, xp.asarray(shape[:depth]))
    flat = _ravel(xp, [index[..., k] for k in range(depth)], shape[:depth])  # one per update slice
    inner = math.prod(shape[depth:])
    return xp.reshape(flat[:, None] * inner + xp.arange(inner)[None, :], (-1,))


@op("ScatterElements", "Scatter")
def scatter_elements(c: Call) -> list[Any]:
    axis = int(c.attrs.get("axis", 0)) % c.raw(0).ndim
    return [_scatter(c, _element_positions(c, c.raw(1), axis))]


@op("ScatterND")
def scatter_nd(c: Call) -> list[Any]:
    return [_scatter(c, _nd_positions(c, c.raw(1)))]


def _scatter(c: Call, positions: Any) -> Any:
    """Data with the updates written (or combined by ``reduction``) at flat ``positions``."""
    ar, xp = c.arith, c.xp
    shape = c.raw(0).shape
    reduction = c.attrs.get("reduction", b"none")
    reduction = reduction.decode() if isinstance(reduction, bytes) else str(reduction)
    data = ar.move(lambda v: xp.reshape(v, (-1,)), c.arg(0))
    updates = ar.move(lambda v: xp.reshape(v, (-1,)), c.arg(2))
    if reduction == "none":
        out = ar.move(lambda d, u, p: _set(xp, d, p, u), data, updates, positions)
    elif isinstance(positions, np.ndarray):
        out = _reduce_in_order(c, data, updates, positions, reduction)
    elif ar.emulating:
        raise UsageError(
            f"node '{c.name}' ({c.op}): a scatter with reduction '{reduction}' needs compile-time indices on an "
            "emulated device (its updates are applied in order with the device's arithmetic)"
        )
    else:
        out = ar.lift(getattr(ar.lower(data).at[positions], reduction)(ar.lower(updates)))
    return ar.move(lambda v: xp.reshape(v, shape), out)


def _set(xp: Any, data: Any, positions: Any, values: Any) -> Any:
    if xp is np or isinstance(data, np.ndarray):
        out = np.array(data)
        out[positions] = values
        return out
    return data.at[positions].set(values)


def _reduce_in_order(c: Call, data: Any, updates: Any, positions: np.ndarray, reduction: str) -> Any:
    """Updates combined in their order: the k-th update of an element in the k-th round."""
    ar, xp = c.arith, c.xp
    order = np.argsort(positions, kind="stable")
    sorted_pos = positions[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_pos)) + 1]
    rank = np.empty_like(positions)
    rank[order] = np.arange(len(positions)) - np.repeat(starts, np.diff(np.r_[starts, len(positions)]))
    combine = ar.combiner(reduction)
    for r in range(int(rank.max(initial=-1)) + 1):
        picked = np.flatnonzero(rank == r)
        where = positions[picked]
        current = ar.move(lambda d, w=where: xp.take(d, w), data)
        new = combine(current, ar.move(lambda u, p=picked: xp.take(u, p), updates))
        data = ar.move(lambda d, v, w=where: _set(xp, d, w, v), data, new)
    return data


@op("OneHot")
def one_hot(c: Call) -> list[Any]:
    xp = c.xp
    depth = int(ints(c.const(1, "OneHot's depth"))[0])
    index = _positive(xp, c.raw(0), depth)
    axis = int(c.attrs.get("axis", -1)) % (c.raw(0).ndim + 1)
    off_on = c.arg(2)

    def fn(values: Any, idx: Any) -> Any:
        hot = xp.expand_dims(idx, axis) == xp.reshape(xp.arange(depth), (-1, *(1,) * (idx.ndim - axis)))
        return xp.where(hot, values[1], values[0])

    return [c.arith.move(fn, off_on, index)]


@op("TopK")
def top_k(c: Call) -> list[Any]:
    """The k largest (or smallest) along ``axis``, ties to the lower index: exact."""
    xp = c.xp
    k = int(ints(c.const(1, "TopK's k"))[0]) if c.opset >= 10 else int(c.attrs["k"])
    axis = int(c.attrs.get("axis", -1)) % c.raw(0).ndim
    largest = bool(c.attrs.get("largest", 1))
    raw = c.raw(0)
    key = -raw if largest else raw
    order = xp.argsort(key, axis=axis, kind="stable") if xp is np else xp.argsort(key, axis=axis, stable=True)
    index = xp.take(order, xp.arange(k), axis=axis)
    values = c.arith.move(lambda v: xp.take_along_axis(v, index, axis=axis), c.arg(0))
    return [values, index.astype(np.int64)]


@op("CumSum")
def cumsum(c: Call) -> list[Any]:
    """Running sums along the axis, in order, with the device's additions (the engine's cumsum
    for native arithmetic)."""
    ar, xp = c.arith, c.xp
    axis = int(ints(c.const(1, "CumSum's axis"))[0]) % c.raw(0).ndim
    reverse, exclusive = bool(c.attrs.get("reverse", 0)), bool(c.attrs.get("exclusive", 0))
    x = ar.move(lambda v: xp.flip(v, axis) if reverse else v, c.arg(0))
    if exclusive:  # shifted by one, a zero first
        n = c.raw(0).shape[axis]
        x = ar.move(lambda v: _shift(xp, v, axis, n), x)
    if not ar.emulating:
        out = ar.lift(xp.cumsum(ar.lower(x), axis=axis))
    else:
        parts = [
            ar.move(lambda v, i=i: xp.take(v, xp.arange(i, i + 1), axis=axis), x) for i in range(c.raw(0).shape[axis])
        ]
        acc = parts[:1]
        for p in parts[1:]:
            acc.append(ar.binary("add", acc[-1], p))
        out = ar.move(lambda *vs: xp.concatenate(vs, axis=axis), *acc)
    return [ar.move(lambda v: xp.flip(v, axis) if reverse else v, out)]


def _shift(xp: Any, v: Any, axis: int, n: int) -> Any:
    first = xp.zeros_like(xp.take(v, xp.arange(1), axis=axis))
    return xp.concatenate([first, xp.take(v, xp.arange(n - 1), axis=axis)], axis=axis)


@op("ReverseSequence")
def reverse_sequence(c: Call) -> list[Any]:
    xp = c.xp
    time_axis = int(c.attrs.get("time_axis", 0))  # the batch axis is the other of the first two
    lengths = c.raw(1)
    steps = c.raw(0).shape[time_axis]
    t = xp.arange(steps)[:, None]
    index = xp.where(t < lengths[None, :], lengths[None, :] - 1 - t, t)  # time, batch
    if time_axis == 1:
        index = index.T
    index = xp.reshape(index, (*index.shape, *(1,) * (c.raw(0).ndim - 2)))
    index = xp.broadcast_to(index, c.raw(0).shape)
    return [c.arith.move(lambda v, i: xp.take_along_axis(v, i, axis=time_axis), c.arg(0), index)]


@op("NonZero", "Compress", "Unique")
def data_dependent(c: Call) -> list[Any]:
    """Shapes that depend on values: compile-time constants only (the host folds them)."""
    if any(c.dynamic):
        raise UsageError(f"node '{c.name}' ({c.op}): its output's shape depends on run-time values; not supported")
    x = np.asarray(c.arg(0))
    axis = c.attrs.get("axis")
    if c.op == "NonZero":
        return [np.asarray(np.nonzero(x), dtype=np.int64)]
    if c.op == "Unique":
        return _unique(x, None if axis is None else int(axis), bool(c.attrs.get("sorted", 1)))
    condition = np.asarray(c.arg(1)).astype(bool)
    return [np.compress(condition, x, axis=None if axis is None else int(axis))]


def _unique(x: np.ndarray, axis: int | None, ordered: bool) -> list[Any]:
    """(values, first indices, inverse indices, counts): sorted, or in order of first occurrence."""
    flat = x.reshape(-1) if axis is None else x
    y, first, inverse, counts = np.unique(flat, True, True, True, axis=axis)
    inverse = inverse.reshape(-1)
    if not ordered:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        first, inverse, counts = first[order], rank[inverse], counts[order]
        y = np.take(flat, first, axis=0 if axis is None else axis)
    return [y, first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)]
