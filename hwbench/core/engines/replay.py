"""Replaying a workload on the host with numpy's reference ops, step by step.

Activity counts (spikes per layer, membrane updates) are properties of the workload, not of the device
that ran the timed run (NeuroBench's algorithm track): they are recorded once here, in float32 like
PyTorch's default, from the states this replay returns.
"""

from __future__ import annotations

from typing import Any

from hwbench.core.engine import kernel_params
from hwbench.core.engines.numpy_engine import NumpyOps
from hwbench.core.kernel import Kernel, Workload


def replay(kernel: Kernel, workload: Workload, steps: int, *, dtype: str = "float32") -> list[Any]:
    """The workload's state after each of ``steps`` steps, run with the numpy reference ops.

    Activity is a property of the workload (NeuroBench's algorithm track), so it is recorded once on
    the host, in float32 like PyTorch's default, whatever device ran the timed run.
    """
    import numpy as np

    ftype = np.dtype(dtype)
    ops = NumpyOps(ftype)
    params = kernel_params(workload, lambda a: np.asarray(a, dtype=ftype), lambda a: np.asarray(a))
    inputs = {k: np.asarray(v, dtype=ftype) for k, v in kernel.default_inputs(workload).items()}
    state0 = workload.state0
    state: Any = tuple(np.asarray(s, ftype) for s in state0) if isinstance(state0, tuple) else np.asarray(state0, ftype)
    states: list[Any] = []
    with np.errstate(all="ignore"):
        for t in range(steps):
            state = kernel.step(ops, state, params, inputs, t)
            states.append(state)
    return states
