"""An ONNX graph prepared for evaluation: nodes in topological order, constants, inputs, outputs.

Nothing in a model runs: it is read as data (protobuf), its nodes are looked up in hwbench's own op
table (:mod:`hwbench.evaluator.onnx.ops`), and an op or domain outside that table is refused up
front, naming the op and the node.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.evaluator.onnx.dtypes import element_dtype
from hwbench.evaluator.records import NodeInfo

DEFAULT_DOMAINS = ("", "ai.onnx")


@dataclass(frozen=True)
class InputSpec:
    """A graph input: element type and shape (an ``int`` per fixed dimension, a ``str`` per symbolic one)."""

    name: str
    dtype: np.dtype
    shape: tuple[int | str, ...]

    @property
    def symbolic(self) -> list[str]:
        return [d for d in self.shape if isinstance(d, str)]


def attributes(node: Any) -> dict[str, Any]:
    """A node's attributes as Python values (tensors stay TensorProto; graphs stay GraphProto)."""
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def topological(nodes: Iterable[Any], available: set[str]) -> list[Any]:
    """Nodes ordered so that every input is produced before it is used; a cycle or a missing
    producer is a UsageError naming the tensors never produced."""
    pending = list(nodes)
    known = set(available)
    ordered: list[Any] = []
    while pending:
        rest = []
        for node in pending:
            if all(not i or i in known for i in node.input):
                ordered.append(node)
                known.update(o for o in node.output if o)
            else:
                rest.append(node)
        if len(rest) == len(pending):
            missing = sorted({i for n in rest for i in n.input if i and i not in known})
            raise UsageError(
                "ONNX graph is not well formed (a cycle, or inputs never produced): "
                + ", ".join(missing[:5])
                + (" ..." if len(missing) > 5 else "")
            )
        pending = rest
    return ordered


def node_infos(nodes: list[Any]) -> list[NodeInfo]:
    """Each node's unique name (its own, else ``OpType_index``, made unique) for reports."""
    seen: set[str] = set()
    out = []
    for i, node in enumerate(nodes):
        base = node.name or f"{node.op_type}_{i}"
        name, k = base, 1
        while name in seen:
            k += 1
            name = f"{base}_{k}"
        seen.add(name)
        out.append(NodeInfo(name=name, op_type=node.op_type, outputs=tuple(o for o in node.output if o)))
    return out


class OnnxGraph:
    """A model's main graph, checked against the op table and ordered.

    ``constants`` are the initializers (host numpy arrays, compile-time constants); ``inputs`` the
    graph inputs that are not initializers; ``outputs`` the graph's output names.
    """

    def __init__(self, model: Any) -> None:
        from onnx import numpy_helper

        import hwbench.evaluator.onnx.ops  # noqa: F401  (registers the op implementations)
        from hwbench.evaluator.onnx.op_table import lookup

        g = model.graph
        self.model = model
        self.opset = {o.domain or "": int(o.version) for o in model.opset_import}
        self.constants: dict[str, np.ndarray] = {i.name: numpy_helper.to_array(i) for i in g.initializer}
        self.inputs = {i.name: _input_spec(i) for i in g.input if i.name not in self.constants}
        self.outputs = [o.name for o in g.output]
        self.nodes = topological(g.node, set(self.constants) | set(self.inputs))
        self.infos = node_infos(self.nodes)
        self.attrs = [attributes(n) for n in self.nodes]
        self.impls = [
            lookup(n.op_type, n.domain, self.opset_of(n), info.name) for n, info in zip(self.nodes, self.infos)
        ]

    def opset_of(self, node: Any) -> int:
        """The opset version a node's domain is imported at."""
        domain = "" if node.domain in DEFAULT_DOMAINS else node.domain
        return self.opset.get(domain, self.opset.get("ai.onnx", 1))


def _input_spec(value_info: Any) -> InputSpec:
    tt = value_info.type.tensor_type
    if not value_info.type.HasField("tensor_type"):
        raise UsageError(f"graph input '{value_info.name}' is not a tensor; only tensor inputs are supported")
    dims: list[int | str] = []
    for i, d in enumerate(tt.shape.dim):
        if d.HasField("dim_value") and d.dim_value >= 0:
            dims.append(int(d.dim_value))
        else:
            dims.append(d.dim_param or f"{value_info.name}[{i}]")
    return InputSpec(value_info.name, element_dtype(tt.elem_type), tuple(dims))
