"""Reading a user's ONNX file safely: the one loader every route takes (the evaluator, the ``onnx``
kernel, the GroqWare shim's compiler).

A model is data. Its protobuf is parsed, never executed; nothing in it names code to run (ops
outside the default domain are refused when the graph is built, model-local functions are
inlined as the ONNX graphs they are). Every way it can be wrong is one :class:`UsageError` line:
not a file, not ONNX, truncated, a cycle, an opset or an element type that is not supported.

External data (tensors stored beside the model, ``location`` relative to its folder) is read by
this module, not by onnx's loader, whose path checks had holes (CVE-2022-25882, CVE-2024-27318):
a location that is absolute, contains ``..``, resolves (through any symbolic link) outside the
model's folder, or is not a regular file is refused, and no message repeats the location or
anything read from it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.core.errors import UsageError

if TYPE_CHECKING:
    from hwbench.evaluator.onnx.graph import OnnxGraph

PROTOBUF_LIMIT = 2**31 - 1
"""A serialized ModelProto cannot be larger than this (larger models keep weights outside)."""
SUPPORTED_TYPES: tuple[str, ...] = ("FLOAT", "DOUBLE", "FLOAT16", "INT8", "INT16", "INT32", "INT64", "UINT8")
SUPPORTED_TYPES += ("UINT16", "UINT32", "UINT64", "BOOL")
"""ONNX element types the evaluator computes with."""


def load_model(path: str | Path) -> Any:
    """The ONNX model at ``path`` (an ``onnx.ModelProto``), external data read from its folder,
    model-local functions inlined, checked; any problem is one UsageError line."""
    import onnx.inliner

    path = Path(path)
    model = parse(path)
    if model.graph.sparse_initializer:
        raise UsageError(f"{path.name}: sparse initializers are not supported")
    check_opsets(model, path.name)
    check_types(model, path.name)
    load_external_data(model, path)
    if model.functions:
        try:
            model = onnx.inliner.inline_local_functions(model)
        except Exception as exc:
            raise UsageError(f"{path.name}: its model-local functions cannot be inlined ({_first(exc)})") from None
    order_nodes(model)
    complete_output_shapes(model)
    check(model, path.name)
    return model


def load_graph(path: str | Path) -> OnnxGraph:
    """The model at ``path`` (:func:`load_model`) as an evaluator graph (ops looked up, ordered)."""
    from hwbench.evaluator.onnx.graph import OnnxGraph

    return OnnxGraph(load_model(path))


def parse(path: Path) -> Any:
    """The protobuf of ``path``, without external data; not a file or not ONNX is a UsageError."""
    import onnx

    try:
        info = path.stat()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file (an ONNX model is expected)") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the ONNX file ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{path}: not a file (an ONNX model is a .onnx file)")
    if info.st_size > PROTOBUF_LIMIT:
        raise UsageError(
            f"{path.name}: {info.st_size} bytes, over protobuf's 2 GiB limit; store large weights as external data"
        )
    try:
        data = path.read_bytes()
        model = onnx.load_model_from_string(data)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the ONNX file ({exc.strerror})") from None
    except Exception:  # protobuf's DecodeError and friends
        raise UsageError(
            f"{path.name}: not a valid ONNX model (it does not parse as one: truncated, or another kind of file)"
        ) from None
    if not model.HasField("graph") or model.ir_version <= 0:
        raise UsageError(f"{path.name}: not a valid ONNX model (no IR version or no graph)")
    return model


def check_opsets(model: Any, origin: str) -> None:
    """The default domain's opset must be one the op table implements."""
    from hwbench.evaluator.onnx.op_table import MAX_OPSET, MIN_OPSET

    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx") and not MIN_OPSET <= entry.version <= MAX_OPSET:
            raise UsageError(
                f"{origin}: imports opset {entry.version} of the default ONNX domain; supported: {MIN_OPSET} to "
                f"{MAX_OPSET} (onnx.version_converter can convert a model)"
            )


def _type_name(elem_type: int) -> str:
    import onnx

    values = onnx.TensorProto.DataType.values()
    return str(onnx.TensorProto.DataType.Name(elem_type)) if elem_type in values else str(elem_type)


def check_types(model: Any, origin: str) -> None:
    """Every tensor of the main graph (inputs, outputs, initializers, constants, cast targets) has
    an element type the evaluator computes with."""
    g = model.graph

    def refuse(what: str, elem_type: int) -> None:
        name = _type_name(elem_type)
        if name not in SUPPORTED_TYPES:
            raise UsageError(
                f"{origin}: {what} has element type {name}, which is not supported; supported: "
                + ", ".join(t.lower() for t in SUPPORTED_TYPES)
            )

    for kind, values in (("input", g.input), ("output", g.output)):
        for v in values:
            if not v.type.HasField("tensor_type"):
                raise UsageError(f"{origin}: graph {kind} '{v.name}' is not a tensor; only tensors are supported")
            refuse(f"graph {kind} '{v.name}'", v.type.tensor_type.elem_type)
    for t in g.initializer:
        refuse(f"initializer '{t.name}'", t.data_type)
    for node in g.node:
        label = f"node '{node.name or node.op_type}' ({node.op_type})"
        for a in node.attribute:
            if a.HasField("t"):
                refuse(f"{label} attribute '{a.name}'", a.t.data_type)
            if node.op_type in ("Cast", "EyeLike") and a.name in ("to", "dtype"):
                refuse(f"{label}'s target type", a.i)


def _tensors(graph: Any) -> Iterator[Any]:
    """Every TensorProto of a graph: initializers and node attributes, subgraphs included."""
    yield from graph.initializer
    for node in graph.node:
        for a in node.attribute:
            if a.HasField("t"):
                yield a.t
            yield from a.tensors
            if a.HasField("g"):
                yield from _tensors(a.g)
            for sub in a.graphs:
                yield from _tensors(sub)


def load_external_data(model: Any, path: Path) -> None:
    """Read every tensor's external data from inside the model's folder into the tensor (in place)."""
    import onnx

    folder = path.parent.resolve()
    for tensor in _tensors(model.graph):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in tensor.external_data}
        data = _read_external(folder, f"{path.name}: tensor '{tensor.name}'", info)
        expected = _byte_size(tensor)
        if expected is not None and len(data) != expected:
            raise UsageError(
                f"{path.name}: tensor '{tensor.name}': its external data has {len(data)} bytes, its shape and type "
                f"need {expected}"
            )
        tensor.raw_data = data
        tensor.data_location = onnx.TensorProto.DEFAULT
        del tensor.external_data[:]


def _read_external(folder: Path, tensor: str, info: dict[str, str]) -> bytes:
    """The bytes an external-data entry names, from a regular file inside ``folder``."""
    where = f"{tensor}: its external data location"
    location = info.get("location", "")
    if not location:
        raise UsageError(f"{where} is missing")
    posix, windows = PurePosixPath(location), PureWindowsPath(location)
    if posix.is_absolute() or windows.is_absolute() or windows.drive or location.startswith(("/", "\\")):
        raise UsageError(f"{where} is an absolute path; external data must lie inside the model's folder")
    if ".." in posix.parts or ".." in windows.parts:
        raise UsageError(f"{where} climbs out with '..'; external data must lie inside the model's folder")
    try:
        target = (folder / location).resolve(strict=True)
    except (OSError, RuntimeError):
        raise UsageError(f"{where} names no file in the model's folder") from None
    if not target.is_relative_to(folder):
        raise UsageError(f"{where} is a link to outside the model's folder; external data must lie inside it")
    try:
        offset = int(info.get("offset", "0"))
        length = int(info["length"]) if "length" in info else None
    except ValueError:
        raise UsageError(f"{where}: offset and length must be whole numbers") from None
    if offset < 0 or (length is not None and length < 0):
        raise UsageError(f"{where}: offset and length must not be negative")
    return _read_file(target, offset, length, where)


def _read_file(target: Path, offset: int, length: int | None, where: str) -> bytes:
    """``length`` bytes (all, when None) from ``offset`` of a regular file, never following a link."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(target, flags)
    except OSError:
        raise UsageError(f"{where} cannot be opened") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"{where} is not a regular file")
        size = info.st_size if length is None else length
        if offset + size > info.st_size:
            raise UsageError(f"{where}: offset {offset} + length {size} runs past the end of its file")
        fh.seek(offset)
        return fh.read(size)


def _byte_size(tensor: Any) -> int | None:
    """The bytes a tensor's raw data must have (None for types without a fixed width)."""
    import onnx

    try:
        itemsize = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    except (KeyError, TypeError, ValueError):
        return None
    return int(np.prod(tensor.dims, dtype=np.int64)) * itemsize


def static_shapes(model: Any) -> dict[str, tuple[int, ...]]:
    """Every tensor whose shape ONNX shape inference can pin down completely."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:  # inference is a help, never a requirement
        inferred = model
    shapes: dict[str, tuple[int, ...]] = {}
    g = inferred.graph
    for vi in [*g.input, *g.value_info, *g.output]:
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            continue
        dims = tt.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            shapes[vi.name] = tuple(int(d.dim_value) for d in dims)
    return shapes


def complete_output_shapes(model: Any) -> None:
    """Give graph outputs declared without a shape their inferred static shape (in place): exporters
    sometimes leave one out, which the ONNX checker rejects although the shape is inferable."""
    if all(o.type.tensor_type.HasField("shape") for o in model.graph.output):
        return
    try:
        shapes = static_shapes(model)
    except Exception:  # a malformed model: the checker will say what is wrong
        return
    for out in model.graph.output:
        tt = out.type.tensor_type
        if not tt.HasField("shape") and out.name in shapes:
            tt.shape.SetInParent()
            for d in shapes[out.name]:
                tt.shape.dim.add().dim_value = d


def order_nodes(model: Any) -> None:
    """The graph's nodes in topological order (in place; ONNX's checker wants them sorted, some
    exporters do not sort them); a cycle, or an input nothing produces, is a UsageError."""
    from hwbench.evaluator.onnx.graph import topological

    inits = {t.name for t in model.graph.initializer}
    ordered = topological(model.graph.node, inits | {i.name for i in model.graph.input})
    nodes = [type(n)() for n in ordered]
    for copy, node in zip(nodes, ordered):
        copy.CopyFrom(node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)


def check(model: Any, origin: str) -> None:
    """The ONNX checker's verdict (the first line of it) and a graph with nodes."""
    import onnx

    if not model.graph.node:
        raise UsageError(f"{origin}: the ONNX graph has no nodes")
    order_nodes(model)
    if model.ByteSize() > PROTOBUF_LIMIT:
        return  # the checker serialises the model: a model this large is checked as it is built
    try:
        onnx.checker.check_model(model)
    except Exception as exc:  # onnx.checker.ValidationError and friends
        raise UsageError(f"{origin}: not a valid ONNX model ({_first(exc)})") from None


def _first(exc: BaseException) -> str:
    """The first line of an exception's text, whitespace runs made one space, at most 200 characters."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return " ".join(first.split())[:200]
