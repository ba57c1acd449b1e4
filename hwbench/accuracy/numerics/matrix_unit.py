"""Matrix units as silicon computes them: ``matrix_unit(name, input, output)`` and ``MatrixUnit``.

A :class:`MatrixUnit` runs a :class:`~.matrix_unit_model.MatrixUnitModel` on arrays:
``inner(a, b, c)`` for n independent inner products, ``matmul(A, B, C)`` for a GEMM whose every
output element chains blocks of K exactly as the hardware's GEMM does. Inputs must already be
values of the unit's formats: a value that the input format cannot hold is refused (a unit
never rounds its operands silently; round them first, e.g. with
:func:`hwbench.accuracy.numerics.rounding.round_float`).

Backends: ``reference`` (one inner product at a time in exact Python integers, the plain
algorithm of :mod:`.block_fma`), ``numpy`` and ``jax`` (the vectorised algorithm of
:mod:`.block_fma_vec`, held to the reference bit for bit by the tests).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import numpy as np

from hwbench.accuracy.numerics.formats import FloatFormat
from hwbench.accuracy.numerics.matrix_unit_catalog import MATRIX_UNITS, named_models
from hwbench.accuracy.numerics.matrix_unit_model import INPUT_FORMATS, OUTPUT_FORMATS, MatrixUnitModel
from hwbench.core.errors import UsageError, unknown_name

__all__ = ["MATRIX_UNITS", "Backend", "MatrixUnit", "matrix_unit", "unit_formats"]

Backend = Literal["numpy", "jax", "reference"]
_BACKENDS = ("numpy", "jax", "reference")


@lru_cache(maxsize=1)
def _catalog() -> dict[str, dict[tuple[str, str], MatrixUnitModel]]:
    return named_models()


def unit_formats(name: str) -> list[tuple[str, str]]:
    """The (input, output) format pairs a named unit has a published model for."""
    units = _catalog()
    if name not in units:
        raise unknown_name("matrix unit", name, units)
    return list(units[name])


def matrix_unit(
    name: str | None = None,
    input_format: str | None = None,
    output_format: str | None = None,
    *,
    model: MatrixUnitModel | None = None,
    backend: Backend = "numpy",
) -> MatrixUnit:
    """A named unit (``matrix_unit("h100", "fp16", "fp32")``) or one you describe (``model=``).

    ``output_format`` defaults to fp32. Unknown names, formats or combinations raise
    :class:`~hwbench.core.errors.UsageError` listing what exists.
    """
    if backend not in _BACKENDS:
        raise unknown_name("matrix-unit backend", str(backend), _BACKENDS)
    if model is not None:
        if name is not None or input_format is not None or output_format is not None:
            raise UsageError("give either a unit name with formats or model=, not both")
        return MatrixUnit(model, backend=backend)
    if name is None or input_format is None:
        raise UsageError(f"a matrix unit needs a name and an input format; named units: {', '.join(MATRIX_UNITS)}")
    key = name.strip().lower()
    units = _catalog()
    if key not in units:
        raise unknown_name("matrix unit", name, units)
    fin = input_format.strip().lower()
    fout = (output_format or "fp32").strip().lower()
    if fin not in INPUT_FORMATS:
        raise unknown_name("matrix-unit input format", input_format, INPUT_FORMATS)
    if fout not in OUTPUT_FORMATS:
        raise unknown_name("matrix-unit output format", fout, OUTPUT_FORMATS)
    found = units[key].get((fin, fout))
    if found is None:
        pairs = ", ".join(f"{i}->{o}" for i, o in units[key])
        raise UsageError(f"matrix unit '{key}' has no published model for {fin}->{fout}; it has: {pairs}")
    return MatrixUnit(found, backend=backend)


class MatrixUnit:
    """A matrix unit: its model and the backend that runs it."""

    def __init__(self, model: MatrixUnitModel, *, backend: Backend = "numpy") -> None:
        if backend not in _BACKENDS:
            raise unknown_name("matrix-unit backend", str(backend), _BACKENDS)
        self.model = model
        self.backend: Backend = backend

    def __repr__(self) -> str:
        return f"MatrixUnit({self.model.label}, backend={self.backend})"

    def with_backend(self, backend: Backend) -> MatrixUnit:
        return MatrixUnit(self.model, backend=backend)

    def inner(self, a: Any, b: Any, c: Any = None) -> np.ndarray:
        """``a[i] . b[i] + c[i]`` for each row i: a, b (n, K) input values, c (n,) output values."""
        import numpy as np

        a2, b2 = _as_matrix(a, "a"), _as_matrix(b, "b")
        if a2.shape != b2.shape:
            raise UsageError(f"a and b must have the same shape (n, K); got {a2.shape} and {b2.shape}")
        c1 = np.zeros(a2.shape[0]) if c is None else np.asarray(c, dtype=np.float64)
        if c1.shape != (a2.shape[0],):
            raise UsageError(f"c must have shape ({a2.shape[0]},) to match a's rows; got {c1.shape}")
        self._check(a2, b2, c1)
        if self.backend == "reference":
            from hwbench.accuracy.numerics.block_fma import reference_inner

            rows = zip(a2.tolist(), b2.tolist(), c1.tolist(), strict=True)
            return np.array([reference_inner(self.model, x, y, z) for x, y, z in rows], dtype=np.float64)
        from hwbench.accuracy.numerics.block_fma_vec import inner_vec

        return inner_vec(self.model, a2, b2, c1, backend=self.backend)

    def matmul(self, a: Any, b: Any, c: Any = None, *, rounded: bool = False) -> np.ndarray:
        """``A @ B + C`` with every element an inner product of this unit: A (M, K), B (K, N), C (M, N).

        Values a format cannot hold are refused (a UsageError naming the first), unless ``rounded``:
        the caller rounded A and B to the input format and C to the output format itself, and the
        check (a third of a small product's time) is skipped."""
        import numpy as np

        a2, b2 = _as_matrix(a, "A"), _as_matrix(b, "B")
        if a2.shape[1] != b2.shape[0]:
            raise UsageError(f"A (M, K) and B (K, N) must share K; got {a2.shape} and {b2.shape}")
        m, n = a2.shape[0], b2.shape[1]
        c2 = np.zeros((m, n)) if c is None else np.asarray(c, dtype=np.float64)
        if c2.shape != (m, n):
            raise UsageError(f"C must have shape ({m}, {n}); got {c2.shape}")
        self._check(a2, b2, c2, representable=not rounded)
        if self.backend == "reference":
            rows = self.inner(np.repeat(a2, n, axis=0), np.tile(b2.T, (m, 1)), c2.reshape(-1))
            return rows.reshape(m, n)
        from hwbench.accuracy.numerics.block_fma_vec import matmul_vec

        return matmul_vec(self.model, a2, b2, c2, backend=self.backend)

    def _check(self, a: np.ndarray, b: np.ndarray, c: np.ndarray, *, representable: bool = True) -> None:
        k, step = (a.shape[1] if a.ndim == 2 else 0), self.model.step_terms
        if k % step and not self.model.pad_k:
            whole = "blocks" if step == self.model.block_terms else "instructions"
            raise UsageError(
                f"{self.model.label} takes K in whole {whole} of {step}; got K={k} "
                "(pad with zeros, or set pad_k=True in the model)"
            )
        if not representable:
            return
        fin = self.model.input_float
        for arr, what in ((a, "a"), (b, "b")):
            _check_representable(arr, fin, f"{what} ({self.model.input_format})")
        _check_representable(c, self.model.output_float, f"c ({self.model.output_format})")


def _as_matrix(x: Any, what: str) -> np.ndarray:
    import numpy as np

    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2:
        raise UsageError(f"{what} must be a 2-D array; got {arr.ndim}-D with shape {arr.shape}")
    return arr


def _check_representable(x: np.ndarray, fmt: FloatFormat, what: str) -> None:
    """Refuse values the format cannot hold: one line naming the first offender."""
    import numpy as np

    finite = np.isfinite(x)
    bad = np.zeros(x.shape, dtype=bool)
    if not fmt.has_inf:
        bad |= np.isinf(x)
    mag = np.where(finite, np.abs(x), 0.0)
    _, e = np.frexp(mag)
    exp = np.maximum(e - 1, fmt.emin)
    scaled = np.ldexp(mag, fmt.mantissa_bits - exp)
    bad |= finite & ((scaled != np.floor(scaled)) | (mag > fmt.max_value))
    if bad.any():
        first = float(x[bad].flat[0])
        raise UsageError(
            f"{what} holds {np.count_nonzero(bad)} value(s) not representable in {fmt.name} "
            f"(first: {first!r}); round the operands to the format first"
        )
