"""The JAX/XLA engine: the whole sample loop compiled ahead of time; the fast path for emulation.

``build`` traces the kernel's step into a doubly nested ``lax.fori_loop`` (sample windows x
steps per window), with probes, step-resolution spikes and SteppedOps counters recorded inside
the compiled loop, and compiles it with ``jit(...).lower(...).compile()`` — that is the setup
time. ``run`` then moves the state in, calls the executable once per chunk of up to
``chunk_blocks`` windows (state donated, so it is updated in place), and brings the results back.

What makes it fast on a small CPU (measured in ``benchmarks/scatter_strategies.py`` and
``benchmarks/io_engines.py``):

* Small loops as single kernels. XLA:CPU's thunk runtime dispatches every fusion of a step
  separately, which costs more than the arithmetic at ~1000 cells. XLA can compile a whole
  while loop into one kernel instead (its small-while-loop hoisting), but only below a byte
  threshold of 1 KiB by default, settable only through ``XLA_FLAGS`` before JAX's backend
  starts. :func:`prepare_xla_flags` raises it (process-wide, before the first JAX use, unless
  the user set XLA backend options or ``HWBENCH_XLA_SMALL_LOOP_BYTES=0``). It changes how
  loops are dispatched, not what they compute.
* Gather/scatter from concrete indices. Connectivity arrays are closed over as numpy
  constants, so the ops namespace sees the indices at trace time and lowers ``scatter_add``
  to in-place slice additions, one pass per connection rank (``passes``): XLA's scatter is slow
  on CPU and, being "unavailable" to the loop hoisting, would also keep the whole loop on the
  slow path. Gathers are the costliest operation left (XLA:CPU loads them element by element),
  so connection lists stored pass-major (as io-ehh's are) avoid all but one per connection.
  :func:`~hwbench.core.ops.gather_map_scatter` runs fused, one loop per pass (gather, map and
  in-place add), and when the targets are numbered by rank (io-ehh numbers its cells so) no
  gather is left but the sources': a gather back into target order would be fused into the
  consumer and keep that whole loop from vectorising.
* 512-bit vectors and a memory-optimising schedule (per-compilation options,
  :data:`DEFAULT_COMPILER_OPTIONS`).

JAX is imported lazily (inside functions), so importing this module costs nothing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from hwbench.core.disk_cache import code_fingerprint, digest, workload_digest
from hwbench.core.engine import Engine, Executor, OpsWrapper, RunOutput, kernel_params, load_inputs
from hwbench.core.engines import _loop
from hwbench.core.engines.program_cache import ProgramCache, fresh_compile, program_key, trace_key_of, unique_name
from hwbench.core.errors import UsageError
from hwbench.core.kernel import Kernel, Workload
from hwbench.core.layout import PassPlan, check_index, neighbour_table, pass_plan

SCATTER_STRATEGIES = ("passes", "slots", "table", "segment_sum", "at_add", "onehot")
# Picked by benchmarks/scatter_strategies.py (io-ehh, 729 and 8000 cells, fp32, 2-core CPU).
DEFAULT_SCATTER = "passes"
ONEHOT_MAX_ELEMENTS = 1 << 24  # dense one-hot matrices beyond this fall back to the default
MAX_TABLE_WIDTH = 64  # tables / passes deeper than this (a hub) fall back to segment_sum ...
MAX_TABLE_PADDING = 8  # ... as do tables with more than 8x padding over the entries they hold
PROBE_BUFFER_ELEMENTS = 1 << 23  # probe values held per compiled call: bounds chunk_blocks

# Per-compilation XLA:CPU options: prefer 512-bit vectors (LLVM's default preference is 256), and
# schedule for memory (io-ehh at 729 cells: 2-3% faster, neutral at 8000). An option this XLA
# build does not know is dropped again (compiled without it).
DEFAULT_COMPILER_OPTIONS: dict[str, Any] = {
    "xla_cpu_prefer_vector_width": 512,
    "xla_cpu_scheduler_type": "CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED",
}


def compile_lowered(lowered: Any) -> tuple[Any, dict[str, Any]]:
    """A lowered JAX program compiled with :data:`DEFAULT_COMPILER_OPTIONS`, dropping any this
    XLA build does not know; returns (executable, options used)."""
    options = dict(DEFAULT_COMPILER_OPTIONS)
    while True:
        try:
            return lowered.compile(options or None), options
        except Exception as exc:  # an XLA build without one of these options: drop it, retry
            unknown = [key for key in options if key in str(exc)]
            if not unknown:
                raise
            options = {k: v for k, v in options.items() if k not in unknown}


SMALL_LOOP_ENV = "HWBENCH_XLA_SMALL_LOOP_BYTES"
DEFAULT_SMALL_LOOP_BYTES = 1 << 30
SMALL_LOOP_OPTION = "xla_cpu_small_while_loop_byte_threshold"


def prepare_xla_flags() -> bool:
    """Let XLA:CPU compile small while loops into single kernels; True if XLA_FLAGS was set.

    Must run before JAX's backend starts (XLA reads ``XLA_FLAGS`` once); afterwards it does
    nothing. Leaves ``XLA_FLAGS`` alone when it already sets ``xla_backend_extra_options``, and
    is disabled by ``HWBENCH_XLA_SMALL_LOOP_BYTES=0`` (any other value is the byte threshold).
    """
    limit = os.environ.get(SMALL_LOOP_ENV, "").strip() or str(DEFAULT_SMALL_LOOP_BYTES)
    flags = os.environ.get("XLA_FLAGS", "")
    if limit == "0" or "xla_backend_extra_options" in flags:
        return False
    if "jax" in sys.modules:
        try:
            from jax._src import xla_bridge

            if xla_bridge.backends_are_initialized():
                return False
        except (ImportError, AttributeError):
            return False
    os.environ["XLA_FLAGS"] = f"{flags} --xla_backend_extra_options={SMALL_LOOP_OPTION}={int(limit)}".strip()
    return True


@contextlib.contextmanager
def x64_mode(dtype: np.dtype) -> Iterator[None]:
    """64-bit JAX types for float64 runs only, scoped so float32 users elsewhere are unaffected."""
    import numpy as np

    if dtype == np.float64:
        import jax

        with jax.enable_x64(True):
            yield
    else:
        yield


def _lax_precision(jax: Any, precision: str | None) -> Any:
    """XLA's precision enum for 'default' / 'high' / 'highest' (None: the configured default)."""
    if precision is None:
        return None
    try:
        return jax.lax.Precision[precision.upper()]
    except KeyError:
        raise UsageError(f"unknown matmul precision '{precision}'; choose from: default, high, highest") from None


class JaxOps:
    """The ops namespace (:class:`hwbench.core.ops.Ops`) on ``jax.numpy``, used while tracing.

    ``scatter`` picks how ``scatter_add`` is lowered when the index is a concrete (numpy) array:

    * ``passes`` (default): pass k adds every target's k-th value, targets ranked by in-degree
      so each pass is a contiguous prefix (:class:`hwbench.core.layout.PassPlan`); a list stored
      pass-major needs no gather to be summed, and ``gather`` through such a list (the targets'
      own values) becomes one ranking gather plus slices. Each target sums left to right;
    * ``slots``: a (max in-degree, size) neighbour table; pass k gathers every target's k-th
      value and adds it (same order, but a gather per table entry, padding included);
    * ``table``: the same table as (size, max in-degree), one gather and a row sum;
    * ``segment_sum`` / ``at_add``: XLA scatter-add (sorted when the index is);
    * ``onehot``: a dense one-hot matrix product (small sizes only).

    Tables fall back to ``segment_sum`` when padding would blow up (a hub with a huge
    in-degree); a traced index always uses an unsorted segment sum.
    """

    name = "jax"
    xp_name = "jax"

    def __init__(self, dtype: Any = "float32", scatter: str = DEFAULT_SCATTER) -> None:
        import numpy as np

        prepare_xla_flags()
        import jax
        import jax.numpy as jnp

        if scatter not in SCATTER_STRATEGIES:
            raise UsageError(f"unknown scatter strategy '{scatter}'; choose from: {', '.join(SCATTER_STRATEGIES)}")
        self._jax = jax
        self._jnp = jnp
        self.dtype = np.dtype(dtype)
        self.scatter = scatter
        self._plans: dict[int, tuple[np.ndarray, tuple[str, Any]]] = {}  # id(index): (index, (strategy, plan))
        self._gather_plans: dict[tuple[int, int], tuple[np.ndarray, PassPlan | None]] = {}

    def trace_key(self) -> dict[str, Any]:
        """What shapes the programs traced with these ops (the program cache's key; see
        :func:`hwbench.core.engines.program_cache.trace_key_of`)."""
        return {"ops": "jax", "dtype": str(self.dtype), "scatter": self.scatter}

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
        import numpy as np

        jnp = self._jnp
        x = jnp.asarray(x)
        if not isinstance(index, np.ndarray):
            return x.at[..., index].get(mode="clip")
        check_index(index, x.shape[-1])  # checked here once, so the compiled gather can skip clamping
        plan = self._pass_major(index, x.shape[-1]) if self.scatter == "passes" and index.ndim == 1 else None
        if plan is None:
            return x.at[..., index].get(mode="promise_in_bounds")
        # a pass-major target list is the ranked targets' prefixes, one per pass: one small
        # gather (the ranking) and contiguous slices instead of one gather per connection
        ranked = self._ranked(x, plan)
        return jnp.concatenate([ranked[..., :c] for c in plan.counts], axis=-1)

    def scatter_add(self, values: Any, index: Any, size: int) -> Any:
        import numpy as np

        jnp = self._jnp
        if not isinstance(index, np.ndarray):
            return self._jax.ops.segment_sum(values, index, num_segments=size)
        check_index(index, size)
        if index.size == 0:
            return jnp.zeros((*values.shape[:-1], size), dtype=values.dtype)
        strategy, plan = self._plan(index, size)
        if strategy == "passes":
            return self._sum_passes(values, plan, size)
        if strategy in ("table", "slots"):
            values = jnp.asarray(values)
            padded = jnp.concatenate([values, jnp.zeros((*values.shape[:-1], 1), dtype=values.dtype)], axis=-1)
            if strategy == "table":
                return jnp.sum(padded.at[..., plan].get(mode="promise_in_bounds"), axis=-1)
            # materialise the values once, then add slot by slot: target i gets its k-th
            # connection in pass k, i.e. the same left-to-right order as a sequential loop
            padded = self._jax.lax.optimization_barrier(padded)
            out = padded.at[..., plan[0]].get(mode="promise_in_bounds")
            for row in plan[1:]:
                out = out + padded.at[..., row].get(mode="promise_in_bounds")
            return out
        if strategy == "onehot":
            return jnp.matmul(plan.astype(values.dtype), values, precision=self._jax.lax.Precision.HIGHEST)
        sorted_ = bool(plan)
        if strategy == "segment_sum":
            return self._jax.ops.segment_sum(values, index, num_segments=size, indices_are_sorted=sorted_)
        return jnp.zeros(size, dtype=values.dtype).at[index].add(values, indices_are_sorted=sorted_)

    def gather_map_scatter(self, message: Any, x: Any, src: Any, tgt: Any, size: int) -> Any:
        """:func:`hwbench.core.ops.gather_map_scatter`, fused pass by pass for pass-major lists.

        Each pass gathers its sources, maps them and adds the terms to its prefix of the ranked
        targets in one loop, instead of materialising every connection's gathered values and
        terms first. Bit-identical to the unfused composition: the same terms, the same order.
        """
        x = self._jnp.asarray(x)
        plan = self.fused_plan(src, tgt, size, x.shape)
        if plan is None:
            return self.scatter_add(message(self.gather(x, src), self.gather(x, tgt)), tgt, size)
        at_tgt = self._ranked(x, plan)
        terms = (
            message(x.at[..., src[offset : offset + count]].get(mode="promise_in_bounds"), at_tgt[..., :count])
            for offset, count in zip(plan.offsets, plan.counts)
        )
        return self._accumulate_passes(terms, plan, size)

    def fused_plan(self, src: Any, tgt: Any, size: int, shape: tuple[int, ...]) -> PassPlan | None:
        """The pass plan :meth:`gather_map_scatter` fuses with for these arguments, or None.

        None means it computes the unfused composition. With a plan, the map is called once
        per pass, in pass order, on the pass's ``plan.counts[k]`` connections (list positions
        ``plan.offsets[k]`` onwards), and each target's terms are summed in list order. The
        emulating ops ask this to know whether they may fuse their own rounding into the passes.
        """
        import numpy as np

        concrete = isinstance(src, np.ndarray) and isinstance(tgt, np.ndarray) and src.shape == tgt.shape
        fusable = concrete and tgt.ndim == 1 and tgt.size > 0 and self.scatter == "passes" and shape[-1] == size
        plan = self._pass_major(tgt, size) if fusable else None
        if plan is not None:
            check_index(src, size)
        return plan

    def _sum_passes(self, values: Any, plan: PassPlan, size: int) -> Any:
        """Scatter-add pass by pass: pass k adds every target's k-th value (list order per target).

        Values of a pass-major list are summed from contiguous slices; any other list is put in
        pass-major order by one gather first.
        """
        values = self._jnp.asarray(values)
        if plan.order is not None and not plan.is_pass_major:
            values = values.at[..., plan.order].get(mode="promise_in_bounds")
        terms = (values[..., offset : offset + count] for offset, count in zip(plan.offsets, plan.counts))
        return self._accumulate_passes(terms, plan, size)

    def _accumulate_passes(self, terms: Iterator[Any], plan: PassPlan, size: int) -> Any:
        """Sum per-pass terms into the ranked targets' prefixes, then put targets back in order.

        Pass k's terms (``plan.counts[k]`` of them) update a prefix of the accumulator in place;
        targets numbered by rank already (as io-ehh's cells are) need no final gather.
        """
        jnp = self._jnp
        acc = jnp.asarray(next(terms))
        if acc.shape[-1] < size:  # targets without connections
            acc = jnp.concatenate([acc, jnp.zeros((*acc.shape[:-1], size - acc.shape[-1]), dtype=acc.dtype)], axis=-1)
        for term, count in zip(terms, plan.counts[1:]):
            acc = acc.at[..., :count].add(term)
        return acc if plan.in_rank_order else acc.at[..., plan.inverse].get(mode="promise_in_bounds")

    @staticmethod
    def _ranked(x: Any, plan: PassPlan) -> Any:
        """``x`` with its targets in the plan's rank order (itself when they are numbered so)."""
        return x if plan.in_rank_order else x.at[..., plan.ranked].get(mode="promise_in_bounds")

    def _pass_major(self, index: np.ndarray, size: int) -> PassPlan | None:
        """The pass plan of a gather index stored pass-major (None for any other index)."""
        key = (id(index), size)
        hit = self._gather_plans.get(key)
        if hit is None or hit[0] is not index:
            plan = pass_plan(index, size)
            ok = plan.is_pass_major and 0 < len(plan.counts) <= MAX_TABLE_WIDTH
            # a pass-major list's order is the identity: not kept (80 MB at a million cells)
            hit = self._gather_plans[key] = (index, replace(plan, order=None) if ok else None)
        return hit[1]

    def _plan(self, index: np.ndarray, size: int) -> tuple[str, Any]:
        """Host-side layout for a concrete index, computed once per index array per trace."""
        import numpy as np

        key = id(index)
        if key in self._plans and self._plans[key][0] is index:
            return self._plans[key][1]
        index_sorted = bool(np.all(index[1:] >= index[:-1]))
        strategy = self.scatter
        if strategy == "onehot" and size * len(index) > ONEHOT_MAX_ELEMENTS:
            strategy = DEFAULT_SCATTER
        if strategy in ("table", "slots", "passes"):
            width = int(np.bincount(index, minlength=size).max(initial=0))
            padding = strategy != "passes" and size * width > MAX_TABLE_PADDING * max(len(index), size)
            if width > MAX_TABLE_WIDTH or padding:
                strategy = "segment_sum"
        plan: Any
        if strategy == "passes":
            plan = pass_plan(index, size)
        elif strategy == "table":
            plan = neighbour_table(index, size)
        elif strategy == "slots":
            plan = np.ascontiguousarray(neighbour_table(index, size).T)
        elif strategy == "onehot":
            plan = np.zeros((size, len(index)), dtype=np.int8)
            plan[index, np.arange(len(index))] = 1
        else:
            plan = index_sorted
        self._plans[key] = (index, (strategy, plan))
        return strategy, plan

    def sum(self, x: Any, axis: int) -> Any:
        return self._jnp.sum(x, axis=axis)

    def matmul(self, a: Any, b: Any, precision: str | None = None) -> Any:
        return self._jnp.matmul(a, b, precision=_lax_precision(self._jax, precision))

    def conv2d(self, x: Any, w: Any, padding: tuple[int, int], precision: str | None = None) -> Any:
        ph, pw = padding
        return self._jax.lax.conv_general_dilated(
            x,
            w,
            (1, 1),
            ((ph, ph), (pw, pw)),
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
            precision=_lax_precision(self._jax, precision),
        )

    def stack(self, xs: list[Any]) -> Any:
        return self._jnp.stack(xs)

    def zeros_like(self, x: Any) -> Any:
        return self._jnp.zeros_like(x)

    def astype(self, x: Any, dtype: Any) -> Any:
        return self._jnp.asarray(x).astype(dtype)


@dataclass(frozen=True)
class JaxTuning:
    """How the JAX engine lays out and compiles the loop (the defaults are the measured best).

    ``scatter``: lowering of ``scatter_add`` for concrete indices (:data:`SCATTER_STRATEGIES`).
    ``split_rows``: carry a 2-D array state as separate rows through the loop, so XLA sees
    independent per-row updates instead of slicing and re-concatenating one buffer every step.
    ``unroll``: steps unrolled inside a sample window (measured harmful for io-ehh: XLA then
    fuses across steps and recomputes shared terms; 2 was 5x slower). ``chunk_blocks``: sample windows per
    compiled call (None: as many as fit :data:`PROBE_BUFFER_ELEMENTS`, at most 1000).
    ``compiler_options``: XLA options for this compilation (None: the defaults, dropped again
    if this XLA build does not know them).
    """

    scatter: str = DEFAULT_SCATTER
    split_rows: bool = True
    unroll: int = 1
    chunk_blocks: int | None = None
    compiler_options: dict[str, Any] | None = None


class JaxExecutor(Executor):
    """A compiled sample loop plus the device-resident parameters of one build."""

    dtype: np.dtype[Any]

    def __init__(
        self, kernel: Kernel, workload: Workload, dtype: np.dtype, sample_every: int, ops: Any, tuning: JaxTuning
    ) -> None:
        import numpy as np

        self.kernel = kernel
        self.workload = workload
        self.dtype = dtype
        self.sample_every = sample_every
        self.ops = ops
        self.tuning = tuning
        self.stepped = _loop.is_stepped(ops)
        self.counter_names: tuple[str, ...] = tuple(ops.counter_names) if self.stepped else ()
        self.steps_done = 0  # global step index handed to SteppedOps.begin_step
        self.cached_programs = 0  # programs of this build read from the program cache (not traced)
        state0 = _loop.state_to_host(workload.state0, dtype, workload.state0)
        self._probe_shape = tuple(np.shape(kernel.probe(state0)))
        rule = kernel.spike_rule
        self._spike_shape = tuple(np.shape(state0[rule.row])) if rule is not None else (0,)
        per_block = max(1, int(np.prod(self._probe_shape)))
        self.chunk_blocks = tuning.chunk_blocks or max(1, min(1000, PROBE_BUFFER_ELEMENTS // per_block))
        host = kernel_params(workload, lambda a: np.asarray(a, dtype=dtype), lambda a: np.asarray(a))
        # Per-cell float arrays are runtime arguments (device-resident, not folded into the
        # program); scalars and integer connectivity are trace-time constants, so the ops can
        # plan gathers and scatters from the concrete indices.
        self._fparams_host = {k: v for k, v in host.items() if isinstance(v, np.ndarray) and v.dtype == dtype}
        self._static = {k: v for k, v in host.items() if k not in self._fparams_host}
        self._fparams_host = self._runtime_params(self._fparams_host)
        self._state0 = state0
        # The program for calls whose initial state is finite, where the ops trace a cheaper step
        # for it (FiniteStateOps: a saturating profile), and the general one; the one not needed
        # by the first build is compiled when a call needs it.
        self._finite: Any = None
        self._general: Any = None
        with x64_mode(dtype):
            self._fparams = self._put(self._fparams_host, "params")
            if _loop.offers_finite_state(ops):
                self._finite, self.compiler_options = self._compile(state0, finite_state=True)
            if self._finite is None:
                self._general, self.compiler_options = self._compile(state0)
        self._compiled = self._finite if self._finite is not None else self._general
        # whether XLA compiled the loops as single kernels (see prepare_xla_flags)
        self.small_loop_kernels = "xla_cpu_small_call" in self._compiled.as_text()

    # The hooks a sharded build (jax_sharded.ShardedJaxExecutor) replaces: what goes in as runtime
    # parameters, how host arrays go to the devices and come back, how the program is compiled.
    def _runtime_params(self, fparams: dict[str, Any]) -> dict[str, Any]:
        """The runtime parameter arrays of the program (here: the per-cell float arrays)."""
        return fparams

    def _put(self, tree: Any, role: str) -> Any:
        """Host arrays onto the device (``role``: 'state', 'inputs' or 'params')."""
        import jax

        return jax.device_put(tree)

    def _fetch(self, x: Any, role: str, rows: int | None) -> Any:
        """A device array back on the host (``role``: 'state', 'probes', 'spikes' or 'counters'),
        its first ``rows`` rows only (None: all)."""
        import numpy as np

        return np.asarray(x)[:rows]

    def _jit_options(self) -> dict[str, Any]:
        """Extra ``jax.jit`` arguments of the program (shardings, for a sharded build)."""
        return {}

    def _step_body(self, one_step: Any, nblocks: Any) -> Any:
        """The loop body of one step, ``(s, carry, k) -> carry`` (a sharded build wraps it)."""
        return one_step

    def _arg_spec(self, a: Any, role: str, key: str = "") -> Any:
        """The abstract value the program is lowered for, of host array ``a`` in ``role`` (``key``:
        its name among the parameters)."""
        import jax
        import numpy as np

        return jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype)

    # ----------------------------------------------------------------------- tracing
    def _program(self, state: Any, inputs: Any, fparams: Any, step0: Any, t0: Any, nblocks: Any) -> Any:
        """nblocks sample windows of ``sample_every`` steps; outputs padded to chunk_blocks."""
        import jax
        import jax.numpy as jnp

        kernel, ops, se, rule = self.kernel, self.ops, self.sample_every, self.kernel.spike_rule
        params = {**self._static, **fparams}
        inputs = load_inputs(ops, inputs)  # run-time values: arithmetic on them is the device's
        # the shapes of what this program holds (a shard's own, in a sharded build)
        probe_shape = jax.eval_shape(kernel.probe, state).shape
        spike_shape = jax.eval_shape(lambda s: s[rule.row], state).shape if rule is not None else (0,)
        split = self.tuning.split_rows and not isinstance(state, (tuple, list)) and state.ndim >= 2
        ncount = len(self.counter_names)

        def one_step(s: Any, carry: Any, k: Any) -> Any:
            rows, first, counts = carry
            state = jnp.stack(rows) if split else rows
            t = t0 + k * se + s
            if self.stepped:
                ops.begin_step(step0 + t)
                new = ops.store(kernel.step(ops, ops.load(state), params, inputs, t))
                counts = counts + jnp.asarray(ops.end_step(), dtype=jnp.int32).reshape(ncount)
            else:
                new = kernel.step(ops, state, params, inputs, t)
            _loop.check_step_output(new, state)
            if rule is not None:
                up = (state[rule.row] < rule.threshold) & (new[rule.row] >= rule.threshold) & (first < 0)
                first = jnp.where(up, s.astype(first.dtype), first)
            return (tuple(new[i] for i in range(new.shape[0])) if split else new), first, counts

        step = self._step_body(one_step, nblocks)

        def one_block(k: Any, carry: Any) -> Any:
            rows, probes, spikes, counters = carry
            first0 = jnp.full(spike_shape, _loop.NO_SPIKE, dtype=_loop.SPIKE_DTYPE)
            counts0 = jnp.zeros((ncount,), dtype=jnp.int32)
            rows, first, counts = jax.lax.fori_loop(
                0, se, lambda s, c: step(s, c, k), (rows, first0, counts0), unroll=min(self.tuning.unroll, se)
            )
            state = jnp.stack(rows) if split else rows
            probes = probes.at[k].set(jnp.asarray(kernel.probe(state), dtype=probes.dtype))
            return rows, probes, spikes.at[k].set(first), counters.at[k].set(counts)

        c = self.chunk_blocks
        init = (
            tuple(state[i] for i in range(state.shape[0])) if split else state,
            jnp.zeros((c, *probe_shape), dtype=self.dtype),
            jnp.full((c, *spike_shape), _loop.NO_SPIKE, dtype=_loop.SPIKE_DTYPE),
            jnp.zeros((c, ncount), dtype=jnp.int32),
        )
        rows, probes, spikes, counters = jax.lax.fori_loop(0, nblocks, one_block, init)
        return (jnp.stack(rows) if split else rows), probes, spikes, counters

    def _compile(self, state0: Any, *, finite_state: bool = False) -> tuple[Any, dict[str, Any]]:
        """The executable and the compiler options used: from the program cache
        (:mod:`hwbench.core.engines.program_cache`: no tracing) where it holds this program, else
        traced and compiled (and kept there, when compiled afresh). The executable is None where
        ``finite_state`` was asked and the traced step does not keep the state finite."""
        cache = ProgramCache.from_env()
        key = self._program_key(finite_state) if cache is not None else None
        if cache is None or key is None:
            return self._trace_and_compile(state0, finite_state=finite_state)
        found = cache.load(key[0])
        if found is not None:
            self.cached_programs += 1
            return found.compiled, dict(found.notes["compiler_options"])
        lowered = self._lower(state0, finite_state=finite_state, name=unique_name("program"))
        if lowered is None:  # (no finite-state program for this step: nothing to compile)
            cache.store(*key, None, {"compiler_options": {}})
            return None, {}
        with fresh_compile() as fresh:
            compiled, options = self._compile_lowered(lowered)
        if fresh():
            cache.store(*key, compiled, {"compiler_options": options})
        return compiled, options

    def _trace_and_compile(self, state0: Any, *, finite_state: bool = False) -> tuple[Any, dict[str, Any]]:
        """Lower with abstract shapes and compile once; returns (executable, options used).

        ``finite_state``: trace with the ops assuming a finite loaded state (FiniteStateOps); the
        executable is None (nothing compiled) where the traced step does not keep it finite.
        """
        lowered = self._lower(state0, finite_state=finite_state)
        return (None, {}) if lowered is None else self._compile_lowered(lowered)

    def _lower(self, state0: Any, *, finite_state: bool = False, name: str | None = None) -> Any:
        """The program traced and lowered with abstract shapes (None: ``finite_state`` was asked
        and the traced step does not keep the state finite). ``name``: the program's name in the
        lowered text (default ``_program``)."""
        import jax
        import numpy as np

        inputs = _loop.merge_inputs(self.kernel, self.workload, {}, self.dtype)
        i32 = self._arg_spec(np.int32(0), "scalar")
        if finite_state:
            self.ops.assume_finite_state, self.ops.finite_state_kept = True, False
        try:
            program: Any = self._program
            if name is not None:

                def renamed(*args: Any) -> Any:
                    return self._program(*args)

                renamed.__name__ = renamed.__qualname__ = name
                program = renamed
            lowered = jax.jit(program, donate_argnums=(0,), **self._jit_options()).lower(
                jax.tree_util.tree_map(lambda a: self._arg_spec(a, "state"), state0),
                {k: self._arg_spec(v, "inputs") for k, v in inputs.items()},
                {k: self._arg_spec(v, "params", k) for k, v in self._fparams_host.items()},
                i32,
                i32,
                i32,
            )
        finally:
            if finite_state:
                self.ops.assume_finite_state = False
        if finite_state and not self.ops.finite_state_kept:
            return None
        return lowered

    def _compile_lowered(self, lowered: Any) -> tuple[Any, dict[str, Any]]:
        """Compile with the tuning's XLA options, else the defaults (dropping any this XLA build
        does not know); returns (executable, options used)."""
        if self.tuning.compiler_options is not None:
            return lowered.compile(dict(self.tuning.compiler_options) or None), dict(self.tuning.compiler_options)
        return compile_lowered(lowered)

    def _program_key(self, finite_state: bool) -> tuple[str, dict[str, Any]] | None:
        """The program cache's key of this build's program (None: the ops cannot say what they
        trace to, so it is not cached). Everything the trace reads: kernel, workload, ops, dtype,
        sampling, chunking, tuning (:func:`program_key` adds the environment)."""
        ops_key = trace_key_of(self.ops)
        if ops_key is None:
            return None
        return program_key(
            {
                "engine": "jax",
                "kernel": self.kernel.name,
                "kernel_code_sha256": code_fingerprint(self.kernel),
                "kernel_state_sha256": digest(vars(self.kernel)),
                "workload_sha256": workload_digest(self.workload),
                "ops": ops_key,
                "ops_code_sha256": code_fingerprint(self.ops),
                "dtype": str(self.dtype),
                "sample_every": self.sample_every,
                "chunk_blocks": self.chunk_blocks,
                "tuning": asdict(self.tuning),
                "compiler_options": DEFAULT_COMPILER_OPTIONS,
                "finite_state": finite_state,
            }
        )

    # --------------------------------------------------------------------------- run
    def run(self, state: Any, inputs: dict[str, Any], nsamples: int) -> RunOutput:
        import jax
        import numpy as np

        nsamples = _loop.check_nsamples(nsamples)
        host_state = _loop.state_to_host(state, self.dtype, self.workload.state0)
        host_inputs = _loop.merge_inputs(self.kernel, self.workload, inputs, self.dtype)
        probes: list[np.ndarray] = []
        spikes: list[np.ndarray] = []
        counts: list[np.ndarray] = []
        with x64_mode(self.dtype):
            program = self._program_for(host_state)
            dev_state = self._put(host_state, "state")
            dev_inputs = self._put(host_inputs, "inputs")
            del host_state, host_inputs  # (their device copies hold them now)
            done = 0
            while done < nsamples:
                nb = min(self.chunk_blocks, nsamples - done)
                t0 = done * self.sample_every
                step0 = (self.steps_done + t0) % (1 << 31)
                dev_state, p, s, c = program(
                    dev_state, dev_inputs, self._fparams, np.int32(step0), np.int32(t0), np.int32(nb)
                )
                probes.append(self._fetch(p, "probes", nb))
                spikes.append(self._fetch(s, "spikes", nb))
                counts.append(self._fetch(c, "counters", nb))
                done += nb
            out_state = jax.tree_util.tree_map(lambda x: self._fetch(x, "state", None), dev_state)
        self.steps_done += nsamples * self.sample_every
        has_spikes = self.kernel.spike_rule is not None
        probe_arr = np.concatenate(probes) if probes else np.zeros((0, *self._probe_shape), dtype=self.dtype)
        spike_arr = np.concatenate(spikes) if spikes else np.zeros((0, *self._spike_shape), dtype=_loop.SPIKE_DTYPE)
        totals = np.concatenate(counts).astype(np.int64).sum(axis=0) if counts else np.zeros(len(self.counter_names))
        return RunOutput(
            state=out_state,
            probes=probe_arr,
            spikes=spike_arr if has_spikes else None,
            counters=_loop.counters_dict(self.counter_names, totals),
        )

    def _program_for(self, host_state: Any) -> Any:
        """The finite-state program where it exists and the call's state is finite, else the
        general one (compiled at its first use when the build did not need it)."""
        if self._finite is not None and _loop.all_finite(host_state):
            return self._finite
        if self._general is None:
            self._general, _ = self._compile(self._state0)
        return self._general


class JaxEngine(Engine):
    """JAX/XLA, float32 and float64: every sample window of a call in one compiled loop.

    Keyword arguments are the :class:`JaxTuning` knobs (for benchmarks); defaults are measured.
    """

    name = "jax"
    dtypes = ("float32", "float64")
    summary = "JAX/XLA, sample loop compiled ahead of time (lax.fori_loop), float32 and float64"

    def __init__(self, **tuning: Any) -> None:
        self.tuning = JaxTuning(**tuning)
        if self.tuning.scatter not in SCATTER_STRATEGIES:
            raise UsageError(
                f"unknown scatter strategy '{self.tuning.scatter}'; choose from: {', '.join(SCATTER_STRATEGIES)}"
            )

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
        start = time.perf_counter()
        np_dtype = _loop.check_dtype(self.name, dtype, self.dtypes)
        se = _loop.resolve_sample_every(kernel, sample_every)
        prepare_xla_flags()
        with x64_mode(np_dtype):
            ops: Any = JaxOps(np_dtype, scatter=self.tuning.scatter)
            if ops_wrapper is not None:
                ops = ops_wrapper(ops)
            executor = JaxExecutor(kernel, workload, np_dtype, se, ops, self.tuning)
        executor.setup_s = time.perf_counter() - start
        return executor
