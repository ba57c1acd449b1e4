"""Matrix products on the device's matrix unit: MatMul, Gemm, Conv, ConvTranspose, Einsum.

Every product of these ops is :meth:`Arith.matmul` / :meth:`Arith.conv` (the unit's model, or the
operand-rounding approximation); what surrounds it (transposes, reshapes, zero insertion) is exact
data movement, and scalings and bias additions are the device's elementwise arithmetic."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.evaluator.onnx.op_table import op

if TYPE_CHECKING:
    from hwbench.evaluator.onnx.call import Call


@op("MatMul")
def matmul(c: Call) -> list[Any]:
    """numpy's matmul semantics (ONNX follows them): 1-D operands promoted and the added axis removed."""
    a, b = c.arg(0), c.arg(1)
    xp, ar = c.xp, c.arith
    one_a, one_b = c.raw(0).ndim == 1, c.raw(1).ndim == 1
    if one_a:
        a = ar.move(lambda v: xp.expand_dims(v, 0), a)
    if one_b:
        b = ar.move(lambda v: xp.expand_dims(v, -1), b)
    out = ar.matmul(a, b)
    if one_a:
        out = ar.move(lambda v: xp.squeeze(v, -2), out)
    if one_b:
        out = ar.move(lambda v: xp.squeeze(v, -1), out)
    return [out]


@op("Gemm")
def gemm(c: Call) -> list[Any]:
    """alpha * A' B' + beta * C: the product on the matrix unit, the scalings and the bias addition
    elementwise (a scaling by 1 is no operation, as compilers drop it)."""
    ar, xp = c.arith, c.xp
    a, b = c.arg(0), c.arg(1)
    if c.attrs.get("transA", 0):
        a = ar.move(lambda v: xp.swapaxes(v, -1, -2), a)
    out = ar.matmul(a, b, transpose_b=bool(c.attrs.get("transB", 0)))
    alpha, beta = float(c.attrs.get("alpha", 1.0)), float(c.attrs.get("beta", 1.0))
    if alpha != 1.0:
        out = ar.binary("mul", out, alpha)
    bias = c.arg(2)
    if bias is not None and beta != 0.0:
        if beta != 1.0:
            bias = ar.binary("mul", bias, beta)
        out = ar.binary("add", out, bias)
    return [out]


@op("Conv")
def conv(c: Call) -> list[Any]:
    """Cross-correlation on the matrix unit (:meth:`Arith.conv`), then the bias added elementwise."""
    ar, xp = c.arith, c.xp
    w = c.raw(1)
    d = w.ndim - 2
    kernel = c.attrs.get("kernel_shape") or list(w.shape[2:])
    strides, pads, dilations = conv_geometry(c, c.raw(0).shape[2:], kernel)
    out = ar.conv(
        c.arg(0), c.arg(1), strides=strides, pads=pads, dilations=dilations, groups=int(c.attrs.get("group", 1))
    )
    bias = c.arg(2)
    if bias is not None:
        shape = (1, -1) + (1,) * d
        out = ar.binary("add", out, ar.move(lambda v: xp.reshape(v, shape), bias))
    return [out]


def conv_geometry(c: Call, spatial: Any, kernel: Any) -> tuple[list[int], list[tuple[int, int]], list[int]]:
    """(strides, pads, dilations) of a convolution or pooling node, defaults filled in."""
    d = len(kernel)
    strides = [int(s) for s in c.attrs.get("strides") or [1] * d]
    dilations = [int(s) for s in c.attrs.get("dilations") or [1] * d]
    return strides, _pads(c, spatial, kernel, strides, dilations), dilations


def _pads(c: Call, spatial: Any, kernel: Any, strides: Any, dilations: Any) -> list[tuple[int, int]]:
    """Per-axis (begin, end) padding from ``pads`` or ``auto_pad`` (SAME_UPPER, SAME_LOWER, VALID)."""
    d = len(kernel)
    auto = c.attrs.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else str(auto)
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        out = []
        for i in range(d):
            size = int(spatial[i])
            target = -(-size // strides[i])
            total = max(0, (target - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - size)
            small, big = total // 2, total - total // 2
            out.append((small, big) if auto == "SAME_UPPER" else (big, small))
        return out
    if auto == "VALID":
        return [(0, 0)] * d
    pads = list(c.attrs.get("pads") or [0] * (2 * d))
    return [(int(pads[i]), int(pads[i + d])) for i in range(d)]


@op("ConvTranspose")
def conv_transpose(c: Call) -> list[Any]:
    """The transposed convolution as XLA writes one: a convolution of the input spread with
    ``stride - 1`` zeros (``lhs_dilation``), the kernel flipped and its channel axes swapped, padded
    by ``dilation * (k - 1) - pad`` (a negative padding crops the result). The order of the K sum
    (patches of the spread input, zeros included) is an assumption."""
    ar, xp = c.arith, c.xp
    x_shape, w_shape = c.raw(0).shape, c.raw(1).shape
    d = len(x_shape) - 2
    kernel = [int(k) for k in (c.attrs.get("kernel_shape") or w_shape[2:])]
    strides = [int(s) for s in c.attrs.get("strides") or [1] * d]
    dilations = [int(s) for s in c.attrs.get("dilations") or [1] * d]
    groups = int(c.attrs.get("group", 1))
    begin, end = _transpose_pads(c, x_shape[2:], kernel, strides, dilations)
    conv_pads = [(dl * (k - 1) - b, dl * (k - 1) - e) for dl, k, b, e in zip(dilations, kernel, begin, end)]
    cin, mg = w_shape[0], w_shape[1]

    def as_conv_weight(v: Any, xp: Any) -> Any:  # (C, M/g, k..) -> (M, C/g, k..), flipped
        v = xp.reshape(v, (groups, cin // groups, mg, *w_shape[2:]))
        v = xp.swapaxes(v, 1, 2)
        v = xp.reshape(v, (groups * mg, cin // groups, *w_shape[2:]))
        return xp.flip(v, axis=tuple(range(2, 2 + d)))

    weight = c.arg(1)
    w = (
        as_conv_weight(weight, np)
        if isinstance(weight, np.ndarray)
        else ar.move(lambda v: as_conv_weight(v, xp), weight)
    )
    pads = [(max(0, b), max(0, e)) for b, e in conv_pads]
    out = ar.conv(c.arg(0), w, strides=[1] * d, pads=pads, dilations=dilations, groups=groups, lhs_dilation=strides)
    if any(b < 0 or e < 0 for b, e in conv_pads):
        crop = tuple(
            slice(-min(0, b), out_len + min(0, e)) for (b, e), out_len in zip(conv_pads, ar.lower(out).shape[2:])
        )
        out = ar.move(lambda v: v[(slice(None), slice(None), *crop)], out)
    bias = c.arg(2)
    if bias is not None:
        shape = (1, -1) + (1,) * d
        out = ar.binary(
            "add",
            out,
            bias.reshape(shape) if isinstance(bias, np.ndarray) else ar.move(lambda v: xp.reshape(v, shape), bias),
        )
    return [out]


def _transpose_pads(
    c: Call, spatial: Any, kernel: list[int], strides: list[int], dilations: list[int]
) -> tuple[list[int], list[int]]:
    """(begin, end) padding of a ConvTranspose: from ``output_shape`` when given (as ONNX Runtime:
    SAME_UPPER puts the odd unit at the end, otherwise at the start), from ``auto_pad`` SAME_*
    (output = input * stride), else ``pads`` and ``output_padding`` (added at the end)."""
    d = len(kernel)
    out_pad = [int(p) for p in c.attrs.get("output_padding") or [0] * d]
    auto = c.attrs.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else str(auto)
    target = c.attrs.get("output_shape")
    if target is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        target = (
            [int(t) for t in target][-d:] if target is not None else [int(s) * st for s, st in zip(spatial, strides)]
        )
        full = [st * (int(s) - 1) + (k - 1) * dl + 1 for s, st, k, dl in zip(spatial, strides, kernel, dilations)]
        total = [f + op - t for f, op, t in zip(full, out_pad, target)]
        if auto == "SAME_UPPER":
            begin = [t // 2 for t in total]
        else:
            begin = [t - t // 2 for t in total]
        return begin, [t - b - op for t, b, op in zip(total, begin, out_pad)]
    pads = [int(p) for p in c.attrs.get("pads") or [0] * (2 * d)]
    return pads[:d], [pads[d + i] - out_pad[i] for i in range(d)]


@op("Einsum")
def einsum(c: Call) -> list[Any]:
    """One or two operands. Two: labels only one operand has and the output lacks are summed first
    (the device's adds), then one batched matrix product (batch labels, free labels of each side,
    contracted labels) on the matrix unit, then the output's order. One: sums and a transpose."""
    equation = c.attrs["equation"]
    equation = (equation.decode() if isinstance(equation, bytes) else str(equation)).replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if "." in equation or any(len(set(t)) != len(t) for t in terms) or len(terms) > 2:
        raise UsageError(
            f"node '{c.name}' (Einsum): equation '{equation}' is not supported "
            "(one or two operands, no ellipsis, no repeated label within an operand)"
        )
    if not arrow:
        output = "".join(sorted(ch for ch in set("".join(terms)) if "".join(terms).count(ch) == 1))
    pairs = [_sum_lonely(c, i, output, terms) for i in range(len(terms))]
    if len(pairs) == 1:
        term, value = pairs[0]
        return [c.arith.move(lambda v: c.xp.transpose(v, [term.index(ch) for ch in output]), value)]
    (ta, a), (tb, b) = pairs
    return [_einsum_product(c, ta, tb, output, a, b)]


def _sum_lonely(c: Call, i: int, output: str, terms: list[str]) -> tuple[str, Any]:
    """Operand ``i`` with the labels that only it has and the output lacks summed away."""
    term, value = terms[i], c.arg(i)
    others = "".join(t for k, t in enumerate(terms) if k != i)
    lonely = [i for i, ch in enumerate(term) if ch not in output and ch not in others]
    if not lonely:
        return term, value
    ar = c.arith
    summed = ar.sum(value if not isinstance(value, np.ndarray) else ar.lift(value), lonely)
    return "".join(ch for i, ch in enumerate(term) if i not in lonely), summed


def _einsum_product(c: Call, ta: str, tb: str, out: str, a: Any, b: Any) -> Any:
    ar, xp = c.arith, c.xp
    batch = [ch for ch in ta if ch in tb and ch in out]
    contract = [ch for ch in ta if ch in tb and ch not in out]
    left = [ch for ch in ta if ch not in tb]
    right = [ch for ch in tb if ch not in ta]
    sa, sb = np.shape(ar.lower(a)), np.shape(ar.lower(b))
    size = {**dict(zip(ta, sa)), **dict(zip(tb, sb))}

    def arrange(v: Any, term: str, order: list[str], rows: list[str], cols: list[str]) -> Any:
        v = xp.transpose(v, [term.index(ch) for ch in order])
        shape = (*(size[ch] for ch in batch), math.prod(size[ch] for ch in rows), math.prod(size[ch] for ch in cols))
        return xp.reshape(v, shape)

    ma = ar.move(lambda v: arrange(v, ta, [*batch, *left, *contract], left, contract), a)
    mb = ar.move(lambda v: arrange(v, tb, [*batch, *contract, *right], contract, right), b)
    prod = ar.matmul(ma, mb)
    labels = [*batch, *left, *right]

    def finish(v: Any) -> Any:
        v = xp.reshape(v, tuple(size[ch] for ch in labels))
        return xp.transpose(v, [labels.index(ch) for ch in out])

    return ar.move(finish, prod)
