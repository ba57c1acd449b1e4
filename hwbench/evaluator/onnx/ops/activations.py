"""Activation functions, each written as the primitive operations it is lowered to.

Where the ONNX standard defines an op as a function of other ops (its schema's function body:
Elu, Selu, HardSigmoid, HardSwish, Softsign, Mish, Shrink, ThresholdedRelu, LeakyRelu, PRelu), the
evaluator computes exactly that body: it is the decomposition the standard gives and the one a
backend without a kernel of its own inlines. The rest:

* ``Sigmoid``: ``1 / (1 + exp(-x))``, XLA's ``LogisticExpander`` (``ExpandLogisticWithExp``,
  xla/hlo/transforms/expanders/logistic_expander.cc), the expansion of ``jax.nn.sigmoid``.
* ``Softplus``: ``x + log1p(exp(-x))`` for x > 0, else ``log1p(exp(x))``: ONNX Runtime's CPU
  kernel (onnxruntime/core/providers/cpu/activation/activations.h); the schema's
  ``log(exp(x) + 1)`` overflows for x > 88 in fp32.
* ``Gelu`` (opset 20): the schema's formulas, ``0.5 x (1 + erf(x / sqrt 2))`` or, with
  ``approximate="tanh"``, ``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))``.
* ``Celu``: ``max(0, x) + min(0, alpha (exp(x / alpha) - 1))`` (the schema's formula).

Every exp, log, tanh, erf is the device's elementwise function; every +, *, / its arithmetic;
selections (max, min, where) are exact.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.evaluator.onnx.op_table import op

if TYPE_CHECKING:
    from hwbench.evaluator.arith import Arith
    from hwbench.evaluator.onnx.call import Call


def _const(c: Call, value: float) -> np.ndarray:
    """A scalar constant in the input's float type (the schema's ``CastLike``)."""
    return np.asarray(value, dtype=c.raw(0).dtype)


def _less_than_zero(c: Call, x: Any) -> Any:
    return c.arith.compare("less", x, _const(c, 0.0))


@op("Relu")
def relu(c: Call) -> list[Any]:
    """max(x, 0): a selection, exact."""
    return [c.arith.maximum(c.arg(0), _const(c, 0.0))]


@op("LeakyRelu")
def leaky_relu(c: Call) -> list[Any]:
    """where(x < 0, alpha * x, x)."""
    ar, x = c.arith, c.arg(0)
    alpha = _const(c, float(c.attrs.get("alpha", 0.01)))
    return [ar.where(_less_than_zero(c, x), ar.binary("mul", alpha, x), x)]


@op("PRelu")
def prelu(c: Call) -> list[Any]:
    """where(x < 0, slope * x, x); before opset 7 a 1-D slope of the channel count is per channel."""
    ar, x = c.arith, c.arg(0)
    slope = c.arg(1)
    shape, s_shape = c.raw(0).shape, c.raw(1).shape
    if c.opset < 7 and len(s_shape) == 1 and len(shape) > 2 and s_shape[0] == shape[1] != shape[-1]:
        target = (s_shape[0], *(1,) * (len(shape) - 2))
        slope = (
            np.reshape(slope, target)
            if isinstance(slope, np.ndarray)
            else ar.move(lambda v: c.xp.reshape(v, target), slope)
        )
    return [ar.where(_less_than_zero(c, x), ar.binary("mul", slope, x), x)]


@op("ThresholdedRelu")
def thresholded_relu(c: Call) -> list[Any]:
    ar, x = c.arith, c.arg(0)
    alpha = _const(c, float(c.attrs.get("alpha", 1.0)))
    return [ar.where(ar.compare("greater", x, alpha), x, _const(c, 0.0))]


@op("Elu")
def elu(c: Call) -> list[Any]:
    """where(x < 0, alpha * (exp(x) - 1), x)."""
    ar, x = c.arith, c.arg(0)
    alpha = _const(c, float(c.attrs.get("alpha", 1.0)))
    neg = ar.binary("mul", alpha, ar.binary("sub", ar.function("exp", x), _const(c, 1.0)))
    return [ar.where(_less_than_zero(c, x), neg, x)]


@op("Selu")
def selu(c: Call) -> list[Any]:
    """where(x < 0, gamma * (alpha * exp(x) - alpha), gamma * x)."""
    ar, x = c.arith, c.arg(0)
    alpha = _const(c, float(c.attrs.get("alpha", 1.67326319217681884765625)))
    gamma = _const(c, float(c.attrs.get("gamma", 1.05070102214813232421875)))
    neg = ar.binary("mul", gamma, ar.binary("sub", ar.binary("mul", alpha, ar.function("exp", x)), alpha))
    return [ar.where(_less_than_zero(c, x), neg, ar.binary("mul", gamma, x))]


@op("Celu")
def celu(c: Call) -> list[Any]:
    ar, x = c.arith, c.arg(0)
    alpha = _const(c, float(c.attrs.get("alpha", 1.0)))
    e = ar.binary("sub", ar.function("exp", ar.binary("div", x, alpha)), _const(c, 1.0))
    return [ar.binary("add", ar.maximum(x, _const(c, 0.0)), ar.minimum(ar.binary("mul", alpha, e), _const(c, 0.0)))]


def sigmoid_of(ar: Arith, x: Any) -> Any:
    """1 / (1 + exp(-x)) with the device's exp, addition and division (XLA's expansion)."""
    return ar.logistic(x)


@op("Sigmoid")
def sigmoid(c: Call) -> list[Any]:
    return [sigmoid_of(c.arith, c.arg(0))]


def _hard_sigmoid(c: Call, x: Any, alpha: float, beta: float) -> Any:
    ar = c.arith
    linear = ar.binary("add", ar.binary("mul", x, _const(c, alpha)), _const(c, beta))
    return ar.maximum(ar.minimum(linear, _const(c, 1.0)), _const(c, 0.0))


@op("HardSigmoid")
def hard_sigmoid(c: Call) -> list[Any]:
    """max(min(alpha * x + beta, 1), 0)."""
    return [_hard_sigmoid(c, c.arg(0), float(c.attrs.get("alpha", 0.2)), float(c.attrs.get("beta", 0.5)))]


@op("HardSwish")
def hard_swish(c: Call) -> list[Any]:
    """x * HardSigmoid(x) with alpha = 1/6, beta = 0.5."""
    x = c.arg(0)
    return [c.arith.binary("mul", x, _hard_sigmoid(c, x, 1.0 / 6.0, 0.5))]


def _softplus(c: Call, x: Any) -> Any:
    ar = c.arith
    positive = ar.compare("greater", x, _const(c, 0.0))
    exp = ar.function("exp", ar.where(positive, ar.negative(x), x))  # exp(-|x|)
    tail = ar.function("log1p", exp)
    return ar.where(positive, ar.binary("add", x, tail), tail)


@op("Softplus")
def softplus(c: Call) -> list[Any]:
    return [_softplus(c, c.arg(0))]


@op("Softsign")
def softsign(c: Call) -> list[Any]:
    """x / (1 + |x|)."""
    ar, x = c.arith, c.arg(0)
    return [ar.binary("div", x, ar.binary("add", _const(c, 1.0), ar.absolute(x)))]


@op("Mish")
def mish(c: Call) -> list[Any]:
    """x * tanh(softplus(x))."""
    ar, x = c.arith, c.arg(0)
    return [ar.binary("mul", x, ar.function("tanh", _softplus(c, x)))]


@op("Shrink")
def shrink(c: Call) -> list[Any]:
    """x + bias where x < -lambd, x - bias where x > lambd, else 0."""
    ar, x = c.arith, c.arg(0)
    lambd, bias = float(c.attrs.get("lambd", 0.5)), float(c.attrs.get("bias", 0.0))
    low = ar.compare("less", x, _const(c, -lambd))
    high = ar.compare("greater", x, _const(c, lambd))
    inner = ar.where(high, ar.binary("sub", x, _const(c, bias)), _const(c, 0.0))
    return [ar.where(low, ar.binary("add", x, _const(c, bias)), inner)]


@op("Gelu")
def gelu(c: Call) -> list[Any]:
    ar, x = c.arith, c.arg(0)
    approximate = c.attrs.get("approximate", "none")
    approximate = approximate.decode() if isinstance(approximate, bytes) else approximate
    if approximate == "tanh":
        cube = ar.binary("mul", ar.binary("mul", x, x), x)
        inner = ar.binary("add", x, ar.binary("mul", _const(c, 0.044715), cube))
        g = ar.function("tanh", ar.binary("mul", _const(c, math.sqrt(2.0 / math.pi)), inner))
    else:
        g = ar.function("erf", ar.binary("div", x, _const(c, math.sqrt(2.0))))
    return [ar.binary("mul", ar.binary("mul", _const(c, 0.5), x), ar.binary("add", _const(c, 1.0), g))]
