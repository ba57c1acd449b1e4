"""The implementations of the ONNX op table (:mod:`hwbench.evaluator.onnx.op_table`), one module
per family; importing this package registers them all."""

from hwbench.evaluator.onnx.ops import elementwise, linalg, moves, nn, reduce

__all__ = ["elementwise", "linalg", "moves", "nn", "reduce"]
