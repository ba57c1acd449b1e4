"""Linear quantization to 8-bit integers and back (QuantizeLinear, DequantizeLinear): the ops of an
explicitly quantized (QDQ) model.

Quantizing is the device's division by the scale, a rounding to the nearest integer (half to
even: exact), the zero point added and the result saturated to the integer type (exact); a float
target type (fp8) is not supported. Dequantizing subtracts the zero point in integers (exact),
converts to float (exact for 8-bit values) and multiplies by the scale on the device. A scale per
channel (``axis``) is broadcast along its axis; ``block_size`` (opset 21) is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.evaluator.onnx.op_table import op

if TYPE_CHECKING:
    from hwbench.evaluator.onnx.call import Call


def _per_axis(c: Call, value: Any) -> Any:
    """A 1-D scale or zero point reshaped along ``axis`` (a scalar stays as it is)."""
    if value is None:
        return None
    if c.attrs.get("block_size", 0):
        raise UsageError(f"node '{c.name}' ({c.op}): blocked quantization (block_size) is not supported")
    shape = np.shape(c.arith.lower(value))
    if len(shape) != 1 or shape[0] == 1:
        return value
    ndim = c.raw(0).ndim
    axis = int(c.attrs.get("axis", 1)) % ndim
    target = tuple(-1 if i == axis else 1 for i in range(ndim))
    if isinstance(value, np.ndarray):
        return value.reshape(target)
    return c.arith.move(lambda v: c.xp.reshape(v, target), value)


@op("QuantizeLinear")
def quantize(c: Call) -> list[Any]:
    ar, xp = c.arith, c.xp
    zero = _per_axis(c, c.arg(2))
    target = np.dtype(np.uint8) if zero is None else np.dtype(ar.lower(zero).dtype)
    if target.kind not in "iu":
        raise UsageError(f"node '{c.name}' (QuantizeLinear): quantizing to {target} is not supported (8-bit integers)")
    scaled = ar.lower(ar.move(xp.rint, ar.binary("div", c.arg(0), _per_axis(c, c.arg(1)))))
    if zero is not None:
        scaled = scaled + ar.lower(zero).astype(scaled.dtype)
    info = np.iinfo(target)
    return [xp.clip(scaled, info.min, info.max).astype(target)]


@op("DequantizeLinear")
def dequantize(c: Call) -> list[Any]:
    ar, xp = c.arith, c.xp
    x = c.raw(0)
    zero = _per_axis(c, c.arg(2))
    if np.dtype(x.dtype).kind not in "iu":
        raise UsageError(f"node '{c.name}' (DequantizeLinear): dequantizing {x.dtype} is not supported (integers)")
    centred = x.astype(np.int32) - (ar.lower(zero).astype(np.int32) if zero is not None else 0)
    scale = _per_axis(c, c.arg(1))
    dtype = ar.lower(scale).dtype
    return [ar.binary("mul", ar.lift(xp.asarray(centred).astype(dtype)), scale)]
