"""The op class of each ONNX op: the device arithmetic (a numerics profile's op class) that computes
it, or the one whose rounding dominates a composite op (Softmax: its exp). A report reads it to name
a node's mechanism (:mod:`hwbench.evaluator.mechanism`), as the jaxpr front end reads
:data:`hwbench.evaluator.jaxpr.primitives.OP_CLASS`. Ops not listed (moves, integer and boolean
ops) compute nothing a device rounds.
"""

from __future__ import annotations

from hwbench.core.ops import OpClass
from hwbench.evaluator.arith import FUNCTIONS

_OPS: dict[OpClass, str] = {
    OpClass.MATMUL_INPUT: "MatMul Gemm Conv ConvTranspose Einsum LSTM GRU RNN",
    OpClass.EXP: "Sigmoid Softplus Gelu Elu Selu Celu Mish Softmax LogSoftmax ReduceLogSum ReduceLogSumExp",
    OpClass.ADD: "Add Sub Sum Mean ReduceSum ReduceMean ReduceL1 CumSum AveragePool GlobalAveragePool "
    "LayerNormalization InstanceNormalization GroupNormalization MeanVarianceNormalization",
    OpClass.MUL: "Mul ReduceProd ReduceSumSquare BatchNormalization LeakyRelu PRelu HardSigmoid",
    OpClass.DIV: "Div Reciprocal Softsign",
    OpClass.POW: "Pow ReduceL2 LpPool GlobalLpPool",
    OpClass.COMPARE: "Relu Max Min Clip Where MaxPool GlobalMaxPool ReduceMax ReduceMin",
    OpClass.GATHER: "Gather GatherElements GatherND Scatter ScatterElements ScatterND",
}
_FUNCTIONS = "Exp Log Sqrt Tanh Erf Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh"
"""The device's elementwise functions (:data:`hwbench.evaluator.arith.FUNCTIONS`, by their lower-case names)."""

OP_CLASS: dict[str, OpClass] = {
    **{name: cls for cls, names in _OPS.items() for name in names.split()},
    **{name: FUNCTIONS[name.lower()] for name in _FUNCTIONS.split()},
}
"""The op class whose arithmetic computes each ONNX op (what a report names as its mechanism)."""

NORMALISATIONS = frozenset({"LayerNormalization"})
"""Ops that centre their first input over its last axis, so a mean that dwarfs the spread cancels."""
