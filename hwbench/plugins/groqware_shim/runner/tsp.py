"""The shim's ``groq.runner.tsp``: load an ``.iop`` program and run it like a GroqChip would.

Same surface as the SDK module: ``create_tsp_runner(iop_path)`` returns a callable that takes
the program's inputs as named numpy arrays (names matched case-insensitively, as the study's
runners relied on) and returns a dict of named numpy outputs. Behind it, the program's lowered
ONNX graph is evaluated by hwbench's op-level evaluator with the numerics profile the compiler
embedded (:mod:`hwbench.plugins.groqware_shim.execution`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.plugins.groqware_shim.execution import BACKENDS, ProgramFunction
from hwbench.plugins.groqware_shim.program import Program, read_iop

BACKEND_ENV = "HWBENCH_GROQSHIM_BACKEND"
"""Environment variable choosing the runner's backend: ``numpy`` (default) or ``jax``.

numpy interprets node by node and starts at once; jax compiles the whole fused graph into one
XLA program, which pays off only for small graphs (XLA needs many minutes for a 40-step io-ehh
block of ~12,000 nodes)."""


class TspRunner:
    """A loaded program: ``runner(state=..., ...) -> {"output name": array}``."""

    def __init__(self, program: Program, backend: str) -> None:
        from hwbench.accuracy.numerics.profile import NumericsProfile

        self.program = program
        self.backend = backend
        self.profile = NumericsProfile.model_validate(program.numerics) if program.numerics else None
        self.function = ProgramFunction(program.model, self.profile, backend=backend)
        self._names = {name.lower(): name for name in self.function.inputs}
        self.calls = 0
        self.first_call_s: float | None = None  # includes the jit compile on the jax backend

    @property
    def input_names(self) -> list[str]:
        return list(self.function.inputs)

    @property
    def output_names(self) -> list[str]:
        return list(self.function.outputs)

    def __call__(self, **inputs: Any) -> dict[str, np.ndarray]:
        feeds = {}
        for key, value in inputs.items():
            name = self._names.get(key.lower())
            if name is None:
                raise UsageError(
                    f"program '{self.program.name}' has no input '{key}'; it takes: {', '.join(self.function.inputs)}"
                )
            feeds[name] = value
        start = time.perf_counter()
        out = self.function(feeds)
        if self.first_call_s is None:
            self.first_call_s = time.perf_counter() - start
        self.calls += 1
        return out


def create_tsp_runner(iop_path: str | Path, *, backend: str | None = None) -> TspRunner:
    """Load ``iop_path`` (written by the shim's compiler) and prepare it to run."""
    chosen = backend or os.environ.get(BACKEND_ENV) or "numpy"
    if chosen not in BACKENDS:
        raise UsageError(f"{BACKEND_ENV}={chosen!r}: choose from {', '.join(BACKENDS)}")
    return TspRunner(read_iop(iop_path), chosen)
