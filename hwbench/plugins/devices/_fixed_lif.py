"""Running the LIF-family kernels in a neuromorphic chip's integer arithmetic.

The Loihi and SpiNNaker plugins share everything but the arithmetic of one population: the loop
over steps, feeding each layer the spikes of the layer below (same step) and its own spikes
(previous step, for recurrent weights), exact integer synaptic sums, conversion of the kernel's
float state to the chip's integers and back, and the counting of overflow events. A device
supplies one :class:`FixedLayer` per population of :meth:`hwbench.plugins.kernels.lif._LifBase.layers`.

Exact integer sums in float64: spikes are 0/1 and weights small integers, so float64 sums of
weights are exact (all magnitudes stay far below 2^53) in any summation order, and BLAS is much
faster than numpy's integer matmul.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import Counter
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import numpy as np

from hwbench.accuracy.numerics.emulated_device import EmulatedDevice
from hwbench.core.device import RunRequest
from hwbench.core.engine import Executor, RunOutput
from hwbench.core.engines._loop import check_nsamples, merge_inputs, state_to_host
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.kernel import Workload

_EXACT = 2.0**53


def int_sums(spikes: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``spikes @ weights`` for 0/1 spikes and integer-valued float64 weights, as exact int64.

    One spike vector (a step): the sum of the rows of the neurons that spiked, which touches
    only those rows (spikes are sparse); a raster of steps: one BLAS product.
    """
    import numpy as np

    if spikes.ndim == 1:
        rows: np.ndarray = weights[np.flatnonzero(spikes)].sum(axis=0)
        return rows.astype(np.int64)
    product: np.ndarray = np.matmul(spikes.astype(np.float64), weights)
    return product.astype(np.int64)


def integer_weights(w: np.ndarray) -> np.ndarray:
    """Integer weights as float64 for :func:`int_sums`, after checking sums stay exact."""
    import numpy as np

    w = np.asarray(w, dtype=np.int64)
    if w.size and np.abs(w).sum(axis=0).max() >= _EXACT:
        raise ValueError("integer weights too large for exact float64 sums")
    return w.astype(np.float64)


def saturate(x: np.ndarray, lo: int, hi: int, counts: Counter[str], name: str) -> np.ndarray:
    """Clamp to ``[lo, hi]``, counting the clamped elements under ``name``."""
    import numpy as np

    n = int(np.count_nonzero((x < lo) | (x > hi)))
    if n:
        counts[name] += n
        x = np.clip(x, lo, hi)
    return x


def wrap(x: np.ndarray, bits: int, counts: Counter[str], name: str) -> np.ndarray:
    """Two's-complement wrap to ``bits`` (signed), counting the elements that wrapped."""
    import numpy as np

    half = 1 << (bits - 1)
    wrapped = ((x + half) & ((1 << bits) - 1)) - half
    n = int(np.count_nonzero(wrapped != x))
    if n:
        counts[name] += n
    return wrapped


class FixedLayer(ABC):
    """One population in a chip's integers. State dicts hold int64 arrays; ``z`` is 0/1."""

    n: int
    has_rec: bool

    @abstractmethod
    def enter(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The kernel's float layer state (``i``?, ``u``, ``z``) as the chip's integers."""

    @abstractmethod
    def leave(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The chip's integer state back in the kernel's float units (exact inverse of ``enter``)."""

    @abstractmethod
    def input_ff(self, spikes: np.ndarray) -> Any:
        """Synaptic sums of feed-forward spikes (``(..., n_pre)`` 0/1 -> per-target integers)."""

    @abstractmethod
    def input_rec(self, spikes: np.ndarray) -> Any:
        """Synaptic sums of this layer's own previous-step spikes (recurrent layers only)."""

    @abstractmethod
    def step(self, state: dict[str, np.ndarray], ff: Any, rec: Any, counts: Counter[str]) -> dict[str, np.ndarray]:
        """One time step: synaptic input, neuron update, threshold and reset; returns new state."""


def lif_counts(workload: Workload) -> tuple[int, int]:
    """LIF neurons (hidden + output; input spikes are injected) and synapses of a LIF workload."""
    a = workload.arrays
    neurons = workload.size + a["w_out"].shape[1]
    synapses = a["w_in"].size + a["w_out"].size + (a["w_rec"].size if "w_rec" in a else 0)
    return int(neurons), int(synapses)


def index_step(sums: Any, t: int) -> Any:
    """Row ``t`` of precomputed synaptic sums (a tuple of arrays or one array)."""
    return tuple(s[t] for s in sums) if isinstance(sums, tuple) else sums[t]


class FixedLifExecutor(Executor):
    """Runs a LIF-family kernel with a chip's :class:`FixedLayer` populations, vectorised in numpy int64.

    State in and out is the kernel's float layout, so the executor is interchangeable with an
    engine's; ``enter``/``leave`` are exact inverses, so splitting a run into several calls gives
    the same integers as one call. The input-layer synaptic sums of all ``n_steps`` input rows are
    computed once per call (they do not depend on the state).
    """

    engine_name = "numpy"
    dtype = "int64"  # the carrier of the chip's integers

    def __init__(self, kernel: Any, workload: Workload, layers: list[FixedLayer], *, detail: str = "") -> None:
        self.kernel = kernel
        self.workload = workload
        self.layers = layers
        self.sample_every = kernel.info.sample_every
        self.detail = detail

    def run(self, state: Any, inputs: dict[str, Any] | None, nsamples: int) -> RunOutput:
        import numpy as np

        nsamples = check_nsamples(nsamples)
        x = merge_inputs(self.kernel, self.workload, inputs, np.dtype(np.float64))["x"]
        if not np.isin(x, (0.0, 1.0)).all():
            raise UsageError("input 'x' must hold spikes (0 or 1) for a neuromorphic device")
        x = x.astype(np.int64)
        n_steps = x.shape[0]
        state = state_to_host(state, np.dtype(np.float64), self.workload.state0)
        states = [layer.enter(d) for layer, d in zip(self.layers, self.kernel.split_state(state))]
        total = nsamples * self.sample_every
        first_ff = self.layers[0].input_ff(x) if total else None
        counts: Counter[str] = Counter()
        probes = np.zeros((nsamples, self.layers[-1].n), dtype=np.float64)
        for k in range(total):
            for j, layer in enumerate(self.layers):
                ff = index_step(first_ff, k % n_steps) if j == 0 else layer.input_ff(states[j - 1]["z"])
                rec = layer.input_rec(states[j]["z"]) if layer.has_rec else None
                states[j] = layer.step(states[j], ff, rec, counts)
            if (k + 1) % self.sample_every == 0:
                probes[k // self.sample_every] = states[-1]["z"]
        out_state = self.kernel.join_state([layer.leave(s) for layer, s in zip(self.layers, states)])
        return RunOutput(state=out_state, probes=probes, spikes=None, counters=dict(counts))


class FixedLifDevice(EmulatedDevice):
    """A neuromorphic device whose executor runs the LIF kernels in the chip's own integers.

    Subclasses give the mapping's default parameters (``default_parameters``, also the profile's
    overridable knobs), their check, and the layers; numerics profiles come from
    ``profile_for`` as for every emulated device.
    """

    default_parameters: ClassVar[dict[str, Any]] = {}
    model_name: ClassVar[str] = "integer model"  # what results name as the executor's detail

    @abstractmethod
    def check_parameters(self, params: dict[str, Any]) -> None:
        """Raise a UsageError naming a mapping parameter that is out of range."""

    @abstractmethod
    def build_layers(self, kernel: Any, workload: Workload, mode: str, params: dict[str, Any]) -> list[FixedLayer]:
        """Quantise the kernel's layers for ``mode`` (timed as setup)."""

    def executor(self, request: RunRequest) -> Executor:
        """The chip's integer model in numpy int64 (``engine`` and ``dtype`` do not apply).

        ``profile`` (a user's own, or one with overrides) supplies the mapping parameters. The LIF
        kernels sample every step and the integer model always counts its saturations, so
        ``sample_every`` and ``counters`` change nothing here.
        """
        kernel, workload, profile = request.kernel, request.workload, request.profile
        mode = request.mode or self.default_mode
        base = self.numerics(mode)  # validates the mode
        verdict = self.supports(kernel, workload, mode=mode)
        if not verdict.ok:
            raise UnavailableError(f"device '{self.name}' cannot run {kernel.name}: {verdict.reason}")
        params = {**self.default_parameters, **(profile or base).parameters}
        self.check_parameters(params)
        start = time.perf_counter()
        layers = self.build_layers(kernel, workload, mode, params)
        executor = FixedLifExecutor(kernel, workload, layers, detail=f"{self.model_name} ({mode})")
        executor.setup_s = time.perf_counter() - start
        return executor
