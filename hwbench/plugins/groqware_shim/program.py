"""The shim's program files: ``.aa`` (compiled graph) and ``.iop`` (assembled program).

The real toolchain writes Alan Assembly (``.aa``) from ``groq-compiler`` and a binary
input/output program (``.iop``) from the assembler. The shim keeps the same two steps and file
names so that code driving it is the code that drives the SDK, but its files hold what its
runner needs:

* ``.aa``: the lowered ONNX model, with the compile statistics and the numerics profile in the
  model's ``metadata_props`` (keys below);
* ``.iop``: a zip archive with ``model.onnx`` and ``manifest.json`` (format tag, program name,
  input and output signatures, compile statistics, the numerics profile the runner applies,
  and how the runner executes it).
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hwbench.core.errors import UsageError

IOP_FORMAT = "hwbench-groqshim-iop/1"
STATS_KEY = "groqshim.stats"
NUMERICS_KEY = "groqshim.numerics"
EXECUTION = "ONNX graph interpreted op by op through hwbench's emulating ops (GroqChip numerics profile)"


@dataclass
class Program:
    """An assembled shim program, loaded."""

    path: Path
    manifest: dict[str, Any]
    model: Any  # onnx.ModelProto

    @property
    def name(self) -> str:
        return str(self.manifest.get("name", "output"))

    @property
    def stats(self) -> dict[str, Any]:
        return dict(self.manifest.get("stats", {}))

    @property
    def numerics(self) -> dict[str, Any] | None:
        return self.manifest.get("numerics")


def tensor_signature(values: Any) -> list[dict[str, Any]]:
    """Name, shape and element type of graph inputs or outputs (for the manifest)."""
    import onnx

    out = []
    for vi in values:
        tt = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim]
        out.append({"name": vi.name, "shape": dims, "dtype": onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type).name})
    return out


def write_iop(path: Path, model: Any, manifest: dict[str, Any]) -> Path:
    """Write the archive atomically (a half-written program never carries the final name)."""
    tmp = path.with_name(path.name + ".partial")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps(manifest, indent=2, sort_keys=True))
        zf.writestr("model.onnx", model.SerializeToString())
    tmp.replace(path)
    return path


def read_iop(path: str | Path) -> Program:
    """Load a shim ``.iop``; a binary program of the real SDK or a damaged file is a UsageError."""
    import onnx

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such program file")
    if not zipfile.is_zipfile(path):
        raise UsageError(
            f"{path}: not a GroqWare-shim program (a binary .iop of the real GroqWare SDK runs only with the SDK's "
            "groq.runner.tsp on a GroqCard)"
        )
    try:
        with zipfile.ZipFile(path) as zf:
            manifest = json.loads(zf.read("manifest.json"))
            model = onnx.load_from_string(zf.read("model.onnx"))
    except (KeyError, ValueError, zipfile.BadZipFile, OSError) as exc:
        raise UsageError(f"{path}: damaged GroqWare-shim program ({type(exc).__name__})") from None
    if manifest.get("format") != IOP_FORMAT:
        raise UsageError(f"{path}: program format {manifest.get('format')!r}, this shim reads {IOP_FORMAT!r}")
    return Program(path, manifest, model)
