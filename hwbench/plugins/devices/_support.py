"""Capacity models and real-backend helpers shared by the device plugins.

Capacity: a :class:`Footprint` counts what a workload keeps resident (state, parameters,
connectivity, engine temporaries), measured on reference sizes and scaled, so each device's
``supports()`` can compare it with its memory and say why a workload does not fit. Real
backends: :class:`ContextExecutor` keeps a device context (a JAX device, a matmul precision)
active around every call of an executor built elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hwbench.core.device import Support
from hwbench.core.engine import Executor, RunOutput
from hwbench.core.errors import HwbenchError, UnavailableError, UsageError

if TYPE_CHECKING:
    from hwbench.core.kernel import Kernel, Workload


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

    def bytes(
        self,
        *,
        value: int = 4,
        state_copies: int = 2,
        temporaries_per_state: float = TEMPORARIES_PER_STATE,
        temporaries_per_connection: float = TEMPORARIES_PER_CONNECTION,
    ) -> int:
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
        return Footprint(
            cells, round(self.state * k), round(self.params * k), round(self.indices * k), round(self.connections * k)
        )


def is_connected(workload: Workload) -> bool:
    """Whether the workload has connectivity (any non-empty integer index array)."""
    import numpy as np

    return any(np.issubdtype(np.asarray(v).dtype, np.integer) and np.size(v) for v in workload.arrays.values())


def _count(workload: Workload) -> Footprint:
    import numpy as np

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


def footprint(
    kernel: Kernel, workload: Workload | None = None, *, size: int | None = None, connected: bool = True
) -> Footprint | None:
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

    def __init__(self, inner: Executor, contexts: Callable[[], list[AbstractContextManager[Any]]], detail: str) -> None:
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


def jax_on_device(
    kernel: Kernel,
    workload: Workload,
    *,
    platform: str,
    precision: str,
    engine: str | None,
    what: str,
    dtype: str = "float32",
    shards: int | None = None,
) -> Executor:
    """The JAX engine's executor, traced and run on JAX's first ``platform`` device (with
    ``shards``: split over the first ``shards`` of them, docs/scaling.md).

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
        if shards is None:
            inner = chosen.build(kernel, workload, dtype=dtype)
        else:
            from hwbench.core.engines.jax_sharded import build_sharded

            inner = build_sharded(chosen, kernel, workload, shards=shards, dtype=dtype, platform=platform)
    return ContextExecutor(inner, contexts, f"real: {device.device_kind} via {what}, matmul precision {precision}")
