"""How io-ehh scales over JAX devices: strong and weak scaling, the halo exchange's share, a model.

Everything runs on this host's CPU split into forced XLA host devices
(``--xla_force_host_platform_device_count``, set here before JAX starts), so N "devices" share
the same cores: the figures say what sharding costs and what the exchange costs, not what N chips
would gain. Contenders of a section are timed round-robin in this one process (each builds, runs
once untimed, then takes turns), and the minimum wall time of ``--repeat`` runs counts; the CPU time
of the same run (all threads) is shown beside it, since wall time on a loaded machine is noisy.

* strong scaling: one network (10^6 cells) unsharded and over 1, 2, 4 devices;
* the halo exchange's share of the step: each sharded program against a second compiled program
  whose exchange (``lax.ppermute``) is replaced by a local copy of the same shape
  (``build_sharded(..., exchange=False)``: same sends, no communication): share = 1 - t(no exchange)
  / t(exchange);
* weak scaling: about 64,000 cells per device (40^3 on 1, 50^3 on 2, 64^3 on 4);
* connected over unconnected at the study's published sizes (n = 4..20, 30..100);
* peak memory (resident set) of a run at 10^6 cells, each in a child process of its own;
* a model of the step time on N devices, T = cells / (N R) + a + b * halo bytes, fitted to the
  measured points, checked against them, and extrapolated to the study's 125,000 and 10^6 cells on 8
  A100 GPUs under stated assumptions (see ``gpu_model``).

    python benchmarks/io_ehh_scaling.py              # the full study (about 30 min on 2 cores)
    python benchmarks/io_ehh_scaling.py --quick      # small sizes, seconds (the test runs it)
    python benchmarks/io_ehh_scaling.py --json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

DEVICES = 4
FLAG = f"--xla_force_host_platform_device_count={DEVICES}"

# The study's sizes (docs/io-ehh.md, "Protocols the study published"): n^3 for n = 4..20 and 30..100.
PUBLISHED_EDGES = (*range(4, 21), *range(30, 101, 10))

# A100 facts for the extrapolation: HBM bandwidth 1.6 TB/s (docs/devices/a100.md: Argonne AI-accelerator
# evaluation); third-generation NVLink 600 GB/s per GPU in total, 300 GB/s each way (NVIDIA's NVLink
# page: "12 third-generation NVLink links ... 600 GB/s"). The per-exchange latency has no published
# figure in this project's sources: ASSUMED (--gpu-latency-us), of the order of a small NCCL
# point-to-point message inside one NVLink node.
A100_HBM_BYTES_PER_S = 1.6e12
NVLINK_BYTES_PER_S_EACH_WAY = 300e9
ASSUMED_GPU_LATENCY_US = 10.0


@dataclass
class Contender:
    label: str
    executor: Any
    workload: Any
    devices: int
    halo_bytes: int = 0
    exchange: bool = True


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.child_memory:
        return child_memory(*args.child_memory)
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FLAG}".strip()
    from hwbench.core.engines.jax_engine import prepare_xla_flags

    prepare_xla_flags()
    sizes = Sizes(args.quick)
    report: dict[str, Any] = {"load_avg_start": os.getloadavg()[0], "cpus": os.cpu_count(), "quick": args.quick}
    sections = {
        "strong": lambda: strong_scaling(sizes.strong, sizes.devices, args),
        "weak": lambda: weak_scaling(sizes.weak, args),
        "unconnected": lambda: connected_over_unconnected(sizes.published, args),
        "memory": lambda: [memory_of(sizes.memory, shards) for shards in (None, 2)],
        "reference": lambda: reference_rate(sizes, args),
        "model": lambda: model(report, args),
    }
    for name, section in sections.items():
        start = time.perf_counter()
        report[name] = section()
        print(f"[{name}: {time.perf_counter() - start:.0f} s]", file=sys.stderr, flush=True)
    report["goals"] = goals(report, sizes)
    report["load_avg_end"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print_report(report, args)
    return 0


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and one repeat: seconds, for tests")
    parser.add_argument("--ms", type=int, default=None, help="simulated ms per timed run (default 2; quick 1)")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per contender (default 3; quick 1)")
    parser.add_argument("--gpu-latency-us", type=float, default=ASSUMED_GPU_LATENCY_US, help="assumed, per exchange")
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    parser.add_argument("--child-memory", nargs=2, type=int, metavar=("CELLS", "SHARDS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.ms = (1 if args.quick else 2) if args.ms is None else args.ms
    args.repeat = (1 if args.quick else 3) if args.repeat is None else args.repeat
    if args.ms < 1 or args.repeat < 1:
        parser.error("--ms and --repeat must be at least 1")
    return args


class Sizes:
    """The sizes of each section (``quick``: small ones and two devices at most, same shape of study)."""

    def __init__(self, quick: bool) -> None:
        self.devices = (1, 2) if quick else (1, 2, DEVICES)
        self.strong = 12**3 if quick else 100**3
        self.weak = {1: 12**3, 2: 16**3} if quick else {1: 40**3, 2: 50**3, 4: 64**3}
        self.published = (4,) if quick else PUBLISHED_EDGES
        self.memory = 12**3 if quick else 100**3
        self.reference = 8**3 if quick else 36**3  # the 46,656-cell figure


# ------------------------------------------------------------------------------------ timing
def build(kernel: Any, workload: Any, shards: int | None, exchange: bool = True) -> Any:
    from hwbench.core.engines.jax_engine import JaxEngine
    from hwbench.core.engines.jax_sharded import build_sharded

    engine = JaxEngine()
    if shards is None:
        return engine.build(kernel, workload)
    return build_sharded(engine, kernel, workload, shards=shards, exchange=exchange)


def halo_bytes(executor: Any) -> int:
    """Bytes each device receives per step (float32 voltages from both neighbours)."""
    raw = getattr(executor, "raw", None)
    return 0 if raw is None else 4 * int(raw.layout.send_up.shape[1] + raw.layout.send_down.shape[1])


def round_robin(contenders: list[Contender], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Min wall and min CPU seconds per step of each contender, timed in turns after a warm run."""
    steps = args.ms * contenders[0].executor.sample_every
    for c in contenders:
        c.executor.run(c.workload.state0, {}, 1)
    wall = {c.label: float("inf") for c in contenders}
    cpu = dict(wall)
    for _ in range(args.repeat):
        for c in contenders:
            w, p = time.perf_counter(), time.process_time()
            c.executor.run(c.workload.state0, {}, args.ms)
            wall[c.label] = min(wall[c.label], (time.perf_counter() - w) / steps)
            cpu[c.label] = min(cpu[c.label], (time.process_time() - p) / steps)
    rows = []
    for c in contenders:
        rows.append(
            {
                "contender": c.label,
                "devices": c.devices,
                "exchange": c.exchange,
                "cells": c.workload.size,
                "halo_bytes": c.halo_bytes,
                "us_per_step": wall[c.label] * 1e6,
                "cpu_us_per_step": cpu[c.label] * 1e6,
                "cell_steps_per_s": c.workload.size / wall[c.label],
            }
        )
    return rows


def strong_scaling(cells: int, devices: tuple[int, ...], args: argparse.Namespace) -> list[dict[str, Any]]:
    kernel, workload = network(cells)
    contenders = [Contender("unsharded", build(kernel, workload, None), workload, 1)]
    for n in devices:
        ex = build(kernel, workload, n)
        contenders.append(Contender(f"{n} device(s)", ex, workload, n, halo_bytes(ex)))
        if n > 1:
            quiet = build(kernel, workload, n, exchange=False)
            contenders.append(Contender(f"{n} device(s), no exchange", quiet, workload, n, halo_bytes(ex), False))
    rows = round_robin(contenders, args)
    by = {r["contender"]: r for r in rows}
    for r in rows:
        if r["exchange"] and r["devices"] > 1:
            quiet = by[f"{r['devices']} device(s), no exchange"]
            r["exchange_share"] = 1 - quiet["us_per_step"] / r["us_per_step"]
            r["exchange_share_cpu"] = 1 - quiet["cpu_us_per_step"] / r["cpu_us_per_step"]
        r["wall_vs_unsharded"] = r["us_per_step"] / by["unsharded"]["us_per_step"]
    return rows


def weak_scaling(per_devices: dict[int, int], args: argparse.Namespace) -> list[dict[str, Any]]:
    contenders = []
    for n, cells in per_devices.items():
        kernel, workload = network(cells)
        ex = build(kernel, workload, n)
        contenders.append(Contender(f"{n} device(s), {cells:,} cells", ex, workload, n, halo_bytes(ex)))
    rows = round_robin(contenders, args)
    base = rows[0]["cell_steps_per_s"] / rows[0]["devices"]
    for r in rows:
        r["cells_per_device"] = r["cells"] // r["devices"]
        r["efficiency"] = r["cell_steps_per_s"] / r["devices"] / base
    return rows


def connected_over_unconnected(edges: tuple[int, ...], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Per published size: the connected network's step over the unconnected one's (unsharded)."""
    out = []
    for n in edges:
        contenders = []
        for connected in (True, False):
            kernel, workload = network(n**3, connected=connected)
            contenders.append(
                Contender("connected" if connected else "unconnected", build(kernel, workload, None), workload, 1)
            )
        rows = {r["contender"]: r for r in round_robin(contenders, args)}
        ratio = rows["connected"]["us_per_step"] / rows["unconnected"]["us_per_step"]
        cpu = rows["connected"]["cpu_us_per_step"] / rows["unconnected"]["cpu_us_per_step"]
        out.append({"cells": n**3, "ratio": ratio, "ratio_cpu": cpu, **{k: v["us_per_step"] for k, v in rows.items()}})
    return out


def reference_rate(sizes: Sizes, args: argparse.Namespace) -> dict[str, Any]:
    """The unsharded rate at the issue's 46,656 cells against 10^6, in turns."""
    small_kernel, small = network(sizes.reference)
    big_kernel, big = network(sizes.strong)
    rows = round_robin(
        [
            Contender(f"{small.size:,} cells", build(small_kernel, small, None), small, 1),
            Contender(f"{big.size:,} cells", build(big_kernel, big, None), big, 1),
        ],
        args,
    )
    return {
        "small_cells": small.size,
        "big_cells": big.size,
        "ratio": rows[0]["cell_steps_per_s"] / rows[1]["cell_steps_per_s"],
        "ratio_cpu": rows[1]["cpu_us_per_step"] / big.size / (rows[0]["cpu_us_per_step"] / small.size),
        "rows": rows,
    }


def network(cells: int, connected: bool = True) -> tuple[Any, Any]:
    from hwbench.core.plugins import load_registry

    kernel = load_registry().kernel("io-ehh")
    return kernel, kernel.make_workload(cells, connected=connected, seed=42)


# ------------------------------------------------------------------------------------ memory
def memory_of(cells: int, shards: int | None) -> dict[str, Any]:
    """Peak resident memory of one run (workload, build, a 1 ms run) in a child process of its own."""
    child = [sys.executable, __file__, "--child-memory", str(cells), str(shards or 0)]
    env = {**os.environ, "XLA_FLAGS": FLAG}
    done = subprocess.run(child, capture_output=True, text=True, env=env, check=True)
    peak = json.loads(done.stdout.strip().splitlines()[-1])["peak_bytes"]
    return {
        "cells": cells,
        "shards": shards or 1,
        "sharded": bool(shards),
        "peak_bytes": peak,
        "bytes_per_cell": peak / cells,
    }


def child_memory(cells: int, shards: int) -> int:
    from hwbench.core.engines.jax_engine import prepare_xla_flags

    prepare_xla_flags()
    kernel, workload = network(cells)
    build(kernel, workload, shards or None).run(workload.state0, {}, 1)
    print(json.dumps({"peak_bytes": peak_resident_bytes()}))
    return 0


def peak_resident_bytes() -> int:
    """This process's peak resident set since it started its program (VmHWM; ``ru_maxrss`` would
    also count the pages of the parent it was forked from)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# ------------------------------------------------------------------------------------- model
def exchange_cost(loops: int) -> dict[str, float]:
    """One ``lax.ppermute`` between two forced devices, alone: ``loops`` of them in one compiled
    loop per message size (each waits for the last); latency a and seconds per byte b by least
    squares over the sizes."""
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[:2]), ("x",))
    sizes, seconds = [256, 16_384, 262_144], []
    for floats in sizes:

        def ring(v: Any) -> Any:
            step = lambda _, u: jax.lax.ppermute(u, "x", perm=[(0, 1), (1, 0)])  # noqa: E731
            return jax.lax.fori_loop(0, loops, step, v)

        mapped = jax.jit(jax.shard_map(ring, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False))
        x = jax.device_put(np.zeros(2 * floats, np.float32), NamedSharding(mesh, P("x")))
        mapped(x).block_until_ready()
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            mapped(x).block_until_ready()
            best = min(best, (time.perf_counter() - start) / loops)
        seconds.append(best)
    nbytes = 4 * np.array(sizes, dtype=float)
    (a, b), *_ = np.linalg.lstsq(np.stack([np.ones_like(nbytes), nbytes], axis=1), np.array(seconds), rcond=None)
    return {
        "latency_s": max(float(a), 0.0),
        "s_per_byte": max(float(b), 0.0),
        "bytes": nbytes.tolist(),
        "seconds": seconds,
    }


def model(report: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """Step time on N devices = compute + e a + b h, checked against every measured sharded point.

    Compute: measured, the program whose exchange is a local copy (strong section); for the weak
    section, the 1-device rate at the same cells per device, the N devices sharing min(N, cores)
    cores. Exchange: a lone ``ppermute``'s latency a and cost per byte b (:func:`exchange_cost`),
    e exchanges per step (one with two devices, one per neighbour with more), h halo bytes.
    """
    cost = exchange_cost(20 if args.quick else 200)
    cores = os.cpu_count() or 1

    def exchange(r: dict[str, Any]) -> float:
        exchanges = 0 if r["devices"] == 1 else 1 if r["devices"] == 2 else 2
        return exchanges * cost["latency_s"] + cost["s_per_byte"] * r["halo_bytes"]

    strong = {r["contender"]: r for r in report["strong"]}
    checks = []
    for r in report["strong"]:
        quiet = strong.get(f"{r['devices']} device(s), no exchange")
        if r["exchange"] and quiet is not None:
            checks.append((r, quiet["us_per_step"] * 1e-6 + exchange(r)))
    one = report["weak"][0]
    for r in report["weak"][1:]:
        compute = r["cells"] / r["devices"] / one["cell_steps_per_s"] * r["devices"] / min(r["devices"], cores)
        checks.append((r, compute + exchange(r)))
    rows = [
        {
            "contender": r["contender"],
            "measured_us": r["us_per_step"],
            "model_us": t * 1e6,
            "ratio": r["us_per_step"] / (t * 1e6),
        }
        for r, t in checks
    ]
    return {"exchange": cost, "checks": rows, "gpu": gpu_model(report, args)}


def gpu_model(report: dict[str, Any], args: argparse.Namespace) -> list[dict[str, Any]]:
    """The study's 125,000 and 10^6 cells on 8 A100s: each GPU streams its slab's bytes per step at
    HBM bandwidth (a roofline floor: io-ehh's step is memory-bound), then exchanges its halo over
    NVLink, assumed latency plus bytes / bandwidth; the halo per cell of boundary plane is the
    one measured here (the network is the same at every size)."""
    from hwbench.plugins.kernels.io_ehh import network as io_network

    kernel, work = network(20**3)
    bytes_per_cell = kernel.bytes_per_step(work) / work.size
    strong = [r for r in report["strong"] if r["exchange"] and r["devices"] > 1]
    n = round(report["strong"][0]["cells"] ** (1 / 3))
    reach = int(io_network.radius_cap(io_network.DEFAULT_RMAX, n)) - 1 or 1
    # halo cells received per boundary cell within reach (both directions)
    per_plane = max(r["halo_bytes"] / 4 / (2 * reach * n * n) for r in strong) if strong else 1.0
    out = []
    for cells in (50**3, 100**3):
        side = round(cells ** (1 / 3))
        halo = 4 * per_plane * 2 * reach * side * side
        compute = cells / 8 * bytes_per_cell / A100_HBM_BYTES_PER_S
        exchange = args.gpu_latency_us * 1e-6 + halo / NVLINK_BYTES_PER_S_EACH_WAY
        step = compute + exchange
        out.append(
            {
                "cells": cells,
                "gpus": 8,
                "compute_us": compute * 1e6,
                "exchange_us": exchange * 1e6,
                "step_us": step * 1e6,
                "exchange_share": exchange / step,
                "realtime_factor": step * 40 / 1e-3,  # 40 steps of 0.025 ms per ms simulated
                "note": "slabs of n/8 planes (the model only: --shard needs n divisible by 8, e.g. 96^3, 104^3)",
            }
        )
    return out


# ------------------------------------------------------------------------------------- goals
def goals(report: dict[str, Any], sizes: Sizes) -> list[dict[str, Any]]:
    strong = {r["contender"]: r for r in report["strong"]}
    two = strong["2 device(s)"]
    worst = max(report["unconnected"], key=lambda r: r["ratio"])
    memory = max(report["memory"], key=lambda r: r["bytes_per_cell"])
    found = [
        ("cell-steps/s at 10^6 within 1.3x of 46,656 cells", report["reference"]["ratio"], 1.3),
        ("connected / unconnected at every published size (worst)", worst["ratio"], 1.3),
        ("2 devices' wall time / one device's, 10^6 cells", two["wall_vs_unsharded"], 1.1),
        ("halo exchange's share of the step, 2 devices", two["exchange_share"], 0.10),
        ("peak bytes per cell at 10^6 (worst of unsharded, 2 devices)", memory["bytes_per_cell"], 1000),
    ]
    note = " (quick sizes: not the goal's)" if report["quick"] else ""
    return [{"goal": g + note, "measured": v, "limit": lim, "met": v <= lim} for g, v, lim in found]


def print_report(report: dict[str, Any], args: argparse.Namespace) -> None:
    print(f"io-ehh over forced CPU devices; {report['cpus']} CPUs, load {report['load_avg_start']:.1f} -> "
          f"{report['load_avg_end']:.1f}; min of {args.repeat} x {args.ms} ms, round-robin")  # fmt: skip
    print("\nstrong scaling" + f" ({report['strong'][0]['cells']:,} cells)")
    print(f"{'contender':28s} {'us/step':>10s} {'cpu us':>10s} {'x unsharded':>11s} {'exchange':>9s} {'halo B':>8s}")
    for r in report["strong"]:
        share = f"{r['exchange_share']:.1%}" if "exchange_share" in r else ""
        print(f"{r['contender']:28s} {r['us_per_step']:10.0f} {r['cpu_us_per_step']:10.0f} "
              f"{r['wall_vs_unsharded']:11.2f} {share:>9s} {r['halo_bytes']:8d}")  # fmt: skip
    print("\nweak scaling")
    for r in report["weak"]:
        print(f"{r['contender']:28s} {r['us_per_step']:10.0f} us/step  {r['cell_steps_per_s'] / r['devices']:.3g} "
              f"cell-steps/s per device  efficiency {r['efficiency']:.2f}")  # fmt: skip
    print("\nconnected over unconnected (unsharded)")
    for r in report["unconnected"]:
        print(f"{r['cells']:>9,} cells  {r['ratio']:.2f}x (cpu {r['ratio_cpu']:.2f}x)")
    print("\npeak memory (a 1 ms run in a process of its own)")
    for r in report["memory"]:
        peak = f"{r['peak_bytes'] / 1e6:.0f} MB, {r['bytes_per_cell']:.0f} B/cell"
        print(f"{r['cells']:>9,} cells, {r['shards']} device(s): {peak}")
    m, e = report["model"], report["model"]["exchange"]
    print(f"\nmodel: T = compute + exchanges x {e['latency_s'] * 1e6:.1f} us + {e['s_per_byte'] * 1e9:.3f} ns/B x "
          "halo bytes (a lone ppermute, measured here), against the measured points:")  # fmt: skip
    for c in m["checks"]:
        print(f"  {c['contender']:28s} measured {c['measured_us']:9.0f} us  model {c['model_us']:9.0f} us  "
              f"({c['ratio']:.2f}x)")  # fmt: skip
    print(f"8 x A100 (HBM {A100_HBM_BYTES_PER_S / 1e12:.1f} TB/s, NVLink {NVLINK_BYTES_PER_S_EACH_WAY / 1e9:.0f} GB/s "
          f"each way, latency {args.gpu_latency_us:g} us ASSUMED):")  # fmt: skip
    for g in m["gpu"]:
        parts = f"compute {g['compute_us']:.1f}, exchange {g['exchange_us']:.1f}: {g['exchange_share']:.0%}"
        rtf = f"real-time factor {g['realtime_factor']:.3g}"
        print(f"  {g['cells']:>9,} cells: {g['step_us']:.1f} us/step ({parts}), {rtf}")
    print("\ngoals")
    for g in report["goals"]:
        print(f"  {'met    ' if g['met'] else 'NOT met'} {g['goal']}: {g['measured']:.3g} (limit {g['limit']:g})")


if __name__ == "__main__":
    sys.exit(main())
