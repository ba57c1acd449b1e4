"""The TensorFlow engine: one sample block (``sample_every`` steps) fused into one XLA call.

This is the founding study's own execution path (``tf.function(jit_compile=True)`` running 40
steps per call, the host looping over calls and reading the probe after each), kept as the
published baseline that the JAX engine is compared against.

By default the block's steps are unrolled in the traced graph, exactly as the study wrote it
(``for _ in range(40)`` inside the jit-compiled function): that is the published baseline. XLA's
CPU compile time grows steeply with an unrolled io-ehh block (minutes on 2 cores; it is reported
as setup), and the unrolled program also ran slower than the same steps in an XLA ``While``
loop, which ``TensorFlowEngine(unroll=False)`` compiles instead (results are bit-identical).
Either way one call advances one sample block and the host loops over blocks.

:class:`KernelGraph` (one kernel step as TensorFlow ops, plus spike and counter bookkeeping) is
shared with the ONNX engine, so both engines run the same computation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from hwbench.core.engine import Engine, Executor, OpsWrapper, RunOutput, SteppedOps, kernel_params, load_inputs
from hwbench.core.engines import _loop
from hwbench.core.engines.tf_ops import TfOps, import_tf, tf_available
from hwbench.core.kernel import Kernel, Workload

SUPPORTED_DTYPES = ("float32", "float64")


@dataclass
class KernelGraph:
    """One kernel step on TensorFlow tensors, with what the block around it needs.

    The state travels as a list of arrays (``parts``: one for a single-array state, one per
    element of a tuple state). ``first`` holds, per cell, the step offset of the first upward
    spike-threshold crossing in the current block (-1: none yet); ``counts`` the summed counters
    of stepped ops. Either is ``None`` when the kernel has no spike rule / the ops are not stepped.
    """

    kernel: Kernel
    workload: Workload
    ops: Any
    stepped: bool
    dtype: str
    np_dtype: np.dtype
    sample_every: int
    state_is_seq: bool
    state_shapes: list[tuple[int, ...]]
    input_keys: list[str]
    input_shapes: dict[str, tuple[int, ...]]
    ncells: int
    counter_names: tuple[str, ...]

    @property
    def has_spikes(self) -> bool:
        return self.kernel.spike_rule is not None

    # signatures ---------------------------------------------------------------------------------
    def data_specs(self) -> list[Any]:
        """TensorSpecs of the state arrays then the kernel inputs (named ``state_i``, ``in_<key>``)."""
        tf = import_tf()
        specs = [tf.TensorSpec(s, self.dtype, name=f"state_{i}") for i, s in enumerate(self.state_shapes)]
        specs += [tf.TensorSpec(self.input_shapes[k], self.dtype, name=f"in_{k}") for k in self.input_keys]
        return specs

    def split(self, flat: tuple[Any, ...]) -> tuple[list[Any], dict[str, Any], list[Any]]:
        """Flat tensors -> (state parts, inputs dict, the rest)."""
        ns, ni = len(self.state_shapes), len(self.input_keys)
        return list(flat[:ns]), dict(zip(self.input_keys, flat[ns : ns + ni])), list(flat[ns + ni :])

    # pieces of the traced computation -----------------------------------------------------------
    def params(self) -> dict[str, Any]:
        """Parameters and connectivity as graph constants (call inside the traced function).

        Constants, not inputs: XLA sees fixed gather/scatter indices, and the ONNX model is
        self-contained (ONNX Runtime folds the index arithmetic of the scatter into constants).
        """
        import numpy as np

        tf = import_tf()
        return kernel_params(
            self.workload,
            lambda a: tf.constant(np.asarray(a, dtype=self.np_dtype)),
            lambda a: tf.constant(np.asarray(a, dtype=np.int32)),
        )

    def initial_carry(self) -> tuple[Any, Any]:
        tf = import_tf()
        first = tf.fill([self.ncells], tf.constant(_loop.NO_SPIKE, tf.int32)) if self.has_spikes else None
        counts = tf.zeros([len(self.counter_names)], tf.int32) if self.stepped else None
        return first, counts

    def step(
        self,
        parts: list[Any],
        inputs: dict[str, Any],
        params: dict[str, Any],
        t0: Any,
        g0: Any,
        i: Any,
        first: Any,
        counts: Any,
    ) -> tuple[list[Any], Any, Any]:
        """Step ``i`` of the block (``t0 + i`` in the call, ``g0 + i`` globally)."""
        tf = import_tf()
        ops, kernel = self.ops, self.kernel
        old = parts
        state: Any = tuple(parts) if self.state_is_seq else parts[0]
        if self.stepped:
            ops.begin_step(g0 + i)
            state = ops.load(state)
        state = kernel.step(ops, state, params, load_inputs(ops, inputs), t0 + i)
        if self.stepped:
            state = ops.store(state)
            counts = counts + tf.cast(ops.end_step(), tf.int32)
        new = list(state) if self.state_is_seq else [state]
        rule = kernel.spike_rule
        if rule is not None:
            row_old, row_new = self._row(old, rule.row), self._row(new, rule.row)
            up = tf.logical_and(row_old < rule.threshold, row_new >= rule.threshold)
            first = tf.where(tf.logical_and(first < 0, up), i, first)
        return new, first, counts

    def _row(self, parts: list[Any], row: int) -> Any:
        return parts[row] if self.state_is_seq else parts[0][row]

    def probe(self, parts: list[Any]) -> Any:
        tf = import_tf()
        return tf.identity(self.kernel.probe(tuple(parts) if self.state_is_seq else parts[0]))


def kernel_graph(
    kernel: Kernel,
    workload: Workload,
    *,
    dtype: str,
    sample_every: int | None,
    ops_wrapper: OpsWrapper | None,
) -> KernelGraph:
    """Describe a kernel/workload for tracing: shapes from ``state0`` and ``default_inputs``."""
    import numpy as np

    se = _loop.resolve_sample_every(kernel, sample_every)
    np_dtype = np.dtype(dtype)
    raw = TfOps(dtype)
    ops: Any = ops_wrapper(raw) if ops_wrapper is not None else raw
    stepped = isinstance(ops, SteppedOps)
    state0 = workload.state0
    state_is_seq = isinstance(state0, (tuple, list))
    states = [np.asarray(s) for s in (state0 if state_is_seq else [state0])]
    inputs0 = {k: np.asarray(v) for k, v in kernel.default_inputs(workload).items()}
    return KernelGraph(
        kernel=kernel,
        workload=workload,
        ops=ops,
        stepped=stepped,
        dtype=dtype,
        np_dtype=np_dtype,
        sample_every=se,
        state_is_seq=state_is_seq,
        state_shapes=[s.shape for s in states],
        input_keys=sorted(inputs0),
        input_shapes={k: v.shape for k, v in inputs0.items()},
        ncells=int(workload.size),
        counter_names=tuple(ops.counter_names) if stepped else (),
    )


# host-side conversions shared by both engines (checks come from _loop, as in every engine) -----
def host_parts(kg: KernelGraph, state: Any) -> list[np.ndarray]:
    """The caller's state as a list of contiguous working-dtype arrays, checked against state0."""
    host = _loop.state_to_host(state, kg.np_dtype, kg.workload.state0)
    return list(host) if kg.state_is_seq else [host]


def host_inputs(kg: KernelGraph, inputs: dict[str, Any] | None) -> list[np.ndarray]:
    """The kernel inputs (defaults where not given), in the graph's input order."""
    merged = _loop.merge_inputs(kg.kernel, kg.workload, inputs, kg.np_dtype)
    return [merged[k] for k in kg.input_keys]


def pack_state(kg: KernelGraph, parts: list[np.ndarray]) -> Any:
    return tuple(parts) if kg.state_is_seq else parts[0]


def sum_blocks(kg: KernelGraph, per_block: list[np.ndarray]) -> np.ndarray:
    """Counter totals over the blocks of a call (int64: a long run overflows int32 counts)."""
    import numpy as np

    width = len(kg.counter_names)
    totals: np.ndarray = np.asarray(per_block, dtype=np.int64).reshape(len(per_block), width).sum(axis=0)
    return totals


def global_step(done: int, offset: int) -> int:
    """The global step index as the int32 the graph takes (wraps like the JAX engine's)."""
    return (done + offset) % (1 << 31)


# the TensorFlow block and executor --------------------------------------------------------------
def tf_block(kg: KernelGraph, *, unroll: bool) -> Any:
    """The block as a Python function of flat tensors (``*data, t0, g0``) returning a dict."""
    tf = import_tf()
    se = kg.sample_every

    def block(*flat: Any) -> dict[str, Any]:
        parts, inputs, (t0, g0) = kg.split(flat)
        params = kg.params()
        first, counts = kg.initial_carry()
        if unroll:
            for i in range(se):
                parts, first, counts = kg.step(parts, inputs, params, t0, g0, tf.constant(i), first, counts)
        else:
            has_first, has_counts = first is not None, counts is not None
            extras = [x for x in (first, counts) if x is not None]

            def body(i: Any, parts: list[Any], *extras: Any) -> tuple[Any, ...]:
                it = iter(extras)
                f = next(it) if has_first else None
                c = next(it) if has_counts else None
                parts, f, c = kg.step(parts, inputs, params, t0, g0, i, f, c)
                return (i + 1, parts, *[x for x in (f, c) if x is not None])

            out = tf.while_loop(lambda i, *_: i < se, body, (tf.constant(0), parts, *extras), maximum_iterations=se)
            parts, rest = out[1], list(out[2:])
            first = rest.pop(0) if has_first else None
            counts = rest.pop(0) if has_counts else None
        result = {f"new_state_{j}": p for j, p in enumerate(parts)}
        result["probe"] = kg.probe(parts)
        if first is not None:
            result["spikes"] = tf.cast(first, tf.as_dtype(_loop.SPIKE_DTYPE))
        if counts is not None:
            result["counters"] = counts
        return result

    return block


class TfExecutor(Executor):
    """Calls the XLA-compiled block ``nsamples`` times from the host, as the study did."""

    def __init__(self, kg: KernelGraph, fn: Any) -> None:
        self.graph = kg
        self._fn = fn
        self.global_step = 0  # steps this executor has run (the stepped ops' global step index)

    def run(self, state: Any, inputs: dict[str, Any], nsamples: int) -> RunOutput:
        import numpy as np

        tf, kg = import_tf(), self.graph
        nsamples = _loop.check_nsamples(nsamples)
        se = kg.sample_every
        cur = [tf.constant(s) for s in host_parts(kg, state)]
        ins = [tf.constant(v) for v in host_inputs(kg, inputs)]
        probes, spikes, counts = [], [], []
        for k in range(nsamples):
            t0 = tf.constant(k * se, tf.int32)
            out = self._fn(*cur, *ins, t0, tf.constant(global_step(self.global_step, k * se), tf.int32))
            cur = [out[f"new_state_{j}"] for j in range(len(cur))]
            probes.append(out["probe"])
            if kg.has_spikes:
                spikes.append(out["spikes"])
            if kg.stepped:
                counts.append(out["counters"])
        self.global_step += nsamples * se
        empty = (0, kg.ncells)
        return RunOutput(
            state=pack_state(kg, [s.numpy() for s in cur]),
            probes=np.stack([p.numpy() for p in probes]) if probes else np.zeros(empty, kg.np_dtype),
            spikes=(np.stack([s.numpy() for s in spikes]) if spikes else np.zeros(empty, _loop.SPIKE_DTYPE))
            if kg.has_spikes
            else None,
            counters=_loop.counters_dict(kg.counter_names, sum_blocks(kg, [c.numpy() for c in counts])),
        )


class TensorFlowEngine(Engine):
    """TensorFlow with XLA (``jit_compile=True``), one sample block per compiled call."""

    name = "tensorflow"
    dtypes = SUPPORTED_DTYPES
    summary = "TensorFlow XLA, one sample block (40 steps for io-ehh) per compiled call"

    def __init__(self, *, unroll: bool = True) -> None:
        """``unroll``: the study's unrolled block (default) or an XLA ``While`` loop over its steps."""
        self.unroll = unroll

    def available(self) -> tuple[bool, str]:
        return tf_available()

    def build(
        self,
        kernel: Kernel,
        workload: Workload,
        *,
        dtype: str = "float32",
        sample_every: int | None = None,
        ops_wrapper: OpsWrapper | None = None,
    ) -> Executor:
        _loop.check_dtype(self.name, dtype, self.dtypes)
        tf = import_tf()  # importing the library is not part of setup
        start = time.perf_counter()
        kg = kernel_graph(kernel, workload, dtype=dtype, sample_every=sample_every, ops_wrapper=ops_wrapper)
        signature = [*kg.data_specs(), tf.TensorSpec([], tf.int32, name="t0"), tf.TensorSpec([], tf.int32, name="g0")]
        # autograph off: kernels have no data-dependent Python control flow (the Kernel contract),
        # and converting them costs more than tracing them.
        fn = tf.function(tf_block(kg, unroll=self.unroll), input_signature=signature, jit_compile=True, autograph=False)
        executor = TfExecutor(kg, fn)
        # XLA compiles on the first call: make it here, so that setup_s holds all of it.
        executor.run(workload.state0, kernel.default_inputs(workload), 1)
        executor.global_step = 0
        executor.setup_s = time.perf_counter() - start
        return executor
