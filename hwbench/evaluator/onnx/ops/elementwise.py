"""Elementwise ONNX ops: arithmetic, functions, comparisons, logic, selections, rounding to integers.

Each is one or a few operations of the device's arithmetic (:class:`~hwbench.evaluator.arith.Arith`).
Ops whose result is exact on every device (``Floor``, ``Sign``, ``Mod`` of floats, ``IsNaN``, the
logic ops) are moves or host-exact functions of the values: no number is rounded.

Opsets before 7 broadcast a binary op's second operand only when the node says ``broadcast=1``,
aligned at ``axis`` (trailing when absent): :func:`second_operand` reshapes it to numpy's rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.evaluator.onnx.op_table import op

if TYPE_CHECKING:
    from hwbench.evaluator.onnx.call import Call

_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div"}
_FUNCTIONS = {"Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Tanh": "tanh", "Erf": "erf"}
_FUNCTIONS |= {"Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "asin", "Acos": "acos", "Atan": "atan"}
_FUNCTIONS |= {"Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh", "Acosh": "acosh", "Atanh": "atanh"}
_COMPARE = {"Less": "less", "Greater": "greater", "LessOrEqual": "less_equal", "GreaterOrEqual": "greater_equal"}
_COMPARE |= {"Equal": "equal"}
_EXACT = {"Floor": "floor", "Ceil": "ceil", "Round": "rint", "Sign": "sign"}


def second_operand(c: Call, i: int = 1) -> Any:
    """Input ``i`` of a binary op, reshaped for opset < 7's ``broadcast`` / ``axis`` attributes so
    that numpy's broadcasting gives the old semantics (a no-op from opset 7 on)."""
    b = c.arg(i)
    if b is None or c.opset >= 7 or not c.attrs.get("broadcast", 0):
        return b
    rank_a, rank_b = c.raw(0).ndim, c.raw(i).ndim
    axis = int(c.attrs.get("axis", rank_a - rank_b)) % max(rank_a, 1)
    trailing = rank_a - axis - rank_b
    if trailing <= 0:
        return b
    shape = (*c.raw(i).shape, *(1,) * trailing)
    if isinstance(b, np.ndarray):
        return b.reshape(shape)
    return c.arith.move(lambda v: c.xp.reshape(v, shape), b)


def _integer_binary(c: Call, op: str) -> list[Any] | None:
    """Integer arithmetic is exact on every device: computed on the values (Div truncates toward
    zero, as ONNX and C do)."""
    a, b = c.raw(0), c.arith.lower(second_operand(c))
    if np.dtype(a.dtype).kind not in "iu":
        return None
    xp = c.xp if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) else np
    if op == "div":
        q = xp.abs(a) // xp.abs(b)
        return [xp.where((a < 0) != (b < 0), -q, q).astype(a.dtype)]
    fn = {"add": xp.add, "sub": xp.subtract, "mul": xp.multiply}[op]
    return [fn(a, b).astype(a.dtype)]


@op(*_BINARY)
def binary(c: Call) -> list[Any]:
    name = _BINARY[c.op]
    ints = _integer_binary(c, name)
    if ints is not None:
        return ints
    return [c.arith.binary(name, c.arg(0), second_operand(c))]


@op("Pow")
def power(c: Call) -> list[Any]:
    """An integral constant exponent is repeated multiplication (as XLA's ``integer_pow``); any
    other a POW-class op of the device."""
    base = c.raw(0)
    if np.dtype(base.dtype).kind in "iu":
        return [c.xp.power(base, c.arith.lower(second_operand(c)).astype(base.dtype))]
    exponent = second_operand(c)
    if np.dtype(c.raw(1).dtype).kind != "f" and not isinstance(exponent, np.ndarray):
        exponent = c.arith.cast(exponent, c.arith.dtype)
    return [c.arith.power(c.arg(0), exponent)]


@op(*_FUNCTIONS)
def function(c: Call) -> list[Any]:
    return [c.arith.function(_FUNCTIONS[c.op], c.arg(0))]


@op("Neg")
def negative(c: Call) -> list[Any]:
    return [c.arith.negative(c.arg(0))]


@op("Abs")
def absolute(c: Call) -> list[Any]:
    return [c.arith.absolute(c.arg(0))]


@op("Reciprocal")
def reciprocal(c: Call) -> list[Any]:
    return [c.arith.reciprocal(c.arg(0))]


@op(*_EXACT)
def exact(c: Call) -> list[Any]:
    """Rounding to an integral value (Round: half to even) and the sign: the result is one of the
    format's numbers, so no device rounds it."""
    fn = getattr(c.xp, _EXACT[c.op])
    return [c.arith.move(fn, c.arg(0))]


@op("Mod")
def mod(c: Call) -> list[Any]:
    """Integers: Python's (``fmod=0``, the divisor's sign) or C's remainder; floats need ``fmod=1``
    (C's fmod, exact in IEEE arithmetic)."""
    xp = c.xp
    fn = xp.fmod if c.attrs.get("fmod", 0) else xp.mod
    return [c.arith.move(fn, c.arg(0), c.arg(1))]


@op("IsNaN")
def isnan(c: Call) -> list[Any]:
    return [c.xp.isnan(c.raw(0))]


@op("IsInf")
def isinf(c: Call) -> list[Any]:
    x = c.raw(0)
    pos, neg = int(c.attrs.get("detect_positive", 1)), int(c.attrs.get("detect_negative", 1))
    return [c.xp.isinf(x) & (((x > 0) & bool(pos)) | ((x < 0) & bool(neg)))]


@op("Min", "Max")
def min_max(c: Call) -> list[Any]:
    """A selection (exact): the inputs compared left to right."""
    fn = c.arith.minimum if c.op == "Min" else c.arith.maximum
    present = [v for v in c.args if v is not None]
    acc = present[0]
    for v in present[1:]:
        acc = fn(acc, v)
    return [acc]


@op("Clip")
def clip(c: Call) -> list[Any]:
    """max(x, min) then min(., max): selections (bounds from attributes before opset 11, inputs after)."""
    ar = c.arith
    x = c.arg(0)
    dtype = c.raw(0).dtype
    if c.opset < 11:
        lo: Any = np.asarray(c.attrs.get("min", -np.inf), dtype)
        hi: Any = np.asarray(c.attrs.get("max", np.inf), dtype)
    else:
        lo, hi = c.arg(1), c.arg(2)
    if lo is not None:
        x = ar.maximum(x, lo)
    if hi is not None:
        x = ar.minimum(x, hi)
    return [x]


@op(*_COMPARE)
def compare(c: Call) -> list[Any]:
    return [c.arith.compare(_COMPARE[c.op], c.arg(0), second_operand(c))]


@op("Not")
def logical_not(c: Call) -> list[Any]:
    return [c.xp.logical_not(c.raw(0))]


@op("And", "Or", "Xor")
def logical(c: Call) -> list[Any]:
    fn = {"And": c.xp.logical_and, "Or": c.xp.logical_or, "Xor": c.xp.logical_xor}[c.op]
    return [fn(c.raw(0), c.arith.lower(second_operand(c)))]


@op("BitwiseAnd", "BitwiseOr", "BitwiseXor")
def bitwise(c: Call) -> list[Any]:
    fn = {"BitwiseAnd": c.xp.bitwise_and, "BitwiseOr": c.xp.bitwise_or, "BitwiseXor": c.xp.bitwise_xor}[c.op]
    return [fn(c.raw(0), c.raw(1))]


@op("BitwiseNot")
def bitwise_not(c: Call) -> list[Any]:
    return [c.xp.bitwise_not(c.raw(0))]


@op("BitShift")
def bit_shift(c: Call) -> list[Any]:
    fn = c.xp.left_shift if c.attrs["direction"] in ("LEFT", b"LEFT") else c.xp.right_shift
    return [fn(c.raw(0), c.raw(1))]


@op("Where")
def where(c: Call) -> list[Any]:
    return [c.arith.where(c.raw(0), c.arg(1), c.arg(2))]
