"""Matrix products on a block-FMA matrix unit, for emulated devices whose tensor cores are modelled.

The emulating ops (``hwbench.accuracy.numerics.emulate``) compute a matrix product with the
*operand-rounding approximation*: operands rounded to the input format, one native fp32 product.
A device mode whose profile names a matrix unit (``parameters["matrix_unit"]``, with
``matrix_input`` / ``matrix_output``) gets :class:`MatrixUnitOps` instead for its matrix
products and convolutions: the operands are rounded to the input format (with the profile's
``matmul_input`` rounding: nearest even, as a framework's cast does, or TensorRT's ties-away
TF32) and every output element is the unit's chained block FMA (``hwbench.api.matrix_unit``),
exactly as the published model of the chip computes it. Everything else is delegated to the
emulating ops. The faithful path does O(MNK) exact work; the DL audit uses it (sizes of an
audit), the io-ehh paths keep the approximation.

Convolutions run as matrix products of patches (im2col), K ordered (filter row, filter column,
input channel) — cuDNN's implicit-GEMM order for NHWC; the order is an assumption.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from hwbench.accuracy.numerics.formats import RoundingMode
from hwbench.accuracy.numerics.matrix_unit import MatrixUnit, matrix_unit
from hwbench.accuracy.numerics.profile import NumericsProfile
from hwbench.core.ops import OpClass

APPROXIMATION = "operand-rounding approximation"


def unit_parameters(name: str, input_format: str, output_format: str = "fp32") -> dict[str, str]:
    """The profile parameters that route a mode's matrix products through a named unit."""
    return {"matrix_unit": name, "matrix_input": input_format, "matrix_output": output_format}


def unit_notes(name: str, input_format: str, output_format: str = "fp32") -> list[str]:
    """The ``Parameter X = ...`` notes of :func:`unit_parameters` (every profile parameter is cited)."""
    from hwbench.accuracy.numerics.matrix_unit import matrix_unit

    model = matrix_unit(name, input_format, output_format).model
    src = f"{model.source} (hwbench.api.matrix_unit; docs/devices/ lists every block-FMA parameter)"
    conf = model.confidence.value
    return [
        f"Parameter matrix_unit = {name!r}, {conf}: the named matrix unit whose block-FMA model computes this "
        f"mode's matrix products where a DL primitive's audit runs them. Source: {src}",
        f"Parameter matrix_input = {input_format!r}, {conf}: the unit's input format. Source: {src}",
        f"Parameter matrix_output = {output_format!r}, {conf}: the unit's output format. Source: {src}",
    ]


def matmul_method(profile: NumericsProfile | None) -> str:
    """How the profile's matrix products are computed, as reports name it."""
    if profile is None or "matrix_unit" not in profile.parameters:
        return APPROXIMATION
    p = profile.parameters
    return f"block-FMA model {p['matrix_unit']} {p['matrix_input']}->{p['matrix_output']}"


def profile_unit(profile: NumericsProfile) -> MatrixUnit | None:
    """The matrix unit a profile names, or None."""
    p = profile.parameters
    if "matrix_unit" not in p:
        return None
    return matrix_unit(str(p["matrix_unit"]), str(p["matrix_input"]), str(p["matrix_output"]))


class MatrixUnitOps:
    """An ops namespace whose ``matmul`` / ``conv2d`` run a matrix unit; all else delegated.

    The unit's model computes on the host (numpy): ``host_matmul`` tells a compiling caller (the
    op-level evaluator) to call it back from its program; ``bilinear`` is None so that no caller
    takes the emulating namespace's operand-rounding product in the unit's place.
    """

    host_matmul = True
    bilinear = None

    def __init__(
        self,
        inner: Any,
        unit: MatrixUnit,
        rounding: RoundingMode = RoundingMode.NEAREST_EVEN,
        amax_scaling: bool = False,
    ) -> None:
        self._inner = inner
        self.unit = unit
        self.rounding = rounding
        #: the input format's largest value where a caller scales each operand by it over the
        #: operand's amax (the fp8 modes' per-tensor scaling, applied by the op-level evaluator's
        #: Arith.matmul over whole tensors); None: operands are cast as they are
        self.amax_scaling: float | None = unit.model.input_float.max_value if amax_scaling else None

    def __getattr__(self, name: str) -> Any:
        if name == "_inner":
            raise AttributeError(name)
        return getattr(self._inner, name)

    @property
    def matmul_method(self) -> str:
        """How this namespace computes matrix products, as reports name it."""
        return f"block-FMA model {self.unit.model.label}"

    def matmul(self, a: Any, b: Any, precision: str | None = None) -> Any:
        va, vb = self._operand(a), self._operand(b)
        lead = va.shape[:-1]
        out = self.unit.matmul(va.reshape(-1, va.shape[-1]), vb, rounded=True)  # rounded by _operand
        return self._result(out.reshape(*lead, vb.shape[-1]), a)

    def conv2d(self, x: Any, w: Any, padding: tuple[int, int], precision: str | None = None) -> Any:
        """NHWC x HWIO, stride 1, zero padding: patches (N*Ho*Wo, fh*fw*C) @ (fh*fw*C, O)."""
        import numpy as np

        vx, vw = self._operand(x), self._operand(w)
        fh, fw, cin, cout = vw.shape
        ph, pw = padding
        xp = np.pad(vx, ((0, 0), (ph, ph), (pw, pw), (0, 0)))
        n, h, wd, _ = xp.shape
        ho, wo = h - fh + 1, wd - fw + 1
        cols = np.lib.stride_tricks.sliding_window_view(xp, (fh, fw), axis=(1, 2))  # (n, ho, wo, c, fh, fw)
        patches = cols.transpose(0, 1, 2, 4, 5, 3).reshape(n * ho * wo, fh * fw * cin)
        out = self.unit.matmul(patches, vw.reshape(fh * fw * cin, cout), rounded=True)
        return self._result(out.reshape(n, ho, wo, cout), x)

    def _operand(self, x: Any) -> np.ndarray:
        import numpy as np

        from hwbench.accuracy.numerics.emulated_array import unwrap
        from hwbench.accuracy.numerics.rounding import round_float

        v = np.asarray(unwrap(x), dtype=np.float64)
        return np.asarray(round_float(v, self.unit.model.input_float, self.rounding), dtype=np.float64)

    def _result(self, out: np.ndarray, like: Any) -> Any:
        import numpy as np

        from hwbench.accuracy.numerics.emulated_array import EmuArray, unwrap

        dtype = getattr(unwrap(like), "dtype", np.float32)
        value = out.astype(dtype if np.dtype(dtype).kind == "f" else np.float32)
        return EmuArray(value, self._inner) if getattr(self._inner, "emulated", False) else value


class MatrixUnitWrapper:
    """``ops_wrapper`` for engines: the profile's emulating ops with the unit's matrix products."""

    def __init__(self, profile: NumericsProfile, unit: MatrixUnit, *, seed: int = 0, counters: bool = False) -> None:
        from hwbench.accuracy.numerics.emulate import emulating_ops

        self.inner = emulating_ops(profile, counters=counters, seed=seed)
        self.unit = unit
        rule = profile.ops.get(OpClass.MATMUL_INPUT)
        self.rounding = RoundingMode.NEAREST_EVEN if rule is None else rule.rounding
        self.amax_scaling = profile.parameters.get("matrix_scaling") == "per-tensor-amax"

    def __call__(self, raw: Any) -> MatrixUnitOps:
        return MatrixUnitOps(self.inner(raw), self.unit, self.rounding, self.amax_scaling)
