"""Matrix products on the device's matrix unit: MatMul, Gemm, Conv."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
    if c.attrs.get("transB", 0):
        b = ar.move(lambda v: xp.swapaxes(v, -1, -2), b)
    out = ar.matmul(a, b)
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
