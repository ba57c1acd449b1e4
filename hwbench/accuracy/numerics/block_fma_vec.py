"""Vectorised block FMA (numpy / JAX). First version: runs the reference row by row.

The vectorised algorithm replaces this in the next commit; the interface is final.
"""

from __future__ import annotations

import numpy as np

from hwbench.accuracy.numerics.block_fma import reference_inner
from hwbench.accuracy.numerics.matrix_unit_model import MatrixUnitModel

__all__ = ["inner_vec", "matmul_vec"]


def inner_vec(model: MatrixUnitModel, a: np.ndarray, b: np.ndarray, c: np.ndarray, *, backend: str) -> np.ndarray:
    rows = zip(a.tolist(), b.tolist(), c.tolist(), strict=True)
    return np.array([reference_inner(model, x, y, z) for x, y, z in rows], dtype=np.float64)


def matmul_vec(model: MatrixUnitModel, a: np.ndarray, b: np.ndarray, c: np.ndarray, *, backend: str) -> np.ndarray:
    m, n = a.shape[0], b.shape[1]
    out = inner_vec(model, np.repeat(a, n, axis=0), np.tile(b.T, (m, 1)), c.reshape(-1), backend=backend)
    return out.reshape(m, n)
