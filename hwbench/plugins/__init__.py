"""Built-in plugins, registered through the same hooks as third-party ones."""

DEFAULT_KERNEL = "io-ehh"
"""The kernel commands run when no ``--kernel`` is given: the founding study's inferior-olive
network (Landsmeer et al. 2024). Generic layers never name a kernel; the CLI reads this."""

MODEL_KERNEL = "onnx"
"""The kernel a user's model file runs as (``--model m.onnx``; ``hwbench.run(model=...)``)."""
