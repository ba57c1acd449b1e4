"""Number formats as data: IEEE-like floats and fixed point.

A format is a frozen pydantic model, so it is hashable (usable as a ``jax.jit`` static argument
and as a dict key), comparable, and serialisable to JSON / TOML. Numerics profiles name formats
by preset (``get_format("bf16")``) or embed a custom one; the rounding functions in
:mod:`hwbench.accuracy.numerics.rounding` take a format and round values onto it bit-exactly.

Why the float fields look the way they do: every IEEE-like binary format is fully described by
its precision (``mantissa_bits`` explicit fraction bits + the implicit leading bit), the unbiased
exponent range of its *normal* numbers (``emin .. emax``), and a handful of conventions that real
hardware varies on: whether subnormals exist (or are flushed on input / output), whether overflow
gives infinity or saturates, and which encodings are reserved (IEEE inf/NaN, or the OCP fp8
"fn"/"fnuz" conventions that drop infinities and, for fnuz, negative zero). ``max_finite``
covers formats whose top binade is partly NaN (fp8 e4m3fn: 448 rather than 480).
"""

from __future__ import annotations

import math
from enum import Enum
from fractions import Fraction
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from hwbench.core.errors import UsageError, unknown_name

__all__ = [
    "FORMATS",
    "FixedFormat",
    "FloatFormat",
    "Format",
    "RoundingMode",
    "custom_float",
    "get_format",
]


class RoundingMode(str, Enum):
    """How a value between two representable neighbours is resolved.

    ``ODD`` (round to odd / sticky rounding) picks the neighbour whose last significand bit is 1
    for inexact values; it is the rounding that makes a later rounding to a narrower format
    free of double-rounding errors. ``STOCHASTIC`` rounds up with probability proportional to
    the distance from the lower neighbour (see :func:`hwbench.accuracy.numerics.rounding.round_float`).
    """

    NEAREST_EVEN = "nearest-even"
    TOWARD_ZERO = "toward-zero"
    UP = "up"
    DOWN = "down"
    NEAREST_AWAY = "nearest-away"
    ODD = "odd"
    STOCHASTIC = "stochastic"


# (mantissa bits, emin, emax) of the IEEE carriers, as numpy's finfo gives them (nmant, minexp,
# maxexp - 1): profiles check their formats against these while being built, and building the
# device listing must not import numpy (issue 31: `hwbench devices` within 0.3 s).
IEEE_CARRIERS: dict[str, tuple[int, int, int]] = {
    "float16": (10, -14, 15),
    "float32": (23, -126, 127),
    "float64": (52, -1022, 1023),
}


class FloatFormat(BaseModel, frozen=True):
    """An IEEE-754-like binary floating-point format.

    Values are ``(-1)^s * 1.f * 2^e`` for ``emin <= e <= emax`` (normals, ``f`` has
    ``mantissa_bits`` bits) and ``(-1)^s * 0.f * 2^emin`` (subnormals).

    ``subnormals``: ``keep`` (IEEE gradual underflow), ``ftz`` (a *result* that is subnormal
    after rounding is flushed to a zero of the same sign), ``daz`` (a subnormal *input* is
    treated as zero before rounding), ``ftz-daz`` (both).
    ``overflow``: ``inf`` (IEEE: overflow gives infinity — or NaN where the format has no
    infinity, as ml_dtypes/OCP non-saturating conversion does) or ``saturate`` (clamp to
    ``±max_value``; infinities are clamped too).
    ``special``: ``ieee`` (has ±inf, NaN, ±0), ``fn`` (finite: no infinities; NaN only),
    ``fnuz`` (finite, unsigned zero: no infinities and no -0).
    """

    kind: Literal["float"] = "float"
    name: str
    mantissa_bits: int = Field(ge=0, le=52)
    emin: int
    emax: int
    subnormals: Literal["keep", "ftz", "daz", "ftz-daz"] = "keep"
    overflow: Literal["inf", "saturate"] = "inf"
    special: Literal["ieee", "fn", "fnuz"] = "ieee"
    max_finite: float | None = None

    @model_validator(mode="after")
    def _check(self) -> FloatFormat:
        if self.emin > self.emax:
            raise ValueError(f"emin ({self.emin}) must not exceed emax ({self.emax})")
        if self.emin < -1022 or self.emax > 1023:
            raise ValueError("exponent range must fit float64 (emin >= -1022, emax <= 1023)")
        if self.max_finite is not None:
            full = (2 - Fraction(1, 2**self.mantissa_bits)) * Fraction(2) ** self.emax
            mf = Fraction(self.max_finite)
            scaled = mf / Fraction(2) ** (self.emax - self.mantissa_bits)
            if not (Fraction(2) ** self.emax <= mf <= full) or scaled.denominator != 1:
                raise ValueError(
                    f"max_finite={self.max_finite} must be a value of the top binade "
                    f"[2^{self.emax}, {float(full)}] of this format"
                )
        return self

    # --- derived properties -------------------------------------------------------------
    @property
    def precision(self) -> int:
        """Significand bits including the implicit leading bit."""
        return self.mantissa_bits + 1

    @property
    def max_value(self) -> float:
        """Largest finite value."""
        if self.max_finite is not None:
            return float(self.max_finite)
        return math.ldexp(2.0 - math.ldexp(1.0, -self.mantissa_bits), self.emax)

    @property
    def min_normal(self) -> float:
        """Smallest positive normal value, ``2^emin``."""
        return math.ldexp(1.0, self.emin)

    @property
    def min_subnormal(self) -> float:
        """The subnormal spacing ``2^(emin - mantissa_bits)`` (smallest positive subnormal).

        With ``subnormals`` other than ``keep`` no result is ever subnormal; the spacing is
        still the grid values below ``min_normal`` are rounded onto before flushing.
        """
        return math.ldexp(1.0, self.emin - self.mantissa_bits)

    @property
    def has_inf(self) -> bool:
        return self.special == "ieee"

    @property
    def has_negative_zero(self) -> bool:
        return self.special != "fnuz"

    @property
    def flushes_inputs(self) -> bool:
        return self.subnormals in ("daz", "ftz-daz")

    @property
    def flushes_results(self) -> bool:
        return self.subnormals in ("ftz", "ftz-daz")

    def ulp(self, x: Any) -> Any:
        """Spacing of the format at ``|x|`` (the distance to the next larger magnitude).

        Vectorised over numpy arrays; returns float64. Below ``min_normal`` the spacing is
        the fixed subnormal spacing. Non-finite inputs give NaN.
        """
        import numpy as np

        a = np.abs(np.asarray(x, dtype=np.float64))
        _, e = np.frexp(a)  # a = m * 2^e with m in [0.5, 1) -> binade exponent e - 1
        e = np.where(a == 0, self.emin, np.maximum(e - 1, self.emin))
        out = np.ldexp(1.0, e - self.mantissa_bits)
        out = np.where(np.isfinite(a), out, np.nan)
        return out if out.ndim else float(out)

    def fits(self, carrier: str) -> bool:
        """True when every value of this format is exactly representable in ``carrier``."""
        known = IEEE_CARRIERS.get(carrier)
        if known is None:
            import numpy as np

            info = np.finfo(np.dtype(carrier))
            known = int(info.nmant), int(info.minexp), int(info.maxexp) - 1
        c_m, c_emin, c_emax = known
        return self.mantissa_bits <= c_m and self.emin >= c_emin and self.emax <= c_emax


class FixedFormat(BaseModel, frozen=True):
    """A binary fixed-point format: raw integers scaled by ``2^-frac_bits``.

    ``int_bits`` counts integer bits *excluding* the sign bit, so SpiNNaker's ``accum``
    (s16.15) is ``signed=True, int_bits=16, frac_bits=15`` (32 bits in all). ``rounding`` is
    how the format's hardware rounds a wider value (a product) into it, by shifting right:
    ``toward-zero`` (``sign(x) * (|x| >> n)``, Loihi), ``floor`` (arithmetic ``x >> n``, GCC
    stdfix), ``nearest-even``, ``nearest-away``, ``nearest-up`` (ties toward +inf:
    ``(x + 2^(n-1)) >> n``, which is what SpiNNaker's ``__stdfix_round_s64`` computes), or
    ``stochastic``.
    """

    kind: Literal["fixed"] = "fixed"
    name: str
    signed: bool
    int_bits: int = Field(ge=0)
    frac_bits: int
    overflow: Literal["wrap", "saturate"] = "saturate"
    rounding: Literal["toward-zero", "floor", "nearest-even", "nearest-away", "nearest-up", "stochastic"] = (
        "nearest-even"
    )

    @model_validator(mode="after")
    def _check(self) -> FixedFormat:
        if not 1 <= self.total_bits <= 63:
            raise ValueError(f"total_bits must be within 1..63 (raw values are int64), got {self.total_bits}")
        if self.int_bits + self.frac_bits < 0:
            raise ValueError("int_bits + frac_bits must be >= 0")
        return self

    @property
    def total_bits(self) -> int:
        return self.int_bits + self.frac_bits + (1 if self.signed else 0)

    @property
    def raw_min(self) -> int:
        return -(1 << (self.total_bits - 1)) if self.signed else 0

    @property
    def raw_max(self) -> int:
        return (1 << (self.total_bits - 1)) - 1 if self.signed else (1 << self.total_bits) - 1

    @property
    def resolution(self) -> float:
        """Value of one raw unit, ``2^-frac_bits``."""
        return math.ldexp(1.0, -self.frac_bits)

    @property
    def max_value(self) -> float:
        return math.ldexp(float(self.raw_max), -self.frac_bits)

    @property
    def min_value(self) -> float:
        return math.ldexp(float(self.raw_min), -self.frac_bits)


Format = Annotated[FloatFormat | FixedFormat, Field(discriminator="kind")]


def custom_float(mantissa_bits: int, emin: int, emax: int, **kw: Any) -> FloatFormat:
    """A float format from its three defining numbers (name defaults to ``m<M>e<emin>..<emax>``)."""
    name = kw.pop("name", None) or f"m{mantissa_bits}e{emin}..{emax}"
    return FloatFormat(name=name, mantissa_bits=mantissa_bits, emin=emin, emax=emax, **kw)


def _presets() -> dict[str, FloatFormat | FixedFormat]:
    floats = [
        FloatFormat(name="fp64", mantissa_bits=52, emin=-1022, emax=1023),
        FloatFormat(name="fp32", mantissa_bits=23, emin=-126, emax=127),
        # NVIDIA TF32: fp32's range, 10 fraction bits (tensor-core matmul inputs).
        FloatFormat(name="tf32", mantissa_bits=10, emin=-126, emax=127),
        FloatFormat(name="bf16", mantissa_bits=7, emin=-126, emax=127),
        FloatFormat(name="fp16", mantissa_bits=10, emin=-14, emax=15),
        # OCP 8-bit floats, conventions as in ml_dtypes: e4m3fn has no inf, S.1111.111 is NaN.
        FloatFormat(name="fp8-e4m3fn", mantissa_bits=3, emin=-6, emax=8, special="fn", max_finite=448.0),
        FloatFormat(name="fp8-e5m2", mantissa_bits=2, emin=-14, emax=15),
        # AMD/Graphcore "fnuz" variants (bias 8 / 16, no inf, NaN = negative zero encoding).
        FloatFormat(name="fp8-e4m3fnuz", mantissa_bits=3, emin=-7, emax=7, special="fnuz"),
        FloatFormat(name="fp8-e5m2fnuz", mantissa_bits=2, emin=-15, emax=15, special="fnuz"),
    ]
    fixed = [
        # SpiNNaker REAL = accum (ISO/IEC TR 18037 stdfix). MULT_ROUND_NEAREST_ACCUM rounds the
        # 64-bit product with __stdfix_round_s64 (add the first dropped bit: ties toward +inf)
        # and saturates with __stdfix_sat_k (spinn_common stdfix-full-iso.h).
        FixedFormat(name="s16.15", signed=True, int_bits=16, frac_bits=15, overflow="saturate", rounding="nearest-up"),
        # SpiNNaker synaptic decay fractions, applied as (int64(x) * d) >> 32.
        FixedFormat(name="u0.32", signed=False, int_bits=0, frac_bits=32, rounding="floor"),
        # Loihi (Lava PyLifModelBitAcc): 24-bit signed state, decays truncate toward zero.
        FixedFormat(
            name="loihi-state24", signed=True, int_bits=23, frac_bits=0, overflow="saturate", rounding="toward-zero"
        ),
        FixedFormat(
            name="loihi-current24", signed=True, int_bits=23, frac_bits=0, overflow="wrap", rounding="toward-zero"
        ),
        FixedFormat(name="loihi-decay12", signed=False, int_bits=12, frac_bits=0, rounding="toward-zero"),
        FixedFormat(name="loihi-threshold17", signed=False, int_bits=17, frac_bits=0, rounding="toward-zero"),
        FixedFormat(name="loihi-bias13", signed=True, int_bits=12, frac_bits=0, rounding="toward-zero"),
        FixedFormat(name="loihi-weight8", signed=True, int_bits=7, frac_bits=0, rounding="toward-zero"),
    ]
    out: dict[str, FloatFormat | FixedFormat] = {f.name: f for f in floats}
    out.update((f.name, f) for f in fixed)
    return out


FORMATS: dict[str, FloatFormat | FixedFormat] = _presets()

# Common spellings accepted by get_format (never listed as separate presets).
_ALIASES = {
    "float64": "fp64",
    "double": "fp64",
    "float32": "fp32",
    "single": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "e4m3fn": "fp8-e4m3fn",
    "float8_e4m3fn": "fp8-e4m3fn",
    "e5m2": "fp8-e5m2",
    "float8_e5m2": "fp8-e5m2",
    "float8_e4m3fnuz": "fp8-e4m3fnuz",
    "float8_e5m2fnuz": "fp8-e5m2fnuz",
    "accum": "s16.15",
    "spinnaker-accum": "s16.15",
}


def get_format(name: str) -> FloatFormat | FixedFormat:
    """Look a preset up by name (or a common alias such as ``bfloat16``)."""
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    try:
        return FORMATS[key]
    except KeyError:
        raise unknown_name("format", name, FORMATS) from None


def float_format(name: str) -> FloatFormat:
    """A float preset by name (the carriers, fp16): like :func:`get_format`, for callers that
    need its float fields."""
    fmt = get_format(name)
    if not isinstance(fmt, FloatFormat):
        raise UsageError(f"format '{name}' is a fixed-point format; a float format is needed here")
    return fmt


def parse_format(data: Any) -> FloatFormat | FixedFormat:
    """A format from a preset name or a mapping (JSON / TOML table) with a ``kind`` key."""
    if isinstance(data, (FloatFormat, FixedFormat)):
        return data
    if isinstance(data, str):
        return get_format(data)
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(Format).validate_python(data)
    except ValidationError as exc:
        raise UsageError(f"invalid format {data!r}: {exc.errors()[0]['msg']}") from None
