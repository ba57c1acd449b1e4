"""The jaxpr front end: a user's JAX function evaluated on a device's arithmetic (issue 41).

:class:`~hwbench.evaluator.jaxpr.program.FunctionProgram` traces the function, and compiles it for
an :class:`~hwbench.evaluator.arith.Arith`; its per-equation records are the same
:class:`~hwbench.evaluator.records.NodeInfo` as an ONNX graph's nodes, so
:mod:`hwbench.evaluator.compare` serves both.
"""
