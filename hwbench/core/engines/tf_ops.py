"""The TensorFlow ops namespace (:class:`hwbench.core.ops.Ops` on ``tf``) and the TF import.

Shared by the TensorFlow (XLA) engine and the ONNX engine, which exports the same TensorFlow
graph through tf2onnx. Every float a kernel mixes into an expression is converted to the working
dtype here, so a float64 run never silently drops to float32 (TensorFlow's default for Python
floats) and a float32 run never promotes.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any


def tf_available() -> tuple[bool, str]:
    """Whether TensorFlow can be imported, without importing it (it takes seconds)."""
    if importlib.util.find_spec("tensorflow") is None:
        return False, "tensorflow is not installed (pip install 'hwbench[tf]')"
    return True, "tensorflow installed"


def import_tf() -> Any:
    """Import TensorFlow with its C++ logging quietened (unless the user chose a level)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    return tf


class TfOps:
    """Kernel ops on TensorFlow tensors of one working float dtype.

    ``scatter_add`` uses ``tf.math.unsorted_segment_sum``: XLA lowers it to one scatter, and
    tf2onnx lowers it to a gather over a segment grid plus a row sum, whose index arithmetic ONNX
    Runtime folds into constants when the connectivity is embedded (it is, in both engines).
    """

    name = "tensorflow"
    xp_name = "tensorflow"

    def __init__(self, dtype: str = "float32") -> None:
        tf = import_tf()
        self._tf = tf
        self.dtype = tf.as_dtype(dtype)

    # conversion -------------------------------------------------------------------------------
    def _f(self, x: Any) -> Any:
        """A float operand in the working dtype (tensors pass through untouched)."""
        import numpy as np

        tf = self._tf
        if isinstance(x, (tf.Tensor, tf.Variable)):
            return x
        return tf.constant(np.asarray(x, dtype=self.dtype.as_numpy_dtype))

    def asarray(self, x: Any) -> Any:
        import numpy as np

        tf = self._tf
        if isinstance(x, (tf.Tensor, tf.Variable)):
            return x
        arr = np.asarray(x)
        if arr.dtype.kind in "iub":
            return tf.constant(arr)
        return tf.constant(arr.astype(self.dtype.as_numpy_dtype))

    # elementwise ------------------------------------------------------------------------------
    def exp(self, x: Any) -> Any:
        return self._tf.math.exp(self._f(x))

    def log(self, x: Any) -> Any:
        return self._tf.math.log(self._f(x))

    def sqrt(self, x: Any) -> Any:
        return self._tf.math.sqrt(self._f(x))

    def power(self, x: Any, y: Any) -> Any:
        return self._tf.math.pow(self._f(x), self._f(y))

    def abs(self, x: Any) -> Any:
        return self._tf.math.abs(self._f(x))

    def minimum(self, x: Any, y: Any) -> Any:
        return self._tf.math.minimum(self._f(x), self._f(y))

    def maximum(self, x: Any, y: Any) -> Any:
        return self._tf.math.maximum(self._f(x), self._f(y))

    def where(self, cond: Any, x: Any, y: Any) -> Any:
        return self._tf.where(cond, self._f(x), self._f(y))

    def greater(self, x: Any, y: Any) -> Any:
        return self._tf.math.greater(self._f(x), self._f(y))

    def less(self, x: Any, y: Any) -> Any:
        return self._tf.math.less(self._f(x), self._f(y))

    # indexing and reductions ------------------------------------------------------------------
    def gather(self, x: Any, index: Any) -> Any:
        return self._tf.gather(self._f(x), index, axis=-1)

    def scatter_add(self, values: Any, index: Any, size: int) -> Any:
        tf = self._tf
        values = self._f(values)
        rank = values.shape.rank
        if rank == 1:
            return tf.math.unsorted_segment_sum(values, index, size)
        # segment ops reduce the leading axis; the contract scatters along the last one
        perm = [rank - 1, *range(rank - 1)]
        back = [*range(1, rank), 0]
        return tf.transpose(tf.math.unsorted_segment_sum(tf.transpose(values, perm), index, size), back)

    def sum(self, x: Any, axis: int) -> Any:
        return self._tf.math.reduce_sum(self._f(x), axis=axis)

    def matmul(self, a: Any, b: Any, precision: str | None = None) -> Any:
        tf = self._tf
        a, b = self._f(a), self._f(b)
        if a.shape.rank >= 2 and b.shape.rank >= 2:
            return tf.linalg.matmul(a, b)
        return tf.tensordot(a, b, axes=1)  # numpy semantics for vector operands

    def conv2d(self, x: Any, w: Any, padding: tuple[int, int], precision: str | None = None) -> Any:
        ph, pw = padding
        pads = [[0, 0], [ph, ph], [pw, pw], [0, 0]]
        return self._tf.nn.conv2d(self._f(x), self._f(w), strides=1, padding=pads, data_format="NHWC")

    def stack(self, xs: list[Any]) -> Any:
        return self._tf.stack([self._f(x) for x in xs])

    def zeros_like(self, x: Any) -> Any:
        return self._tf.zeros_like(x)

    def astype(self, x: Any, dtype: Any) -> Any:
        import numpy as np

        tf = self._tf
        target = dtype if isinstance(dtype, tf.dtypes.DType) else tf.as_dtype(np.dtype(dtype))
        return tf.cast(x, target)
