"""Numerics profiles: file round-trips, one-line errors for malformed files, every entry cited."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwbench.accuracy.numerics.formats import FORMATS, FixedFormat, FloatFormat, RoundingMode, custom_float
from hwbench.accuracy.numerics.profile import Confidence, ErrorModel, NumericsProfile, OpNumerics
from hwbench.core.errors import EXIT_USAGE, UsageError
from hwbench.core.ops import OpClass
from hwbench.core.strict_json import NONFINITE

# Round-trips parse and validate a whole profile per example; a few hundred cover the schema.
ROUNDTRIP_EXAMPLES = 250

FLOAT32_PRESETS = sorted(n for n, f in FORMATS.items() if isinstance(f, FloatFormat) and f.fits("float32"))
FIXED32_PRESETS = sorted(n for n, f in FORMATS.items() if isinstance(f, FixedFormat) and f.int_bits + f.frac_bits <= 24)

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
cited = text.filter(lambda s: s.strip() != "").map(str.strip)


@st.composite
def float_formats(draw: st.DrawFn) -> FloatFormat:
    m = draw(st.integers(0, 23))
    emin = draw(st.integers(-126, 0))
    emax = draw(st.integers(max(emin, 0), 127))
    return custom_float(
        m,
        emin,
        emax,
        name=draw(cited),
        subnormals=draw(st.sampled_from(["keep", "ftz", "daz", "ftz-daz"])),
        overflow=draw(st.sampled_from(["inf", "saturate"])),
        special=draw(st.sampled_from(["ieee", "fn", "fnuz"])),
    )


@st.composite
def fixed_formats(draw: st.DrawFn) -> FixedFormat:
    frac = draw(st.integers(0, 12))
    signed = draw(st.booleans())
    return FixedFormat(
        name=draw(cited),
        signed=signed,
        # a format needs at least one bit (FixedFormat rejects 0-bit formats by design)
        int_bits=draw(st.integers(0 if frac > 0 or signed else 1, 24 - frac)),
        frac_bits=frac,
        overflow=draw(st.sampled_from(["wrap", "saturate"])),
        rounding=draw(st.sampled_from(["toward-zero", "floor", "nearest-even", "nearest-away", "nearest-up"])),
    )


LOWERINGS = {OpClass.GATHER: "one-hot-matmul", OpClass.DIV: "constant-reciprocal"}


@st.composite
def op_numerics(draw: st.DrawFn, cls: OpClass) -> OpNumerics:
    fmt = draw(st.one_of(st.sampled_from(FLOAT32_PRESETS + FIXED32_PRESETS), float_formats(), fixed_formats()))
    resolved = FORMATS[fmt] if isinstance(fmt, str) else fmt
    is_float = isinstance(resolved, FloatFormat)
    return OpNumerics(
        format=fmt,
        rounding=draw(st.sampled_from(list(RoundingMode))) if is_float else RoundingMode.NEAREST_EVEN,
        input_format=draw(st.none() | st.sampled_from([n for n in FLOAT32_PRESETS])),
        random_bits=draw(st.integers(1, 32)),
        error=draw(st.none() | st.builds(ErrorModel, ulps=st.floats(0, 8, allow_nan=False), seed=st.integers(0, 2**32)))
        if is_float
        else None,
        lowering=draw(st.sampled_from(["native", LOWERINGS.get(cls, "native")])),
        source=draw(cited),
        confidence=draw(st.sampled_from(list(Confidence))),
    )


# a parameter string spelling a non-finite number ("Infinity", "-Infinity", "NaN") is that number: it
# is how strict JSON writes one (hwbench.core.strict_json), so such strings are not drawn as text
words = text.filter(lambda s: s not in NONFINITE)
scalars = st.one_of(st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False), words)
parameters = st.dictionaries(
    text,
    st.recursive(
        scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3), max_leaves=6
    ),
    max_size=4,
)


@st.composite
def profiles(draw: st.DrawFn) -> NumericsProfile:
    classes = draw(st.lists(st.sampled_from(list(OpClass)), unique=True, max_size=5))
    return NumericsProfile(
        name=draw(cited),
        device=draw(text),
        mode=draw(text),
        description=draw(text),
        ops={c: draw(op_numerics(c)) for c in classes},
        parameters=draw(parameters),
        notes=draw(st.lists(text, max_size=3)),
    )


@settings(max_examples=ROUNDTRIP_EXAMPLES)
@given(profiles())
def test_json_and_toml_round_trip(profile: NumericsProfile) -> None:
    assert NumericsProfile.from_json(profile.to_json()) == profile
    assert NumericsProfile.from_toml(profile.to_toml()) == profile


def groq_like() -> NumericsProfile:
    return NumericsProfile(
        name="groq-like",
        device="groq",
        mode="default",
        ops={
            OpClass.EXP: OpNumerics(
                format=custom_float(10, -126, 127, name="exp-unit"),
                error=ErrorModel(ulps=1.0),
                source="assumption: reduced-precision fp32 exponent unit",
                confidence=Confidence.ASSUMED,
            ),
            OpClass.MATMUL_INPUT: OpNumerics(format="fp16", source="Landsmeer et al. 2024", confidence="documented"),
            OpClass.GATHER: OpNumerics(
                format="fp32", lowering="one-hot-matmul", source="Landsmeer et al. 2024", confidence="documented"
            ),
        },
        parameters={"exp_mantissa_bits": 10, "ratio": math.inf},
    )


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_save_load_files(tmp_path, suffix: str) -> None:
    profile = groq_like()
    path = profile.save(tmp_path / f"groq{suffix}")
    assert not list(tmp_path.glob("*.partial"))
    assert NumericsProfile.load(path) == profile
    assert NumericsProfile.load(path).parameters["ratio"] == math.inf


VALID = {"name": "p", "device": "d", "mode": "m"}


def _with_op(**entry: object) -> dict:
    return {**VALID, "ops": {"exp": {"format": "fp16", "source": "s", "confidence": "assumed", **entry}}}


MALFORMED_JSON = {
    "syntax": ("{not json", "Invalid JSON"),
    "missing device": (json.dumps({"name": "p", "mode": "m"}), "device: Field required"),
    "unknown format": (json.dumps(_with_op(format="fp17")), "ops.exp.format: unknown format 'fp17'"),
    "unknown op class": (json.dumps({**VALID, "ops": {"expo": _with_op()["ops"]["exp"]}}), "ops.expo"),
    "empty source": (json.dumps(_with_op(source="   ")), "ops.exp.source"),
    "no source": (json.dumps({**VALID, "ops": {"exp": {"format": "fp16", "confidence": "assumed"}}}), "source"),
    "bad confidence": (json.dumps(_with_op(confidence="sure")), "ops.exp.confidence"),
    "typo field": (json.dumps(_with_op(roundng="up")), "ops.exp.roundng"),
    "inline format incomplete": (
        json.dumps(_with_op(format={"kind": "float", "name": "x", "mantissa_bits": 3})),
        "ops.exp.format.emin",
    ),
    "too wide for carrier": (json.dumps(_with_op(format="s16.15")), "does not fit the float32 carrier"),
    "newer schema": (json.dumps({**VALID, "schema_version": 2}), "newer than this hwbench reads"),
    "lowering on exp": (json.dumps(_with_op(lowering="one-hot-matmul")), "gather class only"),
    "reciprocal on exp": (json.dumps(_with_op(lowering="constant-reciprocal")), "div class only"),
    "rounding on fixed": (
        json.dumps(
            {
                **VALID,
                "ops": {
                    "store": {"format": "loihi-state24", "rounding": "up", "source": "s", "confidence": "documented"}
                },
            }
        ),
        "rounds 'toward-zero' by itself",
    ),
    "null parameter": (json.dumps({**VALID, "parameters": {"bits": None}}), "parameters"),
    "random bits": (json.dumps(_with_op(random_bits=33)), "ops.exp.random_bits"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED_JSON))
def test_malformed_json_is_one_line_usage_error(tmp_path, case: str) -> None:
    content, expected = MALFORMED_JSON[case]
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(UsageError) as info:
        NumericsProfile.load(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    assert expected in message
    assert info.value.exit_code == EXIT_USAGE


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("name = ", "not valid TOML"),
        ('name = "p"\ndevice = "d"\nmode = "m"\n[ops.exp]\nformat = "bf16"\nconfidence = "assumed"\n', "source"),
        ('name = "p"\ndevice = "d"\nmode = "m"\ncarrier = "float16"\n', "carrier"),
    ],
)
def test_malformed_toml_is_one_line_usage_error(tmp_path, content: str, expected: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(content)
    with pytest.raises(UsageError) as info:
        NumericsProfile.load(path)
    assert "\n" not in str(info.value)
    assert expected in str(info.value)


def test_unreadable_and_unsupported_files(tmp_path) -> None:
    with pytest.raises(UsageError, match="cannot read numerics profile"):
        NumericsProfile.load(tmp_path / "missing.json")
    with pytest.raises(UsageError, match=r"use \.json or \.toml"):
        NumericsProfile.load(tmp_path / "profile.yaml")
    with pytest.raises(UsageError, match=r"use \.json or \.toml"):
        groq_like().save(tmp_path / "profile.yml")


@pytest.mark.parametrize("source", ["", "   ", "\n"])
def test_every_entry_must_cite_a_source(source: str) -> None:
    with pytest.raises(ValueError, match="source"):
        OpNumerics(format="bf16", source=source, confidence=Confidence.ASSUMED)


def test_registered_device_profiles_are_cited_and_valid() -> None:
    """Every profile a registered device returns names a source and survives both file formats."""
    from hwbench.core.plugins import load_registry

    registry = load_registry(entry_point_plugins=False)
    for device in registry.devices.values():
        for mode in device.modes:
            profile = device.numerics(mode)
            if profile is None:
                continue
            assert isinstance(profile, NumericsProfile), (device.name, mode)
            for cls, op in profile.ops.items():
                assert op.source.strip(), f"{device.name}/{mode}: ops.{cls.value} cites no source"
            assert NumericsProfile.from_json(profile.to_json()) == profile
            assert NumericsProfile.from_toml(profile.to_toml()) == profile


def test_is_native() -> None:
    def entry(fmt: object, **kw: object) -> OpNumerics:
        return OpNumerics(format=fmt, source="test", confidence=Confidence.MEASURED, **kw)

    assert NumericsProfile(**VALID).is_native()
    fp32_inline = custom_float(23, -126, 127, name="my-fp32")
    assert NumericsProfile(**VALID, ops={OpClass.ADD: entry("fp32"), OpClass.MUL: entry(fp32_inline)}).is_native()
    # rounding an fp32 value onto fp32 is exact whatever the mode
    assert NumericsProfile(**VALID, ops={OpClass.ADD: entry("fp32", rounding="stochastic")}).is_native()
    assert not NumericsProfile(**VALID, ops={OpClass.MUL: entry("fp32", input_format="fp16")}).is_native()
    assert not NumericsProfile(**VALID, ops={OpClass.EXP: entry("fp32", error=ErrorModel(ulps=1))}).is_native()
    ftz32 = custom_float(23, -126, 127, subnormals="ftz")
    assert not NumericsProfile(**VALID, ops={OpClass.ADD: entry(ftz32)}).is_native()
    assert not NumericsProfile(**VALID, ops={OpClass.STORE: entry("bf16")}).is_native()
    assert NumericsProfile(**VALID, carrier="float64", ops={OpClass.ADD: entry("fp64")}).is_native()
    assert not NumericsProfile(**VALID, carrier="float64", ops={OpClass.ADD: entry("fp32")}).is_native()


def test_confidence_is_the_weakest_entry() -> None:
    profile = groq_like()
    assert profile.confidence() is Confidence.ASSUMED
    del profile.ops[OpClass.EXP]
    assert profile.confidence() is Confidence.DOCUMENTED
    assert NumericsProfile(**VALID).confidence() is None
