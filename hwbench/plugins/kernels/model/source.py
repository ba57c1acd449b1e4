"""A user's ONNX file, read as data: its bytes, their digest, and the graph prepared for evaluation.

Nothing in a model runs: it is parsed (protobuf) and its nodes are looked up in the evaluator's op
table (:class:`~hwbench.evaluator.onnx.graph.OnnxGraph`), which refuses an op or domain it lacks,
naming the node. A file that is not ONNX, truncated, or whose graph has a cycle is one UsageError.
Tensors kept in external data files are refused here: reading them safely (only from inside the
model's folder) is the loader's job, and a model that needs them says so instead of reading them.
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
    proto = _parse(path, data)
    from hwbench.evaluator.onnx.graph import OnnxGraph

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


def _parse(path: Path, data: bytes) -> Any:
    """The ModelProto of ``data``, or a UsageError naming the file (nothing external is read)."""
    import onnx
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

    if not data:
        raise UsageError(f"model file {path} is empty; give an ONNX model (.onnx)")
    try:
        proto = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise UsageError(f"model file {path} is not an ONNX model ({type(exc).__name__})") from None
    if not proto.graph.node and not proto.graph.output:
        raise UsageError(f"model file {path} is not an ONNX model (no graph)")
    external = [t.name for t in proto.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    if external:
        raise UsageError(
            f"model file {path} keeps {len(external)} tensor(s) in external data files (first: '{external[0]}'); "
            "save the model with its tensors inside (onnx.save_model(model, path, save_as_external_data=False))"
        )
    return proto
