"""Building blocks the device plugins assemble their numerics profiles from.

Device modules (``hwbench.plugins.devices.*``) describe each mode's arithmetic as a
:class:`~hwbench.accuracy.profile.NumericsProfile`. What several of them need lives here, so that
the same fact is stated once, with one citation:

* :func:`cpu_profile` — the native IEEE profile of the host CPU (the study's fp32 reference and
  the fp64 gold), which :mod:`hwbench.plugins.devices.cpu` imports lazily;
* :func:`native_profile` — a profile that changes nothing (``is_native()``), carrying its
  sources in ``notes``, for chips whose arithmetic in a mode is the carrier's own;
* :class:`Knob` / :func:`resolve_knobs` — the documented, overridable profile parameters
  (``hwbench audit --set exp_ulps=4``): defaults, validation, and the note that cites each;
* :func:`faithful_exp` — an ``exp`` class whose results are off by up to ``k`` ulp, the model
  for approximate transcendental units whose accuracy nobody published;
* :func:`footprint` / :func:`capacity_support` — a kernel's device-memory footprint and the
  yes-or-no-with-a-reason answer of the capacity models in ``Device.supports``;
* :func:`jax_on_device` / :class:`ContextExecutor` — a real run on a GPU or TPU that JAX sees,
  with the device and the matrix-product precision pinned for every call.

Why profiles cite in ``notes`` as well as per op: an op class a profile does not list runs
natively, so a native profile has no op entries to hang a source on. Its notes say where the
claim "this is plain IEEE arithmetic" comes from, and what the emulation does *not* model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from hwbench.accuracy.formats import RoundingMode
from hwbench.accuracy.profile import Confidence, ErrorModel, NumericsProfile, OpNumerics
from hwbench.core.device import Support
from hwbench.core.engine import Executor, RunOutput
from hwbench.core.errors import HwbenchError, UnavailableError, UsageError, unknown_name

if TYPE_CHECKING:
    from hwbench.core.kernel import Kernel, Workload

__all__ = [
    "IEEE754",
    "STUDY",
    "ContextExecutor",
    "Footprint",
    "Knob",
    "capacity_support",
    "cpu_profile",
    "faithful_exp",
    "footprint",
    "is_connected",
    "jax_on_device",
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


def faithful_exp(ulps: float, *, source: str, confidence: Confidence, seed: int = 0) -> OpNumerics:
    """``exp``/``log`` results in fp32 moved by a pseudo-random offset of up to ``ulps`` ulp.

    This is how a profile says "this chip's transcendental unit is an approximation of known
    (or assumed) accuracy but unknown formula": the error is reproducible for a seed but not
    the chip's own error pattern, so results show the *sensitivity* of a kernel to such
    errors, not the chip's exact trajectory.
    """
    return OpNumerics(
        format="fp32",
        rounding=RoundingMode.NEAREST_EVEN,
        error=ErrorModel(ulps=ulps, seed=seed) if ulps > 0 else None,
        source=source,
        confidence=confidence,
    )


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


# --------------------------------------------------------------------------------- capacity
# Live intermediate values of one step, per state value and per connection. Assumptions (no
# compiler publishes its liveness): io-ehh evaluates ~150 elementwise expressions per cell but a
# compiler keeps only a few live at once; a connection needs its two gathered values and its current.
TEMPORARIES_PER_STATE = 4.0
TEMPORARIES_PER_CONNECTION = 3.0


@dataclass(frozen=True)
class Footprint:
    """What a workload keeps on a device, counted in values (multiply by the value size).

    ``state``: state values (all rows, all cells); ``params``: per-cell parameter and float
    array values; ``indices``: integer connectivity entries (gather/scatter indices);
    ``connections``: directed connections (entries of the longest index array).
    """

    cells: int
    state: int
    params: int
    indices: int
    connections: int

    def bytes(self, *, value: int = 4, state_copies: int = 2,
              temporaries_per_state: float = TEMPORARIES_PER_STATE,
              temporaries_per_connection: float = TEMPORARIES_PER_CONNECTION) -> int:
        """Device bytes: state (``state_copies`` buffers), parameters, indices, and temporaries.

        A step computes a new state from the old one, so two state buffers are live; the
        temporaries (intermediate values of a step) are counted per state value and per
        connection, because both scale with the network. Indices are int32.
        """
        values = (
            self.state * (state_copies + temporaries_per_state)
            + self.params
            + self.connections * temporaries_per_connection
        )
        return int(values * value + self.indices * 4)

    def scaled(self, cells: int) -> Footprint:
        """The same per-cell footprint at ``cells`` cells (for a size without a workload)."""
        k = cells / max(self.cells, 1)
        return Footprint(cells, round(self.state * k), round(self.params * k), round(self.indices * k),
                         round(self.connections * k))


def is_connected(workload: Workload) -> bool:
    """Whether the workload has connectivity (any non-empty integer index array)."""
    return any(np.issubdtype(np.asarray(v).dtype, np.integer) and np.size(v) for v in workload.arrays.values())


def _count(workload: Workload) -> Footprint:
    states = workload.state0 if isinstance(workload.state0, (tuple, list)) else [workload.state0]
    state = int(sum(np.size(s) for s in states))
    params = int(sum(np.size(v) for v in workload.params.values() if np.ndim(v) > 0))
    indices = connections = 0
    for value in workload.arrays.values():
        arr = np.asarray(value)
        if np.issubdtype(arr.dtype, np.integer):
            indices += int(arr.size)
            connections = max(connections, int(arr.size))
        else:
            params += int(arr.size)
    return Footprint(int(workload.size), state, params, indices, connections)


_REFERENCE: dict[tuple[str, bool], Footprint] = {}
_REFERENCE_SIZES = (4096, 1000, 512, 64)  # cubes, so torus kernels accept them too


def footprint(kernel: Kernel, workload: Workload | None = None, *, size: int | None = None,
              connected: bool = True) -> Footprint | None:
    """The workload's footprint, or — for a bare ``size`` — one scaled from a small reference.

    Building the real workload of a large size only to measure it would cost as much as the
    run, so the per-cell counts come from the smallest reference size the kernel accepts
    (per-cell state, parameters and connections do not depend on the size for the kernels
    hwbench ships). None when neither a workload nor a size is given, or no reference builds.
    """
    if workload is not None:
        return _count(workload)
    if size is None or size <= 0:
        return None
    key = (kernel.name, bool(connected))
    if key not in _REFERENCE:
        for ref in _REFERENCE_SIZES:
            try:
                _REFERENCE[key] = _count(kernel.make_workload(ref, connected=connected, seed=0))
                break
            except (HwbenchError, ValueError):  # a size this kernel does not accept: try the next one
                continue
        else:
            return None
    return _REFERENCE[key].scaled(int(size))


def capacity_support(need: int, have: int, memory: str, cells: int) -> Support:
    """Yes (saying how much of the memory it takes) or no (saying by how much it does not fit)."""
    size = f"{cells:,} cells need about {_human(need)}"
    if need > have:
        return Support.no(f"{size}, more than the {memory} ({_human(have)}); use fewer cells")
    return Support.yes(f"{size} of {memory} ({100 * need / have:.2g}%)")


def _human(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} TB"  # pragma: no cover


# ---------------------------------------------------------------------------- real backends
class ContextExecutor(Executor):
    """An engine's executor whose every call runs inside the same context managers.

    A real accelerator run must keep its device placement and numerics settings (JAX's default
    device, its matrix-product precision, an IPU strategy scope) for tracing *and* for every
    later call, wherever the caller runs it; wrapping the calls is how that stays true.
    """

    def __init__(self, inner: Executor, contexts: Callable[[], list[AbstractContextManager[Any]]],
                 detail: str) -> None:
        self.inner = inner
        self._contexts = contexts
        self.setup_s = inner.setup_s
        self.engine_name = inner.engine_name
        self.dtype = inner.dtype
        self.detail = detail

    def run(self, state: Any, inputs: dict[str, Any], nsamples: int) -> RunOutput:
        with ExitStack() as stack:
            for context in self._contexts():
                stack.enter_context(context)
            return self.inner.run(state, inputs, nsamples)

    def __getattr__(self, name: str) -> Any:  # engine extras (global_step, save_model, ...)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


def jax_on_device(kernel: Kernel, workload: Workload, *, platform: str, precision: str,
                  engine: str | None, what: str, dtype: str = "float32") -> Executor:
    """The JAX engine's executor, traced and run on JAX's first ``platform`` device.

    ``precision`` is JAX's ``default_matmul_precision`` ("default", "high", "highest"): on a TPU
    it selects 1, 3 or 6 bf16 passes; on an NVIDIA GPU "highest" keeps fp32 off TF32.
    """
    import jax

    from hwbench.core.engines.select import pick_engine
    from hwbench.core.plugins import get_registry

    if engine not in (None, "jax"):
        raise UsageError(f"a real {platform.upper()} run goes through the 'jax' engine; got engine '{engine}'")
    try:
        device = jax.devices(platform)[0]
    except (RuntimeError, IndexError) as exc:
        raise UnavailableError(f"JAX sees no {platform.upper()} ({exc})") from None
    chosen = pick_engine(get_registry().engines, "jax", dtype)

    def contexts() -> list[AbstractContextManager[Any]]:
        return [jax.default_device(device), jax.default_matmul_precision(precision)]

    with ExitStack() as stack:
        for context in contexts():
            stack.enter_context(context)
        inner = chosen.build(kernel, workload, dtype=dtype)
    return ContextExecutor(inner, contexts, f"real: {device.device_kind} via {what}, matmul precision {precision}")
