"""Scatter-add lowerings and loop layouts of the JAX engine, measured side by side on io-ehh.

Two sections, each variant built in one process and timed round-robin (so load from other
processes hits all variants alike), min of ``--repeat`` runs, wall and CPU (process) time:

1. gap junctions only: a compiled loop of the io-ehh gap-junction update (gather, Cx36 map,
   scatter-add) through ``JaxOps`` with each ``scatter`` strategy — the lowering in isolation;
2. the full io-ehh step through ``JaxEngine`` with each strategy and loop layout.

The engine's defaults (``DEFAULT_SCATTER`` and ``JaxTuning``) are picked from these numbers.
``max |diff|`` compares each variant's final state with the first one (summation order only).

    python benchmarks/scatter_strategies.py --sizes 729,8000 [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall s, CPU s, result) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def round_robin(variants: dict[str, Callable[[], Any]], repeat: int) -> dict[str, dict[str, Any]]:
    """Time every variant ``repeat`` times, interleaved; keep the minima and the last result."""
    best: dict[str, dict[str, Any]] = {k: {"wall": np.inf, "cpu": np.inf, "out": None} for k in variants}
    for _ in range(repeat):
        for name, fn in variants.items():
            wall, cpu, out = timed(fn)
            best[name] = {"wall": min(best[name]["wall"], wall), "cpu": min(best[name]["cpu"], cpu), "out": out}
    return best


def gap_junction_loops(size: int, dtype: str, steps: int, strategies: list[str]) -> dict[str, Callable[[], Any]]:
    """Compiled loops of V <- V + 1e-3 (I_gj(V) - V), one per scatter strategy."""
    import jax
    import jax.numpy as jnp

    from hwbench.core.engines.jax_engine import DEFAULT_COMPILER_OPTIONS, ONEHOT_MAX_ELEMENTS, JaxOps, x64_mode
    from hwbench.plugins.kernels.io_ehh import IoEhhKernel, model

    wl = IoEhhKernel().make_workload(size, connected=True, seed=0)
    params = {"src": wl.arrays["src"], "tgt": wl.arrays["tgt"], "n": size, "g_gj": 0.05}
    v0 = np.asarray(wl.state0[model.ROW["V_dend"]], dtype=dtype)
    loops: dict[str, Callable[[], Any]] = {}
    with x64_mode(np.dtype(dtype)):
        for strategy in strategies:
            if strategy == "onehot" and size * len(params["src"]) > ONEHOT_MAX_ELEMENTS:
                continue
            ops = JaxOps(np.dtype(dtype), scatter=strategy)

            def body(_: Any, v: Any, ops: JaxOps = ops) -> Any:
                return v + 1e-3 * (model.gap_junction_current(ops, v, params) - v)

            program = jax.jit(lambda v, body=body: jax.lax.fori_loop(0, steps, body, v))
            compiled = program.lower(jnp.asarray(v0)).compile(DEFAULT_COMPILER_OPTIONS)

            def call(compiled: Any = compiled) -> np.ndarray:
                with x64_mode(np.dtype(dtype)):
                    return np.asarray(compiled(v0))

            loops[strategy] = call
    return loops


def engine_variants(size: int, dtype: str, nsamples: int, variants: dict[str, dict[str, Any]]) -> tuple[dict, dict]:
    """Executors of the full io-ehh step, one per JaxEngine tuning; returns (callables, setup_s)."""
    from hwbench.core.engines.jax_engine import JaxEngine
    from hwbench.plugins.kernels.io_ehh import IoEhhKernel

    kernel = IoEhhKernel()
    wl = kernel.make_workload(size, connected=True, seed=0)
    calls: dict[str, Callable[[], Any]] = {}
    setup: dict[str, float] = {}
    for name, tuning in variants.items():
        ex = JaxEngine(**tuning).build(kernel, wl, dtype=dtype)
        ex.run(wl.state0, {}, 1)  # warm-up: first-call allocation
        setup[name] = ex.setup_s
        calls[name] = lambda ex=ex: ex.run(wl.state0, {}, nsamples).state
    return calls, setup


def rows_from(section: str, size: int, steps: int, best: dict[str, dict[str, Any]], setup: dict | None = None) -> list:
    names = list(best)
    ref = best[names[0]]["out"]
    fastest = min(b["wall"] for b in best.values())
    rows = []
    for name in names:
        b = best[name]
        rows.append(
            {
                "section": section,
                "ncells": size,
                "variant": name,
                "setup_s": None if setup is None else round(setup[name], 3),
                "us_per_step_wall": b["wall"] / steps * 1e6,
                "us_per_step_cpu": b["cpu"] / steps * 1e6,
                "ratio_to_fastest": b["wall"] / fastest,
                "max_abs_diff_to_first": float(np.nanmax(np.abs(np.asarray(b["out"]) - np.asarray(ref)))),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="729,8000", help="comma-separated cube sizes (default 729,8000)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--steps", type=int, default=4000, help="steps per timed run (default: 100 ms of io-ehh)")
    parser.add_argument("--strategies", default="passes,slots,table,segment_sum,at_add,onehot")
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    args = parser.parse_args(argv)

    from hwbench.core.engines.jax_engine import prepare_xla_flags

    prepare_xla_flags()
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    rows: list[dict[str, Any]] = []
    for size in (int(s) for s in args.sizes.split(",")):
        print(f"[{size} cells] gap junctions only ...", file=sys.stderr)
        best = round_robin(gap_junction_loops(size, args.dtype, args.steps, strategies), args.repeat)
        rows += rows_from("gap junctions only", size, args.steps, best)

        nsamples = max(1, args.steps // 40)
        variants: dict[str, dict[str, Any]] = {f"scatter={s}": {"scatter": s} for s in strategies if s != "onehot"}
        variants["scatter=passes, split_rows=False"] = {"scatter": "passes", "split_rows": False}
        variants["scatter=passes, no compiler options"] = {"scatter": "passes", "compiler_options": {}}
        print(f"[{size} cells] full io-ehh step, engine variants ...", file=sys.stderr)
        calls, setup = engine_variants(size, args.dtype, nsamples, variants)
        rows += rows_from("full io-ehh step (JaxEngine)", size, nsamples * 40, round_robin(calls, args.repeat), setup)

    meta = {
        "kernel": "io-ehh",
        "connected": True,
        "dtype": args.dtype,
        "repeat": args.repeat,
        "cpus": os.cpu_count(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "load_avg_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }
    if args.json:
        print(json.dumps({"meta": meta, "rows": rows}, indent=2))
        return 0
    print(f"io-ehh connected, {args.dtype}, min of {args.repeat}; {meta['cpus']} CPUs, load {meta['load_avg_1min']}")
    header = f"{'section':30s} {'ncells':>7s} {'variant':36s} {'setup_s':>8s} {'us/step':>9s} {'cpu us':>8s} "
    print(header + f"{'ratio':>6s} {'max|diff|':>9s}")
    for r in rows:
        setup = "" if r["setup_s"] is None else f"{r['setup_s']:.2f}"
        print(
            f"{r['section']:30s} {r['ncells']:7d} {r['variant']:36s} {setup:>8s} {r['us_per_step_wall']:9.1f} "
            f"{r['us_per_step_cpu']:8.1f} {r['ratio_to_fastest']:6.2f} {r['max_abs_diff_to_first']:9.1e}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
