"""Would one batched run of an audit's fp32 baseline members beat running them one after the other?

Issue 31 asks to "run the fp32 baseline members as one batched run where that is faster". An
audit's validation protocol runs two fp32 members that share one program and differ only in
their initial state: the reference and the "+1 ulp V0" ensemble member (docs/audit.md). Today
they run one after the other on one executor. This script times that against the two ways of
batching them, on io-ehh through JAX, in one process, contenders in turns (round-robin) so load
from other processes hits all alike; the minimum of ``--repeat`` turns is kept:

  two runs        one executor, the reference and then the nudged member (what an audit does)
  union network   one network of 2 x cells: the two members side by side, each cell wired only
                  to its own member's cells (connection lists offset and stored pass-major)
  vmap            the executor's sample loop under ``jax.vmap``: a batch axis of 2 on the state

It also checks that each batched member equals its own run bit for bit (the audit's results must
not change). CPU seconds (every thread of this process) are the steadier figure; wall is shown
beside them.

    python benchmarks/baseline_batching.py                      # 729 cells (validation), 1 s
    python benchmarks/baseline_batching.py --cells 64 --ms 3000 # the stress protocol's size
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from typing import Any

import numpy as np


def union_workload(first: Any, second: Any) -> Any:
    """One workload holding both members: cells ``[0, n)`` are ``first``, ``[n, 2n)`` are
    ``second`` (same network and parameters, own initial state), connections stored pass-major
    as the kernel's own workloads are (so the engines take the same summation path)."""
    from hwbench.core.layout import pass_major_order

    n = first.size
    src = np.concatenate([first.arrays["src"], second.arrays["src"] + n])
    tgt = np.concatenate([first.arrays["tgt"], second.arrays["tgt"] + n])
    order = pass_major_order(tgt, 2 * n)
    state0 = np.concatenate([np.asarray(first.state0), np.asarray(second.state0)], axis=-1)
    return replace(first, size=2 * n, arrays={"src": src[order], "tgt": tgt[order]}, state0=state0, annotations={})


class VmapRun:
    """The executor's compiled sample loop under ``jax.vmap`` (batch axis 0 on the state)."""

    def __init__(self, executor: Any, states: list[Any]) -> None:
        import jax

        from hwbench.core.engines import _loop

        self.ex = executor
        ex = executor
        host = [_loop.state_to_host(s, ex.dtype, ex.workload.state0) for s in states]
        self.state = np.stack(host)
        self.inputs = _loop.merge_inputs(ex.kernel, ex.workload, {}, ex.dtype)

        def spec(a: Any) -> Any:
            return jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype)

        i32 = jax.ShapeDtypeStruct((), np.int32)
        batched = jax.vmap(ex._program, in_axes=(0, None, None, None, None, None))
        self.compiled = (
            jax.jit(batched, donate_argnums=(0,))
            .lower(spec(self.state), {k: spec(v) for k, v in self.inputs.items()},
                   {k: spec(v) for k, v in ex._fparams_host.items()}, i32, i32, i32)
            .compile()
        )  # fmt: skip

    def run(self, nsamples: int) -> np.ndarray:
        """The probes of every member, shape (members, nsamples, cells)."""
        import jax

        ex, se = self.ex, self.ex.sample_every
        state, inputs, probes, done = jax.device_put(self.state), jax.device_put(self.inputs), [], 0
        while done < nsamples:
            nb = min(ex.chunk_blocks, nsamples - done)
            state, p, _, _ = self.compiled(state, inputs, ex._fparams, np.int32(done * se), np.int32(done * se),
                                           np.int32(nb))  # fmt: skip
            probes.append(np.asarray(p)[:, :nb])
            done += nb
        return np.concatenate(probes, axis=1)


def measure(cells: int, ms: int, repeat: int) -> dict[str, Any]:
    from hwbench.accuracy.stepped import perturbed_voltages
    from hwbench.core.engines.jax_engine import JaxEngine
    from hwbench.plugins.kernels.io_ehh import IoEhhKernel

    kernel = IoEhhKernel()
    reference = kernel.make_workload(cells, connected=True, seed=0)
    nudged = perturbed_voltages(reference, kernel.info.perturbed_rows())
    union = union_workload(reference, nudged)
    engine = JaxEngine()
    single = engine.build(kernel, reference, dtype="float32")
    joined = engine.build(kernel, union, dtype="float32")
    vmapped = VmapRun(single, [reference.state0, nudged.state0])
    nsamples = ms  # io-ehh samples every 1 ms

    def two_runs() -> list[np.ndarray]:
        return [single.run(w.state0, {}, nsamples).probes for w in (reference, nudged)]

    def union_run() -> list[np.ndarray]:
        probes = joined.run(union.state0, {}, nsamples).probes
        return [probes[:, :cells], probes[:, cells:]]

    def vmap_run() -> list[np.ndarray]:
        return list(vmapped.run(nsamples))

    contenders = {"two runs": two_runs, "union network": union_run, "vmap": vmap_run}
    first = {name: fn() for name, fn in contenders.items()}  # untimed: warms every program
    identical = {
        name: all(np.array_equal(a, b) for a, b in zip(out, first["two runs"], strict=True))
        for name, out in first.items()
        if name != "two runs"
    }
    best = {name: {"cpu_s": float("inf"), "wall_s": float("inf")} for name in contenders}
    for _ in range(repeat):
        for name, fn in contenders.items():
            cpu, wall = time.process_time(), time.perf_counter()
            fn()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            best[name] = {"cpu_s": min(cpu, best[name]["cpu_s"]), "wall_s": min(wall, best[name]["wall_s"])}
    base = best["two runs"]["cpu_s"]
    rows = [{"contender": n, **t, "cpu_vs_two_runs": t["cpu_s"] / base, "bit_identical": identical.get(n, True)}
            for n, t in best.items()]  # fmt: skip
    return {"cells": cells, "ms": ms, "repeat": repeat, "rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", type=int, default=729, help="io-ehh cells, a cube n^3 (default 729)")
    parser.add_argument("--ms", type=int, default=1000, help="simulated ms per member and turn (default 1000)")
    parser.add_argument("--repeat", type=int, default=5, help="round-robin turns (the minimum is kept)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.ms < 1 or args.repeat < 1:
        parser.error("--ms and --repeat must be at least 1")
    result = measure(args.cells, args.ms, args.repeat)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"io-ehh, {args.cells} cells connected, 2 fp32 members x {args.ms} ms, JAX; min of {args.repeat} turns")
    print(f"{'contender':14} {'CPU s':>7} {'wall s':>7} {'CPU / two runs':>15}  members bit-identical")
    for r in result["rows"]:
        print(f"{r['contender']:14} {r['cpu_s']:7.3f} {r['wall_s']:7.3f} {r['cpu_vs_two_runs']:15.2f}  "
              f"{'yes' if r['bit_identical'] else 'NO'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
