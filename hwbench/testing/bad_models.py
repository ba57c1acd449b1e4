"""Hostile ONNX files for bad-input tests: every way a model file can be wrong, written to a folder.

``write_bad_models(folder)`` writes them (and a secret file beside the folder, which external data
tries to reach) and returns one :class:`BadModel` per case: the file to pass, and a fragment of the
one ``error:`` line hwbench must answer with. Whatever reads these must refuse them before any
work, write nothing, and never print :data:`SECRET`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SECRET = "TOPSECRET-hwbench-external-data"
"""The content of the file outside the models' folder that hostile external data points at."""


@dataclass(frozen=True)
class BadModel:
    """One refused model: ``file`` (relative to the folder's parent), the fragment of its message."""

    id: str
    file: str
    fragment: str


def _graph(nodes: list[Any], inits: list[Any] | None = None, elem: int = 1, name: str = "x") -> Any:
    from onnx import helper

    return helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(name, elem, [2, 2])],
        [helper.make_tensor_value_info("y", 1, [2, 2])],
        inits or [],
    )


def _model(graph: Any, opset: int = 17, domain: str = "") -> Any:
    from onnx import helper

    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def _external(name: str, location: str, length: int = 16) -> Any:
    """A 2x2 float32 initializer whose data is stored at ``location``."""
    from onnx import TensorProto, numpy_helper

    tensor = numpy_helper.from_array(np.ones((2, 2), np.float32), name)
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", str(length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor


def _save(model: Any, path: Path) -> None:
    path.write_bytes(model.SerializeToString())


def _structural(folder: Path) -> None:
    """Files that are not models, and models whose graph is wrong."""
    from onnx import TensorProto, helper

    good = _model(_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")]))
    whole = good.SerializeToString()
    (folder / "text.onnx").write_text("this is not an ONNX model\n")
    (folder / "empty.onnx").write_bytes(b"")
    (folder / "truncated.onnx").write_bytes(whole[: len(whole) // 2])
    (folder / "a_folder.onnx").mkdir(exist_ok=True)
    cycle = [helper.make_node("Relu", ["x", "b"], ["a"], name="n1"), helper.make_node("Relu", ["a"], ["b"], name="n2")]
    cycle.append(helper.make_node("Identity", ["b"], ["y"], name="n3"))
    _save(_model(_graph(cycle)), folder / "cycle.onnx")
    _save(_model(_graph([helper.make_node("Det", ["x"], ["y"], name="det")])), folder / "unsupported_op.onnx")
    custom = helper.make_node("Gelu", ["x"], ["y"], name="custom_gelu", domain="com.example")
    _save(_model(_graph([custom]), domain="com.example"), folder / "custom_domain.onnx")
    strings = _graph([helper.make_node("Identity", ["x"], ["y"], name="id")], elem=TensorProto.STRING)
    _save(_model(strings), folder / "string_input.onnx")
    _save(_model(_graph([helper.make_node("Relu", ["x"], ["y"])]), opset=99), folder / "opset_99.onnx")


def _external_data(folder: Path) -> None:
    """Models whose weights are stored where they must not be read from."""
    from onnx import helper

    (folder.parent / "secret.bin").write_text(SECRET + "\n")
    link = folder / "link.bin"
    if not link.is_symlink():
        link.symlink_to(folder.parent / "secret.bin")
    inside = folder / "ok.bin"
    inside.write_bytes(np.ones(4, np.float32).tobytes())
    fifo = folder / "pipe.bin"
    if not fifo.exists():
        os.mkfifo(fifo)
    locations = {key: location for key, (location, _) in EXTERNAL.items()}
    locations["absolute"] = str(folder.parent / "secret.bin")
    for key, location in locations.items():
        weight = _external("w", location, 64 if key == "too-long" else 16)
        graph = _graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [weight])
        _save(_model(graph), folder / f"external_{key}.onnx")


EXTERNAL = {
    "absolute": ("", "is an absolute path"),
    "climbs": (os.path.join(os.pardir, "secret.bin"), "climbs out with '..'"),  # a hostile location, not a file here
    "symlink": ("link.bin", "is a link to outside the model's folder"),
    "missing": ("nowhere.bin", "names no file in the model's folder"),
    "fifo": ("pipe.bin", "is not a regular file"),
    "too-long": ("ok.bin", "runs past the end of its file"),
}
"""External-data cases: the location each model's weight names, and the fragment of its refusal."""

CASES = [
    BadModel("missing", "models/missing.onnx", "no such file"),
    BadModel("folder", "models/a_folder.onnx", "not a file"),
    BadModel("text", "models/text.onnx", "not a valid ONNX model"),
    BadModel("empty", "models/empty.onnx", "not a valid ONNX model"),
    BadModel("truncated", "models/truncated.onnx", "not a valid ONNX model"),
    BadModel("cycle", "models/cycle.onnx", "a cycle"),
    BadModel("unsupported-op", "models/unsupported_op.onnx", "node 'det': ONNX op Det is not supported"),
    BadModel("custom-domain", "models/custom_domain.onnx", "op Gelu of domain 'com.example' is not supported"),
    BadModel("string-dtype", "models/string_input.onnx", "element type STRING, which is not supported"),
    BadModel("opset-99", "models/opset_99.onnx", "imports opset 99 of the default ONNX domain"),
    *(BadModel(f"external-{k}", f"models/external_{k}.onnx", fragment) for k, (_, fragment) in EXTERNAL.items()),
]
"""Every case :func:`write_bad_models` writes (``file`` relative to the folder's parent)."""


def write_bad_models(folder: str | Path) -> list[BadModel]:
    """Write the hostile models into ``folder`` (created; a ``secret.bin`` lands beside it) and
    return :data:`CASES`; the folder must be named ``models`` for the cases' paths to hold."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _structural(folder)
    _external_data(folder)
    return list(CASES)
