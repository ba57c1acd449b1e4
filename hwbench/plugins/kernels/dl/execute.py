"""Run a DL primitive once on an ops namespace: numpy (a plain loop) or JAX (one jitted program).

The one place that turns (kernel, workload, ops) into a callable, so bench and audit run the
primitive the same way. Stepped (emulating) ops get ``begin_step / load / store / end_step``
around every step exactly as the engines' executors do it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hwbench.core.engine import kernel_params
from hwbench.core.engines._loop import is_stepped
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.kernel import Workload
from hwbench.plugins.kernels.dl.kernels import DLKernel

PRECISION_DTYPES = {"fp32": "float32", "tf32": "float32", "bf16": "bfloat16", "fp16": "float16", "fp64": "float64"}


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        bf16: np.dtype = np.dtype(ml_dtypes.bfloat16)  # ml_dtypes' scalar types are typed as Any
        return bf16
    return np.dtype(name)


def _one_step(kernel: DLKernel, ops: Any, state: Any, params: dict[str, Any], t: Any) -> Any:
    if is_stepped(ops):
        ops.begin_step(t)
        new = ops.store(kernel.step(ops, ops.load(state), params, {}, t))
        ops.end_step()
        return new
    return kernel.step(ops, state, params, {}, t)


def _host_state(workload: Workload, dtype: np.dtype) -> Any:
    s = workload.state0
    return tuple(np.asarray(x, dtype) for x in s) if isinstance(s, tuple) else np.asarray(s, dtype)


def numpy_runner(kernel: DLKernel, workload: Workload, ops: Any) -> Callable[[], Any]:
    """A callable running the primitive with numpy ``ops`` (carrier dtype ``ops.dtype``)."""
    dtype = np.dtype(ops.dtype)
    params = kernel_params(workload, lambda a: np.asarray(a, dtype=dtype), np.asarray)
    steps = kernel.steps(workload)

    def run() -> Any:
        state = _host_state(workload, dtype)
        with np.errstate(all="ignore"):
            for t in range(steps):
                state = _one_step(kernel, ops, state, params, t)
        return state

    return run


@dataclass
class JaxProgram:
    """A jitted primitive and its device-resident arguments; ``__call__`` returns host arrays."""

    fn: Any
    arrays: dict[str, Any]
    state: Any

    def __call__(self) -> Any:
        import jax

        out = self.fn(self.arrays, self.state)
        return jax.tree_util.tree_map(np.asarray, jax.block_until_ready(out))


def jax_runner(kernel: DLKernel, workload: Workload, ops: Any, dtype_name: str) -> JaxProgram:
    """The primitive as one jitted program: arrays are arguments (not baked-in constants),
    scalar parameters (padding) static; the LSTM's steps a ``fori_loop``."""
    import jax
    import jax.numpy as jnp

    dtype = np_dtype(dtype_name)
    params = kernel_params(workload, lambda a: np.asarray(a, dtype=dtype), np.asarray)
    scalars = {k: v for k, v in params.items() if np.ndim(v) == 0}
    arrays = {k: jnp.asarray(v) for k, v in params.items() if np.ndim(v) > 0}
    steps = kernel.steps(workload)

    def program(arrs: dict[str, Any], state: Any) -> Any:
        p = {**scalars, **arrs}
        if steps == 1:
            return _one_step(kernel, ops, state, p, 0)
        return jax.lax.fori_loop(0, steps, lambda t, s: tuple(_one_step(kernel, ops, s, p, t)), state)

    state = jax.tree_util.tree_map(jnp.asarray, _host_state(workload, dtype))
    return JaxProgram(jax.jit(program), arrays, state)


@dataclass
class TfProgram:
    """A ``tf.function`` of the primitive (TensorFlow's graph executor, oneDNN / Eigen kernels)."""

    fn: Any
    arrays: dict[str, Any]
    state: Any

    def __call__(self) -> Any:
        out = self.fn(self.arrays, self.state)
        return tuple(np.asarray(o) for o in out) if isinstance(out, (tuple, list)) else np.asarray(out)


def tf_runner(kernel: DLKernel, workload: Workload, ops: Any, dtype_name: str) -> TfProgram:
    """The primitive as one ``tf.function`` (the LSTM's steps unrolled in the graph)."""
    from hwbench.core.engines.tf_ops import import_tf

    tf = import_tf()
    dtype = np_dtype(dtype_name)
    params = kernel_params(workload, lambda a: np.asarray(a, dtype=dtype), np.asarray)
    scalars = {k: v for k, v in params.items() if np.ndim(v) == 0}
    arrays = {k: tf.constant(v) for k, v in params.items() if np.ndim(v) > 0}
    steps = kernel.steps(workload)

    def program(arrs: dict[str, Any], state: Any) -> Any:
        p = {**scalars, **arrs}
        for t in range(steps):
            state = _one_step(kernel, ops, state, p, t)
        return state

    host = _host_state(workload, dtype)
    state = tuple(tf.constant(x) for x in host) if isinstance(host, tuple) else tf.constant(host)
    # tf.function called, not used as a decorator: TensorFlow is untyped, so its result is Any
    return TfProgram(tf.function(program), arrays, state)


ENGINES = ("jax", "numpy", "tensorflow")


def raw_ops(engine: str, dtype_name: str) -> Any:
    """The engine's plain ops namespace for a dtype (numpy: float32/float64 only)."""
    if engine == "numpy":
        if dtype_name not in ("float32", "float64"):
            raise UsageError(f"engine 'numpy' has no {dtype_name} matrix products (numpy BLAS: float32, float64)")
        from hwbench.core.engines.numpy_engine import NumpyOps

        return NumpyOps(np.dtype(dtype_name))
    if engine == "jax":
        from hwbench.core.engines.jax_engine import JaxOps

        return JaxOps(np_dtype(dtype_name))
    if engine == "tensorflow":
        from hwbench.core.engines.tf_ops import TfOps, tf_available

        ok, why = tf_available()
        if not ok:
            raise UnavailableError(why)
        return TfOps(dtype_name)
    raise UsageError(f"DL primitives run on engines {', '.join(ENGINES)}, not '{engine}'")


def runner(kernel: DLKernel, workload: Workload, engine: str, dtype_name: str, wrapper: Any = None) -> Any:
    """A callable computing the primitive's output on ``engine`` (ops optionally wrapped)."""
    ops = raw_ops(engine, dtype_name)
    if wrapper is not None:
        ops = wrapper(ops)
    if engine == "numpy":
        return numpy_runner(kernel, workload, ops)
    if engine == "tensorflow":
        return tf_runner(kernel, workload, ops, dtype_name)
    return jax_runner(kernel, workload, ops, dtype_name)
