"""A user's model on the GroqChip: compiled into a program by the GroqWare SDK (its shim where no
SDK is installed), with the chip's capacity check, and run by the SDK's runner.

What the GroqChip compiler does to a model, the shim's compiler does to the user's file: it folds
what is known at compile time, lowers gathers to one-hot matrix products, and checks the program
against the chip's SRAM and instruction budget (:mod:`hwbench.plugins.groqware_shim.capacity`). A
model that does not fit is refused as the chip's compiler refuses it (exit 4). The program then
runs with the GroqChip's arithmetic (the profile the compiler embeds). Per-node errors come from
evaluating the user's graph with the same arithmetic (the device's ``Arith``);
``tests/kernels/test_model_groq.py`` shows that its outputs equal the program's.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.plugins.kernels.model.runs import Execution, ModelRun

if TYPE_CHECKING:
    from hwbench.accuracy.numerics.profile import NumericsProfile
    from hwbench.plugins.kernels.model.source import ModelFile


class GroqProgram:
    """A compiled program (its statistics) and its runner; ``refusal`` when the runner cannot
    execute it (an op its interpreter lacks), which a caller reports rather than hides."""

    def __init__(self, sdk_name: str, build: Any, stats: dict[str, Any], runner: Any, refusal: str, t: float) -> None:
        self.sdk_name, self.stats, self.runner, self.refusal, self.compile_s = sdk_name, stats, runner, refusal, t
        self._build = build  # the program's folder lives as long as the program (the SDK's runner reads it)

    def fallback_note(self) -> str:
        """What a run says when this program's runner cannot execute it."""
        return (
            f"{self.sdk_name} compiled the model (it fits); its runner cannot execute it "
            f"({self.refusal.split(';')[0]}): outputs from the evaluator with the GroqChip's arithmetic"
        )

    def run(self, feeds: Mapping[str, np.ndarray]) -> ModelRun:
        if self.runner is None:
            raise UsageError(self.refusal)
        t0 = time.perf_counter()
        out = self.runner(**{k: np.asarray(v) for k, v in feeds.items()})
        seconds = time.perf_counter() - t0
        execution: Execution = "real" if self.sdk_name == "groqware" else "emulated"
        engine = f"{self.sdk_name} program (groq-compiler + runner)"
        return ModelRun({k: np.asarray(v) for k, v in out.items()}, {}, engine, execution, self.compile_s, seconds)


def _for_compiler(model: ModelFile) -> bytes:
    """The model's bytes as the compiler reads them. A model of IR version 3 lists its initializers
    among the graph inputs; folding adds initializers that are not, which IR 4 allows (and which
    changes nothing else): such a model is handed over as IR 4."""
    import onnx

    if model.proto.ir_version >= 4:
        return model.path.read_bytes()
    copy = onnx.ModelProto()
    copy.CopyFrom(model.proto)
    copy.ir_version = 4
    return bytes(copy.SerializeToString())


_PROGRAMS: dict[tuple[str, str], GroqProgram] = {}
KEPT_PROGRAMS = 4
"""Compiled programs kept per process: an audit's preflight and its run compile a model once."""


def compile_program(model: ModelFile, profile: NumericsProfile) -> GroqProgram:
    """Compile the user's model for the GroqChip (GroqCompilerError, exit 4, when it does not fit);
    the same model and profile are compiled once per process."""
    key = (model.sha256, profile.to_json())
    if key not in _PROGRAMS:
        while len(_PROGRAMS) >= KEPT_PROGRAMS:
            del _PROGRAMS[next(iter(_PROGRAMS))]
        _PROGRAMS[key] = _compile(model, profile)
    return _PROGRAMS[key]


def _compile(model: ModelFile, profile: NumericsProfile) -> GroqProgram:
    import json

    from hwbench.plugins.groqware_shim.sdk import load_sdk

    sdk = load_sdk()
    t0 = time.perf_counter()
    tmp = tempfile.TemporaryDirectory(prefix="hwbench-groq-model-")
    build = Path(tmp.name)
    source = build / "model.onnx"
    source.write_bytes(_for_compiler(model))
    iop = sdk.compile(source, build, name="output", numerics=profile, large_program=True)
    stats_file = build / "stats.json"
    stats = json.loads(stats_file.read_text()) if stats_file.is_file() else {}
    runner: Any = None
    refusal = ""
    try:
        runner = sdk.tsp.create_tsp_runner(str(iop))
    except UsageError as exc:  # the runner's interpreter lacks an op of the compiled program
        refusal = str(exc)
    return GroqProgram(sdk.name, tmp, stats, runner, refusal, time.perf_counter() - t0)
