"""Built-in kernels plugin: each kernel module exposes ``kernels() -> list[Kernel]``."""

from __future__ import annotations

import importlib

from hwbench.core.hookspecs import hookimpl
from hwbench.core.kernel import Kernel

KERNEL_MODULES = (
    "hwbench.plugins.kernels.leaky_ring",
    "hwbench.plugins.kernels.io_ehh",
    "hwbench.plugins.kernels.lif",
    "hwbench.plugins.kernels.dl",
    "hwbench.plugins.kernels.model",
)


@hookimpl
def hwbench_kernels() -> list[Kernel]:
    found: list[Kernel] = []
    for module in KERNEL_MODULES:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        found.extend(mod.kernels())
    return found
