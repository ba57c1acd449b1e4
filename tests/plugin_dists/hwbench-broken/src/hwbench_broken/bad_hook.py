"""A plugin that imports fine but whose registration hook raises."""

from __future__ import annotations

from hwbench.core.hookspecs import hookimpl
from hwbench.core.kernel import Kernel


@hookimpl
def hwbench_kernels() -> list[Kernel]:
    raise RuntimeError("kernel catalogue /opt/foo/kernels.json not found")
