"""A user's JAX function as a jaxpr: traced once with example arguments, or refused in one line.

Tracing is JAX's own (``jax.make_jaxpr``): the function is called with abstract values, so Python
control flow on array values cannot be traced; such a function is refused naming the user's
line, as is an argument that is not an array. Each equation's source line comes from the
jaxpr's source info (the user's frame, not JAX's).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hwbench.core.errors import UsageError


@dataclass
class Traced:
    """A function's closed jaxpr, how its flat arguments and results map to the user's trees,
    and the float dtype it was traced at."""

    closed: Any  # jax.extend.core.ClosedJaxpr
    in_tree: Any
    out_tree: Any
    name: str


def check_arguments(args: Sequence[Any]) -> list[np.ndarray]:
    """The flat leaves of ``args`` as numpy arrays; anything but arrays and numbers is refused."""
    import jax

    leaves = jax.tree_util.tree_leaves(args)
    out = []
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, bool | int | float | np.number | np.ndarray | np.bool_) or _is_jax_array(leaf):
            arr = np.asarray(leaf)
            if arr.dtype.kind not in "biuf":
                raise UsageError(f"argument leaf {i} has dtype {arr.dtype}; arguments must be numeric arrays")
            out.append(arr)
            continue
        raise UsageError(
            f"argument leaf {i} is a {type(leaf).__name__}; arguments must be arrays (numpy or JAX) or numbers, "
            "in any pytree (tuples, lists, dicts)"
        )
    if not out:
        raise UsageError("the function needs at least one array argument to audit (its example inputs)")
    return out


def _is_jax_array(x: Any) -> bool:
    import jax

    return isinstance(x, jax.Array)


def trace(fn: Callable[..., Any], args: Sequence[Any]) -> Traced:
    """``fn`` traced to a closed jaxpr at the example ``args`` (a UsageError naming the line when it
    cannot be traced)."""
    import jax

    if not callable(fn):
        raise UsageError(f"expected a function of jax.numpy / lax, got a {type(fn).__name__}")
    leaves = check_arguments(args)
    _, in_tree = jax.tree_util.tree_flatten(tuple(args))
    name = getattr(fn, "__name__", type(fn).__name__)

    def flat_fn(*flat: Any) -> Any:
        return fn(*jax.tree_util.tree_unflatten(in_tree, flat))

    try:
        closed, shapes = jax.make_jaxpr(flat_fn, return_shape=True)(*leaves)
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerBoolConversionError) as exc:
        raise UsageError(
            f"{name} is not traceable: Python control flow on array values ({_user_line(exc)}); "
            "use jax.lax.cond / jnp.where / lax.while_loop instead"
        ) from None
    except (jax.errors.TracerIntegerConversionError, jax.errors.TracerArrayConversionError) as exc:
        raise UsageError(
            f"{name} is not traceable: it converts a traced array to a Python or numpy value ({_user_line(exc)})"
        ) from None
    except Exception as exc:  # the user's function failed on these arguments (arity, shapes, its own error)
        text = str(exc).splitlines()[0] if str(exc) else ""
        raise UsageError(
            f"{name} raised {type(exc).__name__} on the example arguments ({_user_line(exc)}): {text[:200]}"
        ) from None
    _, out_tree = jax.tree_util.tree_flatten(shapes)
    return Traced(closed, in_tree, out_tree, name)


def _user_line(exc: BaseException) -> str:
    """``file.py:LINE`` of the innermost frame of the traceback outside JAX and hwbench."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        path = frame.filename.replace(os.sep, "/")
        if "/jax/" in path or "/jaxlib/" in path or "/hwbench/evaluator/" in path:
            continue
        return f"{os.path.basename(frame.filename)}:{frame.lineno}"
    return "line unknown"


def source_of(eqn: Any) -> str:
    """``file.py:LINE (function)`` where the user wrote an equation ('' when JAX kept no frame)."""
    try:
        from jax._src import source_info_util  # no public API for an equation's user frame

        frame = source_info_util.user_frame(eqn.source_info.traceback)
    except (ImportError, AttributeError):
        return ""
    if frame is None:
        return ""
    return f"{os.path.basename(frame.file_name)}:{frame.start_line} ({frame.function_name})"


def is_literal(var: Any) -> bool:
    """Whether a jaxpr operand is a literal (a constant written into the equation), not a variable."""
    return type(var).__name__ == "Literal"
