"""The GroqChip's arithmetic as cited numerics profiles: what this shim's programs compute with.

The shim stands in for the GroqWare SDK, so it owns the description of the chip it emulates; the
hwbench ``groq`` device takes its modes, knobs and profiles from here (never the reverse: the
shim mirrors the vendor toolchain and knows nothing of hwbench's devices). The reasoning behind
every assumption is in ``docs/devices/groq.md``.
"""

from __future__ import annotations

from typing import Any

from hwbench.accuracy.numerics.formats import RoundingMode, custom_float
from hwbench.accuracy.numerics.presets import STUDY, XLA_CPU_NOTE, Knob, knob_notes, resolve_knobs
from hwbench.accuracy.numerics.profile import Confidence, NumericsProfile, OpNumerics
from hwbench.core.ops import OpClass
from hwbench.plugins.groqware_shim import capacity

STUDY_SEC4 = (
    f"{STUDY}, Sec. IV: 'Each ALU has a 32-bit input operand but with the exception of additions and "
    "multiplications, instructions are done in a reduced-precision FP32 format'"
)
STUDY_LOWERING = f"{STUDY}: the Groq compiler lowered gather/scatter to dense one-hot matrix products"
TSP_MXM = f"{capacity.TSP_PAPER}: the MXM multiplies fp16 (or int8) operands and accumulates in fp32 (or int32)"
MODES = ("default", "fp32-exact-vector")
REDUCED_MANTISSA_BITS = Knob(
    10,
    "fraction bits of the 'reduced-precision FP32 format' of the vector ALUs (fp32's 8-bit exponent range, "
    "subnormals kept). Nobody published the width. 10 (the precision of TF32 and fp16) is argued from the "
    "study's observations: the GroqChip's validation deviation was of the same mV order as TensorRT's TF32 "
    "(10-bit) run, and its spike stress test diverged, which at dt = 0.025 ms needs exp(x) to round to exactly "
    "1 near V = -25 mV (alpha_x's 0/0) in a few of the ~10^3-10^4 threshold crossings of the test: likely at "
    "10 bits, unlikely at 16 or more (window ~7.5 * 2^-bits mV per crossing). Sweep it to see the sensitivity.",
    f"{STUDY_SEC4}; width: assumption (docs/devices/groq.md)",
    Confidence.ASSUMED,
    kind="int",
    minimum=1,
    maximum=23,
)
REDUCED_ROUNDING = Knob(
    "nearest-even",
    "how reduced-precision results are rounded: 'nearest-even' (IEEE default) or 'toward-zero' (truncation, "
    "common in approximate hardware units); unpublished.",
    f"{STUDY_SEC4}; rounding: assumption",
    Confidence.ASSUMED,
    kind="choice",
    choices=("nearest-even", "toward-zero"),
)
REDUCED_COMPARE = Knob(
    True,
    "whether min/max/select results also pass through the reduced format: the study's sentence exempts only "
    "additions and multiplications, so the default reads it literally (only min(2e-5 Ca, 0.01) in io-ehh).",
    f"{STUDY_SEC4}; reading: assumption",
    Confidence.ASSUMED,
    kind="bool",
)
STUDY_NO_NAN = (
    f"{STUDY}, Sec. V (spike stress test): the GroqChip simulation 'settled on voltage deviation at a measured "
    "maximum of 8.51e36 mV' and 'does not explode to infinity or NaN values, as observed with FP16'"
)
SPECIAL_VALUES = Knob(
    "saturate",
    "what a result beyond the largest finite value, or an invalid one, becomes. 'saturate': overflow (division "
    "by zero included) gives the largest finite value of the op's format with its sign, and an invalid result "
    "(0/0) gives 0, as a division computed by a saturating reciprocal (0 * max) gives; 'ieee': infinity and NaN. "
    "Inferred from the study's observation of the chip: its diverged simulation stayed finite and bounded, "
    "never inf or NaN, where an IEEE fp32 unit would have produced them. Nothing Groq published says how the "
    "chip saturates, or what 0/0 gives.",
    f"{STUDY_NO_NAN}; policy: inferred",
    Confidence.ASSUMED,
    kind="choice",
    choices=("saturate", "ieee"),
)
KNOBS: dict[str, Knob] = {
    "reduced_mantissa_bits": REDUCED_MANTISSA_BITS,
    "reduced_rounding": REDUCED_ROUNDING,
    "reduced_compare": REDUCED_COMPARE,
    "special_values": SPECIAL_VALUES,
}
MODE_KNOBS: dict[str, dict[str, Knob]] = {"default": KNOBS, "fp32-exact-vector": {"special_values": SPECIAL_VALUES}}


# ---------------------------------------------------------------------------------- profile
def build_profile(mode: str, values: dict[str, Any]) -> NumericsProfile:
    """The cited profile of ``mode`` for knob ``values`` (already checked by ``resolve_knobs``)."""
    documented = Confidence.DOCUMENTED
    fp32 = OpNumerics(format="fp32", source=STUDY_SEC4, confidence=documented)
    ops: dict[OpClass, OpNumerics] = {
        OpClass.ADD: fp32,
        OpClass.MUL: fp32,
        OpClass.STORE: OpNumerics(
            format="fp32", source=f"{STUDY_SEC4} (32-bit operands: fp32 state)", confidence=documented
        ),
        OpClass.GATHER: OpNumerics(
            format="fp32", lowering="one-hot-matmul", source=STUDY_LOWERING, confidence=documented
        ),
        OpClass.MATMUL_INPUT: OpNumerics(format="fp16", source=f"{TSP_MXM}; {STUDY_LOWERING}", confidence=documented),
        OpClass.MATMUL_ACCUMULATE: OpNumerics(format="fp32", source=TSP_MXM, confidence=documented),
    }
    notes = [
        "Vector unit: additions and multiplications in IEEE fp32 (study, Sec. IV); confidence: documented.",
        "Matrix unit: gather/scatter-add lowered to one-hot matrix products, inputs rounded to fp16, fp32 "
        "accumulation in ascending connection order (study; TSP paper); confidence: documented.",
        f"Special values: {values['special_values']} (parameter special_values; inferred from the study's "
        "observation that the diverged simulation stayed finite, never inf or NaN); confidence: assumed.",
        "Not modelled: subnormal behaviour of the reduced format beyond IEEE conventions, and approximation "
        "errors of the exp unit beyond the rounding to the reduced width.",
        "The GroqChip ran a tf2onnx export in which TensorFlow's grappler had turned x / c by a constant into "
        "x * (1/c), an IEEE multiplication on the chip; the emulate route rounds the kernel's source as written "
        "(a DIV), the groqware route the exported graph (a MUL) — see docs/devices/groq.md.",
        XLA_CPU_NOTE,
    ]
    if mode == "default":
        bits = int(values["reduced_mantissa_bits"])
        rounding = RoundingMode(values["reduced_rounding"])
        reduced_fmt = custom_float(bits, -126, 127, name=f"groq-reduced-fp32-m{bits}")
        reduced = OpNumerics(
            format=reduced_fmt, rounding=rounding, source=REDUCED_MANTISSA_BITS.source, confidence=Confidence.ASSUMED
        )
        ops.update({OpClass.EXP: reduced, OpClass.DIV: reduced, OpClass.POW: reduced})
        ops[OpClass.COMPARE] = reduced if values["reduced_compare"] else fp32
        notes.insert(
            1,
            f"Vector unit, every other instruction (exp, division/reciprocal, pow"
            f"{', min/max/select' if values['reduced_compare'] else ''}): results rounded "
            f"({rounding.value}) to {bits} fraction bits with fp32's exponent range; confidence: assumed.",
        )
        description = (
            f"GroqChip TSP: fp32 add/mul, other vector ops at {bits}-bit reduced precision (assumed), "
            "gather/scatter as fp16 one-hot matrix products"
        )
    else:
        ieee = OpNumerics(
            format="fp32",
            source="sensitivity mode (assumption, deliberately not the chip's behaviour): IEEE fp32 where "
            f"{STUDY_SEC4}",
            confidence=Confidence.ASSUMED,
        )
        ops.update({OpClass.EXP: ieee, OpClass.DIV: ieee, OpClass.POW: ieee, OpClass.COMPARE: ieee})
        description = (
            "GroqChip TSP sensitivity mode: every vector op IEEE fp32; only the matrix unit's fp16 "
            "one-hot gather/scatter differs from the CPU"
        )
        notes.insert(
            1,
            "Sensitivity mode: the reduced-precision vector instructions are replaced by IEEE fp32 "
            "(not the chip's documented behaviour) to isolate the matrix unit's contribution.",
        )
    return NumericsProfile(
        name=f"groq-{mode}",
        device="groq",
        mode=mode,
        description=description,
        ops=ops,
        special_values=values["special_values"],
        parameters=dict(values),
        notes=[*notes, *knob_notes(MODE_KNOBS[mode], values)],
    )


def default_profile() -> NumericsProfile:
    """The chip's default mode with every knob at its documented default."""
    return build_profile("default", resolve_knobs("groq", KNOBS, {}))
