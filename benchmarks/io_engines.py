"""Every registered engine side by side on io-ehh (the published performance protocol's shape).

For each size: a connected io-ehh workload, one executor per available engine (``setup_s`` =
its build: allocation + compilation), one warm-up call, then ``--repeat`` timed runs of
``--ms`` simulated milliseconds (40 steps fused per 1 ms sample, probes and spikes recorded,
host transfers included), taken round-robin across engines so load from other processes hits
them alike. Reports the minimum wall time per step (the protocol's figure), the CPU time of
the same run (more stable on a shared machine; it sums all threads), and the ratio to the
fastest engine. Engines come from the plugin registry, so new ones appear without changes here.

The limit, two ways. A contender: the step written by hand as one C loop (``io_ehh_step.c``,
compiled with ``-O3 -march=native`` where a C compiler is found; skipped with the reason where
not), float32 only, timed in the same round-robin and doing the same work (probes, spikes). A
floor: the kernel's own FLOP and byte counts per cell-step against this core's peak, measured (fp32
FMAs on the widest vectors, from the same C file, in CPU time) and this host's copy bandwidth at the
step's own byte count, measured (a C copy loop: the cache level the step's data lives in): the floor
is the larger of FLOPs / peak and bytes / bandwidth, and each contender's time is printed as a
multiple of it (none without a C compiler).

    python benchmarks/io_engines.py                      # 729 cells, float32
    python benchmarks/io_engines.py --sizes 729,8000 --dtype float32 --json
    python benchmarks/io_engines.py --engines jax,numpy  # a subset
    python benchmarks/io_engines.py --engines jax --no-c-loop
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import _c_step
import numpy as np

# The TensorFlow baseline of the founding study: the speed goal is relative to it.
BASELINE_ENGINE = "tensorflow"
GOAL_RATIO = 10.0
C_LOOP = "c-loop"  # the hand-written limit contender (None in the contenders: not a registry engine)
GOAL_VS_C_LOOP = 0.5  # hwbench's fastest engine: at most this fraction of the C loop's time


def measure(
    engines: dict[str, Any], size: int, dtype: str, ms: int, repeat: int, connected: bool
) -> list[dict[str, Any]]:
    """Build every contender for one workload, then time them round-robin."""
    from hwbench.core.plugins import load_registry

    kernel = load_registry().kernel("io-ehh")
    wl = kernel.make_workload(size, connected=connected, seed=0)
    inputs = kernel.default_inputs(wl)
    steps = ms * kernel.info.sample_every
    built: dict[str, Any] = {}
    rows: dict[str, dict[str, Any]] = {}
    for name, engine in engines.items():
        print(f"[{size} cells] building {name} ({dtype}) ...", file=sys.stderr)
        if engine is None:
            ex = _c_step.CLoop(wl, kernel.info.sample_every)
        else:
            ex = engine.build(kernel, wl, dtype=dtype)
        ex.run(wl.state0, inputs, 1)  # warm-up: first-call allocation and caches
        built[name] = ex
        rows[name] = {"engine": name, "dtype": dtype, "ncells": size, "setup_s": ex.setup_s, "wall": [], "cpu": []}
        rows[name]["flops_per_cell_step"] = kernel.flops_per_step(wl) / size
        rows[name]["bytes_per_cell_step"] = kernel.bytes_per_step(wl) / size
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


def machine_peak(no_c_loop: bool) -> dict[str, Any]:
    """This core's fp32 peak (measured with the C file's FMA loop; None without a compiler), and how it was obtained."""
    why = "--no-c-loop" if no_c_loop else _c_step.unavailable()
    if why:
        return {"peak_flops": None, "peak_source": f"not measured ({why})"}
    source = "measured: one core, CPU time of independent fp32 FMAs on 64-byte vectors (io_ehh_step.c)"
    return {"peak_flops": _c_step.fma_peak_flops(), "peak_source": source}


def copy_bandwidth(nbytes: int, limit: dict[str, Any]) -> float | None:
    """This core's copy bandwidth moving ``nbytes`` (a buffer the size of what one step touches, so
    it sits in the cache level the step's data sits in), measured with the C file's copy loop; None
    without a compiler (a numpy copy of a cache-sized buffer would time numpy's call, not the copy)."""
    return _c_step.copy_bandwidth(nbytes) if limit["peak_flops"] else None


def add_floor(rows: list[dict[str, Any]], limit: dict[str, Any]) -> None:
    """Each row's floor (us per step: the kernel's FLOPs at the peak, or its bytes at the copy
    bandwidth of a buffer that size, whichever is longer) and its time as a multiple of it."""
    bandwidth: dict[int, float] = {}
    for row in rows:
        size = row["ncells"]
        flops, nbytes = row["flops_per_cell_step"] * size, row["bytes_per_cell_step"] * size
        if size not in bandwidth:
            bandwidth[size] = copy_bandwidth(int(nbytes), limit)
        row["bandwidth"] = bandwidth[size]
        if not limit["peak_flops"] or not bandwidth[size]:
            row["floor_us_per_step"] = row["ratio_to_floor"] = row["cpu_ratio_to_floor"] = None
            continue
        compute, memory = flops / limit["peak_flops"], nbytes / bandwidth[size]
        row["floor_us_per_step"] = max(compute, memory) * 1e6
        row["floor_bound"] = "compute" if compute >= memory else "memory"
        row["ratio_to_floor"] = row["us_per_step"] / row["floor_us_per_step"]
        row["cpu_ratio_to_floor"] = row["cpu_us_per_step"] / row["floor_us_per_step"]


def goals(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per size: hwbench's fastest engine against TensorFlow (the study's path) and against the C loop."""
    found = []
    for size in sorted({r["ncells"] for r in rows}):
        at = {r["engine"]: r for r in rows if r["ncells"] == size}
        ours = [r for n, r in at.items() if n not in (BASELINE_ENGINE, C_LOOP)]
        if not ours:
            continue
        best = min(ours, key=lambda r: r["us_per_step"])
        goal: dict[str, Any] = {"ncells": size, "fastest": best["engine"]}
        if BASELINE_ENGINE in at:
            goal["speedup_vs_tensorflow"] = at[BASELINE_ENGINE]["us_per_step"] / best["us_per_step"]
            goal["cpu_speedup_vs_tensorflow"] = at[BASELINE_ENGINE]["cpu_us_per_step"] / best["cpu_us_per_step"]
            goal["goal"] = GOAL_RATIO
        if C_LOOP in at:
            goal["time_vs_c_loop"] = best["us_per_step"] / at[C_LOOP]["us_per_step"]
            goal["cpu_time_vs_c_loop"] = best["cpu_us_per_step"] / at[C_LOOP]["cpu_us_per_step"]
            goal["goal_vs_c_loop"] = GOAL_VS_C_LOOP
        found.append(goal)
    return found


def contenders(names: list[str], dtype: str, no_c_loop: bool) -> tuple[dict[str, Any], dict[str, str]]:
    """The registry's engines asked for (all by default) and the C loop, with the reasons of those skipped."""
    from hwbench.core.plugins import load_registry

    registry = load_registry()
    engines: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    for name in [n for n in names if n != C_LOOP] or sorted(registry.engines):
        engine = registry.engine(name)
        ok, why = engine.available()
        if not ok or dtype not in engine.dtypes:
            skipped[name] = why if not ok else f"no {dtype}"
            continue
        engines[name] = engine
    why_not = "--no-c-loop" if no_c_loop else _c_step.unavailable()
    if why_not is None and dtype != "float32":
        why_not = f"the C loop is float32 only, not {dtype}"
    if why_not is None:
        engines[C_LOOP] = None
    else:
        skipped[C_LOOP] = why_not
    return engines, skipped


def print_report(
    args: argparse.Namespace, meta: dict[str, Any], rows: list[dict[str, Any]], found: list[dict[str, Any]]
) -> None:
    conn = "unconnected" if args.unconnected else "connected"
    print(f"io-ehh {conn}, {args.dtype}, {args.ms} ms per run, min of {args.repeat}; {meta['cpus']} CPUs, ", end="")
    print(f"load {meta['load_avg_1min']:.1f}" if meta["load_avg_1min"] is not None else "load n/a")
    limit = meta["limit"]
    peak = f"{limit['peak_flops'] / 1e9:.1f} GFLOP/s" if limit["peak_flops"] else "n/a"
    print(f"limit: fp32 peak {peak} ({limit['peak_source']})")
    for size in sorted({r["ncells"] for r in rows}):
        r0 = next(r for r in rows if r["ncells"] == size)
        flops, nbytes = r0["flops_per_cell_step"], r0["bytes_per_cell_step"]
        print(f"{size} cells, per cell-step: {flops:.1f} FLOPs, {nbytes:.1f} bytes (the kernel's counts)", end="")
        if r0["floor_us_per_step"] is None:
            print("; no floor (no peak measured)")
            continue
        print(f"; copy bandwidth at that size {r0['bandwidth'] / 1e9:.0f} GB/s (measured, C copy loop, CPU time); "
              f"floor {r0['floor_us_per_step']:.2f} us/step ({r0['floor_bound']}-bound)")  # fmt: skip
    head = ("engine", "dtype", "ncells", "setup_s", "us/step", "cpu us", "ratio", "x floor", "cpu x floor")
    print("{:12s} {:8s} {:>7s} {:>8s} {:>10s} {:>10s} {:>7s} {:>8s} {:>12s}".format(*head))
    for r in rows:
        floors = [r["ratio_to_floor"], r["cpu_ratio_to_floor"]]
        floor_text = "{:8.1f} {:12.1f}".format(*floors) if floors[0] is not None else f"{'-':>8s} {'-':>12s}"
        print(
            f"{r['engine']:12s} {r['dtype']:8s} {r['ncells']:7d} {r['setup_s']:8.2f} {r['us_per_step']:10.1f} "
            f"{r['cpu_us_per_step']:10.1f} {r['ratio_to_fastest']:7.2f} {floor_text}"
        )
    print_goals(found)
    if any(r.get("xla_small_loop_kernels") is False for r in rows):
        print("note: jax ran without single-kernel loops (JAX started before prepare_xla_flags; see jax_engine)")
    for name, why in meta["skipped"].items():
        print(f"skipped {name}: {why}")


def print_goals(found: list[dict[str, Any]]) -> None:
    """The two goals at each size, in wall time (the protocol's figure) and in CPU time."""
    for g in found:
        size, fastest = g["ncells"], g["fastest"]
        if "speedup_vs_tensorflow" in g:
            verdict = "met" if g["speedup_vs_tensorflow"] >= g["goal"] else "NOT met"
            cpu = g["cpu_speedup_vs_tensorflow"]
            print(f"{size} cells: {fastest} is {g['speedup_vs_tensorflow']:.1f}x faster than tensorflow", end=" ")
            print(f"(goal >= {g['goal']:.0f}x: {verdict}; in CPU time {cpu:.1f}x)")
        if "time_vs_c_loop" in g:
            verdict = "met" if g["time_vs_c_loop"] <= g["goal_vs_c_loop"] else "NOT met"
            cpu = g["cpu_time_vs_c_loop"]
            print(f"{size} cells: {fastest} takes {g['time_vs_c_loop']:.2f}x the C loop's time", end=" ")
            print(f"(goal <= {g['goal_vs_c_loop']:.1f}x: {verdict}; in CPU time {cpu:.2f}x)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="729", help="comma-separated cell counts (cubes; default 729)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--engines", default="", help=f"comma-separated engine names or {C_LOOP} (default: all)")
    parser.add_argument("--ms", type=int, default=100, help="simulated ms per timed run (default 100)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per engine; the minimum counts")
    parser.add_argument("--unconnected", action="store_true", help="no gap junctions")
    parser.add_argument("--no-c-loop", action="store_true", help="leave out the hand-written C loop and the peak")
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    args = parser.parse_args(argv)

    from hwbench.core.engines.jax_engine import prepare_xla_flags

    prepare_xla_flags()  # before any engine starts JAX or TensorFlow's XLA
    wanted = [e.strip() for e in args.engines.split(",") if e.strip()]
    no_c_loop = args.no_c_loop or (bool(wanted) and C_LOOP not in wanted)
    engines, skipped = contenders(wanted, args.dtype, no_c_loop)
    rows: list[dict[str, Any]] = []
    for size in (int(s) for s in args.sizes.split(",")):
        rows += measure(engines, size, args.dtype, args.ms, args.repeat, not args.unconnected)
    limit = machine_peak(args.no_c_loop)
    add_floor(rows, limit)
    found = goals(rows)
    meta = {
        "kernel": "io-ehh",
        "connected": not args.unconnected,
        "dtype": args.dtype,
        "ms_per_run": args.ms,
        "repeat": args.repeat,
        "cpus": os.cpu_count(),
        "load_avg_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "limit": limit,
        "skipped": skipped,
    }
    if args.json:
        print(json.dumps({"meta": meta, "rows": rows, "goal": found}, indent=2))
        return 0
    print_report(args, meta, rows, found)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
