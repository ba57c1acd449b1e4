"""A user's ONNX file, read as data: its bytes, their digest, and the graph prepared for evaluation.

Nothing in a model runs: the evaluator's one loader (:func:`hwbench.evaluator.onnx.model.load_model`)
parses it (protobuf), reads external data only from inside the model's folder, and its nodes are
looked up in the op table (:class:`~hwbench.evaluator.onnx.graph.OnnxGraph`), which refuses an op
or domain it lacks, naming the node. A file that is not ONNX, truncated, or whose graph has a cycle
is one UsageError.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.files import check_input_file

if TYPE_CHECKING:
    from hwbench.evaluator.onnx.graph import OnnxGraph

_CACHE: dict[str, ModelFile] = {}


@dataclass(frozen=True)
class ModelFile:
    """A model as read: where it came from, the sha256 of its bytes, its protobuf and its graph."""

    path: Path
    sha256: str
    proto: Any
    graph: OnnxGraph

    @property
    def name(self) -> str:
        return self.path.name


def require_onnx() -> None:
    """The ``onnx`` package is an optional dependency (``hwbench[onnx]``): without it, exit 4."""
    import importlib.util

    if importlib.util.find_spec("onnx") is None:
        raise UnavailableError("reading an ONNX model needs the onnx package: pip install 'hwbench[onnx]'")


def open_model(path: str | Path) -> ModelFile:
    """Read ``path`` (a regular file) as an ONNX model; the same bytes are read and checked once
    per process."""
    path = check_input_file(path, "model file")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    found = _CACHE.get(digest)
    if found is not None:
        return found if found.path == path else ModelFile(path, digest, found.proto, found.graph)
    require_onnx()
    from hwbench.evaluator.onnx.graph import OnnxGraph
    from hwbench.evaluator.onnx.model import load_model

    proto = load_model(path)

    graph = OnnxGraph(proto)
    made = set(graph.inputs) | set(graph.constants) | {o for n in graph.nodes for o in n.output}
    lost = [o for o in graph.outputs if o not in made]
    if lost or not graph.outputs:
        raise UsageError(
            f"model file {path}: graph output '{lost[0] if lost else '?'}' is produced by no node "
            "(a truncated or damaged file?)"
        )
    model = ModelFile(path, digest, proto, graph)
    _CACHE[digest] = model
    return model
