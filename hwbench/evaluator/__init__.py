"""The op-level evaluator: a user's ONNX graph or JAX function computed op by op on a device's arithmetic.

One evaluator, two front ends. :mod:`hwbench.evaluator.arith` is the arithmetic a node computes
with (matrix products on the matrix unit, elementwise functions, reductions, exact data
movement), built around a device's ops namespace; :mod:`hwbench.evaluator.onnx` walks an ONNX
graph and :mod:`hwbench.evaluator.jaxpr` a jaxpr, each mapping its ops onto that one vocabulary.
The reference is the same graph on native float64 arithmetic. The room sits above ``core`` and
``accuracy/numerics`` (it computes with a device's ops) and below the plugins (the ``onnx``
kernel and the GroqWare shim are its clients); it names no device.
"""
