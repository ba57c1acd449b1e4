"""The TensorFlow engine: one sample block (``sample_every`` steps) fused into one XLA call.

This is the founding study's own execution path (``tf.function(jit_compile=True)`` with 40
steps unrolled per call, the host looping over calls), kept as the published baseline that the
JAX engine is compared against. The block graph built here is also what the ONNX engine exports
through tf2onnx, so both engines run literally the same computation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hwbench.core.engine import Engine, Executor, OpsWrapper, RunOutput, SteppedOps, kernel_params
from hwbench.core.engines.tf_ops import TfOps, import_tf, tf_available
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.kernel import Kernel, Workload

SUPPORTED_DTYPES = ("float32", "float64")


@dataclass
class BlockGraph:
    """A kernel's sample block as a function of flat, named tensors (what XLA and tf2onnx need).

    Inputs, in order: the state arrays (``state_0``, ...), the kernel inputs (``in_<key>``),
    ``t0`` (the call-local index of the block's first step) and ``g0`` (its global index, for
    stepped ops). ``fn`` returns a dict: ``new_state_<i>``, ``probe``, and where applicable
    ``spikes`` (int16 step offsets, -1 for none) and ``counters`` (int32 sums over the block).
    """

    fn: Callable[..., dict[str, Any]]
    input_names: list[str]
    signature: list[Any]
    state_is_seq: bool
    state_shapes: list[tuple[int, ...]]
    input_keys: list[str]
    input_shapes: dict[str, tuple[int, ...]]
    input_dtypes: dict[str, np.dtype]
    np_dtype: np.dtype
    sample_every: int
    ncells: int
    counter_names: tuple[str, ...]
    has_spikes: bool


def check_dtype(engine: str, dtype: str) -> None:
    if dtype not in SUPPORTED_DTYPES:
        raise UsageError(f"engine '{engine}' does not run {dtype}; it runs: {', '.join(SUPPORTED_DTYPES)}")


def build_block(
    kernel: Kernel,
    workload: Workload,
    *,
    dtype: str,
    sample_every: int | None,
    ops_wrapper: OpsWrapper | None,
) -> BlockGraph:
    """Trace-ready Python function for one block, with parameters embedded as constants.

    Parameters and connectivity become graph constants (created inside the traced function), so
    XLA sees fixed gather/scatter indices and the exported ONNX model is self-contained: nothing
    but state and inputs crosses the host boundary per call.
    """
    tf = import_tf()
    se = int(sample_every if sample_every is not None else kernel.info.sample_every)
    if se < 1:
        raise UsageError(f"sample_every must be >= 1, got {se}")
    np_dtype = np.dtype(dtype)
    raw = TfOps(dtype)
    ops: Any = ops_wrapper(raw) if ops_wrapper is not None else raw
    stepped = isinstance(ops, SteppedOps)
    counter_names = tuple(ops.counter_names) if stepped else ()

    state0 = workload.state0
    state_is_seq = isinstance(state0, (tuple, list))
    states = [np.asarray(s) for s in (state0 if state_is_seq else [state0])]
    inputs0 = {k: np.asarray(v) for k, v in kernel.default_inputs(workload).items()}
    input_keys = sorted(inputs0)
    input_dtypes = {k: (v.dtype if v.dtype.kind in "iub" else np_dtype) for k, v in inputs0.items()}
    rule = kernel.spike_rule

    signature = [tf.TensorSpec(s.shape, dtype, name=f"state_{i}") for i, s in enumerate(states)]
    signature += [tf.TensorSpec(inputs0[k].shape, input_dtypes[k], name=f"in_{k}") for k in input_keys]
    signature += [tf.TensorSpec([], tf.int32, name="t0"), tf.TensorSpec([], tf.int32, name="g0")]
    nstate = len(states)

    def to_float(a: np.ndarray) -> Any:
        return tf.constant(np.asarray(a, dtype=np_dtype))

    def to_int(a: np.ndarray) -> Any:
        return tf.constant(np.asarray(a, dtype=np.int32))

    def block(*flat: Any) -> dict[str, Any]:
        state: Any = tuple(flat[:nstate]) if state_is_seq else flat[0]
        inputs = dict(zip(input_keys, flat[nstate : nstate + len(input_keys)]))
        t0, g0 = flat[-2], flat[-1]
        params = kernel_params(workload, to_float, to_int)
        first = counts = None
        if rule is not None:
            first = tf.fill(tf.shape(state[rule.row]), tf.constant(-1, tf.int32))
        if stepped:
            counts = tf.zeros([len(counter_names)], tf.int32)
        for i in range(se):  # unrolled: the published protocol fuses the block into one graph
            old = state
            if stepped:
                ops.begin_step(g0 + i)
                state = ops.load(state)
            state = kernel.step(ops, state, params, inputs, t0 + i)
            if stepped:
                state = ops.store(state)
                counts = counts + tf.cast(ops.end_step(), tf.int32)
            state = tuple(state) if state_is_seq else state
            if rule is not None:
                up = tf.logical_and(old[rule.row] < rule.threshold, state[rule.row] >= rule.threshold)
                first = tf.where(tf.logical_and(first < 0, up), tf.constant(i, tf.int32), first)
        out = {f"new_state_{i}": s for i, s in enumerate(state if state_is_seq else [state])}
        out["probe"] = tf.identity(kernel.probe(state))
        if first is not None:
            out["spikes"] = tf.cast(first, tf.int16)
        if counts is not None:
            out["counters"] = counts
        return out

    return BlockGraph(
        fn=block,
        input_names=[s.name for s in signature],
        signature=signature,
        state_is_seq=state_is_seq,
        state_shapes=[s.shape for s in states],
        input_keys=input_keys,
        input_shapes={k: v.shape for k, v in inputs0.items()},
        input_dtypes=input_dtypes,
        np_dtype=np_dtype,
        sample_every=se,
        ncells=int(workload.size),
        counter_names=counter_names,
        has_spikes=rule is not None,
    )


def host_state(block: BlockGraph, state: Any) -> list[np.ndarray]:
    """The caller's state as contiguous arrays of the working dtype, checked against the build."""
    parts = list(state) if block.state_is_seq else [state]
    if len(parts) != len(block.state_shapes):
        raise UsageError(f"state has {len(parts)} arrays; the executor was built for {len(block.state_shapes)}")
    out = []
    for i, (part, shape) in enumerate(zip(parts, block.state_shapes)):
        arr = np.ascontiguousarray(part, dtype=block.np_dtype)
        if arr.shape != shape:
            raise UsageError(f"state array {i} has shape {arr.shape}; the executor was built for {shape}")
        out.append(arr)
    return out


def host_inputs(block: BlockGraph, inputs: dict[str, Any]) -> dict[str, np.ndarray]:
    """Inputs broadcast to the shapes compiled in (scalars allowed), in the compiled dtypes."""
    extra = sorted(set(inputs) - set(block.input_keys))
    if extra:
        allowed = ", ".join(block.input_keys) or "none"
        raise UsageError(f"unknown kernel input(s) {', '.join(extra)}; this kernel takes: {allowed}")
    missing = sorted(set(block.input_keys) - set(inputs))
    if missing:
        raise UsageError(f"missing kernel input(s): {', '.join(missing)}")
    out = {}
    for key in block.input_keys:
        try:
            value = np.broadcast_to(np.asarray(inputs[key], dtype=block.input_dtypes[key]), block.input_shapes[key])
        except ValueError:
            raise UsageError(
                f"input '{key}' has shape {np.shape(inputs[key])}; expected {block.input_shapes[key]} or a scalar"
            ) from None
        out[key] = np.ascontiguousarray(value)
    return out


def pack_state(block: BlockGraph, parts: list[np.ndarray]) -> Any:
    return tuple(parts) if block.state_is_seq else parts[0]


class TfExecutor(Executor):
    """Calls the XLA-compiled block ``nsamples`` times from the host, as the study did."""

    def __init__(self, block: BlockGraph, fn: Any, tf: Any) -> None:
        self.block = block
        self._fn = fn
        self._tf = tf
        self.global_step = 0  # steps run so far by this executor (seeds stepped ops)

    def run(self, state: Any, inputs: dict[str, Any], nsamples: int) -> RunOutput:
        tf, b = self._tf, self.block
        nsamples = int(nsamples)
        if nsamples < 0:
            raise UsageError(f"nsamples must be >= 0, got {nsamples}")
        cur = [tf.constant(s) for s in host_state(b, state)]
        ins = [tf.constant(v) for v in host_inputs(b, inputs).values()]
        probes, spikes, counts = [], [], []
        for k in range(nsamples):
            t0 = tf.constant(k * b.sample_every, tf.int32)
            g0 = tf.constant(self.global_step + k * b.sample_every, tf.int32)
            out = self._fn(*cur, *ins, t0, g0)
            cur = [out[f"new_state_{i}"] for i in range(len(cur))]
            probes.append(out["probe"])
            if b.has_spikes:
                spikes.append(out["spikes"])
            if b.counter_names:
                counts.append(out["counters"])
        self.global_step += nsamples * b.sample_every
        return RunOutput(
            state=pack_state(b, [s.numpy() for s in cur]),
            probes=np.stack([p.numpy() for p in probes]) if probes else np.zeros((0, b.ncells), b.np_dtype),
            spikes=(np.stack([s.numpy() for s in spikes]) if spikes else np.zeros((0, b.ncells), np.int16))
            if b.has_spikes
            else None,
            counters=sum_counters(b.counter_names, [c.numpy() for c in counts]),
        )


def sum_counters(names: tuple[str, ...], per_block: list[np.ndarray]) -> dict[str, int]:
    if not names:
        return {}
    total = np.sum(np.asarray(per_block, dtype=np.int64).reshape(-1, len(names)), axis=0)
    return {name: int(v) for name, v in zip(names, total)}


class TensorFlowEngine(Engine):
    """TensorFlow with XLA (``jit_compile=True``), one sample block per compiled call."""

    name = "tensorflow"
    dtypes = SUPPORTED_DTYPES
    summary = "TensorFlow XLA, sample block fused per call (the founding study's path)"

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
        check_dtype(self.name, dtype)
        ok, reason = self.available()
        if not ok:
            raise UnavailableError(f"engine '{self.name}' is not available here: {reason}")
        tf = import_tf()  # importing the library is not part of setup
        start = time.perf_counter()
        block = build_block(kernel, workload, dtype=dtype, sample_every=sample_every, ops_wrapper=ops_wrapper)
        fn = tf.function(block.fn, input_signature=block.signature, jit_compile=True, reduce_retracing=True)
        executor = TfExecutor(block, fn, tf)
        # Compile now (XLA compiles on the first call) so that setup_s holds all of it.
        executor.run(workload.state0, kernel.default_inputs(workload), 1)
        executor.global_step = 0
        executor.setup_s = time.perf_counter() - start
        return executor
