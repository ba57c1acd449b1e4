"""One node as an op implementation sees it (:class:`Call`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.evaluator.arith import Arith


@dataclass
class Call:
    """One node as its op implementation sees it.

    ``args`` are the input values (None for an omitted optional input): arithmetic values for
    run-time tensors, host numpy arrays for constants; ``dynamic[i]`` says which. ``arith`` is the
    arithmetic this node computes with (the device's, or the host's for a folded node).
    """

    node: Any
    name: str
    attrs: dict[str, Any]
    args: list[Any]
    dynamic: list[bool]
    arith: Arith
    opset: int
    host: Arith | None = None

    def folding(self, *indices: int) -> Arith:
        """The arithmetic for a computation among inputs ``indices`` only: the host's (a compiler
        folds it) when they are all compile-time constants, else the node's."""
        constant = all(not self.dynamic[i] for i in indices if i < len(self.dynamic))
        if self.host is not None and constant and all(isinstance(self.arg(i), np.ndarray | None) for i in indices):
            return self.host
        return self.arith

    @property
    def op(self) -> str:
        return str(self.node.op_type)

    @property
    def xp(self) -> Any:
        return self.arith.xp

    def arg(self, i: int) -> Any:
        """Input ``i``, or None when the node omits it."""
        return self.args[i] if i < len(self.args) else None

    def const(self, i: int, what: str) -> np.ndarray | None:
        """Input ``i`` as a host array: it must be known when the graph is compiled (shapes, axes);
        None when omitted."""
        v = self.arg(i)
        if v is None:
            return None
        if i < len(self.dynamic) and self.dynamic[i]:
            raise UsageError(f"node '{self.name}' ({self.op}): {what} must be a compile-time constant")
        return np.asarray(v)

    def raw(self, i: int) -> Any:
        """Input ``i``'s engine array (no arithmetic wrapper)."""
        v = self.arg(i)
        return None if v is None else self.arith.lower(v)
