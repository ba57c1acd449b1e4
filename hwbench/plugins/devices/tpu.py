"""Google TPU v3: fp32 vector unit with approximate transcendentals, bf16-pass matrix products.

What the profiles emulate (sources and the reasoning for every assumption: ``docs/devices/tpu-v3.md``):

* Elementwise arithmetic is IEEE fp32 on the vector unit, except ``exp``/``log``, whose accuracy
  Google does not publish: results are moved by a reproducible pseudo-random offset of up to
  ``exp_ulps`` ulp (assumed 2, overridable). The founding study attributes the TPU's deviation,
  the largest of its IEEE platforms, to such fp32 transcendental approximations.
* Matrix products run on the MXU with bf16 multiplicands and fp32 accumulation; XLA's precision
  setting picks how many bf16 passes approximate an fp32 product — the three modes:

  ``default``  1 pass: each fp32 multiplicand rounded to bf16 (nearest even, subnormals flushed)
  ``high``     3 passes: ``x = hi + lo``; products ``lo*hi + hi*lo``, then ``+ hi*hi``
  ``highest``  6 passes: ``x = hi + mid + lo``; products ``mid*mid + lo*hi + hi*lo + mid*hi
               + hi*mid``, then ``+ hi*hi``

  The split (truncating ``hi`` and ``mid``, as XLA's public bf16x3/x6 emitter does; parameter
  ``bf16_split``) and the order of the partial sums follow XLA; each pass's products are exact
  (8 x 8 significant bits) and summed in fp32. One pass is a plain input rounding, which the
  profile's ``matmul_input`` entry expresses; the 3- and 6-pass splits are not an input
  rounding, so this device's executor computes them (:class:`Bf16PassOps`) and a saved profile
  carries them as parameter ``bf16_passes``.

Real runs go through JAX when a TPU is visible (``libtpu`` installed and ``/dev/accel*`` or
``/dev/vfio`` present, or JAX already imported and reporting a TPU), with the mode's precision.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwbench.accuracy.numerics.emulated_device import EmulatedDevice, emulated_executor
from hwbench.accuracy.numerics.formats import FloatFormat, RoundingMode
from hwbench.accuracy.numerics.presets import (
    EXP_ULPS_MAX,
    STUDY,
    STUDY_TABLE,
    XLA_CPU_NOTE,
    Knob,
    error_op,
    faithful_exp,
    fma_op,
    knob_notes,
    resolve_knobs,
)
from hwbench.accuracy.numerics.profile import Confidence, NumericsProfile, OpNumerics
from hwbench.core.device import DeviceSpec, ProbeResult, RunRequest, Support
from hwbench.core.engine import Executor
from hwbench.core.errors import UsageError
from hwbench.core.hookspecs import hookimpl
from hwbench.core.kernel import Kernel, Workload
from hwbench.core.ops import OpClass, Ops
from hwbench.plugins.devices import _published_speed
from hwbench.plugins.devices._support import capacity_support, footprint, is_connected, jax_on_device

if TYPE_CHECKING:
    from hwbench.accuracy.numerics.matrix_unit_model import MatrixUnitModel
    from hwbench.core.device import Device

CLOUD_BF16 = (
    "Google Cloud TPU documentation, 'The bfloat16 numerical format': MXU products of bf16 values accumulated "
    "in IEEE fp32; fp32 -> bf16 conversion rounds to nearest even, overflows to inf, flushes subnormals"
)
JAX_PRECISION = (
    "JAX lax.Precision / DotAlgorithmPreset: DEFAULT = 1 bf16 pass (BF16_BF16_F32), HIGH = 3 (BF16_BF16_F32_X3), "
    "HIGHEST = 6 (BF16_BF16_F32_X6)"
)
XLA_SPLIT = (
    "XLA (openxla/xla) Triton GEMM emitter, Emit3xBfloat16MatMul / Emit6xBfloat16MatMul, after Henry, Tang, "
    "Heinecke, 'Leveraging the bfloat16 AI datatype for higher-precision computations', arXiv:1904.06376 (2019)"
)
JAX_TPU_ACCURACY = (
    "JAX README, 'TPU accuracy' gotchas (jax-ml/jax PR #20537): XLA:TPU elementwise transcendental accuracy "
    "is implementation-defined and not documented per function"
)
HBM_BYTES = 32 * 2**30
STUDY_MAX_CONNECTED = 125_000  # the study's largest connected io-ehh network on TPUv3
STUDY_ERRATIC = 100_000  # run times erratic beyond this in the study

MODES = ("default", "high", "highest")
PASSES = {"default": 1, "high": 3, "highest": 6}
# (lhs part, rhs part) per pass, in XLA's accumulation order; hi*hi (0, 0) comes last, after
# non-finite partial sums are zeroed (XLA: inf * 0-part would otherwise give NaN).
PASS_TERMS: dict[int, tuple[tuple[int, int], ...]] = {
    3: ((1, 0), (0, 1), (0, 0)),
    6: ((1, 1), (2, 0), (0, 2), (1, 0), (0, 1), (0, 0)),
}
BF16_TPU = FloatFormat(name="bf16-tpu", mantissa_bits=7, emin=-126, emax=127, subnormals="ftz-daz")

EXP_ULPS = Knob(
    2.0,
    "fp32 exp/log results off by up to +-k ulp (reproducible pseudo-random offsets). Google publishes no "
    "accuracy for XLA:TPU's vector-unit transcendentals; 2 ulp is the accuracy class of vectorised fp32 exp "
    "implementations (CUDA documents 2 ulp for its expf, XLA's CPU exp is not correctly rounded either). "
    "The study attributes the TPU's larger deviation to such approximations; raise k to test sensitivity.",
    f"{JAX_TPU_ACCURACY}; {STUDY}; value: assumption",
    Confidence.ASSUMED,
    minimum=0.0,
    maximum=EXP_ULPS_MAX,
)
BF16_SPLIT = Knob(
    "truncate",
    "how HIGH / HIGHEST split an fp32 multiplicand into bf16 parts: 'truncate' (hi and mid cut toward zero, "
    "the 3-pass lo rounded to nearest; exact for 6 passes) as XLA's public emitter does, or 'nearest' (every "
    "part rounded to nearest even). XLA:TPU's own split is not public.",
    f"{XLA_SPLIT}; TPU split: assumption",
    Confidence.ASSUMED,
    kind="choice",
    choices=("truncate", "nearest"),
)
DIV_ULPS = Knob(
    0.0,
    "whole ulps (at most) by which fp32 division results differ from the reference's correctly rounded one. "
    "Google publishes no accuracy for XLA:TPU's fp32 division; 0 (IEEE) unless set.",
    f"{JAX_TPU_ACCURACY}; value: assumption",
    Confidence.ASSUMED,
    minimum=0.0,
    maximum=EXP_ULPS_MAX,
)
FMA_CONTRACTION = Knob(
    False,
    "a*b+c fused into one rounding on the vector unit. Google publishes neither an fp32 FMA on the TPU v3 "
    "vector unit nor a contraction rule for XLA:TPU; off (each op rounded) unless set.",
    f"{JAX_TPU_ACCURACY}; value: assumption",
    Confidence.ASSUMED,
    kind="bool",
)
KNOBS: dict[str, Knob] = {
    "exp_ulps": EXP_ULPS,
    "bf16_split": BF16_SPLIT,
    "div_ulps": DIV_ULPS,
    "fma_contraction": FMA_CONTRACTION,
}


# ------------------------------------------------------------------------------ bf16 passes
def bf16_split(x: Any, parts: int, split: str = "truncate") -> list[Any]:
    """``x`` (a float32 numpy or JAX array) as ``parts`` bf16-valued terms, largest first.

    ``parts == 1``: the one-pass conversion, nearest even with subnormals flushed. For 2 and 3
    parts each term takes the next 8 significant bits of what the previous ones left (the
    remainder ``x - hi`` is exact in fp32): with ``split='truncate'`` the leading parts are cut
    toward zero and the 2-part ``lo`` rounded to nearest — XLA's bf16x3 / bf16x6 split.
    """
    import numpy as np

    if parts == 1:
        return [_round_bf16(x, RoundingMode.NEAREST_EVEN)]
    if parts not in (2, 3):
        raise ValueError(f"a bf16 split has 1, 2 or 3 parts, got {parts}")
    lead = RoundingMode.TOWARD_ZERO if split == "truncate" else RoundingMode.NEAREST_EVEN
    out = []
    rest = x
    for k in range(parts):
        last = k == parts - 1
        mode = RoundingMode.NEAREST_EVEN if (last and parts == 2) else lead
        part = _round_bf16(rest, mode)
        out.append(part)
        if not last:
            with np.errstate(invalid="ignore"):  # inf - inf: NaN parts, as on the chip (see matmul)
                rest = rest - part
    return out


def _round_bf16(x: Any, mode: RoundingMode) -> Any:
    """``x`` rounded onto the TPU's bf16: the short bit sequence on an fp32 carrier (a handful of
    integer operations; bit-identical to ``round_float``, tested), the general algorithm otherwise."""
    import numpy as np

    from hwbench.accuracy.numerics.fast_rounding import fast_rounder
    from hwbench.accuracy.numerics.rounding import round_float

    fast = fast_rounder(BF16_TPU, mode, "float32") if getattr(x, "dtype", None) == np.float32 else None
    if fast is None:
        return round_float(x, BF16_TPU, mode)
    if isinstance(x, np.ndarray | np.generic):
        return fast(np, x)
    import jax.numpy as jnp

    return fast(jnp, x)


class Bf16PassOps:
    """An ops namespace whose ``matmul`` is XLA's multi-pass bf16 algorithm; all else delegated.

    Wraps the emulating ops (or the engine's raw ops when the profile changes nothing else), so
    every other operation keeps the profile's arithmetic and the SteppedOps protocol stays as
    the wrapped namespace has it.
    """

    def __init__(self, inner: Any, raw: Ops, passes: int, split: str) -> None:
        if passes not in PASS_TERMS:
            raise ValueError(f"bf16 passes must be one of {sorted(PASS_TERMS)}, got {passes}")
        self._inner = inner
        self._raw = raw
        self.passes = passes
        self.split = split

    def __getattr__(self, name: str) -> Any:
        if name == "_inner":
            raise AttributeError(name)
        return getattr(self._inner, name)

    def matmul(self, a: Any, b: Any, precision: str | None = None) -> Any:
        return self._passes(self._raw.matmul, a, b)

    def conv2d(self, x: Any, w: Any, padding: tuple[int, int], precision: str | None = None) -> Any:
        """The MXU runs a convolution as matrix products of patches: the same passes."""
        return self._passes(lambda p, q: self._raw.conv2d(p, q, padding), x, w)

    @property
    def matmul_method(self) -> str:
        """How this namespace computes matrix products, as reports name it."""
        return f"XLA's {self.passes}-pass bf16 algorithm (bf16 split: {self.split})"

    def bilinear(self, product_of: Any, a: Any, b: Any) -> Any:
        """Any bilinear product of the raw engine (a convolution) as the same passes."""
        return self._passes(product_of, a, b)

    def _passes(self, product_of: Any, a: Any, b: Any) -> Any:
        from hwbench.accuracy.numerics.emulated_array import EmuArray, unwrap

        raw = self._raw
        nparts = 2 if self.passes == 3 else 3
        pa = bf16_split(unwrap(a), nparts, self.split)
        pb = bf16_split(unwrap(b), nparts, self.split)
        *small, last = PASS_TERMS[self.passes]
        total = None
        for i, j in small:
            product = product_of(pa[i], pb[j])
            total = product if total is None else total + product
        assert total is not None
        total = raw.where(raw.less(raw.abs(total), float("inf")), total, raw.zeros_like(total))
        total = total + product_of(pa[last[0]], pb[last[1]])
        return EmuArray(total, self._inner) if getattr(self._inner, "emulated", False) else total


class Bf16PassWrapper:
    """``ops_wrapper`` for engines: the profile's emulating ops with multi-pass bf16 matmuls."""

    def __init__(self, profile: NumericsProfile, passes: int, split: str, *, counters: bool = False) -> None:
        from hwbench.accuracy.numerics.emulate import emulating_ops

        self.inner = emulating_ops(profile, counters=counters)
        self.passes = passes
        self.split = split

    def __call__(self, raw: Ops) -> Any:
        return Bf16PassOps(self.inner(raw), raw, self.passes, self.split)


# ---------------------------------------------------------------------------------- profile
def build_profile(mode: str, values: dict[str, Any]) -> NumericsProfile:
    """The cited profile of ``mode`` (``default`` / ``high`` / ``highest``) for ``values``."""
    passes = PASSES[mode]
    ops: dict[OpClass, OpNumerics] = {
        OpClass.EXP: faithful_exp(values["exp_ulps"], source=EXP_ULPS.source, confidence=Confidence.ASSUMED),
        OpClass.MATMUL_ACCUMULATE: OpNumerics(format="fp32", source=CLOUD_BF16, confidence=Confidence.DOCUMENTED),
    }
    if values["div_ulps"] > 0:
        ops[OpClass.DIV] = error_op(
            values["div_ulps"], source=DIV_ULPS.source, confidence=Confidence.ASSUMED, constant_reciprocal=True
        )
    if values["fma_contraction"]:
        ops[OpClass.FMA] = fma_op(source=FMA_CONTRACTION.source, confidence=Confidence.ASSUMED)
    if passes == 1:
        ops[OpClass.MATMUL_INPUT] = OpNumerics(
            format=BF16_TPU,
            rounding=RoundingMode.NEAREST_EVEN,
            source=f"{CLOUD_BF16}; {JAX_PRECISION}",
            confidence=Confidence.DOCUMENTED,
        )
        matmul_note = "Matrix products: one bf16 pass (multiplicands rounded to bf16), fp32 accumulation."
    else:
        terms = " + ".join(
            f"{'hml'[i] if passes == 6 else 'hl'[i]}*{'hml'[j] if passes == 6 else 'hl'[j]}"
            for i, j in PASS_TERMS[passes]
        )
        matmul_note = (
            f"Matrix products: {passes} bf16 passes ({JAX_PRECISION}), emulated as the exact sum {terms} of "
            f"bf16 parts (h, m, l: split '{values['bf16_split']}'), summed in fp32 in that order; computed by the "
            "tpu-v3 device's executor (parameter bf16_passes), so the op table lists no matmul_input rounding."
        )
    notes = [
        "Elementwise +, -, *, / in IEEE fp32 on the vector unit; confidence: documented "
        f"({CLOUD_BF16}: the TPU computes non-matrix work in fp32).",
        matmul_note,
        "Not modelled: XLA:TPU's fp32 division and other transcendental implementations beyond exp/log, and "
        "fp32 subnormal flushing outside the bf16 conversion (XLA on the CPU reference flushes too).",
        XLA_CPU_NOTE,
        *knob_notes(KNOBS, values),
    ]
    return NumericsProfile(
        name=f"tpu-v3-{mode}",
        device="tpu-v3",
        mode=mode,
        description=f"TPU v3, XLA precision {mode.upper()}: fp32 vector unit with approximate exp, "
        f"{passes}-pass bf16 matrix products with fp32 accumulation",
        ops=ops,
        parameters={**values, "bf16_passes": passes},
        notes=notes,
    )


# ------------------------------------------------------------------------------------ probe
def tpu_backend() -> str | None:
    """How JAX would reach a TPU here, or None (no framework import unless JAX already is)."""
    if "jax" in sys.modules:
        try:
            devices = sys.modules["jax"].devices("tpu")
        except RuntimeError:
            return None
        return f"JAX ({len(devices)} TPU core(s), {devices[0].device_kind})" if devices else None
    if importlib.util.find_spec("libtpu") is None:
        return None
    accel = sorted(Path("/dev").glob("accel*")) + sorted(Path("/dev/vfio").glob("[0-9]*"))
    return f"libtpu with {accel[0]}" if accel else None


# ----------------------------------------------------------------------------------- device
class TpuV3Device(EmulatedDevice):
    """The founding study's Google TPU v3, one mode per XLA matrix-product precision."""

    spec = DeviceSpec(
        name="tpu-v3",
        vendor="Google",
        model="TPU v3",
        kind="tpu",
        memory="32 GiB HBM",
        memory_bytes=HBM_BYTES,
        process_nm=16,
        transistors_bn=11,
        clock_mhz="940",
        tdp_w=450,
        software="TF 2.11.0 (study); here: JAX (XLA:TPU)",
        sources=[f"{STUDY_TABLE} (transistor count estimated there)"],
        published_timing=_published_speed.TPU_V3,
    )
    modes = MODES
    looked_for = "a TPU visible to JAX (libtpu and /dev/accel* or /dev/vfio)"

    def detect_real(self) -> str | None:
        return tpu_backend()

    def probe(self) -> ProbeResult:
        real = self.detect_real()
        if real:
            return ProbeResult(status="real", reason=f"real: {real}")
        why = "libtpu is not installed" if importlib.util.find_spec("libtpu") is None else "no TPU device node"
        return ProbeResult(status="emulated", reason=f"{why}; arithmetic emulated per its numerics profiles")

    def profile_for(self, mode: str) -> NumericsProfile:
        return build_profile(mode, resolve_knobs(self.name, KNOBS, {}))

    def settable(self, mode: str | None = None) -> dict[str, Any]:
        return {k: v for k, v in self.numerics(mode).parameters.items() if k in KNOBS}

    def apply_overrides(self, profile: NumericsProfile, overrides: dict[str, Any]) -> NumericsProfile:
        current = {k: v for k, v in profile.parameters.items() if k in KNOBS}
        return build_profile(profile.mode, resolve_knobs(self.name, KNOBS, {**current, **overrides}))

    def emulated(self, request: RunRequest, profile: NumericsProfile) -> Executor:
        """The emulation, with multi-pass matrix products where the profile asks for them."""
        passes = int(profile.parameters.get("bf16_passes", 1))
        split = str(profile.parameters.get("bf16_split", BF16_SPLIT.default))
        if passes == 1:
            return emulated_executor(request, profile)
        if passes in PASS_TERMS and split in BF16_SPLIT.choices:
            wrapper = Bf16PassWrapper(profile, passes, split, counters=request.counters)
            return emulated_executor(request, profile, wrapper)
        raise UsageError(
            f"profile '{profile.name}': bf16_passes must be 1, 3 or 6 and bf16_split one of "
            f"{', '.join(BF16_SPLIT.choices)}; got {passes}, {split!r}"
        )

    def real_executor(self, request: RunRequest) -> Executor:
        if request.dtype not in (None, "float32"):
            raise UsageError(f"device 'tpu-v3' runs float32 (bf16 on the MXU); got dtype '{request.dtype}'")
        return jax_on_device(
            request.kernel,
            request.workload,
            platform="tpu",
            precision=str(request.mode),
            engine=request.engine,
            what=str(self.detect_real()),
        )

    def matrix_unit_model(self, mode: str) -> MatrixUnitModel | None:
        """The MXU described with the block-FMA model (assumed beyond the published facts); every
        mode uses the same bf16 unit, the passes being XLA's algorithm on top of it."""
        from hwbench.plugins.devices._described_units import TPU_V3_MXU

        return TPU_V3_MXU

    def supports(self, kernel: Kernel, workload: Workload | None = None, **meta: Any) -> Support:
        """32 GiB of HBM; connected io-ehh only up to the study's largest network (125,000 cells)."""
        connected = bool(meta.get("connected", True)) if workload is None else is_connected(workload)
        cells = workload.size if workload is not None else meta.get("size")
        if kernel.name == "io-ehh" and connected and cells is not None and cells > STUDY_MAX_CONNECTED:
            return Support.no(
                f"connected io-ehh ran on TPUv3 up to {STUDY_MAX_CONNECTED:,} cells in the study ({STUDY}); "
                f"{cells:,} cells is beyond anything shown to run there"
            )
        fp = footprint(kernel, workload, size=meta.get("size"), connected=connected)
        if fp is None:
            return Support.yes("no size given; the TPU v3 holds 32 GiB of HBM")
        need = fp.bytes(value=4)
        answer = capacity_support(need, HBM_BYTES, "32 GiB HBM", fp.cells)
        if answer.ok and kernel.name == "io-ehh" and connected and fp.cells > STUDY_ERRATIC:
            answer = Support.yes(
                f"{answer.reason}; the study saw erratic run times beyond ~{STUDY_ERRATIC:,} connected cells"
            )
        return answer


@hookimpl
def hwbench_devices() -> list[Device]:
    return [TpuV3Device()]
