"""``gather`` and ``scatter-add`` on a device's arithmetic.

A gather or scatter-add along one axis (``x[idx]``, ``x[:, idx]``, ``x.at[idx].add(v)``,
``jax.ops.segment_sum``) is the device's own operation of its GATHER class
(:meth:`~hwbench.evaluator.arith.Arith.gather`, :meth:`~hwbench.evaluator.arith.Arith.scatter_add`):
exact data movement on most chips, but a chip whose compiler lowers gathers and scatter-adds to
one-hot matrix products (the GroqChip's profile) rounds the source to the matrix unit's input
format, and sums each target's terms in list order with every partial sum rounded to the unit's
accumulation format. A scatter-add into an operand that is not a compile-time zero adds the
targets' sums to it afterwards (one more addition of the device: assumed). Indices known when the
function is traced (closed-over connectivity) fix that order and the engine's plan; traced ones
are taken as they come. Any other gather (several indexed axes, windows wider than one element,
out-of-range indices to fill) moves data exactly, bound as JAX binds it; any other scatter-add is
refused, naming the line, rather than summed natively.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.evaluator.arith import Arith


def gather(a: Arith, v: list[Any], p: dict[str, Any]) -> list[Any]:
    """``gather`` along one axis on the device's gather; any other form as an exact move."""
    from jax import lax

    x, idx = v
    shape = tuple(a.lower(x).shape)
    axis = gather_axis(p, shape, a.lower(idx))
    if axis is None:
        return [a.move(lambda t, i: lax.gather_p.bind(t, i, **p), x, idx)]
    index = _index(a, idx)
    taken = a.gather(x, index, axis)  # (*pre, *batch, *post): numpy's take
    nb, nk = len(np.shape(index)), len(shape) - 1
    kept = iter([*range(axis), *range(axis + nb, nk + nb)])
    batch = iter(range(axis, axis + nb))
    offset = set(p["dimension_numbers"].offset_dims)  # JAX puts the kept dims there, batch dims elsewhere
    order = [next(kept) if pos in offset else next(batch) for pos in range(nk + nb)]
    return [a.move(lambda t: a.xp.transpose(t, order), taken)]


def gather_axis(p: dict[str, Any], shape: tuple[int, ...], idx: Any) -> int | None:
    """The one axis a gather takes single elements along (None for any other gather)."""
    dn = p["dimension_numbers"]
    if getattr(dn, "operand_batching_dims", ()) or len(dn.start_index_map) != 1:
        return None
    axis = int(dn.start_index_map[0])
    if tuple(dn.collapsed_slice_dims) != (axis,) or np.shape(idx)[-1:] != (1,):
        return None
    if tuple(p["slice_sizes"]) != tuple(1 if d == axis else s for d, s in enumerate(shape)):
        return None
    if sorted(dn.offset_dims) != list(dn.offset_dims):
        return None
    return axis if _in_range(idx, shape[axis], str(p.get("mode", ""))) else None


def _in_range(idx: Any, size: int, mode: str) -> bool:
    """Whether the device's gather gives JAX's values: concrete indices in range, or traced ones
    under a mode that clamps or promises them in range (filling out-of-range ones is JAX's own)."""
    if isinstance(idx, np.ndarray):
        return idx.size == 0 or (int(idx.min()) >= 0 and int(idx.max()) < size)
    return "FILL" not in mode.upper()


def _index(a: Arith, idx: Any) -> Any:
    """The index array without its trailing length-1 axis (numpy where it is known when traced)."""
    raw = a.lower(idx)
    if isinstance(raw, np.ndarray):
        return raw[..., 0].astype(np.int64)
    return raw[..., 0]


def scatter_add(a: Arith, v: list[Any], p: dict[str, Any]) -> list[Any]:
    """``scatter-add`` along one axis on the device's scatter-add (refused in any other form)."""
    operand, idx, updates = v
    shape = tuple(a.lower(operand).shape)
    axis = _scatter_axis(p, shape, a.lower(idx))
    if axis is None:
        raise UsageError(
            "scatter-add is supported along one axis of single elements with in-range indices "
            "(x.at[idx].add(v), x.at[:, idx].add(v), jax.ops.segment_sum)"
        )
    xp = a.xp
    index = _index(a, idx)
    window = list(p["dimension_numbers"].update_window_dims)
    ushape = tuple(a.lower(updates).shape)
    batch = [d for d in range(len(ushape)) if d not in window]
    m = math.prod(ushape[d] for d in batch)
    # values as (*operand dims but axis, m); targets' sums along a last axis, then moved back
    values = a.move(
        lambda u: xp.reshape(xp.transpose(u, (*window, *batch)), (*[ushape[d] for d in window], m)), updates
    )
    flat = index.reshape(-1) if isinstance(index, np.ndarray) else xp.reshape(index, (-1,))
    sums = a.scatter_add(values, flat, shape[axis])
    moved = a.move(lambda t: xp.moveaxis(t, -1, axis), sums)
    if _zero(a, operand):
        return [moved]
    return [a.binary("add", operand, moved)]


def _scatter_axis(p: dict[str, Any], shape: tuple[int, ...], idx: Any) -> int | None:
    dn = p["dimension_numbers"]
    if getattr(dn, "operand_batching_dims", ()) or len(dn.scatter_dims_to_operand_dims) != 1:
        return None
    axis = int(dn.scatter_dims_to_operand_dims[0])
    if tuple(dn.inserted_window_dims) != (axis,) or np.shape(idx)[-1:] != (1,):
        return None
    if len(dn.update_window_dims) != len(shape) - 1:
        return None
    mode = str(p.get("mode", "")).upper()
    if isinstance(idx, np.ndarray):
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= shape[axis]):
            return None
    elif "CLIP" in mode:  # clamped traced indices: the engine's scatter-add would drop them
        return None
    return axis


def _zero(a: Arith, operand: Any) -> bool:
    """Whether the scattered-into operand is a compile-time zero (``jnp.zeros(n).at[i].add(v)``)."""
    raw = a.lower(operand)
    return isinstance(raw, np.ndarray) and not np.any(raw)
