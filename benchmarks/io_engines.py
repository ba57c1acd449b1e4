"""Every registered engine side by side on io-ehh (the published performance protocol's shape).

For each size: a connected io-ehh workload, one executor per available engine (``setup_s`` =
its build: allocation + compilation), one warm-up call, then ``--repeat`` timed runs of
``--ms`` simulated milliseconds (40 steps fused per 1 ms sample, probes and spikes recorded,
host transfers included), taken round-robin across engines so load from other processes hits
them alike. Reports the minimum wall time per step (the protocol's figure), the CPU time of
the same run (more stable on a shared machine; it sums all threads), and the ratio to the
fastest engine. Engines come from the plugin registry, so new ones appear without changes here.

    python benchmarks/io_engines.py                      # 729 cells, float32
    python benchmarks/io_engines.py --sizes 729,8000 --dtype float32 --json
    python benchmarks/io_engines.py --engines jax,numpy  # a subset
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import numpy as np

# The TensorFlow baseline of the founding study: the speed goal is relative to it.
BASELINE_ENGINE = "tensorflow"
GOAL_RATIO = 10.0


def measure(
    engines: dict[str, Any], size: int, dtype: str, ms: int, repeat: int, connected: bool
) -> list[dict[str, Any]]:
    """Build every engine for one workload, then time them round-robin."""
    from hwbench.core.plugins import load_registry

    kernel = load_registry().kernel("io-ehh")
    wl = kernel.make_workload(size, connected=connected, seed=0)
    inputs = kernel.default_inputs(wl)
    steps = ms * kernel.info.sample_every
    built: dict[str, Any] = {}
    rows: dict[str, dict[str, Any]] = {}
    for name, engine in engines.items():
        print(f"[{size} cells] building {name} ({dtype}) ...", file=sys.stderr)
        ex = engine.build(kernel, wl, dtype=dtype)
        ex.run(wl.state0, inputs, 1)  # warm-up: first-call allocation and caches
        built[name] = ex
        rows[name] = {"engine": name, "dtype": dtype, "ncells": size, "setup_s": ex.setup_s, "wall": [], "cpu": []}
        if hasattr(ex, "small_loop_kernels"):
            rows[name]["xla_small_loop_kernels"] = ex.small_loop_kernels
    for r in range(repeat):
        for name, ex in built.items():
            print(f"[{size} cells] run {r + 1}/{repeat} {name} ...", file=sys.stderr)
            wall, cpu = time.perf_counter(), time.process_time()
            out = ex.run(wl.state0, inputs, ms)
            rows[name]["wall"].append(time.perf_counter() - wall)
            rows[name]["cpu"].append(time.process_time() - cpu)
            rows[name]["finite"] = bool(np.isfinite(np.asarray(out.probes)).all())
    result = []
    for row in rows.values():
        row["us_per_step"] = min(row.pop("wall")) / steps * 1e6
        row["cpu_us_per_step"] = min(row.pop("cpu")) / steps * 1e6
        result.append(row)
    fastest = min(r["us_per_step"] for r in result)
    for row in result:
        row["ratio_to_fastest"] = row["us_per_step"] / fastest
    return sorted(result, key=lambda r: r["us_per_step"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="729", help="comma-separated cell counts (cubes; default 729)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--engines", default="", help="comma-separated engine names (default: all available)")
    parser.add_argument("--ms", type=int, default=100, help="simulated ms per timed run (default 100)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per engine; the minimum counts")
    parser.add_argument("--unconnected", action="store_true", help="no gap junctions")
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    args = parser.parse_args(argv)

    from hwbench.core.engines.jax_engine import prepare_xla_flags
    from hwbench.core.plugins import load_registry

    prepare_xla_flags()  # before any engine starts JAX or TensorFlow's XLA
    registry = load_registry()
    wanted = [e.strip() for e in args.engines.split(",") if e.strip()]
    engines: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    for name in wanted or sorted(registry.engines):
        engine = registry.engine(name)
        ok, why = engine.available()
        if not ok or args.dtype not in engine.dtypes:
            skipped[name] = why if not ok else f"no {args.dtype}"
            continue
        engines[name] = engine
    rows: list[dict[str, Any]] = []
    for size in (int(s) for s in args.sizes.split(",")):
        rows += measure(engines, size, args.dtype, args.ms, args.repeat, not args.unconnected)

    goal = []
    for size in sorted({r["ncells"] for r in rows}):
        at = {r["engine"]: r for r in rows if r["ncells"] == size}
        if BASELINE_ENGINE in at and len(at) > 1:
            best = min((r for n, r in at.items() if n != BASELINE_ENGINE), key=lambda r: r["us_per_step"])
            ratio = at[BASELINE_ENGINE]["us_per_step"] / best["us_per_step"]
            goal.append({"ncells": size, "fastest": best["engine"], "speedup_vs_tensorflow": ratio, "goal": GOAL_RATIO})
    meta = {
        "kernel": "io-ehh",
        "connected": not args.unconnected,
        "dtype": args.dtype,
        "ms_per_run": args.ms,
        "repeat": args.repeat,
        "cpus": os.cpu_count(),
        "load_avg_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "skipped": skipped,
    }
    if args.json:
        print(json.dumps({"meta": meta, "rows": rows, "goal": goal}, indent=2))
        return 0
    conn = "unconnected" if args.unconnected else "connected"
    print(f"io-ehh {conn}, {args.dtype}, {args.ms} ms per run, min of {args.repeat}; {meta['cpus']} CPUs, ", end="")
    print(f"load {meta['load_avg_1min']:.1f}" if meta["load_avg_1min"] is not None else "load n/a")
    print(f"{'engine':12s} {'dtype':8s} {'ncells':>7s} {'setup_s':>8s} {'us/step':>10s} {'cpu us':>10s} {'ratio':>7s}")
    for r in rows:
        print(
            f"{r['engine']:12s} {r['dtype']:8s} {r['ncells']:7d} {r['setup_s']:8.2f} {r['us_per_step']:10.1f} "
            f"{r['cpu_us_per_step']:10.1f} {r['ratio_to_fastest']:7.2f}"
        )
    for g in goal:
        verdict = "met" if g["speedup_vs_tensorflow"] >= g["goal"] else "NOT met"
        print(
            f"{g['ncells']} cells: {g['fastest']} is {g['speedup_vs_tensorflow']:.1f}x faster than tensorflow "
            f"(goal >= {g['goal']:.0f}x: {verdict})"
        )
    if any(r.get("xla_small_loop_kernels") is False for r in rows):
        print("note: jax ran without single-kernel loops (JAX started before prepare_xla_flags; see jax_engine)")
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
