"""Choosing an engine: the fastest available one unless the user names one."""

from __future__ import annotations

from typing import Any

from hwbench.core.engine import Engine, Executor
from hwbench.core.errors import UnavailableError, UsageError, unknown_name
from hwbench.core.kernel import Kernel, Workload

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


def build_engine(
    engine: Engine, kernel: Kernel, workload: Workload, *, shards: int | None = None, **options: Any
) -> Executor:
    """``engine.build(kernel, workload, **options)``, or with ``shards`` its build split over that many
    JAX devices (:func:`hwbench.core.engines.jax_sharded.build_sharded`; the JAX engine only)."""
    if shards is None:
        return engine.build(kernel, workload, **options)
    from hwbench.core.engines.jax_sharded import build_sharded

    return build_sharded(engine, kernel, workload, shards=shards, **options)
