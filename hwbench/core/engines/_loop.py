"""Checks and conversions every engine's build/run shares, so all engines reject the same bad input.

Nothing here imports a heavy library: engines call these on host numpy data before handing it to
their backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from hwbench.core.engine import FiniteStateOps, SteppedOps
from hwbench.core.errors import UsageError
from hwbench.core.kernel import Kernel, Workload

SPIKE_DTYPE = "int16"  # spikes[k, c]: step offset inside sample window k, or -1
NO_SPIKE = -1


def check_dtype(engine: str, dtype: str, allowed: tuple[str, ...]) -> np.dtype:
    """The working float dtype, or a UsageError naming the ones this engine runs."""
    import numpy as np

    if dtype not in allowed:
        raise UsageError(f"engine '{engine}' runs dtype {', '.join(allowed)}; got '{dtype}'")
    return np.dtype(dtype)


def resolve_sample_every(kernel: Kernel, sample_every: int | None) -> int:
    """Steps per sample window: the argument, else the kernel's ``info.sample_every``."""
    import numpy as np

    value = kernel.info.sample_every if sample_every is None else sample_every
    top = int(np.iinfo(SPIKE_DTYPE).max)  # spike offsets inside a window must fit SPIKE_DTYPE
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= top:
        raise UsageError(f"sample_every must be an integer in 1..{top}, got {value!r}")
    return int(value)


def check_nsamples(nsamples: int) -> int:
    import numpy as np

    if isinstance(nsamples, bool) or not isinstance(nsamples, (int, np.integer)) or nsamples < 0:
        raise UsageError(f"nsamples must be a non-negative integer, got {nsamples!r}")
    return int(nsamples)


def merge_inputs(
    kernel: Kernel, workload: Workload, inputs: dict[str, Any] | None, dtype: np.dtype
) -> dict[str, np.ndarray]:
    """The kernel's default inputs overridden by ``inputs``, each cast to ``dtype`` and shape-checked.

    Unknown names are a UsageError (a misspelt input would otherwise be silently ignored).
    """
    import numpy as np

    merged = {k: np.asarray(v) for k, v in kernel.default_inputs(workload).items()}
    for key, value in (inputs or {}).items():
        if key not in merged:
            allowed = ", ".join(sorted(merged)) or "(none)"
            raise UsageError(f"kernel '{kernel.name}' has no input '{key}'; inputs: {allowed}")
        arr = np.asarray(value, dtype=dtype)
        if arr.ndim == 0:
            arr = np.full(merged[key].shape, arr, dtype=dtype)
        if arr.shape != merged[key].shape:
            raise UsageError(f"input '{key}' must have shape {merged[key].shape}, got {arr.shape}")
        merged[key] = arr
    return {k: np.ascontiguousarray(v, dtype=dtype) for k, v in merged.items()}


def state_to_host(state: Any, dtype: np.dtype, like: Any) -> Any:
    """``state`` (an array or a tuple/list of arrays) as contiguous host arrays of ``dtype``.

    ``like`` is the workload's initial state: shapes must match it, so a state from another
    workload fails here with a clear message instead of deep inside compiled code.
    """
    import numpy as np

    if isinstance(like, (tuple, list)):
        if not isinstance(state, (tuple, list)) or len(state) != len(like):
            raise UsageError(f"state must be a sequence of {len(like)} arrays like the workload's state0")
        return tuple(state_to_host(s, dtype, ref) for s, ref in zip(state, like))
    arr = np.ascontiguousarray(state, dtype=dtype)
    if arr.shape != np.shape(like):
        raise UsageError(f"state must have shape {np.shape(like)} (the workload's state0), got {arr.shape}")
    return arr


def check_step_output(new: Any, old: Any) -> None:
    """A kernel step must return state of the same structure, shapes and dtype as it got: a
    silent promotion (float32 -> float64) would change the precision being measured."""
    import numpy as np

    new_parts = list(new) if isinstance(new, (tuple, list)) else [new]
    old_parts = list(old) if isinstance(old, (tuple, list)) else [old]
    got = [(tuple(np.shape(a)), str(getattr(a, "dtype", type(a).__name__))) for a in new_parts]
    want = [(tuple(np.shape(b)), str(b.dtype)) for b in old_parts]
    if got != want:
        raise UsageError(f"kernel step returned state {got}, expected {want} (same shapes and dtype)")


def is_stepped(ops: Any) -> bool:
    """Whether (wrapped) ops follow the SteppedOps protocol (step-aware rounding and counters)."""
    return isinstance(ops, SteppedOps)


def offers_finite_state(ops: Any) -> bool:
    """Whether stepped ops trace a cheaper step for a finite state (the FiniteStateOps protocol)."""
    return is_stepped(ops) and isinstance(ops, FiniteStateOps) and bool(ops.finite_state_helps)


def all_finite(state: Any) -> bool:
    """Whether every float element of a (tuple/list of) host state array(s) is a finite number."""
    import numpy as np

    leaves = state if isinstance(state, (tuple, list)) else [state]
    for leaf in leaves:
        arr = np.asarray(leaf)
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            return False
    return True


def counters_dict(names: tuple[str, ...], totals: Any) -> dict[str, int]:
    """``{name: int}`` from a vector of summed counts (one per name)."""
    import numpy as np

    totals = np.asarray(totals, dtype=np.int64).reshape(-1)
    if len(totals) != len(names):
        raise ValueError(f"ops reported {len(totals)} counters for {len(names)} counter names")
    return {name: int(v) for name, v in zip(names, totals)}
