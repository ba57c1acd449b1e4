"""What made a node's error grow on a device, where its outputs show it or its op class explains it.

Front-end neutral: a node is named by its op class (:class:`~hwbench.core.ops.OpClass`: the
``exp`` class for exp, tanh, erf ...; ``matmul_input`` for matrix products; the ONNX and jaxpr
front ends each map their ops to it) and read through its output values (candidate and float64
reference) and, for matrix products, its operands. Checked in this order, the first that applies is
the mechanism:

1. non-finite values where the reference is finite: an fp8 overflow when a matrix product's
   operands exceed its fp8 input format's largest value (and are not scaled into its range), else
   values that became inf or NaN;
2. saturation: values held at the op's format's largest finite value where the reference is
   beyond it (a saturating profile, or a saturating format);
3. flushed subnormals: zeros where the reference lies below the format's smallest normal and the
   format flushes;
4. fp8's range under per-tensor amax scaling (TensorRT, Transformer Engine): no operand can
   overflow, but one more than fp8's range (max / smallest subnormal) below its tensor's largest
   magnitude rounds to zero;
5. cancellation in a normalisation's variance (a LayerNorm's): the input's mean dwarfs its spread,
   so centring it (``x - mean``) cancels the leading bits and the deviations keep few;
6. the op class's arithmetic itself: a reduced-precision format for it (the GroqChip's exp and
   division), matrix-unit inputs in a narrower format, or an error model of so many ulps.

None where nothing applies (an error propagated from earlier nodes, or the accumulation order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.core.ops import OpClass

if TYPE_CHECKING:
    from hwbench.accuracy.numerics.formats import FloatFormat
    from hwbench.accuracy.numerics.profile import NumericsProfile

CARRIER_BITS = {"float32": 23, "float64": 52}


def mechanism(
    op: str,
    cls: OpClass | None,
    profile: NumericsProfile | None,
    cand: Sequence[np.ndarray],
    ref: Sequence[np.ndarray],
    operands: Sequence[np.ndarray | None] = (),
    *,
    normalized: np.ndarray | None = None,
) -> str | None:
    """The mechanism of node ``op`` (its name in the report: ``exp``, ``dot_general``, ``MatMul``)
    of class ``cls`` on a device with ``profile`` (None: native IEEE), from its outputs and operands;
    ``normalized``: the input a normalisation (a LayerNorm) centres over its last axis, if it is one."""
    c = np.concatenate([np.asarray(v, np.float64).ravel() for v in cand]) if cand else np.zeros(0)
    r = np.concatenate([np.asarray(v, np.float64).ravel() for v in ref]) if ref else np.zeros(0)
    if c.shape != r.shape:
        return None
    finite = np.isfinite(r)
    bad = int((finite & ~np.isfinite(c)).sum())
    if profile is None or cls is None:
        return _nonfinite(bad, None, operands) if bad else _cancellation(normalized, CARRIER_BITS["float32"])
    scaled = profile.parameters.get("matrix_scaling") == "per-tensor-amax"
    matrix = cls in (OpClass.MATMUL_INPUT, OpClass.MATMUL_ACCUMULATE)
    result = _format(profile, OpClass.MATMUL_ACCUMULATE if matrix else cls)
    inputs = _format(profile, OpClass.MATMUL_INPUT) if matrix else None
    if bad:
        return _nonfinite(bad, None if scaled else inputs, operands)
    bits = result.mantissa_bits if result is not None else CARRIER_BITS.get(profile.carrier, 23)
    return (
        _range(profile, result, c, r, finite)
        or _fp8_scaled_range(profile, inputs, operands)
        or _cancellation(normalized, bits)
        or _arithmetic(op, cls, profile, result, inputs)
    )


def _nonfinite(bad: int, inputs: FloatFormat | None, operands: Sequence[np.ndarray | None]) -> str:
    """Non-finite values: an fp8 overflow of a matrix product's operands (``inputs``: their format;
    None where per-tensor amax scaling brings every operand into range), or values that became inf or NaN."""
    return _fp8_overflow(inputs, operands) or (
        f"non-finite: {bad} values became inf or NaN where the float64 reference is finite"
    )


def _format(profile: NumericsProfile, cls: OpClass) -> FloatFormat | None:
    entry = profile.op(cls)
    fmt = entry.resolved_format() if entry is not None else None
    return fmt if getattr(fmt, "kind", "") == "float" else None  # type: ignore[return-value]


def _fp8_overflow(fmt: FloatFormat | None, operands: Sequence[np.ndarray | None]) -> str | None:
    """Matrix-product operands beyond an fp8 input format's range (rounded to NaN or its largest)."""
    if fmt is None or fmt.mantissa_bits > 3:
        return None
    top = fmt.max_value
    beyond = sum(int((np.abs(np.asarray(v, np.float64)) > top).sum()) for v in operands[:2] if v is not None)
    if not beyond:
        return None
    return f"fp8 overflow: {beyond} operand values beyond {fmt.name}'s largest finite value {top:g}"


def _fp8_scaled_range(
    profile: NumericsProfile, fmt: FloatFormat | None, operands: Sequence[np.ndarray | None]
) -> str | None:
    """Matrix-product operands that per-tensor amax scaling rounds to zero in an fp8 input format."""
    if fmt is None or fmt.mantissa_bits > 3 or profile.parameters.get("matrix_scaling") != "per-tensor-amax":
        return None
    lost = 0
    for v in operands[:2]:
        if v is None:
            continue
        a = np.abs(np.asarray(v, np.float64))
        amax = float(a.max()) if a.size else 0.0
        if np.isfinite(amax) and amax > 0:
            scaled = a * (fmt.max_value / amax)
            lost += int(((scaled > 0) & (scaled < fmt.min_subnormal / 2)).sum())
    if not lost:
        return None
    return (
        f"fp8 range: {lost} operand values more than {fmt.max_value / fmt.min_subnormal:.6g}x below their "
        f"tensor's largest magnitude rounded to 0 under per-tensor amax scaling ({fmt.name})"
    )


def _range(
    profile: NumericsProfile, fmt: FloatFormat | None, c: np.ndarray, r: np.ndarray, finite: np.ndarray
) -> str | None:
    """Saturated values, or subnormals flushed to zero, in the op's result format."""
    if fmt is None:
        return None
    top = fmt.max_value
    if profile.special_values == "saturate" or fmt.overflow == "saturate":
        held = int((finite & (np.abs(c) >= top) & (np.abs(r) > top)).sum())
        if held:
            return f"saturated: {held} values held at {fmt.name}'s largest finite value {top:g}"
    if fmt.subnormals in ("ftz", "ftz-daz"):
        tiny = fmt.min_normal
        flushed = int(((c == 0) & (r != 0) & (np.abs(r) < tiny)).sum())
        if flushed:
            return f"flushed subnormals: {flushed} values below {fmt.name}'s smallest normal {tiny:g} computed as 0"
    return None


def _arithmetic(
    op: str, cls: OpClass, profile: NumericsProfile, result: FloatFormat | None, inputs: FloatFormat | None
) -> str | None:
    """The op class's own arithmetic, where it is less than the carrier's: its format or error model."""
    carrier = CARRIER_BITS.get(profile.carrier, 23)
    if inputs is not None and inputs.mantissa_bits < carrier:
        return f"matrix-unit inputs rounded to {inputs.name} ({inputs.mantissa_bits} fraction bits)"
    if result is not None and result.mantissa_bits < carrier:
        return f"reduced-precision {op}: computed in {result.name} ({result.mantissa_bits} fraction bits)"
    entry: Any = profile.op(cls)
    error = getattr(entry, "error", None)
    if error is not None and error.ulps:
        return f"{op} with the device's error model (up to {error.ulps:g} ulp, {error.kind})"
    return None


def _cancellation(x: np.ndarray | None, bits: int) -> str | None:
    """A normalisation whose input's mean dwarfs its spread, over the normalised (last) axis: its
    deviations from the mean keep about ``log2(std / rms)`` fewer bits than the format's; named when
    that loss exceeds a quarter of the significand (``E[x^2] / Var(x)`` above ``2**(bits / 2)``)."""
    if x is None:
        return None
    v = np.asarray(x, np.float64)
    if not v.size:
        return None
    mean_sq, var = np.mean(v * v, axis=-1), np.var(v, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(var > 0, mean_sq / var, np.where(mean_sq > 0, np.inf, 0.0))  # no spread left: all lost
    worst = float(np.nanmax(ratio))
    if worst <= 2.0 ** (bits / 2):
        return None
    lost = 0.5 * np.log2(worst)
    return (
        f"cancellation in the LayerNorm variance: the input's mean dwarfs its spread (rms / std reaches "
        f"{np.sqrt(worst):.3g}), so its deviations from the mean keep about {max(bits + 1 - lost, 0):.0f} of "
        f"{bits + 1} bits"
    )
