"""Rounding-error bounds of a matrix product (or convolution) under a device's numerics profile.

For ``C = A B`` with reduction length K (Higham, *Accuracy and Stability*, 2nd ed., Sec. 3.5;
Higham & Mary, SIAM J. Sci. Comput. 2019 for the probabilistic form):

    |C - Ĉ| <= c_det(K) * (|A| |B|),   c_det = p + n * γ_K(u_acc) * (1 + p) + ...,   γ_K = K u / (1 - K u)

where ``p`` bounds the relative error of one product of rounded operands and ``n`` is the
number of separately accumulated sums (1; or XLA's 3 / 6 bf16 passes on the TPU). Operands
rounded to nearest in a format with ``t`` significant bits carry ``u = 2^-t``; stochastic or
directed rounding ``2u``; so ``p = 2 u_in + u_in^2``. bf16x3 (HIGH) drops ``lo*lo`` and the
split's remainder: ``p <= 1.1 * 2^-13``; bf16x6 (HIGHEST) splits fp32 exactly and drops
``mid*lo + lo*mid + lo*lo``: ``p <= 1.1 * 2^-21``. A stored output rounded to ``u_out``
adds ``u_out``. The probabilistic coefficient replaces ``γ_K`` by ``sqrt(K) u_acc`` (λ = 1).
Bounds hold for any summation order (BLAS blocking, FMA, tree sums): the emulation's native
fp32 product is a legitimate fp32 accumulation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hwbench.accuracy.numerics.formats import FloatFormat, RoundingMode
from hwbench.accuracy.numerics.profile import NumericsProfile
from hwbench.core.ops import OpClass

PASS_PRODUCT_ERROR = {3: 1.1 * 2.0**-13, 6: 1.1 * 2.0**-21}
FP32_MANTISSA_BITS = int(np.finfo(np.float32).nmant)  # 23 fraction bits


@dataclass(frozen=True)
class BoundModel:
    """Coefficients of ``|A||B|`` for one reduction length, and how they were derived."""

    k: int
    product: float  # p: relative error of one product of rounded operands
    u_acc: float
    sums: int
    u_out: float
    deterministic: float
    probabilistic: float
    derivation: str


def unit_roundoff(fmt: FloatFormat, rounding: RoundingMode) -> float:
    """u = 2^-t for rounding to nearest; one full ulp (2u) for stochastic or directed rounding."""
    u = math.ldexp(1.0, -(fmt.mantissa_bits + 1))
    nearest = rounding in (RoundingMode.NEAREST_EVEN, RoundingMode.NEAREST_AWAY)
    return u if nearest else 2 * u


def gamma(k: int, u: float) -> float:
    """γ_K = K u / (1 - K u); infinite when K u >= 1 (no bound)."""
    return math.inf if k * u >= 1 else k * u / (1 - k * u)


def _rule_u(profile: NumericsProfile | None, cls: OpClass) -> float | None:
    if profile is None or cls not in profile.ops:
        return None
    op = profile.ops[cls]
    fmt = op.resolved_format()
    if not isinstance(fmt, FloatFormat):
        return None
    if fmt.mantissa_bits >= FP32_MANTISSA_BITS and cls is not OpClass.MATMUL_ACCUMULATE:
        return 0.0  # rounding an fp32 value to fp32 (or wider) changes nothing
    return unit_roundoff(fmt, op.rounding)


def bound_model(profile: NumericsProfile | None, k: int, *, carrier_u: float = 2.0**-24) -> BoundModel:
    """The bound of a K-term product under ``profile`` (None: IEEE arithmetic of the carrier)."""
    passes = int(profile.parameters.get("bf16_passes", 1)) if profile is not None else 1
    u_in = _rule_u(profile, OpClass.MATMUL_INPUT) or 0.0
    u_acc = _rule_u(profile, OpClass.MATMUL_ACCUMULATE) or carrier_u
    u_out = _rule_u(profile, OpClass.STORE) or 0.0
    if passes in PASS_PRODUCT_ERROR:
        p, sums, how = PASS_PRODUCT_ERROR[passes], passes, f"{passes} bf16 passes: p = {PASS_PRODUCT_ERROR[passes]:.3g}"
    else:
        p, sums, how = 2 * u_in + u_in * u_in, 1, f"operands u_in = {u_in:.3g}: p = 2u_in + u_in^2"
    grow = 1.02 if sums > 1 else 1.0  # pass terms are bounded by |A||B| (1 + 2^-7)^2
    acc_det = sums * grow * gamma(k, u_acc) * (1 + p) + (sums - 1) * u_acc
    acc_prob = sums * grow * math.sqrt(k) * u_acc * (1 + p) + (sums - 1) * u_acc
    det = (p + acc_det) * (1 + u_out) + u_out
    prob = (p + acc_prob) * (1 + u_out) + u_out
    derivation = (
        f"K = {k}; {how}; accumulation u_acc = {u_acc:.3g} ({sums} sum{'s' if sums > 1 else ''}); "
        f"stored output u_out = {u_out:.3g}; c_det = {det:.3g}, c_prob = {prob:.3g}"
    )
    return BoundModel(k, p, u_acc, sums, u_out, det, prob, derivation)


def elementwise_model(profile: NumericsProfile | None) -> BoundModel:
    """ReLU: one compare (exact unless its result format is narrower) and the stored output."""
    u_cmp = _rule_u(profile, OpClass.COMPARE) or 0.0
    u_out = _rule_u(profile, OpClass.STORE) or 0.0
    c = (1 + u_cmp) * (1 + u_out) - 1
    return BoundModel(1, 0.0, 0.0, 0, u_out, c, c, f"elementwise: compare u = {u_cmp:.3g}, stored u = {u_out:.3g}")
