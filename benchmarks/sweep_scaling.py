"""A sweep on a 2-worker Dask LocalCluster against the same audits run one after another in one process.

The issue's goals: 8 quick audits on a 2-worker LocalCluster finish in <= 0.6x the serial time
(compile caches warm in both), and the scheduling overhead per cell is <= 5 % of a quick audit.

All arms run the same 8 cells (cpu fp32 with exp at 10..17 mantissa bits, quick stress test,
each an ordinary audit):

* ``serial``: the 8 audits one after another in this process, as 8 ``hwbench audit`` would run
  them (each audit runs its reference, gold, ensemble and candidate, in threads across the cores);
* ``sweep``: the sweep on a 2-worker LocalCluster as ``hwbench sweep`` runs it (one thread per
  worker; each worker runs the reference, gold and ensemble of the scenario once and reuses them
  for its later cells);
* ``serial-shared``: the serial arm with that same reuse, to separate the gain of sharing from
  the gain of the second worker.

Each arm is run once untimed first, so the persistent JAX cache and each process's in-memory
compile caches are warm (the shared base traces are cleared before every timed round), then
timed ``--repeats`` times, alternating; the minimum is reported. Overhead per cell is the worker
time not spent inside an audit, ``(wall x workers - sum of the cells' own audit times) / cells``
(scheduling, result transfer and any idle tail), and, separately, the round trip of an empty task.

    python benchmarks/sweep_scaling.py            # 8 cells, 2 workers, 2 repeats
    python benchmarks/sweep_scaling.py --json
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from hwbench.core.ops import OpClass
from hwbench.stress.sweep import dask_client, run_sweep
from hwbench.stress.sweep_cell import BaseRunCache, CellSettings, clear_base_runs, run_cell
from hwbench.stress.sweep_spec import Cell

GOAL_RATIO = 0.6
GOAL_OVERHEAD = 0.05
SETTINGS = CellSettings(kernel="io-ehh", protocols=("stress",), quick=True)
ALONE = CellSettings(kernel="io-ehh", protocols=("stress",), quick=True, share_base_runs=False)


class MemoryLedger:
    """Records nothing to disk: every timed round runs every cell."""

    def recorded(self) -> dict[str, dict[str, Any]]:
        return {}

    def record(self, key: str, document: dict[str, Any]) -> None:
        pass


def serial(cells: list[Cell], *, shared: bool = False) -> tuple[float, float]:
    """(wall, sum of audit times) of the cells one after another in this process."""
    cache = BaseRunCache() if shared else None
    t0 = time.perf_counter()
    outcomes = [run_cell(c, SETTINGS if shared else ALONE, base_runs=cache) for c in cells]
    return time.perf_counter() - t0, sum(o.elapsed_s for o in outcomes)


def parallel(client: Any, cells: list[Cell]) -> tuple[float, float]:
    client.run(clear_base_runs)
    t0 = time.perf_counter()
    outcomes = run_sweep(client, cells, SETTINGS, MemoryLedger(), poll_s=0.05)
    assert all(o.status == "done" for o in outcomes), [o.reason for o in outcomes if o.status != "done"]
    return time.perf_counter() - t0, sum(o.elapsed_s for o in outcomes)


def empty_round_trip(client: Any, n: int = 50) -> float:
    """Seconds per empty task submitted and gathered one at a time (the scheduler's floor)."""
    t0 = time.perf_counter()
    for i in range(n):
        client.submit(int, i, pure=False).result()
    return (time.perf_counter() - t0) / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cells = [Cell(device="cpu", mode="fp32", ops=(OpClass.EXP,), bits=10 + i) for i in range(args.cells)]
    with dask_client(workers=args.workers) as (client, _):
        serial(cells)  # warm: persistent cache filled, this process's caches built
        parallel(client, cells)  # warm: every worker has seen the programs
        runs: dict[str, list[tuple[float, float]]] = {"serial": [], "sweep": [], "serial-shared": []}
        for _ in range(args.repeats):
            runs["serial"].append(serial(cells))
            runs["sweep"].append(parallel(client, cells))
            runs["serial-shared"].append(serial(cells, shared=True))
        trip = empty_round_trip(client)
    s_wall, s_audit = min(runs["serial"])
    p_wall, p_audit = min(runs["sweep"])
    h_wall, _ = min(runs["serial-shared"])
    per_audit = s_audit / len(cells)
    overhead = max(0.0, p_wall * args.workers - p_audit) / len(cells)
    out = {
        "cells": len(cells),
        "workers": args.workers,
        "serial_s": round(s_wall, 2),
        "sweep_s": round(p_wall, 2),
        "serial_shared_s": round(h_wall, 2),
        "ratio": round(p_wall / s_wall, 3),
        "ratio_same_work": round(p_wall / h_wall, 3),
        "goal_ratio": GOAL_RATIO,
        "quick_audit_s": round(per_audit, 2),
        "overhead_per_cell_s": round(overhead, 3),
        "overhead_fraction": round(overhead / per_audit, 4),
        "empty_task_round_trip_ms": round(trip * 1e3, 2),
        "goal_overhead_fraction": GOAL_OVERHEAD,
        "all_s": {arm: [round(w, 2) for w, _ in r] for arm, r in runs.items()},
        "note": "min of repeats; the machine is shared with other agents, so absolute times vary",
    }
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(
            f"{len(cells)} quick audits: serial {s_wall:.1f} s, sweep on a {args.workers}-worker LocalCluster "
            f"{p_wall:.1f} s -> {p_wall / s_wall:.2f}x (goal <= {GOAL_RATIO}x)"
        )
        print(f"same work (base runs shared in both): serial {h_wall:.1f} s -> {p_wall / h_wall:.2f}x")
        print(
            f"overhead per cell {overhead * 1e3:.0f} ms = {100 * overhead / per_audit:.1f} % of a quick audit "
            f"({per_audit:.1f} s; goal <= {100 * GOAL_OVERHEAD:.0f} %); empty task round trip {trip * 1e3:.1f} ms"
        )
        print("(shared machine: other agents were running; figures are the minimum of the repeats)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
