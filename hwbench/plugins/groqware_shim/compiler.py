"""The shim's ``groq-compiler`` + assembler: ONNX model in, ``.iop`` program out.

Mirrors the two SDK steps and their files: :func:`compile_onnx` (``groq-compiler model.onnx
--save-stats stats.json -o output`` -> ``output.aa``) and :func:`assemble` (``aa-latest
output.aa --output-iop output.iop``); :func:`compile` runs both. What compiling means here:

1. load and check the model (a malformed file is a one-line UsageError);
2. fold everything computable at compile time (:mod:`.graph`);
3. lower gather / scatter to one-hot matrix products (:mod:`.lowering`), as the GroqChip
   compiler did;
4. check the program against the chip's capacity (:mod:`.capacity`): SRAM for constants,
   one-hot matrices and the working set, and the instruction budget of the one-hot products
   — a failure raises :class:`GroqCompilerError` worded as the study reports the compiler's;
5. write the program with its statistics and the numerics profile the runner will apply.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from hwbench.core.errors import UnavailableError, UsageError
from hwbench.plugins.groqware_shim import capacity
from hwbench.plugins.groqware_shim.graph import check_model, fold_constants, load_model
from hwbench.plugins.groqware_shim.lowering import lower_gather_scatter
from hwbench.plugins.groqware_shim.program import (
    EXECUTION,
    IOP_FORMAT,
    NUMERICS_KEY,
    STATS_KEY,
    tensor_signature,
    write_iop,
)

FLAGS = ("name", "numerics", "save_stats", "large_program")
"""Keyword flags :func:`compile` accepts (``large_program`` is recorded, as the SDK's flag)."""


class GroqCompilerError(UnavailableError):
    """The program does not fit on the GroqChip (the shim's version of a groq-compiler failure)."""


def _profile_dict(numerics: Any) -> dict[str, Any]:
    """The numerics profile to embed, as JSON data (default: the GroqChip's default mode)."""
    from hwbench.accuracy.numerics.profile import NumericsProfile

    if numerics is None:
        from hwbench.plugins.groqware_shim.numerics import default_profile

        numerics = default_profile()
    if isinstance(numerics, str | bytes):
        numerics = NumericsProfile.from_json(numerics, origin="numerics flag")
    elif isinstance(numerics, dict):
        numerics = NumericsProfile.from_json(json.dumps(numerics), origin="numerics flag")
    if not isinstance(numerics, NumericsProfile):
        raise UsageError(f"numerics must be a NumericsProfile, its JSON, or None; got {type(numerics).__name__}")
    profile: dict[str, Any] = json.loads(numerics.to_json())
    return profile


def _streamed_values(model: Any) -> int:
    """Elements of the float tensors the program takes in (state rows and inputs)."""
    import onnx

    total = 0
    for vi in model.graph.input:
        tt = vi.type.tensor_type
        if onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type).kind != "f":
            continue
        dims = [d.dim_value for d in tt.shape.dim]
        total += int(np.prod(dims)) if all(d > 0 for d in dims) else 0
    return total


def _constant_bytes(model: Any) -> int:
    from onnx import numpy_helper

    return int(
        sum(
            numpy_helper.to_array(i).nbytes
            for i in model.graph.initializer
            if not i.name.startswith("groqshim_onehot_")
        )
    )


def compile_onnx(
    onnx_path: str | Path,
    output_prefix: str | Path,
    *,
    numerics: Any = None,
    save_stats: str | Path | None = None,
    large_program: bool = False,
) -> Path:
    """Compile ``onnx_path`` to ``<output_prefix>.aa``; returns that path.

    Raises :class:`GroqCompilerError` when the program does not fit the chip and a UsageError
    for a malformed model or a gather/scatter that cannot be lowered.
    """
    import onnx

    start = time.perf_counter()
    source = load_model(onnx_path)
    nodes_in = len(source.graph.node)
    model, folded = fold_constants(source)
    report = lower_gather_scatter(model)
    check_model(model, f"{onnx_path} (after lowering)")
    fp = capacity.Footprint(
        onehot_uses=report.uses, constant_bytes=_constant_bytes(model), streamed_values=_streamed_values(model)
    )
    stats: dict[str, Any] = {
        "compiler": "hwbench groqware-shim",
        "source_model": str(onnx_path),
        "nodes_in": nodes_in,
        "nodes_out": len(model.graph.node),
        "folded_nodes": folded,
        "pruned_nodes": report.pruned_nodes,
        "lowered": dict(report.lowered),
        "large_program": bool(large_program),
        **fp.stats(),
    }
    problem = capacity.problem(fp)
    stats["fits"] = problem is None
    stats["compile_s"] = round(time.perf_counter() - start, 3)
    if save_stats is not None:
        Path(save_stats).write_text(json.dumps(stats, indent=2, sort_keys=True), encoding="utf-8")
    if problem is not None:
        raise GroqCompilerError(f"groq-compiler (shim) failed for {Path(onnx_path).name}: {problem}")
    profile = _profile_dict(numerics)
    onnx.helper.set_model_props(model, {STATS_KEY: json.dumps(stats), NUMERICS_KEY: json.dumps(profile)})
    aa = Path(str(output_prefix) + ".aa")
    aa.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, str(aa))
    return aa


def assemble(aa_path: str | Path, output_iop: str | Path, *, name: str = "output") -> Path:
    """Pack a compiled ``.aa`` into an ``.iop`` program (the assembler step)."""
    import onnx

    aa_path, output_iop = Path(aa_path), Path(output_iop)
    try:
        model = onnx.load(str(aa_path))
    except Exception as exc:
        raise UsageError(f"{aa_path}: not a GroqWare-shim .aa file ({type(exc).__name__})") from None
    props = {p.key: p.value for p in model.metadata_props}
    if STATS_KEY not in props or NUMERICS_KEY not in props:
        raise UsageError(f"{aa_path}: not produced by the GroqWare-shim compiler (no statistics or numerics)")
    manifest = {
        "format": IOP_FORMAT,
        "name": name,
        "inputs": tensor_signature(model.graph.input),
        "outputs": tensor_signature(model.graph.output),
        "stats": json.loads(props[STATS_KEY]),
        "numerics": json.loads(props[NUMERICS_KEY]),
        "execution": EXECUTION,
    }
    del model.metadata_props[:]
    output_iop.parent.mkdir(parents=True, exist_ok=True)
    return write_iop(output_iop, model, manifest)


def compile(onnx_path: str | Path, out_dir: str | Path, **flags: Any) -> Path:
    """``groq-compiler`` then the assembler: ``<out_dir>/<name>.iop`` (and ``stats.json``).

    Flags: ``name`` (default ``output``), ``numerics`` (a NumericsProfile or its JSON; default
    the GroqChip's default profile), ``save_stats`` (default ``<out_dir>/stats.json``),
    ``large_program`` (recorded).
    """
    unknown = sorted(set(flags) - set(FLAGS))
    if unknown:
        raise UsageError(f"unknown groq-compiler (shim) flag(s) {', '.join(unknown)}; accepted: {', '.join(FLAGS)}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    name = str(flags.get("name", "output"))
    aa = compile_onnx(
        onnx_path,
        out_dir / name,
        numerics=flags.get("numerics"),
        save_stats=flags.get("save_stats", out_dir / "stats.json"),
        large_program=bool(flags.get("large_program", False)),
    )
    return assemble(aa, out_dir / f"{name}.iop", name=name)
