"""The numpy engine: the readable float64 gold reference (and a float32 run) of every kernel.

A Python loop over steps of vectorised numpy. It is meant to be obviously right rather than
fast: every other engine and every emulated device is judged against its float64 results.
Its float32 mode keeps every intermediate in float32, including the scatter-add (``np.bincount``
would accumulate in float64 and make float32 look more accurate than it is).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from hwbench.core.engine import Engine, Executor, OpsWrapper, RunOutput, kernel_params, load_inputs
from hwbench.core.engines import _loop
from hwbench.core.kernel import Kernel, Workload


def conv2d_im2col(
    x: np.ndarray, w: np.ndarray, padding: tuple[int, int], matmul: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> np.ndarray:
    """Stride-1 NHWC x HWIO cross-correlation as ``patches @ w.reshape(fh*fw*c, kf)``.

    The patch matrix is a copy of input values (no arithmetic), so the result is one matrix
    product with K = fh*fw*c: the error analysis of GEMM applies unchanged.
    """
    import numpy as np

    ph, pw = padding
    fh, fw, c, kf = w.shape
    if ph or pw:
        x = np.pad(x, ((0, 0), (ph, ph), (pw, pw), (0, 0)))
    b, h, wd, _ = x.shape
    ho, wo = h - fh + 1, wd - fw + 1
    win = np.lib.stride_tricks.sliding_window_view(x, (fh, fw), axis=(1, 2))  # b, ho, wo, c, fh, fw
    patches = np.ascontiguousarray(win.transpose(0, 1, 2, 4, 5, 3)).reshape(b * ho * wo, fh * fw * c)
    return matmul(patches, w.reshape(fh * fw * c, kf)).reshape(b, ho, wo, kf)


def _bind_numpy() -> None:
    """Bind this module's ``np`` to numpy, once, when the first :class:`NumpyOps` is built.

    The module is imported by every command that lists the engines (``hwbench devices`` imports no
    numpy), but ``NumpyOps``' methods run once per operation of every step: a function-level
    ``import numpy`` there cost about 0.1 us per call, 7-15 % of an operation on 729 elements.
    Methods run only on an instance, so the global is bound before any of them reads it.
    """
    global np
    import numpy as np


class NumpyOps:
    """The ops namespace (:class:`hwbench.core.ops.Ops`) on numpy arrays of one float dtype."""

    name = "numpy"
    xp_name = "numpy"

    def __init__(self, dtype: Any = "float64") -> None:
        _bind_numpy()
        self.dtype = np.dtype(dtype)

    def asarray(self, x: Any) -> np.ndarray:
        arr = np.asarray(x)
        return arr.astype(self.dtype) if arr.dtype.kind in "fc" or arr.dtype.kind == "O" else arr

    def exp(self, x: Any) -> Any:
        return np.exp(x)

    def log(self, x: Any) -> Any:
        return np.log(x)

    def sqrt(self, x: Any) -> Any:
        return np.sqrt(x)

    def power(self, x: Any, y: Any) -> Any:
        return np.power(x, y)

    def abs(self, x: Any) -> Any:
        return np.abs(x)

    def minimum(self, x: Any, y: Any) -> Any:
        return np.minimum(x, y)

    def maximum(self, x: Any, y: Any) -> Any:
        return np.maximum(x, y)

    def where(self, cond: Any, x: Any, y: Any) -> Any:
        return np.where(cond, x, y)

    def greater(self, x: Any, y: Any) -> Any:
        return np.greater(x, y)

    def less(self, x: Any, y: Any) -> Any:
        return np.less(x, y)

    def gather(self, x: Any, index: Any) -> Any:
        return np.take(x, index, axis=-1)

    def scatter_add(self, values: Any, index: Any, size: int) -> Any:
        """Sequential in-order accumulation in the values' own dtype.

        float64: ``np.bincount`` (it accumulates in float64, in index order — the same sums as a
        sequential loop). Other dtypes: ``np.add.at``, which stays in the array's dtype.
        """
        values = np.asarray(values)
        if values.dtype == np.float64:
            return np.bincount(index, weights=values, minlength=size)
        out = np.zeros(size, dtype=values.dtype)
        np.add.at(out, index, values)
        return out

    def sum(self, x: Any, axis: int) -> Any:
        return np.sum(x, axis=axis)

    def matmul(self, a: Any, b: Any, precision: str | None = None) -> Any:
        return np.matmul(a, b)

    def conv2d(self, x: Any, w: Any, padding: tuple[int, int], precision: str | None = None) -> Any:
        """im2col + one BLAS product (exact data movement, then a plain matrix product)."""
        return conv2d_im2col(np.asarray(x), np.asarray(w), padding, np.matmul)

    def stack(self, xs: list[Any]) -> Any:
        return np.stack(xs)

    def zeros_like(self, x: Any) -> Any:
        return np.zeros_like(x)

    def astype(self, x: Any, dtype: Any) -> Any:
        return np.asarray(x).astype(dtype)


class NumpyExecutor(Executor):
    """Runs ``kernel.step`` in a Python loop; state and outputs are host numpy arrays throughout."""

    dtype: np.dtype[Any]

    def __init__(self, kernel: Kernel, workload: Workload, dtype: np.dtype, sample_every: int, ops: Any) -> None:
        import numpy as np

        self.kernel = kernel
        self.workload = workload
        self.dtype = dtype
        self.sample_every = sample_every
        self.ops = ops
        self.stepped = _loop.is_stepped(ops)
        self.params = kernel_params(workload, lambda a: np.asarray(a, dtype=dtype), lambda a: np.asarray(a))
        self.steps_done = 0  # global step index handed to SteppedOps.begin_step

    def run(self, state: Any, inputs: dict[str, Any], nsamples: int) -> RunOutput:
        import numpy as np

        nsamples = _loop.check_nsamples(nsamples)
        state = _loop.state_to_host(state, self.dtype, self.workload.state0)
        inputs = load_inputs(self.ops, _loop.merge_inputs(self.kernel, self.workload, inputs, self.dtype))
        rule = self.kernel.spike_rule
        se = self.sample_every
        probes: list[np.ndarray] = []
        spikes = np.full((nsamples, self.workload.size), _loop.NO_SPIKE, dtype=_loop.SPIKE_DTYPE) if rule else None
        names: tuple[str, ...] = tuple(self.ops.counter_names) if self.stepped else ()
        totals = np.zeros(len(names), dtype=np.int64)
        # NaN/inf are results here (the audit looks for them), not errors worth a warning per step.
        with np.errstate(all="ignore"):
            for k in range(nsamples):
                for s in range(se):
                    new = self._step(state, inputs, k * se + s)
                    if self.stepped:
                        totals += np.asarray(self.ops.end_step(), dtype=np.int64)
                    if rule is not None and spikes is not None:
                        up = (state[rule.row] < rule.threshold) & (new[rule.row] >= rule.threshold)
                        spikes[k, up & (spikes[k] == _loop.NO_SPIKE)] = s
                    state = new
                probes.append(np.array(self.kernel.probe(state), dtype=self.dtype))
        self.steps_done += nsamples * se
        probe_arr = np.stack(probes) if probes else np.zeros((0, self.workload.size), dtype=self.dtype)
        return RunOutput(state=state, probes=probe_arr, spikes=spikes, counters=_loop.counters_dict(names, totals))

    def _step(self, state: Any, inputs: dict[str, np.ndarray], t: int) -> Any:
        if self.stepped:
            self.ops.begin_step(self.steps_done + t)
            new = self.ops.store(self.kernel.step(self.ops, self.ops.load(state), self.params, inputs, t))
        else:
            new = self.kernel.step(self.ops, state, self.params, inputs, t)
        _loop.check_step_output(new, state)
        return new


class NumpyEngine(Engine):
    """float64 gold reference and float32, in plain vectorised numpy."""

    name = "numpy"
    dtypes = ("float32", "float64")
    summary = "numpy, a Python loop over vectorised steps: the float64 gold reference"

    def available(self) -> tuple[bool, str]:
        import numpy as np

        return True, f"numpy {np.__version__} (core dependency)"

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
        ops: Any = NumpyOps(np_dtype)
        if ops_wrapper is not None:
            ops = ops_wrapper(ops)
        executor = NumpyExecutor(kernel, workload, np_dtype, se, ops)
        executor.setup_s = time.perf_counter() - start
        return executor
