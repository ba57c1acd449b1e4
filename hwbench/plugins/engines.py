"""Built-in plugin registering the execution engines that live in :mod:`hwbench.core.engines`."""

from __future__ import annotations

import importlib

from hwbench.core.engine import Engine
from hwbench.core.hookspecs import hookimpl

# engine module -> class; modules import their heavy library lazily, so this stays cheap.
ENGINES = {
    "hwbench.core.engines.numpy_engine": "NumpyEngine",
    "hwbench.core.engines.jax_engine": "JaxEngine",
    "hwbench.core.engines.tf_engine": "TensorFlowEngine",
    "hwbench.core.engines.onnx_engine": "OnnxEngine",
}


@hookimpl
def hwbench_engines() -> list[Engine]:
    engines = []
    for module, cls in ENGINES.items():
        try:
            engines.append(getattr(importlib.import_module(module), cls)())
        except ModuleNotFoundError as exc:
            if exc.name != module:  # a real import error inside an engine module must surface
                raise
    return engines
