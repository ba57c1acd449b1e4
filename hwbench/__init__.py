"""hwbench: run scientific and AI kernels on accelerators, measure speed, audit numerics.

As a library (docs/library.md)::

    import hwbench
    report = hwbench.audit("groq", quick=True)   # the audit report; .verdict is PASS, WARN or FAIL
    hwbench.run(kernel="io-ehh", device="cpu")   # one run: timings, traces
    hwbench.bench(device="cpu", cells=[729])     # the performance protocol
    hwbench.open_store().to_pandas(kind="audit") # the stored history as a DataFrame
    hwbench.probe("h100:fp16", compare="a100")   # a matrix unit's features, by the published probes
    hwbench.audit(fn, x, w, devices=["groq"])    # a JAX function, equation by equation (docs/testing.md)
    hwbench.run(fn, x, w, device="groq")         # its outputs as the device computes them

The names are loaded on first use (PEP 562), so ``import hwbench`` and the CLI's start stay fast;
``__init__.pyi`` gives type checkers their real signatures.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "audit": "hwbench.library.audit",
    "Audit": "hwbench.library.audit",
    "run": "hwbench.library.run",
    "Run": "hwbench.library.run",
    "bench": "hwbench.library.bench",
    "Bench": "hwbench.library.bench",
    "probe": "hwbench.library.probe",
    "ProbeReport": "hwbench.library.probe",
    "open_store": "hwbench.library.store",
    "ResultsStore": "hwbench.library.store",
    "Cluster": "hwbench.core.distributed",
}

__all__ = [
    "Audit",
    "Bench",
    "Cluster",
    "ProbeReport",
    "ResultsStore",
    "Run",
    "__version__",
    "audit",
    "bench",
    "open_store",
    "probe",
    "run",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hwbench' has no attribute '{name}'")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
