"""The implementations of the ONNX op table (:mod:`hwbench.evaluator.onnx.op_table`), one module
per family; importing this package registers them all."""

from hwbench.evaluator.onnx.ops import (
    activations,
    elementwise,
    indexing,
    linalg,
    moves,
    nn,
    normalization,
    quantize,
    recurrent,
    reduce,
    resize,
)

__all__ = [
    "activations",
    "elementwise",
    "indexing",
    "linalg",
    "moves",
    "nn",
    "normalization",
    "quantize",
    "recurrent",
    "reduce",
    "resize",
]
