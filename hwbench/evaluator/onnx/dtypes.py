"""ONNX element types as numpy dtypes."""

from __future__ import annotations

import numpy as np

from hwbench.core.errors import UsageError


def element_dtype(elem_type: int) -> np.dtype:
    """The numpy dtype of an ONNX element type (bfloat16 and the fp8 types through ml_dtypes)."""
    import onnx

    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError, ValueError):
        name = onnx.TensorProto.DataType.Name(elem_type) if elem_type in onnx.TensorProto.DataType.values() else "?"
        raise UsageError(f"ONNX element type {name} ({elem_type}) is not supported") from None
