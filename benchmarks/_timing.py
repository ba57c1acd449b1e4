"""Timing helpers the emulation benchmarks share (imported as a sibling module: run the scripts as
``python benchmarks/NAME.py``, which puts this folder first on ``sys.path``)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

NATIVE = "cpu [fp32] (native)"


def round_robin_us_per_step(
    executors: dict[str, Any], kernel: Any, workload: Any, nsamples: int, repeat: int, *, warmup: bool = False
) -> dict[str, float]:
    """Minimum wall time per step of each executor, timed in turns so load changes hit all alike.

    ``warmup`` runs one untimed turn first (for executors that have not run yet).
    """
    inputs = kernel.default_inputs(workload)
    best = dict.fromkeys(executors, float("inf"))
    for turn in range(repeat + int(warmup)):
        for label, executor in executors.items():
            start = time.perf_counter()
            executor.run(workload.state0, inputs, nsamples)
            if turn >= int(warmup):
                best[label] = min(best[label], time.perf_counter() - start)
    return {label: t / (nsamples * kernel.info.sample_every) * 1e6 for label, t in best.items()}


def compiled_ns_per_element(step: Callable[[Any], Any], loops: int, repeat: int) -> float:
    """ns per element of ``step`` applied ``loops`` times to 7296 float32 values in one compiled
    XLA loop (in cache), minimum of ``repeat`` timed calls after one warm call."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from hwbench.core.engines.jax_engine import DEFAULT_COMPILER_OPTIONS

    x0 = jnp.asarray(np.random.default_rng(0).normal(0, 3, 7296).astype(np.float32))
    fn = jax.jit(lambda x: jax.lax.fori_loop(0, loops, lambda i, v: step(v), x))
    compiled = fn.lower(x0).compile(DEFAULT_COMPILER_OPTIONS)
    compiled(x0).block_until_ready()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        compiled(x0).block_until_ready()
        best = min(best, time.perf_counter() - start)
    return best / loops / x0.size * 1e9


def io_ehh_parser(description: str, ms: int) -> argparse.ArgumentParser:
    """The options of a benchmark that times io-ehh variants against the native run."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--cells", type=int, default=729)
    parser.add_argument("--ms", type=int, default=ms, help=f"simulated ms per timed run (default {ms})")
    parser.add_argument("--repeat", type=int, default=9, help="timed runs per configuration (min is kept)")
    return parser


def print_io_ehh_variants(
    args: argparse.Namespace, heading: str, build: Callable[[Any, Any, dict[str, Any]], dict[str, Any]]
) -> None:
    """Time io-ehh natively (``cpu [fp32]``, JAX) and as each executor ``build(kernel, workload,
    common)`` returns (label -> executor, built with the keyword arguments ``common``), round-robin
    in this process, and print microseconds per step and the ratio to the native run."""
    from hwbench.core.plugins import get_registry
    from hwbench.plugins.kernels.io_ehh import IoEhhKernel

    kernel = IoEhhKernel()
    workload = kernel.make_workload(args.cells, connected=True, seed=0)
    common: dict[str, Any] = {"engine": "jax", "dtype": "float32", "sample_every": kernel.info.sample_every}
    executors = {NATIVE: get_registry().devices["cpu"].executor_for(kernel, workload, mode="fp32", **common)}
    executors.update(build(kernel, workload, common))
    us = round_robin_us_per_step(executors, kernel, workload, args.ms, args.repeat, warmup=True)
    native = us[NATIVE]
    width = max(len(heading), *map(len, us))
    print(f"io-ehh, {args.cells} cells connected, JAX float32, min of {args.repeat} x {args.ms} ms, round-robin")
    print(f"{heading:<{width}} {'us/step':>8} {'x native':>9}")
    for label, value in us.items():
        print(f"{label:<{width}} {value:8.1f} {value / native:9.2f}")
