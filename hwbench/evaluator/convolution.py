"""Convolutions as data movement around products: windows, patch matrices, and the engine's own
fast convolution for native arithmetic.

A convolution on a matrix unit is a matrix product of patches (im2col): per group, the filters
(Mg, K) times the patch matrix (K, O), K ordered channel then kernel position. The patches are
exact copies of input values, so :class:`~hwbench.evaluator.arith.Arith` computes the product
with the device's matrix unit and everything here moves data only. Where the arithmetic is
native (or rounds operands around one native product), :func:`native_conv` picks the engine's
fastest exact form of the same sums (any order: IEEE sums whose order the engine chooses):

* a 1 x 1 or small convolution: one dot of the filters with the patch matrix (XLA:CPU's dot is 3
  to 10 times faster than its own convolution of ONNX's NCHW layout);
* a k x k one with many outputs (``XLA_CONV_OUTPUTS``) or a transposed one: XLA's convolution in
  NHWC, the layout its CPU backend is fast in, with explicit transposes around it;
* a depthwise one (one input channel per group): the shifted inputs times their weights, summed
  over the kernel positions, one fused loop (a batched dot of 1 x K rows is slow).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hwbench.core.errors import UsageError

XLA_CONV_OUTPUTS = 512
"""From this many output positions on, XLA's own NHWC convolution of a k x k kernel beats the dot
of the materialised patches on XLA:CPU (measured: 56 x 56 and 28 x 28 outputs 1.4 to 1.6 times
faster, 14 x 14 and 7 x 7 outputs 1.1 to 2 times slower)."""


@dataclass(frozen=True)
class Geometry:
    """A convolution's strides, (begin, end) pads, dilations, groups and input spreading
    (``lhs_dilation``: zeros between input elements, a transposed convolution as XLA writes one)."""

    strides: tuple[int, ...]
    pads: tuple[tuple[int, int], ...]
    dilations: tuple[int, ...]
    groups: int = 1
    lhs_dilation: tuple[int, ...] | None = None

    @property
    def spread(self) -> bool:
        return self.lhs_dilation is not None and any(f != 1 for f in self.lhs_dilation)

    def out(self, spatial: Sequence[int], kernel: Sequence[int]) -> list[int]:
        """The output's spatial size."""
        lhs = self.lhs_dilation or (1,) * len(kernel)
        sizes = [(s - 1) * f + 1 + b + e for s, f, (b, e) in zip(spatial, lhs, self.pads)]
        out = [(s - d * (k - 1) - 1) // st + 1 for s, d, k, st in zip(sizes, self.dilations, kernel, self.strides)]
        if any(o <= 0 for o in out):
            raise UsageError(f"convolution kernel {tuple(kernel)} does not fit input {tuple(spatial)} with its padding")
        return out


def patches(
    xp: Any,
    x: Any,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[tuple[int, int]],
    dilations: Sequence[int],
    fill: float = 0.0,
) -> Any:
    """(N, C, *kernel, *out) patches of ``x`` (N, C, *spatial): padding with ``fill``, strided slices."""
    d = len(kernel)
    x = xp.pad(x, ((0, 0), (0, 0), *pads), constant_values=fill)
    spatial = x.shape[2:]
    out = [(spatial[i] - dilations[i] * (kernel[i] - 1) - 1) // strides[i] + 1 for i in range(d)]
    if any(o <= 0 for o in out):
        raise UsageError(f"convolution kernel {tuple(kernel)} does not fit input {tuple(spatial)} with its padding")
    slabs = [x[_window(offset, strides, dilations, out)] for offset in np.ndindex(*kernel)]
    stacked = xp.stack(slabs, axis=2)  # N, C, prod(kernel), *out
    return xp.reshape(stacked, (*x.shape[:2], *kernel, *out))


def _window(
    offset: Sequence[int], strides: Sequence[int], dilations: Sequence[int], out: Sequence[int]
) -> tuple[Any, ...]:
    """The strided slice of a padded input that kernel position ``offset`` reads."""
    index: list[Any] = [slice(None), slice(None)]
    for i, o in enumerate(offset):
        start = o * dilations[i]
        index.append(slice(start, start + strides[i] * (out[i] - 1) + 1, strides[i]))
    return tuple(index)


def dilate(xp: Any, x: Any, factors: Sequence[int]) -> Any:
    """``x`` (N, C, *spatial) with ``factor - 1`` zeros between neighbours along each spatial axis."""
    if xp is np:
        shape = (*x.shape[:2], *((s - 1) * f + 1 for s, f in zip(x.shape[2:], factors)))
        out = np.zeros(shape, dtype=x.dtype)
        out[(slice(None), slice(None), *(slice(None, None, f) for f in factors))] = x
        return out
    from jax import lax

    config = [(0, 0, 0), (0, 0, 0), *((0, 0, f - 1) for f in factors)]
    return lax.pad(x, np.zeros((), dtype=x.dtype), config)


def columns(xp: Any, x: Any, kernel: Sequence[int], geo: Geometry) -> Any:
    """The patch matrices of ``x`` (N, C, *spatial): (N, groups, C/groups * prod(kernel), prod(out))."""
    if geo.spread:
        assert geo.lhs_dilation is not None
        x = dilate(xp, x, geo.lhs_dilation)
    p = patches(xp, x, kernel, geo.strides, geo.pads, geo.dilations)
    out = p.shape[2 + len(kernel) :]
    return xp.reshape(p, (x.shape[0], geo.groups, -1, math.prod(out)))


def filters(xp: Any, w: Any, groups: int) -> Any:
    """The filters (M, C/groups, *kernel) as (groups, M/groups, C/groups * prod(kernel))."""
    return xp.reshape(w, (groups, w.shape[0] // groups, -1))


def native_conv(xp: Any, x: Any, w: Any, geo: Geometry) -> Any:
    """The convolution of engine arrays with the engine's own arithmetic, in its fastest form."""
    kernel = tuple(w.shape[2:])
    out = geo.out(x.shape[2:], kernel)
    n, m = x.shape[0], w.shape[0]
    if xp is not np:
        if w.shape[1] == 1 and geo.groups > 1 and not geo.spread:
            return depthwise(xp, x, w, geo, out)
        large = math.prod(kernel) > 1 and math.prod(out) >= XLA_CONV_OUTPUTS
        if geo.groups == 1 and (geo.spread or large):
            return xla_conv(x, w, geo)
    cols = columns(xp, x, kernel, geo)  # N, G, K, O
    if geo.groups == 1:  # one dot: (M, K) . (N, K, O) -> (M, N, O)
        prod = _dot(xp, xp.reshape(w, (m, -1)), cols[:, 0])
        return xp.reshape(xp.swapaxes(prod, 0, 1), (n, m, *out))
    prod = _matmul(xp, filters(xp, w, geo.groups), cols)  # N, G, Mg, O
    return xp.reshape(prod, (n, m, *out))


def _dot(xp: Any, a: Any, b: Any) -> Any:
    """(M, K) . (N, K, O) -> (M, N, O) at full precision."""
    if xp is np:
        return np.einsum("mk,nko->mno", a, b)
    from jax import lax

    return lax.dot_general(a, b, (((1,), (1,)), ((), ())), precision=lax.Precision.HIGHEST)


def _matmul(xp: Any, a: Any, b: Any) -> Any:
    if xp is np:
        return np.matmul(a, b)
    from jax import lax

    return xp.matmul(a, b, precision=lax.Precision.HIGHEST)


def xla_conv(x: Any, w: Any, geo: Geometry) -> Any:
    """XLA's convolution in the NHWC layout its CPU backend is fast in (transposes around it)."""
    import jax.numpy as jnp
    from jax import lax

    d = x.ndim - 2
    to_last = (0, *range(2, 2 + d), 1)
    xh = jnp.transpose(x, to_last)
    wh = jnp.transpose(w, (*range(2, 2 + d), 1, 0))
    spec = "".join("DHW"[3 - d :])
    dims = lax.conv_dimension_numbers(xh.shape, wh.shape, (f"N{spec}C", f"{spec}IO", f"N{spec}C"))
    y = lax.conv_general_dilated(
        xh,
        wh,
        geo.strides,
        [(int(b), int(e)) for b, e in geo.pads],
        lhs_dilation=geo.lhs_dilation,
        rhs_dilation=geo.dilations,
        dimension_numbers=dims,
        feature_group_count=geo.groups,
        precision=lax.Precision.HIGHEST,
    )
    return jnp.transpose(y, (0, d + 1, *range(1, d + 1)))


def depthwise(xp: Any, x: Any, w: Any, geo: Geometry, out: Sequence[int]) -> Any:
    """One input channel per group (w: M, 1, *kernel, M a multiple of C): for each kernel position,
    the shifted input times its weights, summed in order."""
    d = w.ndim - 2
    m = w.shape[0]
    x = xp.pad(x, ((0, 0), (0, 0), *geo.pads))
    if m != geo.groups:  # a channel multiplier: each input channel feeds m / groups filters
        x = xp.repeat(x, m // geo.groups, axis=1)
    acc = None
    for offset in np.ndindex(*w.shape[2:]):
        term = x[_window(offset, geo.strides, geo.dilations, out)] * xp.reshape(
            w[(slice(None), 0, *offset)], (1, m, *(1,) * d)
        )
        acc = term if acc is None else acc + term
    return acc
