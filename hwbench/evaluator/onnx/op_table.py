"""The ONNX op table: one small function per op, registered by name, looked up per node.

Each function takes a :class:`~hwbench.evaluator.onnx.call.Call` and returns the node's outputs,
computing with ``call.arith`` only (the device's arithmetic, or the host's for a folded node).
Behaviour that changed between opsets reads ``call.opset``. An op not in the table, or a domain
other than the default one, is refused when the graph is loaded, naming the op and the node. The
implementations live in :mod:`hwbench.evaluator.onnx.ops`, which registers them when imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hwbench.core.errors import UsageError

if TYPE_CHECKING:
    from hwbench.evaluator.onnx.call import Call

OpFn = Callable[["Call"], list[Any]]
MIN_OPSET, MAX_OPSET = 6, 21
"""The default-domain opsets supported (ONNX's versions 6 to 21)."""

_TABLE: dict[str, OpFn] = {}


def op(*names: str) -> Callable[[OpFn], OpFn]:
    """Register a function as the implementation of ONNX ops ``names``."""

    def register(fn: OpFn) -> OpFn:
        for name in names:
            if name in _TABLE:
                raise RuntimeError(f"ONNX op {name} registered twice")
            _TABLE[name] = fn
        return fn

    return register


def supported() -> list[str]:
    """Every ONNX op the evaluator implements."""
    return sorted(_TABLE)


def lookup(op_type: str, domain: str, opset: int, node: str) -> OpFn:
    """The implementation of a node's op, or a UsageError naming the op, its domain and the node."""
    if domain not in ("", "ai.onnx"):
        raise UsageError(
            f"node '{node}': op {op_type} of domain '{domain}' is not supported (only the default ONNX domain)"
        )
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise UsageError(f"node '{node}': opset {opset} is not supported (opsets {MIN_OPSET} to {MAX_OPSET})")
    fn = _TABLE.get(op_type)
    if fn is None:
        raise UsageError(f"node '{node}': ONNX op {op_type} is not supported")
    return fn
