"""The ``io-ehh`` kernel package: model equations, torus network, and the Kernel object."""

from __future__ import annotations

from hwbench.core.kernel import Kernel
from hwbench.plugins.kernels.io_ehh.kernel import IoEhhKernel

__all__ = ["IoEhhKernel", "kernels"]


def kernels() -> list[Kernel]:
    """Kernels this module registers (called by :mod:`hwbench.plugins.kernels`)."""
    return [IoEhhKernel()]
