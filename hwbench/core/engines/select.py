"""Choosing an engine: the fastest available one unless the user names one."""

from __future__ import annotations

from hwbench.core.engine import Engine
from hwbench.core.errors import UnavailableError, UsageError, unknown_name

# Fastest first, by benchmarks/io_engines.py on a 2-core CPU (see docs/index.md, "Benchmarks").
PREFERENCE = ("jax", "numpy", "tensorflow", "onnx")


def pick_engine(engines: dict[str, Engine], name: str | None = None, dtype: str = "float32") -> Engine:
    """The named engine (checked), or the first available one in :data:`PREFERENCE` order."""
    if name is not None:
        if name not in engines:
            raise unknown_name("engine", name, engines)
        engine = engines[name]
        ok, reason = engine.available()
        if not ok:
            raise UnavailableError(f"engine '{name}' is not available here: {reason}")
        if dtype not in engine.dtypes:
            raise UsageError(f"engine '{name}' does not run {dtype}; it runs: {', '.join(engine.dtypes)}")
        return engine
    ordered = [engines[n] for n in PREFERENCE if n in engines] + [e for n, e in engines.items() if n not in PREFERENCE]
    for engine in ordered:
        if dtype in engine.dtypes and engine.available()[0]:
            return engine
    raise UnavailableError(f"no engine available for {dtype}; registered: {', '.join(engines) or 'none'}")
