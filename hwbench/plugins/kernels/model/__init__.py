"""A user's ONNX model as a kernel (``onnx``), its audit protocol (``onnx-model``), inputs and runs."""

from __future__ import annotations

from hwbench.plugins.kernels.model.kernel import kernels

__all__ = ["kernels"]
