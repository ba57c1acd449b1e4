"""Intel Loihi: the LIF-family kernels in Loihi's integer neuron and synapse arithmetic.

No chip is reachable from hwbench, so the device is always emulated, bit for bit per Lava's
bit-accurate models: ``lava.proc.lif.models.PyLifModelBitAcc`` (neurons) and
``lava.proc.dense.models.PyDenseModelBitAcc`` with ``lava.utils.weightutils`` (synapses). That
model is documented, not measured: Lava issue #322 reports corners where it differs from the
silicon (issue #329, an int16 overflow of the bias, concerned versions before Lava PR #330; Lava
0.10.0 casts the mantissa to int32 first). Every fact and every mapping choice is listed in ``docs/devices/loihi.md``.

Neuron (per compartment, per step; ``u`` current and ``v`` voltage are 24-bit signed)::

    u = sign(x) (|x| >> 12) + (a_in << 6),    x = u (4096 - (du + 1))     then u wraps (Lava's rule)
    v = sign(y) (|y| >> 12) + u + bias,       y = v (4096 - dv)           then v saturates to +-(2^23 - 1)
    spike when v > (vth << 6); a spiking neuron's v is set to 0

Float kernel -> Loihi (per layer; see :class:`LoihiLayer`): ``beta -> dv = rint(4096 (1 - beta))``,
``alpha -> du = rint(4096 (1 - alpha)) - 1`` (``lif``: ``du = 4095``, the current is just this
step's input), threshold ``thr -> vth`` and one float unit of potential -> ``K = 64 vth / thr``
integer units, weights -> 8-bit mantissas with a weight exponent in the dendritic-sum units
``vth / thr`` per float unit.
"""

from __future__ import annotations

import importlib.util
import math
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from hwbench.core.device import Device, DeviceSpec, ProbeResult, Support
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.hookspecs import hookimpl
from hwbench.core.kernel import Kernel, Workload
from hwbench.plugins.devices._fixed_lif import (
    FixedLayer,
    FixedLifDevice,
    int_sums,
    integer_weights,
    lif_counts,
    saturate,
    wrap,
)
from hwbench.plugins.kernels.lif import LIF_KERNELS

if TYPE_CHECKING:
    from hwbench.accuracy.numerics.profile import NumericsProfile
    from hwbench.plugins.kernels.lif import LifLayer

DAVIES = (
    "Davies et al., 'Loihi: A Neuromorphic Manycore Processor with On-Chip Learning', IEEE Micro 38(1):82-99 (2018)"
)
LOIHI2 = "Intel Labs, 'Taking Neuromorphic Computing to the Next Level with Loihi 2', technology brief (2021)"
LAVA_LIF = "Lava, lava/proc/lif/models.py: PyLifModelBitAcc / AbstractPyLifModelFixed (github.com/lava-nc/lava)"
LAVA_DENSE = "Lava, lava/proc/dense/models.py: PyDenseModelBitAcc; lava/utils/weightutils.py (github.com/lava-nc/lava)"
DISPUTED = "documented (Lava model), not measured on silicon: Lava issue #322 disputes corners"

UV_BITS = 24
UV_MAX = (1 << (UV_BITS - 1)) - 1  # v saturates to +-(2^23 - 1)
DECAY_SHIFT = 12
DECAY_UNITY = 1 << DECAY_SHIFT
VTH_SHIFT = ACT_SHIFT = 6
VTH_MAX = (1 << 17) - 1
A_IN_MIN, A_IN_MAX = -(1 << 15), (1 << 15) - 1
WEIGHT_EXP_RANGE = (-8, 7)

# capacity of one chip per mode: (neurons, synapses, source)
CAPACITY = {
    "loihi": (131_072, 130_000_000, DAVIES + " (128 cores x 1,024 compartments; 130 million synapses)"),
    "loihi2": (1_048_576, 120_000_000, LOIHI2 + " (up to 1 million neurons, 120 million synapses)"),
}
DEFAULT_PARAMETERS: dict[str, Any] = {"vth_max": 2048, "a_in_overflow": "saturate"}


# ------------------------------------------------------------------------------------------
# Loihi's integer arithmetic (vectorised, int64 carriers)
# ------------------------------------------------------------------------------------------
def decay(x: np.ndarray, decay_const: int | np.ndarray) -> np.ndarray:
    """``sign(y) * (|y| >> 12)`` with ``y = x * (4096 - decay_const)``: truncation toward zero."""
    import numpy as np

    y = np.asarray(x, np.int64) * (DECAY_UNITY - np.asarray(decay_const, np.int64))
    decayed: np.ndarray = np.sign(y) * (np.abs(y) >> DECAY_SHIFT)
    return decayed


def wrap_current(u: np.ndarray, counts: Counter[str]) -> np.ndarray:
    """Lava's 24-bit wrap of the current: ``u > 2^23 -> u - 2^24``, then ``<= -2^23 -> u + 2^24``.

    This keeps ``+2^23`` itself (one value outside two's complement) and maps ``-2^23`` to
    ``+2^23``: a corner of Lava's model we reproduce as written rather than guess the silicon's.
    """
    import numpy as np

    half = 1 << (UV_BITS - 1)
    wrapped = np.where(u > half, u - 2 * half, u)
    wrapped = np.where(wrapped <= -half, u + 2 * half, wrapped)
    n = int(np.count_nonzero(wrapped != u))
    if n:
        counts["u_wrapped"] += n
    return wrapped


def effective_bias(mant: int | np.ndarray, exp: int | np.ndarray) -> np.ndarray:
    """``bias_mant << bias_exp`` (a negative exponent shifts right, arithmetic), in int64.

    As Lava 0.10.0's ``scale_bias``, which casts the 13-bit mantissa to int32 before shifting
    (Lava PR #330), so even the largest bias, 4095 << 7, does not overflow; the int16 overflow of
    Lava issue #329 was in earlier versions.
    """
    import numpy as np

    m, e = np.asarray(mant, np.int64), np.asarray(exp, np.int64)
    return np.where(e >= 0, m << np.maximum(e, 0), m >> np.maximum(-e, 0))


def lif_step(
    u: np.ndarray,
    v: np.ndarray,
    a_in: np.ndarray,
    *,
    du: int,
    dv: int,
    bias: int | np.ndarray,
    vth: int,
    counts: Counter[str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One step of ``PyLifModelBitAcc``: returns ``(u, v_before_reset, spikes)``.

    ``v`` is the voltage after the previous step's reset; ``a_in`` the 16-bit dendritic input.
    """
    import numpy as np

    u = decay(u, du + 1) + (np.asarray(a_in, np.int64) << ACT_SHIFT)
    u = wrap_current(u, counts)
    v = decay(v, dv) + u + bias
    v = saturate(v, -UV_MAX, UV_MAX, counts, "v_saturated")
    return u, v, (v > (vth << VTH_SHIFT)).astype(np.int64)


def shift_sums(sums: np.ndarray, weight_exp: int) -> np.ndarray:
    """Apply the Dense weight exponent to dendritic sums (left, or arithmetic right)."""
    return sums << weight_exp if weight_exp > 0 else sums >> -weight_exp


# ------------------------------------------------------------------------------------------
# float kernel -> Loihi parameters
# ------------------------------------------------------------------------------------------
def _levels(w: np.ndarray) -> tuple[str, float, float]:
    """Lava's sign mode of a weight matrix and its mantissa limits (mixed mode: even values)."""
    import numpy as np

    if w.size == 0 or np.min(w) >= 0:
        return "excitatory", 0.0, 255.0
    if np.max(w) <= 0:
        return "inhibitory", -255.0, 0.0
    return "mixed", -256.0, 254.0


def _per_level(w: np.ndarray) -> float:
    """The largest ``|w|`` relative to its limit: weights per mantissa level at exponent 0."""
    import numpy as np

    _, lo, hi = _levels(w)
    pos = float(np.max(w)) / hi if w.size and hi > 0 else 0.0
    neg = float(np.min(w)) / lo if w.size and lo < 0 else 0.0
    return max(pos, neg, 0.0)


def weight_exponent(w_scaled: np.ndarray) -> int:
    """The smallest weight exponent at which ``w_scaled / 2^e`` fits the 8-bit mantissa range."""
    m = _per_level(w_scaled)
    if m == 0.0:
        return 0
    e = math.ceil(math.log2(m))
    while e > WEIGHT_EXP_RANGE[0] and m <= 2.0 ** (e - 1):  # guard log2 rounding
        e -= 1
    while m > 2.0**e:
        e += 1
    return int(min(max(e, WEIGHT_EXP_RANGE[0]), WEIGHT_EXP_RANGE[1]))


def quantise_weights(w_scaled: np.ndarray, weight_exp: int) -> np.ndarray:
    """8-bit Loihi weights (mixed sign mode: even values in [-256, 254]), rounded to nearest even."""
    import numpy as np

    mode, lo, hi = _levels(w_scaled)
    step = 2.0 if mode == "mixed" else 1.0
    q = step * np.rint(w_scaled / (step * 2.0**weight_exp))
    return np.clip(q, lo, hi).astype(np.int64)


def choose_vth(w_ff: np.ndarray, thr: float, vth_max: int) -> int:
    """Threshold mantissa: the largest feed-forward weight maps to the top of the 8-bit range.

    ``vth = thr 2^e / m`` for the largest integer ``e`` that keeps ``vth <= vth_max`` (headroom:
    v spans +-2^17/vth thresholds, a_in +-2^15/vth thresholds per step), so the weight
    mantissas of the feed-forward matrix use their full range at exponent ``e``.
    """
    m = _per_level(w_ff)
    if m == 0.0:
        return int(vth_max)
    e = math.floor(math.log2(vth_max * m / thr))
    e = min(max(e, WEIGHT_EXP_RANGE[0]), WEIGHT_EXP_RANGE[1])
    return int(min(max(math.floor(thr * 2.0**e / m), 1), vth_max, VTH_MAX))


_SUBTRACT_REASON = (
    "Loihi's hard-wired LIF neuron sets v to 0 after a spike and cannot reset by subtracting the "
    "threshold; build the workload with reset='zero' (e.g. make_workload(size, reset='zero'))"
)


class LoihiLayer(FixedLayer):
    """A LIF population with Dense synapses in Lava's bit-accurate arithmetic."""

    def __init__(self, layer: LifLayer, *, vth_max: int, a_in_overflow: str) -> None:
        import numpy as np

        if layer.reset != "zero":
            raise UnavailableError(_SUBTRACT_REASON)
        self.n = layer.n
        self.dv = int(np.clip(np.rint(DECAY_UNITY * (1.0 - layer.beta)), 0, DECAY_UNITY - 1))
        alpha = 0.0 if layer.alpha is None else layer.alpha
        self.du = int(np.clip(np.rint(DECAY_UNITY * (1.0 - alpha)) - 1, 0, DECAY_UNITY - 1))
        self.vth = choose_vth(layer.w_ff, layer.thr, vth_max)
        self.k = self.vth * (1 << VTH_SHIFT) / layer.thr  # integer units of v per float unit of potential
        self.has_current = layer.alpha is not None
        scale = self.vth / layer.thr  # dendritic-sum units per float unit of weight
        self.exp_ff = weight_exponent(layer.w_ff * scale)
        self.w_ff = quantise_weights(layer.w_ff * scale, self.exp_ff)
        self.has_rec = layer.w_rec is not None
        if layer.w_rec is not None:
            self.exp_rec = weight_exponent(layer.w_rec * scale)
            self.w_rec = quantise_weights(layer.w_rec * scale, self.exp_rec)
            self._rec = integer_weights(self.w_rec)
        self._ff = integer_weights(self.w_ff)
        self.bias = 0
        self.a_in_overflow = a_in_overflow

    def enter(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import numpy as np

        z = state["z"].astype(np.int64)
        v = self._to_int(state["u"])
        u = self._to_int(state["i"]) if "i" in state else np.zeros_like(v)
        return {"u": u, "v": v, "z": z}

    def _to_int(self, x: np.ndarray) -> np.ndarray:
        import numpy as np

        return np.clip(np.rint(np.asarray(x, np.float64) * self.k), -UV_MAX, UV_MAX).astype(np.int64)

    def leave(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import numpy as np

        out = {"u": state["v"] / self.k, "z": state["z"].astype(np.float64)}
        if self.has_current:
            out["i"] = state["u"] / self.k
        return out

    def input_ff(self, spikes: np.ndarray) -> np.ndarray:
        return shift_sums(int_sums(spikes, self._ff), self.exp_ff)

    def input_rec(self, spikes: np.ndarray) -> np.ndarray:
        return shift_sums(int_sums(spikes, self._rec), self.exp_rec)

    def step(self, state: dict[str, np.ndarray], ff: Any, rec: Any, counts: Counter[str]) -> dict[str, np.ndarray]:
        import numpy as np

        a_in = ff if rec is None else ff + rec
        if self.a_in_overflow == "saturate":
            a_in = saturate(a_in, A_IN_MIN, A_IN_MAX, counts, "a_in_saturated")
        elif self.a_in_overflow == "wrap":
            a_in = wrap(a_in, 16, counts, "a_in_wrapped")
        v = np.where(state["z"] == 1, 0, state["v"])  # Loihi's reset of last step's spikes
        u, v, z = lif_step(state["u"], v, a_in, du=self.du, dv=self.dv, bias=self.bias, vth=self.vth, counts=counts)
        return {"u": u, "v": v, "z": z}


# ------------------------------------------------------------------------------------------
# the device
# ------------------------------------------------------------------------------------------
class LoihiDevice(FixedLifDevice):
    """Intel Loihi (mode ``loihi``) and Loihi 2 (``loihi2``: same LIF arithmetic, larger chip)."""

    default_parameters = DEFAULT_PARAMETERS
    model_name = "Lava bit-accurate LIF"
    spec = DeviceSpec(
        name="loihi",
        vendor="Intel",
        model="Loihi (mode 'loihi2': Loihi 2)",
        kind="neuromorphic",
        memory="on-chip SRAM in each of 128 neuromorphic cores",
        process_nm=14,
        transistors_bn=2.07,
        clock_mhz="asynchronous (no global clock)",
        peak={
            "neurons": "131,072 per chip (Loihi 2: 1,048,576)",
            "synapses": "130 million per chip (Loihi 2: 120 million)",
            "die": "60 mm^2, Intel 14 nm (Loihi 2: 31 mm^2, Intel 4, 2.3 billion transistors)",
        },
        software="Lava; here: Lava's bit-accurate LIF / Dense models re-implemented in numpy int64",
        sources=[DAVIES, LOIHI2, LAVA_LIF, LAVA_DENSE],
    )
    modes = ("loihi", "loihi2")
    looked_for = "Lava or NxSDK (python packages 'lava', 'nxsdk')"

    def probe(self) -> ProbeResult:
        found = [name for name in ("lava", "nxsdk") if importlib.util.find_spec(name) is not None]
        seen = f"found {' and '.join(found)}, but hwbench has no path to Loihi hardware" if found else "not found"
        return ProbeResult(
            status="emulated",
            reason=f"{self.looked_for} {seen}; arithmetic emulated per Lava's bit-accurate LIF model "
            "(documented, not measured on silicon)",
        )

    def profile_for(self, mode: str) -> NumericsProfile:
        return loihi_profile(mode, DEFAULT_PARAMETERS)

    def apply_overrides(self, profile: NumericsProfile, overrides: dict[str, Any]) -> NumericsProfile:
        merged = super().apply_overrides(profile, overrides)
        return loihi_profile(profile.mode, merged.parameters)

    def supports(self, kernel: Kernel, workload: Workload | None = None, **meta: Any) -> Support:
        mode = meta.get("mode") or self.default_mode
        if kernel.info.family == "conductance":
            return Support.no(
                f"{kernel.name}: conductance-based HH dynamics are not expressible on Loihi's hard-wired CUBA "
                "LIF neurons (two state variables with fixed linear decays, a threshold and a reset; no "
                "voltage-dependent gating, no exp or division)"
            )
        if kernel.name not in LIF_KERNELS:
            return Support.no(
                f"{kernel.name}: Loihi runs LIF-family kernels only ({', '.join(LIF_KERNELS)}); "
                f"this kernel's dynamics family is '{kernel.info.family}'"
            )
        if workload is None:
            return Support.yes("LIF dynamics map onto Loihi's CUBA neurons (capacity checked per workload)")
        if float(workload.params.get("reset_zero", 0.0)) != 1.0:
            return Support.no(_SUBTRACT_REASON)
        neurons, synapses = lif_counts(workload)
        cap_n, cap_s, _ = CAPACITY[mode if mode in CAPACITY else self.default_mode]
        if neurons > cap_n or synapses > cap_s:
            return Support.no(
                f"{neurons:,} neurons and {synapses:,} synapses exceed one {mode} chip "
                f"({cap_n:,} neurons, {cap_s:,} synapses; multi-chip partitioning is not modelled)"
            )
        return Support.yes(f"{neurons:,} of {cap_n:,} neurons, {synapses:,} of {cap_s:,} synapses on one {mode} chip")

    def check_parameters(self, params: dict[str, Any]) -> None:
        _check_parameters(params)

    def build_layers(self, kernel: Any, workload: Workload, mode: str, params: dict[str, Any]) -> list[FixedLayer]:
        vth_max, overflow = int(params["vth_max"]), str(params["a_in_overflow"])
        return [LoihiLayer(layer, vth_max=vth_max, a_in_overflow=overflow) for layer in kernel.layers(workload)]


def _check_parameters(params: dict[str, Any]) -> None:
    vth_max = params["vth_max"]
    if isinstance(vth_max, bool) or not isinstance(vth_max, int) or not 1 <= vth_max <= VTH_MAX:
        raise UsageError(f"loihi parameter vth_max must be an integer in 1..{VTH_MAX}, got {vth_max!r}")
    if params["a_in_overflow"] not in ("saturate", "wrap", "none"):
        raise UsageError(
            f"loihi parameter a_in_overflow must be saturate, wrap or none, got {params['a_in_overflow']!r}"
        )


def loihi_profile(mode: str, parameters: dict[str, Any]) -> NumericsProfile:
    """Loihi's formats as a :class:`NumericsProfile`, in float units of a threshold-1 kernel.

    Exact for the state and neuron arithmetic when ``vth = vth_max`` is a power of two (one float
    unit is ``64 vth`` integer units); the weight format depends on the weights of a workload, so
    that entry is an approximation. The bit-accurate path is :meth:`LoihiDevice.executor`.
    """
    from hwbench.accuracy.numerics.formats import FixedFormat
    from hwbench.accuracy.numerics.profile import Confidence, NumericsProfile, OpNumerics
    from hwbench.core.ops import OpClass

    params = {**DEFAULT_PARAMETERS, **parameters}
    _check_parameters(params)
    frac = round(math.log2(64 * params["vth_max"]))
    uv = FixedFormat(
        name=f"loihi-uv24 (2^-{frac} per threshold)",
        signed=True,
        int_bits=UV_BITS - 1 - frac,
        frac_bits=frac,
        overflow="saturate",
        rounding="toward-zero",
    )
    a_frac = frac - ACT_SHIFT
    a_in = FixedFormat(
        name=f"loihi-a_in16 (2^-{a_frac} per threshold)",
        signed=True,
        int_bits=15 - a_frac,
        frac_bits=a_frac,
        overflow="saturate" if params["a_in_overflow"] == "saturate" else "wrap",
        rounding="floor",
    )
    w_frac = a_frac - 2  # mixed-mode mantissa step 2 at weight exponent +1 (default lif workloads)
    weights = FixedFormat(
        name="loihi-w8 (approx.)",
        signed=True,
        int_bits=0,
        frac_bits=w_frac,
        overflow="saturate",
        rounding="nearest-even",
    )
    doc = Confidence.DOCUMENTED
    return NumericsProfile(
        name=f"loihi-{mode}-lava-bitacc",
        device="loihi",
        mode=mode,
        description=f"Lava's bit-accurate LIF/Dense arithmetic ({DISPUTED})",
        carrier="float64",
        ops={
            OpClass.STORE: OpNumerics(format=uv, source=LAVA_LIF + ": u, v 24-bit", confidence=doc),
            OpClass.MUL: OpNumerics(format=uv, source=LAVA_LIF + ": decays sign(x)(|x| >> 12)", confidence=doc),
            OpClass.ADD: OpNumerics(format=uv, source=LAVA_LIF + ": v clipped to +-(2^23-1); u wraps", confidence=doc),
            OpClass.MATMUL_ACCUMULATE: OpNumerics(
                format=a_in,
                source="assumption: dendritic sums saturate to the 16-bit a_in (Lava's Python model does not clip)",
                confidence=Confidence.ASSUMED,
            ),
            OpClass.MATMUL_INPUT: OpNumerics(
                format=weights,
                source=LAVA_DENSE + "; assumption: the weight exponent hwbench picks for default lif workloads",
                confidence=Confidence.ASSUMED,
            ),
        },
        parameters=params,
        notes=[
            "Float units: a kernel threshold of 1 is vth << 6 integer units; the device executor picks vth per "
            "layer (<= vth_max) and is the bit-accurate path; this profile approximates it for the generic emulator.",
            "Reset: v := 0 after a spike (no reset by subtraction); comparison v > vth << 6 (strict).",
            "Not modelled: refractory period, axonal/synaptic delays (one step per layer on the chip), "
            "multi-chip partitioning.",
            DISPUTED,
        ],
    )


@hookimpl
def hwbench_devices() -> list[Device]:
    return [LoihiDevice()]
