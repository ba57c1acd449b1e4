"""The JAX/XLA engine: the whole sample loop compiled ahead of time; the fast path for emulation.

``build`` traces the kernel's step into a doubly nested ``lax.fori_loop`` (sample windows x
steps per window), with probes, step-resolution spikes and SteppedOps counters recorded inside
the compiled loop, and compiles it with ``jit(...).lower(...).compile()`` — that is the setup
time. ``run`` then moves the state in, calls the executable once per chunk of up to
``chunk_blocks`` windows (state donated, so it is updated in place), and brings the results back.

Gather/scatter: connectivity arrays are closed over as numpy constants, so the ops namespace
sees the concrete indices at trace time and can precompute a better layout than a generic
scatter. ``benchmarks/scatter_strategies.py`` measures the options; the default is what won
there (see :data:`DEFAULT_SCATTER`).

JAX is imported lazily (inside methods), so importing this module costs nothing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from hwbench.core.engine import Engine, Executor, OpsWrapper, RunOutput, kernel_params
from hwbench.core.engines import _loop
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.kernel import Kernel, Workload

SCATTER_STRATEGIES = ("table", "segment_sum", "at_add", "onehot")
# Picked by benchmarks/scatter_strategies.py (io-ehh, 729 and 8000 cells, fp32, 2-core CPU).
DEFAULT_SCATTER = "table"
ONEHOT_MAX_ELEMENTS = 1 << 24  # dense one-hot matrices beyond this fall back to the table layout
PROBE_BUFFER_ELEMENTS = 1 << 23  # probes held per compiled call: bounds chunk_blocks * ncells


@contextlib.contextmanager
def x64_mode(dtype: np.dtype) -> Iterator[None]:
    """64-bit JAX types for float64 runs only, scoped so float32 users elsewhere are unaffected."""
    if dtype == np.float64:
        import jax

        with jax.enable_x64(True):
            yield
    else:
        yield


class JaxOps:
    """The ops namespace (:class:`hwbench.core.ops.Ops`) on ``jax.numpy``, used while tracing.

    ``scatter`` picks how ``scatter_add`` is lowered when the index is a concrete (numpy) array:
    ``table`` (a padded (size, max in-degree) gather + row sum), ``segment_sum`` (sorted
    segment sum), ``at_add`` (``.at[].add``) or ``onehot`` (dense one-hot matmul, small sizes).
    A traced index always uses an unsorted segment sum.
    """

    name = "jax"
    xp_name = "jax"

    def __init__(self, dtype: Any = np.float32, scatter: str = DEFAULT_SCATTER) -> None:
        import jax
        import jax.numpy as jnp

        if scatter not in SCATTER_STRATEGIES:
            raise UsageError(f"unknown scatter strategy '{scatter}'; choose from: {', '.join(SCATTER_STRATEGIES)}")
        self._jax = jax
        self._jnp = jnp
        self.dtype = np.dtype(dtype)
        self.scatter = scatter
        self._plans: dict[int, tuple[np.ndarray, Any]] = {}

    def asarray(self, x: Any) -> Any:
        arr = self._jnp.asarray(x)
        return arr.astype(self.dtype) if self._jnp.issubdtype(arr.dtype, self._jnp.floating) else arr

    def exp(self, x: Any) -> Any:
        return self._jnp.exp(x)

    def log(self, x: Any) -> Any:
        return self._jnp.log(x)

    def sqrt(self, x: Any) -> Any:
        return self._jnp.sqrt(x)

    def power(self, x: Any, y: Any) -> Any:
        return self._jnp.power(x, y)

    def abs(self, x: Any) -> Any:
        return self._jnp.abs(x)

    def minimum(self, x: Any, y: Any) -> Any:
        return self._jnp.minimum(x, y)

    def maximum(self, x: Any, y: Any) -> Any:
        return self._jnp.maximum(x, y)

    def where(self, cond: Any, x: Any, y: Any) -> Any:
        return self._jnp.where(cond, x, y)

    def greater(self, x: Any, y: Any) -> Any:
        return self._jnp.greater(x, y)

    def less(self, x: Any, y: Any) -> Any:
        return self._jnp.less(x, y)

    def gather(self, x: Any, index: Any) -> Any:
        # concrete indices were built in range by the workload; traced ones get clamped
        mode = "promise_in_bounds" if isinstance(index, np.ndarray) else "clip"
        return self._jnp.asarray(x).at[..., index].get(mode=mode)

    def scatter_add(self, values: Any, index: Any, size: int) -> Any:
        jnp = self._jnp
        if not isinstance(index, np.ndarray):
            return self._jax.ops.segment_sum(values, index, num_segments=size)
        strategy, plan = self._plan(index, size)
        if strategy == "table":
            padded = jnp.concatenate([values, jnp.zeros((1,), dtype=values.dtype)])
            return jnp.sum(padded.at[plan].get(mode="promise_in_bounds"), axis=1)
        if strategy == "onehot":
            return jnp.matmul(plan.astype(values.dtype), values, precision=self._jax.lax.Precision.HIGHEST)
        sorted_ = bool(plan)
        if strategy == "segment_sum":
            return self._jax.ops.segment_sum(values, index, num_segments=size, indices_are_sorted=sorted_)
        return jnp.zeros(size, dtype=values.dtype).at[index].add(values, indices_are_sorted=sorted_)

    def _plan(self, index: np.ndarray, size: int) -> tuple[str, Any]:
        """Host-side layout for a concrete index, computed once per index array per trace."""
        key = id(index)
        if key in self._plans and self._plans[key][0] is index:
            return self._plans[key][1]
        index_sorted = bool(np.all(index[1:] >= index[:-1]))
        strategy = self.scatter
        if strategy == "onehot" and size * len(index) > ONEHOT_MAX_ELEMENTS:
            strategy = "table"
        plan: Any
        if strategy == "table":
            plan = neighbour_table(index, size)
        elif strategy == "onehot":
            plan = np.zeros((size, len(index)), dtype=np.int8)
            plan[index, np.arange(len(index))] = 1
        else:
            plan = index_sorted
        self._plans[key] = (index, (strategy, plan))
        return strategy, plan

    def sum(self, x: Any, axis: int) -> Any:
        return self._jnp.sum(x, axis=axis)

    def matmul(self, a: Any, b: Any) -> Any:
        return self._jnp.matmul(a, b)

    def stack(self, xs: list[Any]) -> Any:
        return self._jnp.stack(xs)

    def zeros_like(self, x: Any) -> Any:
        return self._jnp.zeros_like(x)

    def astype(self, x: Any, dtype: Any) -> Any:
        return self._jnp.asarray(x).astype(dtype)


def neighbour_table(index: np.ndarray, size: int) -> np.ndarray:
    """(size, max count) positions into ``values`` per target, padded with ``len(index)``.

    Row i lists, in their original order, the positions j with ``index[j] == i``; padding points
    at one extra zero appended to the values, so a plain row sum gives the scatter-add with no mask.
    """
    index = np.asarray(index, dtype=np.int64)
    order = np.argsort(index, kind="stable")
    counts = np.bincount(index, minlength=size)
    width = int(counts.max(initial=0))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot = np.arange(len(index)) - np.repeat(starts, counts)
    table = np.full((size, max(width, 1)), len(index), dtype=np.int32)
    table[index[order], slot] = order
    return table


def _check_same_layout(new: Any, old: Any) -> None:
    """A kernel step must return state of the same structure, shapes and dtypes (a silent
    promotion, say float32 -> float64, would otherwise change the precision being measured)."""
    import jax

    new_leaves, new_tree = jax.tree_util.tree_flatten(new)
    old_leaves, old_tree = jax.tree_util.tree_flatten(old)
    if new_tree != old_tree or any(
        (a.shape, a.dtype) != (b.shape, b.dtype) for a, b in zip(new_leaves, old_leaves)
    ):
        got = [(a.shape, str(a.dtype)) for a in new_leaves]
        want = [(b.shape, str(b.dtype)) for b in old_leaves]
        raise UsageError(f"kernel step returned state {got}, expected {want} (same shapes and dtype)")


class JaxExecutor(Executor):
    """Holds the compiled executable and device-resident parameters of one build."""

    def __init__(
        self,
        kernel: Kernel,
        workload: Workload,
        dtype: np.dtype,
        sample_every: int,
        ops: Any,
        *,
        chunk_blocks: int,
        unroll: int,
        compiler_options: dict[str, Any] | None = None,
    ) -> None:
        import jax

        self.compiler_options = dict(compiler_options or {})
        self.kernel = kernel
        self.workload = workload
        self.dtype = dtype
        self.sample_every = sample_every
        self.ops = ops
        self.chunk_blocks = chunk_blocks
        self.unroll = unroll
        import os
        self.split_rows = os.environ.get("H2_SPLIT", "0") == "1"
        self.stepped = _loop.is_stepped(ops)
        self.counter_names: tuple[str, ...] = tuple(ops.counter_names) if self.stepped else ()
        self.steps_done = 0
        host = kernel_params(workload, lambda a: np.asarray(a, dtype=dtype), lambda a: np.asarray(a))
        # per-cell float arrays are runtime arguments (device-resident, not folded into the
        # program); scalars and integer connectivity are trace-time constants
        self._fparams_host = {k: v for k, v in host.items() if isinstance(v, np.ndarray) and v.dtype == dtype}
        self._static = {k: v for k, v in host.items() if k not in self._fparams_host}
        with x64_mode(dtype):
            self._fparams = jax.device_put(self._fparams_host)
            self._compiled = self._compile()

    # ----------------------------------------------------------------------- tracing
    def _program(self, state: Any, inputs: Any, fparams: Any, step0: Any, t0: Any, nblocks: Any) -> Any:
        import jax
        import jax.numpy as jnp

        kernel, ops, se, rule = self.kernel, self.ops, self.sample_every, self.kernel.spike_rule
        params = {**self._static, **fparams}
        n = self.workload.size
        ncount = len(self.counter_names)

        split = self.split_rows and not isinstance(state, (tuple, list)) and np.ndim(state) >= 2

        def one_step(s: Any, carry: Any, k: Any) -> Any:
            state, first, counts = carry
            if split:
                state = jnp.stack(state)
            t = t0 + k * se + s
            if self.stepped:
                ops.begin_step(step0 + t)
                new = ops.store(kernel.step(ops, ops.load(state), params, inputs, t))
                counts = counts + jnp.asarray(ops.end_step(), dtype=jnp.int32)
            else:
                new = kernel.step(ops, state, params, inputs, t)
            _check_same_layout(new, state)
            if rule is not None:
                up = (state[rule.row] < rule.threshold) & (new[rule.row] >= rule.threshold) & (first < 0)
                first = jnp.where(up, s.astype(first.dtype), first)
            if split:
                new = tuple(new[i] for i in range(new.shape[0]))
            return new, first, counts

        def one_block(k: Any, carry: Any) -> Any:
            state, probes, spikes, counters = carry
            first0 = jnp.full((n,), _loop.NO_SPIKE, dtype=_loop.SPIKE_DTYPE)
            counts0 = jnp.zeros((ncount,), dtype=jnp.int32)
            if split:
                state = tuple(state[i] for i in range(state.shape[0]))
            state, first, counts = jax.lax.fori_loop(
                0, se, lambda s, c: one_step(s, c, k), (state, first0, counts0), unroll=min(self.unroll, se)
            )
            if split:
                state = jnp.stack(state)
            probes = probes.at[k].set(jnp.asarray(kernel.probe(state), dtype=probes.dtype))
            spikes = spikes.at[k].set(first)
            counters = counters.at[k].set(counts)
            return state, probes, spikes, counters

        c = self.chunk_blocks
        init = (
            state,
            jnp.zeros((c, n), dtype=self.dtype),
            jnp.full((c, n), _loop.NO_SPIKE, dtype=_loop.SPIKE_DTYPE),
            jnp.zeros((c, ncount), dtype=jnp.int32),
        )
        return jax.lax.fori_loop(0, nblocks, one_block, init)

    def _compile(self) -> Any:
        import jax

        def spec(a: Any) -> Any:
            return jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype)

        state_spec = jax.tree_util.tree_map(spec, _loop.state_to_host(self.workload.state0, self.dtype, self.workload.state0))
        inputs_spec = {k: spec(v) for k, v in _loop.merge_inputs(self.kernel, self.workload, {}, self.dtype).items()}
        fparams_spec = {k: spec(v) for k, v in self._fparams_host.items()}
        i32 = jax.ShapeDtypeStruct((), np.int32)
        jitted = jax.jit(self._program, donate_argnums=(0,))
        return jitted.lower(state_spec, inputs_spec, fparams_spec, i32, i32, i32).compile(self.compiler_options or None)

    # --------------------------------------------------------------------------- run
    def run(self, state: Any, inputs: dict[str, Any], nsamples: int) -> RunOutput:
        import jax

        nsamples = _loop.check_nsamples(nsamples)
        host_state = _loop.state_to_host(state, self.dtype, self.workload.state0)
        host_inputs = _loop.merge_inputs(self.kernel, self.workload, inputs, self.dtype)
        probes: list[np.ndarray] = []
        spikes: list[np.ndarray] = []
        counts: list[np.ndarray] = []
        with x64_mode(self.dtype):
            dev_state = jax.device_put(host_state)
            dev_inputs = jax.device_put(host_inputs)
            done = 0
            while done < nsamples:
                nb = min(self.chunk_blocks, nsamples - done)
                t0 = done * self.sample_every
                dev_state, p, s, c = self._compiled(
                    dev_state, dev_inputs, self._fparams, np.int32(self.steps_done + t0), np.int32(t0), np.int32(nb)
                )
                probes.append(np.asarray(p)[:nb])
                spikes.append(np.asarray(s)[:nb])
                counts.append(np.asarray(c)[:nb])
                done += nb
            out_state = jax.tree_util.tree_map(np.asarray, dev_state)
        self.steps_done += nsamples * self.sample_every
        n = self.workload.size
        probe_arr = np.concatenate(probes) if probes else np.zeros((0, n), dtype=self.dtype)
        spike_arr = np.concatenate(spikes) if spikes else np.zeros((0, n), dtype=_loop.SPIKE_DTYPE)
        totals = np.concatenate(counts).astype(np.int64).sum(axis=0) if counts else np.zeros(len(self.counter_names))
        return RunOutput(
            state=out_state,
            probes=probe_arr,
            spikes=spike_arr if self.kernel.spike_rule is not None else None,
            counters=_loop.counters_dict(self.counter_names, totals),
        )


class JaxEngine(Engine):
    """JAX/XLA, float32 and float64, all sample windows of a call in one compiled loop.

    ``scatter`` (see :data:`SCATTER_STRATEGIES`) and ``unroll`` (steps unrolled inside a window)
    are tuning knobs for the benchmarks; the defaults are the measured best.
    """

    name = "jax"
    dtypes = ("float32", "float64")
    summary = "JAX/XLA, sample loop compiled ahead of time (lax.fori_loop), float32 and float64"

    def __init__(
        self,
        *,
        scatter: str = DEFAULT_SCATTER,
        unroll: int = 1,
        chunk_blocks: int | None = None,
        compiler_options: dict[str, Any] | None = None,
    ) -> None:
        self.compiler_options = compiler_options
        if scatter not in SCATTER_STRATEGIES:
            raise UsageError(f"unknown scatter strategy '{scatter}'; choose from: {', '.join(SCATTER_STRATEGIES)}")
        self.scatter = scatter
        self.unroll = max(1, int(unroll))
        self.chunk_blocks = chunk_blocks

    def available(self) -> tuple[bool, str]:
        missing = [m for m in ("jax", "jaxlib") if importlib.util.find_spec(m) is None]
        if missing:
            return False, f"{' and '.join(missing)} not installed (pip install jax)"
        return True, "jax installed"

    def build(
        self,
        kernel: Kernel,
        workload: Workload,
        *,
        dtype: str = "float32",
        sample_every: int | None = None,
        ops_wrapper: OpsWrapper | None = None,
    ) -> Executor:
        ok, why = self.available()
        if not ok:
            raise UnavailableError(f"engine 'jax' unavailable: {why}")
        start = time.perf_counter()
        np_dtype = _loop.check_dtype(self.name, dtype, self.dtypes)
        se = _loop.resolve_sample_every(kernel, sample_every)
        chunk = self.chunk_blocks or max(1, min(1000, PROBE_BUFFER_ELEMENTS // max(workload.size, 1)))
        with x64_mode(np_dtype):
            ops: Any = JaxOps(np_dtype, scatter=self.scatter)
            if ops_wrapper is not None:
                ops = ops_wrapper(ops)
            executor = JaxExecutor(
                kernel,
                workload,
                np_dtype,
                se,
                ops,
                chunk_blocks=chunk,
                unroll=self.unroll,
                compiler_options=self.compiler_options,
            )
        executor.setup_s = time.perf_counter() - start
        return executor
