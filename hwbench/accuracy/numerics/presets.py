"""Building blocks the device plugins assemble their numerics profiles from.

Device modules (``hwbench.plugins.devices.*``) describe each mode's arithmetic as a
:class:`~hwbench.accuracy.numerics.profile.NumericsProfile`. What several of them need lives here, so that
the same fact is stated once, with one citation:

* :func:`cpu_profile` — the native IEEE profile of the host CPU (the study's fp32 reference and
  the fp64 gold), which :mod:`hwbench.plugins.devices.cpu` imports lazily;
* :func:`native_profile` — a profile that changes nothing (``is_native()``), carrying its
  sources in ``notes``, for chips whose arithmetic in a mode is the carrier's own;
* :class:`Knob` / :func:`resolve_knobs` — the documented, overridable profile parameters
  (``hwbench audit --set exp_ulps=4``): defaults, validation, and the note that cites each;
* :func:`faithful_exp` — an ``exp`` class whose results are off by up to ``k`` ulp, the model
  for approximate transcendental units whose accuracy nobody published.

Capacity models and real-backend helpers live beside the devices, in
:mod:`hwbench.plugins.devices._support`.

Why profiles cite in ``notes`` as well as per op: an op class a profile does not list runs
natively, so a native profile has no op entries to hang a source on. Its notes say where the
claim "this is plain IEEE arithmetic" comes from, and what the emulation does *not* model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hwbench.accuracy.numerics.formats import RoundingMode
from hwbench.accuracy.numerics.profile import Confidence, ErrorModel, NumericsProfile, OpNumerics
from hwbench.core.errors import UsageError, unknown_name

__all__ = [
    "IEEE754",
    "STUDY",
    "Knob",
    "cpu_profile",
    "error_op",
    "faithful_exp",
    "fma_op",
    "knob_notes",
    "native_profile",
    "resolve_knobs",
]

STUDY = (
    "Landsmeer, Engelen, Miedema, Strydis, 'Tricking AI chips into simulating the human brain: "
    "a detailed performance analysis', Neurocomputing (2024) 127953"
)
STUDY_TABLE = f"{STUDY}, Table I"
IEEE754 = "IEEE Std 754-2019 (binary32 / binary64, round to nearest, ties to even)"
XLA_CPU_NOTE = (
    "The fp32 reference is what the engine computes natively in IEEE binary32, as in the study "
    "(TF 2.11 / XLA on the CPU): XLA's own exp is not correctly rounded and XLA "
    "rewrites division by a constant into multiplication by its reciprocal; every device profile "
    "inherits these, so only the differences a profile lists are attributed to the chip."
)
XLA_DIV_BY_CONSTANT = (
    "XLA algebraic simplifier, AlgebraicSimplifierVisitor::HandleDivide "
    "(openxla/xla xla/hlo/transforms/simplifiers/algebraic_simplifier.cc, commit 289dd9a): 'A / Const => "
    "A * (1 / Const)' for floating-point types, the reciprocal computed by InvertConstant in the element type, "
    "no option gating it; the GPU and CPU compilers both run the pass (gpu_compiler.cc, cpu_compiler.cc); "
    "measured on this project's XLA:CPU: jit(x / 8.5) equals x * float32(1 / 8.5) bit for bit"
)

CPU_MODES: dict[str, Literal["float32", "float64"]] = {"fp32": "float32", "fp64": "float64"}


# --------------------------------------------------------------------------------- profiles
def native_profile(
    *,
    name: str,
    device: str,
    mode: str,
    description: str,
    notes: list[str],
    carrier: Literal["float32", "float64"] = "float32",
    parameters: Mapping[str, Any] | None = None,
) -> NumericsProfile:
    """A profile under which every op class runs in the carrier's own IEEE arithmetic.

    ``notes`` must cite where that claim comes from; the result is ``is_native()``, so the
    emulation adds no rounding at all (and runs at native speed).
    """
    if not notes:
        raise ValueError("a native profile must cite its sources in notes")
    profile = NumericsProfile(
        name=name,
        device=device,
        mode=mode,
        description=description,
        carrier=carrier,
        ops={},
        parameters=dict(parameters or {}),
        notes=list(notes),
    )
    assert profile.is_native()
    return profile


def cpu_profile(mode: str) -> NumericsProfile:
    """The host CPU's arithmetic: IEEE binary32 (``fp32``, the study's reference) or binary64.

    ``fp64`` is the gold standard hwbench judges every fp32 platform against, including the
    CPU's own fp32 (its error is the floor no accelerator can beat).
    """
    try:
        carrier = CPU_MODES[mode]
    except KeyError:
        raise unknown_name("mode of device 'cpu'", mode, CPU_MODES) from None
    bits = "32" if carrier == "float32" else "64"
    role = (
        "the reference of the founding study (CPU fp32)"
        if carrier == "float32"
        else "the gold standard every fp32 result (the CPU's included) is judged against"
    )
    return native_profile(
        name=f"cpu-{mode}",
        device="cpu",
        mode=mode,
        carrier=carrier,
        description=f"IEEE-754 binary{bits} on the host CPU, round to nearest even: {role}",
        notes=[
            f"Every op class runs natively in IEEE binary{bits} ({IEEE754}); confidence: documented.",
            f"CPU of the study: AMD Ryzen Threadripper PRO 3955WX, TF 2.11.0 ({STUDY_TABLE}).",
            XLA_CPU_NOTE,
        ],
    )


# An error of 2^23 ulp is as large as an fp32 value itself: beyond it, "k ulp" means nothing.
EXP_ULPS_MAX = float(2**23)


def faithful_exp(ulps: float, *, source: str, confidence: Confidence, seed: int = 0) -> OpNumerics:
    """``exp``/``log`` results in fp32 moved by a pseudo-random whole number of ulps, at most ``ulps``.

    The offset ``k`` is uniform on ``{-n, ..., n}`` with ``n = floor(ulps)``, drawn from the
    device's own stream for each function. This is how a profile says "this chip's
    transcendental unit is an approximation of known (or assumed) accuracy but unknown
    formula": the error is reproducible for a seed but not the chip's own error pattern, so
    results show the *sensitivity* of a kernel to such errors, not the chip's exact trajectory.
    """
    return OpNumerics(
        format="fp32",
        rounding=RoundingMode.NEAREST_EVEN,
        error=ErrorModel(ulps=ulps, seed=seed) if ulps > 0 else None,
        source=source,
        confidence=confidence,
    )


def error_op(
    ulps: float, *, source: str, confidence: Confidence, seed: int = 0, constant_reciprocal: bool = False
) -> OpNumerics:
    """An fp32 op class (division, pow) whose results are the reference's moved by up to
    ``floor(ulps)`` whole ulps (:func:`hwbench.accuracy.numerics.native_fp32.offset_ulps`).

    ``constant_reciprocal`` (division compiled by XLA): a division by a compile-time constant is
    a product with the constant's rounded reciprocal instead (:data:`XLA_DIV_BY_CONSTANT`), so
    the error model applies to divisions by computed values only."""
    op = faithful_exp(ulps, source=source, confidence=confidence, seed=seed)
    if not constant_reciprocal:
        return op
    return op.model_copy(update={"lowering": "constant-reciprocal", "source": f"{source}; {XLA_DIV_BY_CONSTANT}"})


def fma_op(*, source: str, confidence: Confidence) -> OpNumerics:
    """The ``fma`` entry: the device's compiler contracts ``a * b + c`` into one fused
    multiply-add, rounded once to fp32 (emulated exactly; see ``docs/numerics.md``)."""
    return OpNumerics(format="fp32", source=source, confidence=confidence)


# ------------------------------------------------------------------------------------ knobs
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Knob:
    """A documented, overridable profile parameter: its default, why, and how sure we are.

    ``kind`` fixes how a value given on the command line (``--set key=value`` arrives as
    int, float or str) is read: ``bool`` accepts true/false/yes/no/on/off/1/0, ``float``
    accepts ints, ``int`` accepts integral floats, ``choice`` must be one of ``choices``.
    """

    default: bool | int | float | str
    doc: str
    source: str
    confidence: Confidence
    kind: Literal["bool", "int", "float", "choice"] = "float"
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None

    def read(self, device: str, name: str, value: Any) -> bool | int | float | str:
        """``value`` as this knob's type, or a UsageError that says what is allowed."""
        import numpy as np

        where = f"parameter '{name}' of device '{device}'"
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
            raise UsageError(f"{where} is true or false, got {value!r}")
        if self.kind == "choice":
            text = str(value).strip().lower()
            if text not in self.choices:
                raise UsageError(f"{where} must be one of {', '.join(self.choices)}; got {value!r}")
            return text
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise UsageError(f"{where} is a number, got {value!r}") from None
        if not np.isfinite(number):
            raise UsageError(f"{where} must be finite, got {value!r}")
        if self.kind == "int":
            if number != int(number):
                raise UsageError(f"{where} is a whole number, got {value!r}")
            number = int(number)
        if self.minimum is not None and number < self.minimum:
            raise UsageError(f"{where} must be >= {self.minimum:g}, got {value!r}")
        if self.maximum is not None and number > self.maximum:
            raise UsageError(f"{where} must be <= {self.maximum:g}, got {value!r}")
        return number


def resolve_knobs(device: str, knobs: Mapping[str, Knob], values: Mapping[str, Any]) -> dict[str, Any]:
    """Every knob's value: the defaults, replaced by ``values`` (checked; unknown keys refused)."""
    unknown = sorted(set(values) - set(knobs))
    if unknown:
        allowed = ", ".join(sorted(knobs)) or "(none)"
        raise UsageError(f"device '{device}' has no parameter {', '.join(unknown)}; settable: {allowed}")
    out = {name: knob.default for name, knob in knobs.items()}
    for name, value in values.items():
        out[name] = knobs[name].read(device, name, value)
    return out


def knob_notes(knobs: Mapping[str, Knob], values: Mapping[str, Any]) -> list[str]:
    """One note per parameter: value, default, confidence, what it means, and its source."""
    notes = []
    for name, knob in knobs.items():
        value = values.get(name, knob.default)
        changed = "" if value == knob.default else f" (default {knob.default!r})"
        notes.append(
            f"Parameter {name} = {value!r}{changed}, {knob.confidence.value}: {knob.doc} Source: {knob.source}"
        )
    return notes
