"""Execution engines: compile many kernel steps into one call and run them.

An engine owns a backing library (numpy, JAX, TensorFlow, ONNX Runtime). ``build`` does the
allocation and compilation (timed as *setup*); the returned executor's ``run`` advances the
state by ``nsamples * sample_every`` steps inside compiled code, sampling the kernel's probe
after every ``sample_every`` steps and, where the kernel has a spike rule, recording spikes at
step resolution.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

from hwbench.core.errors import UnavailableError
from hwbench.core.kernel import Kernel, Workload
from hwbench.core.ops import Ops

OpsWrapper = Callable[[Ops], Ops]
"""Turns an engine's raw ops into emulating ops (supplied by :mod:`hwbench.accuracy`)."""


@runtime_checkable
class SteppedOps(Protocol):
    """Optional protocol of (emulating) ops that need to know the step and report counters.

    Engines check ``isinstance(ops, SteppedOps)``. Around every kernel step they call
    ``begin_step(k)`` with the *global* step index ``k`` (a traced integer scalar inside compiled
    loops; it seeds counter-based stochastic rounding, so results do not depend on evaluation
    order) and, after the step, ``end_step()``, which returns a 1-D int32 array with one count per
    name in ``counter_names`` for that step. The engine sums these over the call and returns them
    in :attr:`RunOutput.counters`. ``load(state)`` / ``store(state)`` wrap the state on entry and
    round it to the profile's storage format on exit.
    """

    counter_names: tuple[str, ...]

    def begin_step(self, step: Any) -> None: ...
    def end_step(self) -> Any: ...
    def load(self, state: Any) -> Any: ...
    def store(self, state: Any) -> Any: ...


@runtime_checkable
class InputOps(Protocol):
    """Optional protocol of (emulating) ops that must see a kernel's inputs as run-time values.

    A kernel's inputs (a stimulus current, a spike raster) change between calls, so a compiler
    cannot fold arithmetic on them: it runs on the chip. Parameters and Python numbers are
    constants of the program (the device's compiler folds arithmetic among them). Engines pass
    every call's inputs through :func:`load_inputs` before the kernel step sees them; emulating
    ops wrap them so that an operator touching an input rounds like the device, even where
    neither operand is the state (``params["g"] * inputs["I"]``).
    """

    def load_inputs(self, inputs: dict[str, Any]) -> dict[str, Any]: ...


def load_inputs(ops: Any, inputs: dict[str, Any]) -> dict[str, Any]:
    """``inputs`` as the kernel step of ``ops`` must see them (:class:`InputOps`); unchanged for
    ops that do not ask for them (native ops, or stepped ops written before the protocol)."""
    return ops.load_inputs(inputs) if isinstance(ops, InputOps) else inputs


@runtime_checkable
class FiniteStateOps(Protocol):
    """Optional protocol of stepped ops whose step compiles to less when the state entering it is finite.

    A saturating profile (the GroqChip's) must turn a NaN or an infinity in the loaded state into
    0 or the largest value at the first operation on it; a finite state needs none of that. An
    engine that compiles its step loop may set ``assume_finite_state`` while it traces: ``load``
    then treats every state element as a finite number. ``finite_state_kept``, read after
    tracing, says whether that step stores a finite state whenever it loaded one; only then does
    the program hold for a whole call, and only for a call whose initial state is finite (the
    engine checks it on the host, and keeps a program traced without the assumption for other
    states). ``finite_state_helps``: whether the assumption can change the program at all.
    """

    assume_finite_state: bool
    finite_state_kept: bool
    finite_state_helps: bool


@dataclass
class RunOutput:
    """What one executor call returns, as host numpy arrays.

    ``spikes[k, c]`` is the step offset (0..sample_every-1) inside sample window ``k`` at which
    cell ``c`` first crossed the spike threshold upward, or -1.
    """

    state: Any
    probes: np.ndarray
    spikes: np.ndarray | None = None
    counters: dict[str, int] = field(default_factory=dict)


class Executor(ABC):
    """A compiled kernel ready to run; ``setup_s`` is what building it cost.

    ``engine_name`` and ``detail`` (e.g. the ONNX Runtime provider that ran) end up in results.
    """

    setup_s: float = 0.0
    engine_name: str = "unknown"
    dtype: str | np.dtype[Any] = "float32"  # a name or a numpy dtype: results record str(dtype)
    detail: str = ""

    @abstractmethod
    def run(self, state: Any, inputs: dict[str, Any], nsamples: int) -> RunOutput:
        """Run ``nsamples * sample_every`` steps from ``state`` with ``inputs`` held fixed."""


class Engine(ABC):
    """A way to run kernels on this host (registered through ``hwbench_engines``)."""

    name: str
    dtypes: tuple[str, ...] = ("float32", "float64")
    summary: str = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every ``build`` — built-in or third-party — first refuses, with the reason, when its
        library is missing here, and every executor it returns carries the engine's name into
        results, without each ``build`` having to remember either."""
        super().__init_subclass__(**kwargs)
        build: Callable[..., Executor] | None = cls.__dict__.get("build")
        if build is None or getattr(build, "_names_executor", False):
            return

        @functools.wraps(build)
        def named_build(self: Engine, *args: Any, **kw: Any) -> Executor:
            ok, reason = self.available()
            if not ok:
                raise UnavailableError(f"engine '{self.name}' is not available here: {reason}")
            executor = build(self, *args, **kw)
            if executor.engine_name == "unknown":
                executor.engine_name = self.name
            return executor

        named_build._names_executor = True  # type: ignore[attr-defined]  # a marker: wrapped once only
        cls.build = named_build  # type: ignore[method-assign]  # the wrapper replaces the subclass's own build

    @abstractmethod
    def available(self) -> tuple[bool, str]:
        """Whether the backing library imports here, and why not (cheap: no heavy import)."""

    @abstractmethod
    def build(
        self,
        kernel: Kernel,
        workload: Workload,
        *,
        dtype: str = "float32",
        sample_every: int | None = None,
        ops_wrapper: OpsWrapper | None = None,
    ) -> Executor:
        """Allocate and compile (the base class has already refused a missing library)."""


def kernel_params(workload: Workload, to_float: Callable[[Any], Any], to_int: Callable[[Any], Any]) -> dict[str, Any]:
    """The ``params`` dict every engine passes to ``Kernel.step``.

    Float parameters (scalars or per-cell arrays) go through ``to_float`` (engine arrays of the
    working dtype; scalars may stay Python floats), integer arrays (connectivity) through
    ``to_int``, and ``n`` is the workload size as a Python int (static for compilers).
    """
    import numpy as np

    params: dict[str, Any] = {}
    for key, value in workload.params.items():
        params[key] = float(value) if np.ndim(value) == 0 else to_float(np.asarray(value))
    for key, value in workload.arrays.items():
        params[key] = to_int(value) if np.issubdtype(np.asarray(value).dtype, np.integer) else to_float(value)
    params["n"] = int(workload.size)
    return params
