"""Formats are data: presets with the right numbers, hashable, (de)serialisable, validated."""

from __future__ import annotations

import json
import math
import sys

import ml_dtypes
import numpy as np
import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError
from test_rounding_strategies import custom_format_from

from hwbench.accuracy.numerics.formats import (
    FORMATS,
    IEEE_CARRIERS,
    FixedFormat,
    FloatFormat,
    Format,
    RoundingMode,
    custom_float,
    get_format,
    parse_format,
)
from hwbench.core.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ADAPTER = TypeAdapter(Format)


@pytest.mark.parametrize(
    ("name", "dtype"),
    [
        ("fp64", np.float64),
        ("fp32", np.float32),
        ("fp16", np.float16),
        ("bf16", ml_dtypes.bfloat16),
        ("fp8-e4m3fn", ml_dtypes.float8_e4m3fn),
        ("fp8-e5m2", ml_dtypes.float8_e5m2),
    ],
)
def test_float_presets_match_library_finfo(name: str, dtype: type) -> None:
    fmt = get_format(name)
    info = ml_dtypes.finfo(dtype) if dtype not in (np.float64, np.float32, np.float16) else np.finfo(dtype)
    assert isinstance(fmt, FloatFormat)
    assert fmt.mantissa_bits == info.nmant and fmt.precision == info.nmant + 1
    assert fmt.max_value == float(info.max)
    assert fmt.min_normal == float(info.smallest_normal)
    assert fmt.min_subnormal == float(info.smallest_subnormal)


def test_tf32_and_fixed_presets() -> None:
    tf32 = get_format("tf32")
    assert isinstance(tf32, FloatFormat)
    assert (tf32.mantissa_bits, tf32.emin, tf32.emax) == (10, -126, 127)
    loihi = {name: FORMATS[name] for name in FORMATS if name.startswith("loihi-")}
    assert loihi["loihi-state24"].total_bits == 24 and loihi["loihi-state24"].signed  # type: ignore[union-attr]
    d = loihi["loihi-decay12"]
    assert isinstance(d, FixedFormat) and not d.signed and d.total_bits == 12 and d.raw_max == 4095
    for fmt in FORMATS.values():
        assert get_format(fmt.name) is fmt


def test_formats_are_hashable_frozen_and_comparable() -> None:
    a = custom_float(5, -10, 10)
    b = custom_float(5, -10, 10)
    assert a == b and hash(a) == hash(b) and len({a, b, get_format("bf16")}) == 2
    with pytest.raises(ValidationError):
        a.mantissa_bits = 6  # type: ignore[misc]
    assert a.name == "m5e-10..10" and custom_float(5, -10, 10, name="x").name == "x"


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_presets_round_trip_json_and_toml(name: str) -> None:
    fmt = FORMATS[name]
    assert ADAPTER.validate_json(ADAPTER.dump_json(fmt)) == fmt
    doc = tomli_w.dumps({"format": fmt.model_dump(exclude_none=True)})
    assert ADAPTER.validate_python(tomllib.loads(doc)["format"]) == fmt
    assert parse_format(json.loads(fmt.model_dump_json())) == fmt
    assert parse_format(name) is fmt


@settings(max_examples=300)
@given(st.integers(0, 2**64 - 1))
def test_custom_formats_round_trip(word: int) -> None:
    fmt = custom_format_from(word)
    assert ADAPTER.validate_json(ADAPTER.dump_json(fmt)) == fmt
    assert tomllib.loads(tomli_w.dumps(fmt.model_dump(exclude_none=True))) == fmt.model_dump(exclude_none=True)


def test_get_format_unknown_and_aliases() -> None:
    with pytest.raises(UsageError, match=r"unknown format 'bf61'.*Did you mean 'bf16'"):
        get_format("bf61")
    assert get_format("bfloat16") is FORMATS["bf16"]
    assert get_format(" FP16 ") is FORMATS["fp16"]
    assert get_format("float8_e4m3fn") is FORMATS["fp8-e4m3fn"]
    with pytest.raises(UsageError, match="invalid format"):
        parse_format({"kind": "float", "name": "x", "mantissa_bits": 3})


@pytest.mark.parametrize(
    "kw",
    [
        dict(mantissa_bits=3, emin=5, emax=4),  # emin > emax
        dict(mantissa_bits=3, emin=-4, emax=4, max_finite=31.0),  # above the top binade's max (30)
        dict(mantissa_bits=3, emin=-4, emax=4, max_finite=17.0),  # not a value of the format
        dict(mantissa_bits=3, emin=-4, emax=4, max_finite=8.0),  # below 2^emax
        dict(mantissa_bits=53, emin=-4, emax=4),
        dict(mantissa_bits=3, emin=-1023, emax=4),
    ],
)
def test_float_format_validation(kw: dict) -> None:
    with pytest.raises(ValidationError):
        FloatFormat(name="bad", **kw)


def test_fixed_format_validation_and_properties() -> None:
    with pytest.raises(ValidationError):
        FixedFormat(name="too-wide", signed=True, int_bits=40, frac_bits=30)
    with pytest.raises(ValidationError):
        FixedFormat(name="empty", signed=False, int_bits=0, frac_bits=0)
    q = FixedFormat(name="u4.4", signed=False, int_bits=4, frac_bits=4)
    assert (q.total_bits, q.raw_min, q.raw_max, q.resolution, q.max_value, q.min_value) == (
        8,
        0,
        255,
        1 / 16,
        255 / 16,
        0.0,
    )


def test_ulp_helper() -> None:
    bf16 = get_format("bf16")
    assert isinstance(bf16, FloatFormat)
    assert bf16.ulp(1.0) == 2**-7 and bf16.ulp(-1.5) == 2**-7 and bf16.ulp(2.0) == 2**-6
    assert bf16.ulp(0.0) == bf16.min_subnormal and bf16.ulp(1e-40) == bf16.min_subnormal
    np.testing.assert_array_equal(bf16.ulp(np.array([1.0, 4.0, np.inf])), [2**-7, 2**-5, np.nan])
    e4m3 = get_format("fp8-e4m3fn")
    assert isinstance(e4m3, FloatFormat) and e4m3.ulp(448.0) == 32.0 and not e4m3.has_inf


def test_rounding_mode_values() -> None:
    assert [m.value for m in RoundingMode] == [
        "nearest-even",
        "toward-zero",
        "up",
        "down",
        "nearest-away",
        "odd",
        "stochastic",
    ]
    assert RoundingMode("odd") is RoundingMode.ODD


def test_fits() -> None:
    assert get_format("bf16").fits("float32") and not get_format("fp64").fits("float32")  # type: ignore[union-attr]
    assert not custom_float(10, -127, 10).fits("float32") and custom_float(10, -127, 10).fits("float64")
    assert math.isclose(get_format("fp8-e5m2").max_value, 57344.0)  # type: ignore[union-attr]


@pytest.mark.parametrize("carrier", sorted(IEEE_CARRIERS))
def test_ieee_carrier_table_matches_numpy_finfo(carrier: str) -> None:
    # FloatFormat.fits reads this table so that building profiles imports no numpy; it must say
    # what numpy's finfo says, or a format would fit a carrier it does not.
    info = np.finfo(np.dtype(carrier))
    assert IEEE_CARRIERS[carrier] == (int(info.nmant), int(info.minexp), int(info.maxexp) - 1)
