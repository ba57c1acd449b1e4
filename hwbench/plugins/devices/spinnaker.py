"""SpiNNaker (SpiNNaker1): the LIF-family kernels in sPyNNaker's s16.15 fixed-point arithmetic.

SpiNNaker's ARM968 cores have no FPU; sPyNNaker's neuron models compute in ``accum`` (s16.15:
32-bit signed, resolution 2^-15, range +-2^16). No board is reachable from hwbench, so the
device is always emulated, per the sPyNNaker C sources (every fact, with its file, in
``docs/devices/spinnaker.md``):

- LIF (``neuron_model_lif_impl.h``), per step::

      alpha = MULT_ROUND_NEAREST_ACCUM(I, R) + V_rest
      V     = alpha - MULT_ROUND_NEAREST_ACCUM(exp_TC, alpha - V)

  where round-to-nearest is ``(x y + 2^14) >> 15`` on the 64-bit product, saturated to 32 bits
  (``__stdfix_smul_k_round_nearest``): the current source (``MODE_SOURCES``). Mode
  ``spinnaker1-truncate`` is the earlier source, whose LIF wrote the plain ``accum * accum``:
  GCC's ARM back end expands that inline (``arm-fixed.md``, ``mulsa3``: ``smull``, then
  ``(lo >> 15) | (hi << 17)``), i.e. ``(x y) >> 15`` (toward -inf) keeping the low 32 bits
  (wrapping). Threshold: ``V >= V_thresh``.
- constants: ``R = kdivk(tau_m, c_m)`` and ``exp_TC = expk(-kdivk(ts, tau_m))`` computed on the
  chip (both source versions), emulated bit for bit by :mod:`.spinnaker_constants`.
- synapses: 16-bit unsigned weights per synapse type (excitatory, inhibitory) summed into ring
  buffers that saturate at 0xFFFF, turned into input by ``weight << left_shift`` (an accum);
  exponential synapses decay by u0.32 fractions, ``(int64(x) d) >> 32`` (``decay_s1615``), and
  scale each input by ``init = (tau / dt)(1 - decay)`` the same way.

Float kernel -> sPyNNaker: ``V = voltage_scale * u`` (accum), a 1 ms time step, ``tau_m =
-1/ln(beta)`` and ``c_m = tau_m (1 - beta)`` (so ``exp_TC = beta``, ``R = 1 / (1 - beta)`` and
``V_t = beta V_{t-1} + I_t`` in reals; on the chip both carry kdivk's and expk's rounding), ``I = voltage_scale *
W^T z`` (delta synapses for ``lif``; one exponential synapse with ``decay = alpha`` for
``lif-current``, weights divided by ``init``), ``V_rest = V_reset = 0``, no refractory period.
"""

from __future__ import annotations

import importlib.util
import math
from collections import Counter
from pathlib import Path
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
from hwbench.plugins.devices.spinnaker_constants import lif_constants
from hwbench.plugins.kernels.lif import LIF_KERNELS

if TYPE_CHECKING:
    from hwbench.accuracy.numerics.profile import NumericsProfile
    from hwbench.plugins.kernels.lif import LifLayer

FURBER = "Furber, Galluppi, Temple, Plana, 'The SpiNNaker Project', Proc. IEEE 102(5):652-665 (2014)"
PAINKRAS = (
    "Painkras et al., 'SpiNNaker: A 1-W 18-Core System-on-Chip for Massively-Parallel Neural Network "
    "Simulation', IEEE JSSC 48(8):1943-1953 (2013)"
)
SPYNNAKER = "sPyNNaker, neural_modelling/src/neuron (github.com/SpiNNakerManchester/sPyNNaker)"
LIF_SRC = "sPyNNaker neuron/models/neuron_model_lif_impl.h: lif_neuron_closed_form"
ROUND_SRC = "sPyNNaker common/round.h + spinnaker_tools stdfix-full-iso.h: __stdfix_smul_k_round_nearest"
DECAY_SRC = "sPyNNaker neuron/decay.h: decay_s1615; synapse_types/exp_synapse_utils.h"
RING_SRC = "sPyNNaker neuron/synapses.c: ring buffer saturation at 0xFFFF; weight << ring_buffer_to_input_left_shift"
THRESH_SRC = "sPyNNaker neuron/threshold_types/threshold_type_static.h: value >= threshold"
MIKAITIS = (
    "Hopkins, Mikaitis, Lester, Furber, 'Stochastic rounding and reduced-precision fixed-point arithmetic "
    "for solving neural ordinary differential equations', Phil. Trans. R. Soc. A 378 (2020)"
)

ONE = 1 << 15  # accum 1.0
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
RING_MAX = 0xFFFF
MAX_LEFT_SHIFT = 15  # 0xFFFF << 16 would overflow the 32-bit accum
CORES_PER_CHIP, APP_CORES, CHIPS_PER_BOARD = 18, 16, 48
NEURONS_PER_CORE = 256
SDRAM_PER_CHIP = 128 * 2**20
BYTES_PER_SYNAPSE = 4
MODES = {"spinnaker1": "round-nearest", "spinnaker1-truncate": "truncate"}
# Which sPyNNaker LIF source each mode follows (neuron_model_lif_impl.h; the newer version keeps the
# plain multiplies it replaced as comments, which dates the two).
MODE_SOURCES = {
    "spinnaker1": "sPyNNaker neuron_model_lif_impl.h as of commit 001e4d9 (current): MULT_ROUND_NEAREST_ACCUM "
    "multiplies; R and exp_TC from kdivk/expk on the chip",
    "spinnaker1-truncate": "sPyNNaker neuron_model_lif_impl.h as of commit 29f4c46 (earlier): plain accum '*' "
    "multiplies, which GCC's ARM back end expands to a truncating, wrapping smull (arm-fixed.md mulsa3); "
    "R and exp_TC from kdivk/expk on the chip",
}
DEFAULT_PARAMETERS: dict[str, Any] = {"voltage_scale": 16.0, "ring_buffer_sigma": 5.0, "lif_source_rate": 0.5}


# ------------------------------------------------------------------------------------------
# sPyNNaker's fixed-point arithmetic (raw int64 carriers of 32-bit values)
# ------------------------------------------------------------------------------------------
def mul_round_nearest(x: np.ndarray, y: np.ndarray | int, counts: Counter[str]) -> np.ndarray:
    """``__stdfix_smul_k_round_nearest``: ``sat32(((x y) >> 15) + ((x y >> 14) & 1))``.

    Ties round up (toward +inf); -1.0 * -1.0 in s0.31 terms (both INT32_MIN) gives INT32_MAX.
    """
    import numpy as np

    x, y = np.asarray(x, np.int64), np.asarray(y, np.int64)
    p = x * y
    r = (p >> 15) + ((p >> 14) & 1)
    r = np.where((x == INT32_MIN) & (y == INT32_MIN), INT32_MAX, r)
    return saturate(r, INT32_MIN, INT32_MAX, counts, "mul_saturated")


def mul_truncate(x: np.ndarray, y: np.ndarray | int, counts: Counter[str]) -> np.ndarray:
    """A stdfix accum multiply that drops the low 15 bits (arithmetic shift: toward -inf), wrapping."""
    import numpy as np

    p = np.asarray(x, np.int64) * np.asarray(y, np.int64)
    return wrap(p >> 15, 32, counts, "mul_wrapped")


def decay_s1615(x: np.ndarray, d: int) -> np.ndarray:
    """``(int64(x) * d) >> 32`` for a u0.32 fraction ``d``: floor, never overflows."""
    import numpy as np

    return (np.asarray(x, np.int64) * np.int64(d)) >> 32


def lif_update(
    v: np.ndarray, i_in: np.ndarray, *, r: int, exp_tc: int, v_rest: int, mul: Any, counts: Counter[str]
) -> np.ndarray:
    """``lif_neuron_closed_form``; every sum wraps as a non-saturating 32-bit accum would."""
    alpha = wrap(mul(i_in, r, counts) + v_rest, 32, counts, "accum_wrapped")
    return wrap(alpha - mul(exp_tc, wrap(alpha - v, 32, counts, "accum_wrapped"), counts), 32, counts, "accum_wrapped")


def to_u032(x: float) -> int:
    """A fraction in [0, 1] as u0.32 (round to nearest, capped at the largest value below 1)."""
    return int(min(max(round(x * 2.0**32), 0), 2**32 - 1))


def left_shift(bound_raw: float) -> int:
    """Smallest ring-buffer-to-input left shift with ``0xFFFF << shift >= bound_raw``."""
    shift = 0
    while shift < MAX_LEFT_SHIFT and (RING_MAX << shift) < bound_raw:
        shift += 1
    return shift


def expected_bound(w_raw: np.ndarray, rates: np.ndarray, sigma: float) -> float:
    """Per-step input a ring buffer must hold: max over targets of mean + sigma * sd (Poisson-like
    sources with spike probability ``rates``), and at least the largest single weight.

    A simplification of sPyNNaker's statistical ring-buffer scaling (``ring_buffer_sigma``).
    """
    import numpy as np

    if w_raw.size == 0:
        return 0.0
    mean = rates @ w_raw
    sd = np.sqrt((rates * (1.0 - rates)) @ (w_raw * w_raw))
    return float(max(np.max(mean + sigma * sd), np.max(w_raw)))


# ------------------------------------------------------------------------------------------
# float kernel -> sPyNNaker parameters
# ------------------------------------------------------------------------------------------
class SpinnakerLayer(FixedLayer):
    """A LIF population (one core's worth of state per neuron, as accums) with its synapses."""

    def __init__(self, layer: LifLayer, pre_rates: np.ndarray, *, mode: str, params: dict[str, Any]) -> None:
        import numpy as np

        if not layer.beta < 1.0 - 1.0 / 65535:
            raise UnavailableError(
                f"beta = {layer.beta} needs R = 1/(1 - beta) >= 2^16, beyond an accum (|x| < 2^16): "
                "sPyNNaker's closed-form LIF cannot integrate without leak"
            )
        self.n = layer.n
        self.mul = mul_round_nearest if MODES[mode] == "round-nearest" else mul_truncate
        self.scale = float(params["voltage_scale"]) * ONE  # raw accum units per float unit
        self.constants = lif_constants(layer.beta)  # as the chip derives them (kdivk, expk)
        self.exp_tc = self.constants.exp_tc
        self.r = self.constants.r
        self.v_rest = 0
        self.thr = round(layer.thr * self.scale)
        self.zero_reset = layer.reset == "zero"
        self.has_current = layer.alpha is not None
        a = layer.alpha or 0.0  # no current (None), or one with no memory (0): no synaptic decay
        self.exp_synapse = a > 0.0
        if self.exp_synapse:
            self.decay = to_u032(a)
            self.init = to_u032((1.0 - a) / -math.log(a)) if a < 1.0 else to_u032(1.0)
            w_unit = self.scale / (self.init / 2.0**32)  # raw input per float unit, before init
        else:
            self.decay = self.init = 0
            w_unit = self.scale
        self.has_rec = layer.w_rec is not None
        # feed-forward and recurrent synapses share the population's ring buffers (one per type)
        w, rates = layer.w_ff, pre_rates
        if layer.w_rec is not None:
            w = np.vstack([layer.w_ff, layer.w_rec])
            rates = np.concatenate([pre_rates, np.full(layer.n, float(params["lif_source_rate"]))])
        sigma = float(params["ring_buffer_sigma"])
        raw = w * w_unit
        exc, inh = np.maximum(raw, 0.0), np.maximum(-raw, 0.0)
        self.shift_exc = left_shift(expected_bound(exc, rates, sigma))
        self.shift_inh = left_shift(expected_bound(inh, rates, sigma))
        self.w_exc = np.minimum(np.rint(exc / 2.0**self.shift_exc), RING_MAX).astype(np.int64)
        self.w_inh = np.minimum(np.rint(inh / 2.0**self.shift_inh), RING_MAX).astype(np.int64)
        # excitatory and inhibitory weights side by side: one exact BLAS product gives both sums
        both = np.hstack([self.w_exc, self.w_inh])
        n_ff = layer.w_ff.shape[0]
        self._ff = integer_weights(both[:n_ff])
        self._rec = integer_weights(both[n_ff:]) if self.has_rec else None

    def enter(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import numpy as np

        out = {"v": _to_raw(state["u"], self.scale), "z": state["z"].astype(np.int64)}
        out["i"] = _to_raw(state["i"], self.scale) if "i" in state else np.zeros_like(out["v"])
        return out

    def leave(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import numpy as np

        out = {"u": state["v"] / self.scale, "z": state["z"].astype(np.float64)}
        if self.has_current:
            out["i"] = state["i"] / self.scale
        return out

    def input_ff(self, spikes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sums = int_sums(spikes, self._ff)
        return sums[..., : self.n], sums[..., self.n :]

    def input_rec(self, spikes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        assert self._rec is not None, "input_rec is called for layers with recurrent weights only"
        sums = int_sums(spikes, self._rec)
        return sums[..., : self.n], sums[..., self.n :]

    def step(self, state: dict[str, np.ndarray], ff: Any, rec: Any, counts: Counter[str]) -> dict[str, np.ndarray]:
        import numpy as np

        exc, inh = ff if rec is None else (ff[0] + rec[0], ff[1] + rec[1])
        exc = saturate(exc, 0, RING_MAX, counts, "ring_buffer_saturated") << self.shift_exc
        inh = saturate(inh, 0, RING_MAX, counts, "ring_buffer_saturated") << self.shift_inh
        if self.exp_synapse:
            # the previous step's shaping (decay) of the current, then this step's input
            i = decay_s1615(state["i"], self.decay) + decay_s1615(exc, self.init) - decay_s1615(inh, self.init)
        else:
            i = exc - inh
        i = wrap(i, 32, counts, "accum_wrapped")
        z_prev = state["z"]
        v = np.where(z_prev == 1, 0, state["v"]) if self.zero_reset else state["v"]  # V_reset = 0
        v = lif_update(v, i, r=self.r, exp_tc=self.exp_tc, v_rest=self.v_rest, mul=self.mul, counts=counts)
        if not self.zero_reset:
            v = wrap(v - self.thr * z_prev, 32, counts, "accum_wrapped")
        return {"i": i, "v": v, "z": (v >= self.thr).astype(np.int64)}


def _to_raw(x: np.ndarray, scale: float) -> np.ndarray:
    import numpy as np

    return np.clip(np.rint(np.asarray(x, np.float64) * scale), INT32_MIN, INT32_MAX).astype(np.int64)


# ------------------------------------------------------------------------------------------
# the device
# ------------------------------------------------------------------------------------------
class SpinnakerDevice(FixedLifDevice):
    """SpiNNaker1 through sPyNNaker: one SpiNN-5 board (48 chips) as the capacity model."""

    default_parameters = DEFAULT_PARAMETERS
    model_name = "sPyNNaker s16.15 LIF"
    spec = DeviceSpec(
        name="spinnaker",
        vendor="University of Manchester",
        model="SpiNNaker1 (18 ARM968 cores per chip; capacity: one 48-chip SpiNN-5 board)",
        kind="neuromorphic",
        memory="128 MB SDRAM per chip; 32 KB ITCM + 64 KB DTCM per core",
        memory_bytes=SDRAM_PER_CHIP,
        process_nm=130,
        transistors_bn=0.1,
        clock_mhz="200",
        tdp_w=1.0,
        peak={
            "cores": f"{CORES_PER_CHIP} ARM968 per chip ({APP_CORES} application, 1 monitor, 1 spare), "
            "no floating-point unit",
            "neurons": f"{NEURONS_PER_CORE} LIF per core (sPyNNaker default), "
            f"{NEURONS_PER_CORE * APP_CORES * CHIPS_PER_BOARD:,} per SpiNN-5 board",
        },
        software="sPyNNaker; here: its s16.15 LIF and synapse arithmetic re-implemented in numpy int64",
        sources=[FURBER, PAINKRAS, SPYNNAKER],
    )
    modes = tuple(MODES)
    looked_for = "sPyNNaker (python package 'spynnaker') and a machine in ~/.spynnaker.cfg"

    def probe(self) -> ProbeResult:
        if importlib.util.find_spec("spynnaker") is None:
            seen = "'spynnaker' is not installed"
        else:
            cfg = "a" if (Path.home() / ".spynnaker.cfg").exists() else "no"
            seen = f"'spynnaker' found ({cfg} ~/.spynnaker.cfg), but hwbench has no path to SpiNNaker boards"
        return ProbeResult(
            status="emulated", reason=f"{seen}; arithmetic emulated bit for bit per sPyNNaker's s16.15 LIF"
        )

    def profile_for(self, mode: str) -> NumericsProfile:
        return spinnaker_profile(mode, DEFAULT_PARAMETERS)

    def apply_overrides(self, profile: NumericsProfile, overrides: dict[str, Any]) -> NumericsProfile:
        merged = super().apply_overrides(profile, overrides)
        return spinnaker_profile(profile.mode, merged.parameters)

    def supports(self, kernel: Kernel, workload: Workload | None = None, **meta: Any) -> Support:
        if kernel.info.family == "conductance":
            return Support.no(
                f"{kernel.name}: conductance-based HH dynamics are not available on SpiNNaker here: sPyNNaker "
                "ships no Hodgkin-Huxley model, and hwbench emulates only its fixed-point LIF neurons"
            )
        if kernel.name not in LIF_KERNELS:
            return Support.no(
                f"{kernel.name}: the SpiNNaker plugin runs LIF-family kernels only ({', '.join(LIF_KERNELS)}); "
                f"this kernel's dynamics family is '{kernel.info.family}'"
            )
        if workload is None:
            return Support.yes("LIF dynamics map onto sPyNNaker's LIF neurons (capacity checked per workload)")
        beta = float(workload.params["beta"])
        if not beta < 1.0 - 1.0 / 65535:
            return Support.no(f"beta = {beta}: the closed-form LIF needs R = 1/(1 - beta) < 2^16 (an accum)")
        if not beta > 0.0:
            return Support.no(f"beta = {beta}: sPyNNaker's LIF needs tau_m = -dt/ln(beta) > 0 (kdivk divides by it)")
        neurons, synapses = lif_counts(workload)
        cap_n = NEURONS_PER_CORE * APP_CORES * CHIPS_PER_BOARD
        cap_s = CHIPS_PER_BOARD * SDRAM_PER_CHIP // BYTES_PER_SYNAPSE
        if neurons > cap_n or synapses > cap_s:
            return Support.no(
                f"{neurons:,} neurons and {synapses:,} synapses exceed one SpiNN-5 board ({cap_n:,} neurons at "
                f"{NEURONS_PER_CORE} per core; {cap_s:,} 32-bit synaptic words in SDRAM)"
            )
        reset = "custom model: reset by subtraction" if float(workload.params["reset_zero"]) != 1.0 else "V_reset = 0"
        return Support.yes(
            f"{neurons:,} of {cap_n:,} neurons, {synapses:,} of {cap_s:,} synapses on one SpiNN-5 board ({reset})"
        )

    def check_parameters(self, params: dict[str, Any]) -> None:
        _check_parameters(params)

    def build_layers(self, kernel: Any, workload: Workload, mode: str, params: dict[str, Any]) -> list[FixedLayer]:
        """``mode`` picks the multiply's rounding; each layer's ring-buffer shifts need the spike
        probability of its sources: the measured input rates, then the assumed LIF rate."""
        import numpy as np

        spec = kernel.layers(workload)
        rates = [workload.arrays["x"].mean(axis=0)]
        rates += [np.full(layer.n, float(params["lif_source_rate"])) for layer in spec[:-1]]
        return [SpinnakerLayer(layer, rates[j], mode=mode, params=params) for j, layer in enumerate(spec)]


def _check_parameters(params: dict[str, Any]) -> None:
    for key, lo, hi in (
        ("voltage_scale", 2.0**-15, 2.0**15),
        ("ring_buffer_sigma", 0.0, 100.0),
        ("lif_source_rate", 0.0, 1.0),
    ):
        value = params[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= float(value) <= hi:
            raise UsageError(f"spinnaker parameter {key} must be a number in [{lo:g}, {hi:g}], got {value!r}")


def spinnaker_profile(mode: str, parameters: dict[str, Any]) -> NumericsProfile:
    """sPyNNaker's formats as a :class:`NumericsProfile`, in float units of the kernel.

    One float unit is ``voltage_scale`` accum units, so states are s16.15 shifted by
    log2(voltage_scale) bits (exact when it is a power of two). The synaptic weight entry depends
    on each workload's ring-buffer shifts and is an approximation; the bit-accurate path is
    :meth:`SpinnakerDevice.executor`.
    """
    from hwbench.accuracy.numerics.formats import FixedFormat
    from hwbench.accuracy.numerics.profile import Confidence, NumericsProfile, OpNumerics
    from hwbench.core.ops import OpClass

    params = {**DEFAULT_PARAMETERS, **parameters}
    _check_parameters(params)
    s = round(math.log2(float(params["voltage_scale"])))
    rounding = "nearest-away" if MODES[mode] == "round-nearest" else "floor"
    accum = FixedFormat(
        name=f"s16.15 / 2^{s}", signed=True, int_bits=16 - s, frac_bits=15 + s, overflow="wrap", rounding="nearest-even"
    )
    mul = accum.model_copy(update={"rounding": rounding, "overflow": "saturate" if rounding != "floor" else "wrap"})
    weights = FixedFormat(
        name="ring-buffer weight (approx.)",
        signed=True,
        int_bits=16 - s,
        frac_bits=15 + s - 5,
        overflow="saturate",
        rounding="nearest-even",
    )
    doc = Confidence.DOCUMENTED
    mul_source = (
        ROUND_SRC
        if rounding != "floor"
        else (
            "GCC's ARM expansion of the plain accum multiply (gcc config/arm/arm-fixed.md, mulsa3: smull, "
            f"(lo >> 15) | (hi << 17)) in {MODE_SOURCES[mode]} ({MIKAITIS}); libgcc's out-of-line __mulsa3 "
            "rounds half up in newer GCC, but ARM targets with a long multiply expand it inline"
        )
    )
    return NumericsProfile(
        name=f"spinnaker-{mode}",
        device="spinnaker",
        mode=mode,
        description="sPyNNaker s16.15 accum LIF arithmetic"
        + (" with truncating multiplies" if rounding == "floor" else " with round-to-nearest multiplies")
        + f" ({MODE_SOURCES[mode]})",
        carrier="float64",
        ops={
            OpClass.STORE: OpNumerics(format=accum, source=SPYNNAKER + ": REAL is accum (s16.15)", confidence=doc),
            OpClass.ADD: OpNumerics(
                format=accum,
                source=f"{LIF_SRC}; assumption: plain (not _Sat) accum additions wrap modulo 2^32",
                confidence=Confidence.ASSUMED,
            ),
            OpClass.MUL: OpNumerics(
                format=mul, source=mul_source, confidence=doc if rounding != "floor" else Confidence.ASSUMED
            ),
            OpClass.MATMUL_INPUT: OpNumerics(
                format=weights,
                source=RING_SRC + "; assumption: the left shift hwbench picks for default lif workloads",
                confidence=Confidence.ASSUMED,
            ),
        },
        parameters=params,
        notes=[
            "Ties: sPyNNaker's round-to-nearest multiply rounds halves up (toward +inf); the profile's "
            "'nearest-away' differs only on negative exact halves. The device executor is bit-exact.",
            "Synaptic decays (exponential synapses) are u0.32 fractions applied with a floor: "
            "(int64(x) * d) >> 32 (" + DECAY_SRC + ").",
            "Threshold: V >= V_thresh (" + THRESH_SRC + "); the float kernel spikes on u > thr.",
            "Constants: R = kdivk(tau_m, c_m) and exp_TC = expk(-kdivk(ts, tau_m)) as the chip computes them "
            "(truncating divisions, spinn_common's table-and-series expk); tau_m, c_m and ts reach the chip "
            "rounded to nearest s16.15 (assumed host encoding).",
            "Not modelled: the one-step minimum synaptic delay, refractory periods, real-time deadlines per step.",
        ],
    )


@hookimpl
def hwbench_devices() -> list[Device]:
    return [SpinnakerDevice()]
