"""Numerics profiles: how a device rounds each class of operation, and where that fact comes from.

A device plugin describes its arithmetic as data: for every *op class* (add, mul, div, exp,
matmul inputs, state store, ...; see :class:`hwbench.core.ops.OpClass`) the number format results
are rounded to, the rounding mode, optional input rounding, an optional error model, and how
gather/scatter are lowered. The emulating ops namespace (:mod:`hwbench.accuracy.numerics.emulate`) reads
it; audit reports print it. Because the emulated numbers are only as trustworthy as these facts,
every entry must cite a ``source`` and state a ``confidence`` (measured on silicon, documented by
the vendor or a paper, or assumed). An op class a profile does not list runs natively, in the
IEEE arithmetic of the carrier.

Profiles are plain files (JSON or TOML) so that a user can copy one, change an assumed bit
width, and audit against that: :meth:`NumericsProfile.load` turns every malformed file into a
one-line :class:`~hwbench.core.errors.UsageError`, never a traceback.
"""

from __future__ import annotations

import math
from enum import Enum
from pathlib import Path
from typing import Any, BinaryIO, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hwbench.accuracy.numerics.formats import FixedFormat, FloatFormat, Format, RoundingMode, float_format, get_format
from hwbench.core.errors import HwbenchError, UsageError
from hwbench.core.ops import OpClass
from hwbench.core.strict_json import NONFINITE
from hwbench.core.user_data import parse_toml

__all__ = [
    "CARRIER_FORMATS",
    "SCHEMA_VERSION",
    "Confidence",
    "ErrorModel",
    "NumericsProfile",
    "OpNumerics",
    "same_float_format",
]

SCHEMA_VERSION = 1
CARRIER_FORMATS = {"float32": "fp32", "float64": "fp64"}


class Confidence(str, Enum):
    """How much a profile entry can be trusted, weakest last in :data:`_RANK`."""

    MEASURED = "measured"  # measured on the chip (e.g. with probe kernels)
    DOCUMENTED = "documented"  # stated by the vendor, a paper, or a bit-accurate vendor model
    ASSUMED = "assumed"  # nobody published it; a plausible guess the user may override


_RANK = {Confidence.MEASURED: 0, Confidence.DOCUMENTED: 1, Confidence.ASSUMED: 2}


class ErrorModel(BaseModel):
    """A result error beyond correct rounding, as for approximate transcendental units.

    ``faithful-ulp``: the op's result (the reference's own, rounded to the op's format) is moved
    by ``k`` whole ulps of that format, ``k`` uniform on ``{-n, ..., n}`` with ``n = floor(ulps)``
    (so ``|result - reference| <= n`` ulp, always), drawn from a counter-based stream keyed by the
    run seed, the device and the function (exp, log, div: each its own), the step, the op and
    the element, so runs are reproducible and two devices never share an error pattern.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["faithful-ulp"] = "faithful-ulp"
    ulps: float = Field(ge=0.0)
    seed: int = 0

    @field_validator("ulps")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("ulps must be finite")
        return v


def _resolve(value: str | FloatFormat | FixedFormat) -> FloatFormat | FixedFormat:
    return get_format(value) if isinstance(value, str) else value


#: the op class each non-native lowering belongs to
_LOWERING_CLASS = {"one-hot-matmul": OpClass.GATHER, "constant-reciprocal": OpClass.DIV}


class OpNumerics(BaseModel):
    """The arithmetic of one op class on a device.

    ``format`` is a preset name from :data:`hwbench.accuracy.numerics.formats.FORMATS` or an inline
    format. ``rounding`` applies to float formats; a fixed-point format carries its own rounding
    (hardware shifts the way the format says), so for a fixed format ``rounding`` must stay
    ``nearest-even`` (its default). ``input_format``: operands are rounded to it first (with
    the op's rounding), as for fp16 matrix-unit inputs. ``random_bits`` is the number of random
    bits a stochastic rounding draws. ``lowering="one-hot-matmul"`` (gather class only) models
    a compiler that turns gather / scatter-add into one-hot matrix products on the matrix unit,
    whose formats are then the profile's ``matmul_input`` / ``matmul_accumulate`` entries.
    ``lowering="constant-reciprocal"`` (div class only) models a compiler that rewrites a division
    by a compile-time constant, ``x / c``, into a multiplication by the constant's reciprocal
    rounded to the element type, ``x * fl(1 / c)``, as XLA's algebraic simplifier does on every
    back end: those divisions are then products (the ``mul`` class), with none of the division
    entry's error model.
    """

    model_config = ConfigDict(extra="forbid")

    format: str | Format
    rounding: RoundingMode = RoundingMode.NEAREST_EVEN
    input_format: str | FloatFormat | None = None
    random_bits: int = Field(32, ge=1, le=32)
    error: ErrorModel | None = None
    lowering: Literal["native", "one-hot-matmul", "constant-reciprocal"] = "native"
    source: str = Field(min_length=1, description="paper, documentation URL, or 'assumption: ...'")
    confidence: Confidence

    @field_validator("format")
    @classmethod
    def _known_format(cls, v: Any) -> Any:
        if isinstance(v, str):
            _check_preset(v)
        return v

    @field_validator("input_format")
    @classmethod
    def _known_input_format(cls, v: Any) -> Any:
        if isinstance(v, str) and not isinstance(_check_preset(v), FloatFormat):
            raise ValueError(f"input_format '{v}' is a fixed-point format; input rounding takes a float format")
        return v

    @field_validator("source")
    @classmethod
    def _cited(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("source must name where this fact comes from (or say 'assumption: ...')")
        return v.strip()

    @model_validator(mode="after")
    def _consistent(self) -> OpNumerics:
        fmt = self.resolved_format()
        if isinstance(fmt, FixedFormat):
            if self.rounding is not RoundingMode.NEAREST_EVEN:
                raise ValueError(
                    f"fixed-point format '{fmt.name}' rounds '{fmt.rounding}' by itself; set the format's "
                    "own 'rounding' instead of the op's"
                )
            if self.error is not None:
                raise ValueError("an error model needs a float format (ulps of a fixed format are not defined)")
        return self

    def resolved_format(self) -> FloatFormat | FixedFormat:
        """The result format as a format object (presets looked up by name)."""
        return _resolve(self.format)

    def resolved_input_format(self) -> FloatFormat | None:
        """The operand format, or None when operands are used as they come."""
        if self.input_format is None:
            return None
        fmt = _resolve(self.input_format)
        assert isinstance(fmt, FloatFormat)  # checked by the validator
        return fmt

    def is_identity_on(self, carrier: str) -> bool:
        """True when this entry changes no value computed in ``carrier`` arithmetic.

        That is the case when results are rounded to exactly the carrier's own IEEE format
        (rounding an already representable value is exact, whatever the mode), with no input
        rounding and no error model. The lowering does not matter then: a one-hot product of
        carrier values accumulated in the carrier is the native gather / scatter-add.
        """
        native = float_format(CARRIER_FORMATS[carrier])
        return (
            self.error is None
            and (self.input_format is None or same_float_format(self.resolved_input_format(), native))
            and same_float_format(self.resolved_format(), native)
        )


def _check_preset(name: str) -> FloatFormat | FixedFormat:
    try:
        return get_format(name)
    except HwbenchError as exc:  # unknown name: say which names exist, as a validation error
        raise ValueError(str(exc)) from None


def same_float_format(fmt: Any, other: FloatFormat) -> bool:
    """True when ``fmt`` is a float format with the same values and conventions as ``other``.

    Names do not matter: an inline ``m23e-126..127`` is fp32, and rounding onto it is exact.
    """
    if not isinstance(fmt, FloatFormat):
        return False
    a, b = fmt.model_dump(exclude={"name", "max_finite"}), other.model_dump(exclude={"name", "max_finite"})
    return a == b and fmt.max_value == other.max_value


def _fits(fmt: FloatFormat | FixedFormat, carrier: str) -> bool:
    """Every value of ``fmt`` is exactly representable in ``carrier`` (so it can carry it)."""
    if isinstance(fmt, FloatFormat):
        return fmt.fits(carrier)
    digits = 24 if carrier == "float32" else 53
    return fmt.int_bits + fmt.frac_bits <= digits and fmt.frac_bits <= (126 if carrier == "float32" else 1022)


def _named_to_float(value: Any) -> Any:
    """A parameter with the strict-JSON names of non-finite numbers turned back into floats."""
    if isinstance(value, str) and value in NONFINITE:
        return float(value)
    if isinstance(value, list):
        return [_named_to_float(x) for x in value]
    if isinstance(value, dict):
        return {k: _named_to_float(x) for k, x in value.items()}
    return value


def _check_parameter(value: Any, where: str) -> None:
    """Parameters must survive both JSON and TOML (no None, no custom objects)."""
    if isinstance(value, bool | int | float | str):
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_parameter(item, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"parameter {where} has a non-string key {key!r}")
            _check_parameter(item, f"{where}.{key}")
        return
    raise ValueError(
        f"parameter {where} is {type(value).__name__}; allowed: bool, int, float, str, lists and tables of them"
    )


class NumericsProfile(BaseModel):
    """A device mode's arithmetic, op class by op class, with sources (see the module docstring).

    ``carrier`` is the IEEE type the emulation computes in: every format in ``ops`` must fit it
    (checked), and op classes not listed are rounded as the carrier rounds. An ``fma`` entry says
    the device's compiler contracts ``a * b + c`` into one fused multiply-add (rounded once).
    ``special_values``: ``ieee`` (overflow gives infinity, 0/0 NaN) or ``saturate`` (every result
    beyond the largest finite value of its op's format becomes that value, an invalid one 0). ``parameters`` are
    the documented knobs the profile was built from (e.g. an assumed exponent-unit width), so a
    report can show them and a user can rebuild the profile with other values.
    """

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    schema_version: int = SCHEMA_VERSION
    name: str = Field(min_length=1)
    device: str
    mode: str
    description: str = ""
    carrier: Literal["float32", "float64"] = "float32"
    ops: dict[OpClass, OpNumerics] = {}
    special_values: Literal["ieee", "saturate"] = "ieee"
    parameters: dict[str, Any] = {}
    notes: list[str] = []

    @field_validator("schema_version")
    @classmethod
    def _supported(cls, v: int) -> int:
        if v > SCHEMA_VERSION:
            raise ValueError(f"schema_version {v} is newer than this hwbench reads ({SCHEMA_VERSION}); upgrade hwbench")
        if v < 1:
            raise ValueError(f"schema_version must be >= 1, got {v}")
        return v

    @field_validator("parameters", mode="before")
    @classmethod
    def _nonfinite_names(cls, v: Any) -> Any:
        """A non-finite parameter is written as "Infinity", "-Infinity" or "NaN" (strict JSON,
        :mod:`hwbench.core.strict_json`): read those names back as the numbers they stand for."""
        if isinstance(v, dict):
            return {k: _named_to_float(x) for k, x in v.items()}
        return v

    @field_validator("parameters")
    @classmethod
    def _portable(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key, value in v.items():
            _check_parameter(value, key)
        return v

    @model_validator(mode="after")
    def _fit_carrier(self) -> NumericsProfile:
        for cls_, op in self.ops.items():
            for role, fmt in (("format", op.resolved_format()), ("input_format", op.resolved_input_format())):
                if fmt is not None and not _fits(fmt, self.carrier):
                    raise ValueError(
                        f"ops.{cls_.value}.{role} '{fmt.name}' does not fit the {self.carrier} carrier; "
                        "set carrier = 'float64'"
                    )
            owner = _LOWERING_CLASS.get(op.lowering)
            if owner is not None and cls_ is not owner:
                raise ValueError(f"ops.{cls_.value}: lowering '{op.lowering}' applies to the {owner.value} class only")
        return self

    # --- queries ---------------------------------------------------------------------------
    def op(self, cls: OpClass | str) -> OpNumerics | None:
        """The entry for ``cls``, or None when that class runs natively."""
        return self.ops.get(OpClass(cls))

    def is_native(self) -> bool:
        """True when the profile changes nothing: every entry is the carrier's own arithmetic.

        A contraction (``fma`` entry) or a saturating special-value policy changes results.
        """
        if OpClass.FMA in self.ops or self.special_values != "ieee":
            return False
        return all(op.is_identity_on(self.carrier) for op in self.ops.values())

    def confidence(self) -> Confidence | None:
        """The weakest confidence of any entry (what a report should label results with)."""
        if not self.ops:
            return None
        return max((op.confidence for op in self.ops.values()), key=_RANK.__getitem__)

    # --- files -----------------------------------------------------------------------------
    def to_json(self) -> str:
        from hwbench.core.strict_json import dump_model

        return dump_model(self, indent=2, by_alias=False, exclude_none=True) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes, *, origin: str = "profile") -> NumericsProfile:
        try:
            return cls.model_validate_json(text)
        except ValidationError as exc:
            raise _invalid(origin, exc) from None

    def to_toml(self) -> str:
        import tomli_w

        return tomli_w.dumps(self.model_dump(mode="json", exclude_none=True))

    @classmethod
    def from_toml(cls, text: str, *, origin: str = "profile") -> NumericsProfile:
        data = parse_toml(text, origin)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise _invalid(origin, exc) from None

    @classmethod
    def load(cls, path: str | Path) -> NumericsProfile:
        """Read a ``.json`` or ``.toml`` profile; anything wrong is a one-line UsageError."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in (".json", ".toml"):
            raise UsageError(f"{path}: unsupported profile file type '{suffix or '(none)'}'; use .json or .toml")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: cannot read numerics profile ({_one_line(str(exc))})") from None
        if suffix == ".json":
            return cls.from_json(text, origin=str(path))
        return cls.from_toml(text, origin=str(path))

    def save(self, path: str | Path) -> Path:
        """Write ``.json`` or ``.toml`` (by suffix) atomically: no half-written profile remains."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in (".json", ".toml"):
            raise UsageError(f"{path}: unsupported profile file type '{suffix or '(none)'}'; use .json or .toml")
        data = (self.to_json() if suffix == ".json" else self.to_toml()).encode("utf-8")
        from hwbench.core.files import write_atomic

        def write(fh: BinaryIO) -> None:
            fh.write(data)

        return write_atomic(path, write)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _invalid(origin: str, exc: ValidationError) -> UsageError:
    """One line naming the first problem (``ops.exp.format: unknown format ...``) and how many more."""
    errors = exc.errors()
    # A value that fails a union fails every member; the member the input was meant for (a
    # table for an inline format, not the preset-name string) names the real problem.
    errors = [e for e in errors if e["loc"][-1:] != ("str",)] or errors
    first = errors[0]
    loc = ".".join(str(p) for p in first["loc"] if not _is_union_tag(p))
    msg = first["msg"].removeprefix("Value error, ")
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    where = f"{loc}: " if loc else ""
    return UsageError(_one_line(f"{origin}: invalid numerics profile: {where}{msg}{more}"))


def _is_union_tag(part: Any) -> bool:
    """pydantic puts union member names (``str``, ``float``, ``function-after[...]``) into locations."""
    return isinstance(part, str) and (part in ("str", "float", "fixed") or "[" in part)
