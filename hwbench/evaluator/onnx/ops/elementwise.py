"""Elementwise ONNX ops: arithmetic, functions, comparisons, selections.

Each is one or a few operations of the device's arithmetic (:class:`~hwbench.evaluator.arith.Arith`).
Composite functions are written as the primitive operations a compiler lowers them to, and say so.
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


def _integer_division(c: Call) -> list[Any] | None:
    """ONNX integer Div truncates toward zero (exact on the host; no float arithmetic)."""
    a, b = c.raw(0), c.raw(1)
    if np.dtype(a.dtype).kind not in "iu":
        return None
    q = c.xp.abs(a) // c.xp.abs(b)
    return [c.xp.where((a < 0) != (b < 0), -q, q).astype(a.dtype)]


@op(*_BINARY)
def binary(c: Call) -> list[Any]:
    if c.op == "Div":
        ints = _integer_division(c)
        if ints is not None:
            return ints
    return [c.arith.binary(_BINARY[c.op], c.arg(0), c.arg(1))]


@op("Pow")
def power(c: Call) -> list[Any]:
    return [c.arith.power(c.arg(0), c.arg(1))]


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


@op("Relu")
def relu(c: Call) -> list[Any]:
    """max(x, 0): a selection, exact."""
    x = c.arg(0)
    return [c.arith.maximum(x, np.zeros((), dtype=c.raw(0).dtype))]


@op("Sigmoid")
def sigmoid(c: Call) -> list[Any]:
    """The device's logistic (:meth:`Arith.logistic`: exp, add, division)."""
    return [c.arith.logistic(c.arg(0))]


@op("Min", "Max")
def min_max(c: Call) -> list[Any]:
    fn = c.arith.minimum if c.op == "Min" else c.arith.maximum
    acc = c.arg(0)
    for v in c.args[1:]:
        acc = fn(acc, v)
    return [acc]


@op(*_COMPARE)
def compare(c: Call) -> list[Any]:
    return [c.arith.compare(_COMPARE[c.op], c.arg(0), c.arg(1))]


@op("Not")
def logical_not(c: Call) -> list[Any]:
    return [c.xp.logical_not(c.raw(0))]


@op("And", "Or", "Xor")
def logical(c: Call) -> list[Any]:
    fn = {"And": c.xp.logical_and, "Or": c.xp.logical_or, "Xor": c.xp.logical_xor}[c.op]
    return [fn(c.raw(0), c.raw(1))]


@op("Where")
def where(c: Call) -> list[Any]:
    return [c.arith.where(c.raw(0), c.arg(1), c.arg(2))]


@op("Mod")
def modulo(c: Call) -> list[Any]:
    """Integers: the remainder with the divisor's sign (``fmod=0``, Python's ``%``) or the
    dividend's (``fmod=1``, C's ``fmod``). Floats (``fmod=1`` only): C's ``fmod``, which IEEE
    arithmetic computes exactly, so it is a move of the value rather than a rounded operation."""
    a, b = c.raw(0), c.raw(1)
    if np.dtype(a.dtype).kind in "iu" and not c.attrs.get("fmod", 0):
        return [c.xp.mod(a, b)]
    if np.dtype(a.dtype).kind in "iu":
        return [c.xp.fmod(a, b)]
    return [c.arith.move(c.xp.fmod, c.arg(0), c.arg(1))]
