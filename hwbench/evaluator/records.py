"""What an evaluation returns: the outputs, and each node's outputs when asked for (per-node audits)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class NodeInfo:
    """One node (an ONNX node, a jaxpr equation) as reports name it.

    ``name`` is unique within its graph; ``source`` is where a user wrote it (``solver.py:42`` for
    a jaxpr equation; empty for ONNX, whose nodes have names of their own).
    """

    name: str
    op_type: str
    outputs: tuple[str, ...]
    source: str = ""


@dataclass
class Evaluation:
    """Named outputs (host numpy arrays) and, when asked for, every node's outputs by tensor name."""

    outputs: dict[str, np.ndarray]
    tensors: dict[str, np.ndarray] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
