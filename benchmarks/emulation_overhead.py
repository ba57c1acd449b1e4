"""What emulating a chip's arithmetic costs: io-ehh on the JAX engine, emulated vs native.

One process, one engine, one workload (io-ehh, ``--cells`` connected, float32): the native run and
runs under a profile that rounds *every* op class (a custom bf16-like format in an fp32 carrier,
so every add, multiply, divide, exp, power, compare, gather/scatter and state store is rounded),
with and without counters, for each rounding mode. Each configuration is built (compile time
reported apart), warmed up, then timed as the minimum over ``--repeat`` runs of ``--steps``
steps, configurations timed in turns (so a change in machine load hits all of them alike);
the table gives us/step and the ratio to the native run measured here, side by side.

It also prints the floor of full-rounding emulation on this machine: the element roundings one
step performs (counted by running the step once through the emulating namespace on numpy) times
the cost of one nearest-even rounding inside an XLA loop (measured here, in cache, against a
plain multiply-add), added to the native step. No emulation that rounds every result with this
rounding sequence can beat that ratio, however it is scheduled; only a cheaper sequence (or fewer
roundings) can.

    python benchmarks/emulation_overhead.py [--cells 729] [--steps 400] [--repeat 15]
        [--modes nearest-even,stochastic] [--mantissa-bits 7] [--json]

The issue's goal: full-rounding emulation (nearest-even, counters off) within 1.5x of native.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np
from _timing import compiled_ns_per_element, round_robin_us_per_step

from hwbench.accuracy.numerics.emulate import emulating_ops
from hwbench.accuracy.numerics.formats import RoundingMode, custom_float
from hwbench.accuracy.numerics.profile import Confidence, NumericsProfile, OpNumerics
from hwbench.core.ops import OpClass

GOAL_RATIO = 1.5  # the target for full-rounding emulation vs native


def full_profile(mode: RoundingMode, mantissa_bits: int) -> NumericsProfile:
    """Every op class rounded to a custom format with fp32's exponent range (bf16-like at 7 bits)."""
    fmt = custom_float(mantissa_bits, -126, 127, name=f"m{mantissa_bits}")
    entry = OpNumerics(
        format=fmt, rounding=mode, source="benchmark: every op class rounded", confidence=Confidence.ASSUMED
    )
    return NumericsProfile(
        name=f"all-{fmt.name}-{mode.value}",
        device="benchmark",
        mode=mode.value,
        ops={cls: entry for cls in OpClass},
    )


def build(engine: Any, kernel: Any, workload: Any, wrapper: Any) -> tuple[Any, float]:
    """Build (allocation + compilation, timed as setup) and warm up one configuration."""
    start = time.perf_counter()
    executor = engine.build(kernel, workload, dtype="float32", ops_wrapper=wrapper)
    setup = time.perf_counter() - start
    executor.run(workload.state0, kernel.default_inputs(workload), 1)
    return executor, setup


def roundings_per_step(kernel: Any, workload: Any, profile: NumericsProfile) -> int:
    """Elements rounded in one emulated step (the whole step: state store included)."""
    from hwbench.accuracy.numerics.emulate import EmulatingOps
    from hwbench.core.engine import kernel_params
    from hwbench.core.engines.numpy_engine import NumpyOps

    class Counting(EmulatingOps):
        rounded = 0

        def _round_to(self, x: Any, fmt: Any, mode: Any, random_bits: int, **kw: Any) -> Any:
            Counting.rounded += int(np.size(x))
            return super()._round_to(x, fmt, mode, random_bits, **kw)

    ops = emulating_ops(profile, counters=False)(NumpyOps(np.float32))
    ops.__class__ = Counting  # same object, its roundings counted
    params = kernel_params(workload, lambda a: np.asarray(a, np.float32), np.asarray)
    inputs = {k: np.asarray(v, np.float32) for k, v in kernel.default_inputs(workload).items()}
    ops.begin_step(0)
    with np.errstate(all="ignore"):
        ops.store(kernel.step(ops, ops.load(np.asarray(workload.state0, np.float32)), params, inputs, 0))
    return Counting.rounded


def ns_per_rounding(mode: RoundingMode, mantissa_bits: int, repeat: int) -> float:
    """One rounding's cost inside a compiled loop, in cache: (x*a+b rounded twice) - (x*a+b)."""
    import jax.numpy as jnp

    from hwbench.accuracy.numerics.fast_rounding import fast_rounder

    fmt = custom_float(mantissa_bits, -126, 127, name=f"m{mantissa_bits}")
    rounder = fast_rounder(fmt, mode, "float32")
    if rounder is None:
        return float("nan")
    plain = compiled_ns_per_element(lambda v: v * 1.0001 + 0.5, 1000, repeat)
    rounded = compiled_ns_per_element(lambda v: rounder(jnp, rounder(jnp, v * 1.0001) + 0.5), 1000, repeat)
    return (rounded - plain) / 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=729)
    parser.add_argument("--steps", type=int, default=400, help="steps per timed run (default: 10 ms of io-ehh)")
    parser.add_argument("--repeat", type=int, default=15, help="timed runs per configuration (min is kept)")
    parser.add_argument("--modes", default="nearest-even,toward-zero,stochastic")
    parser.add_argument("--mantissa-bits", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    args = parser.parse_args(argv)

    from hwbench.core.engines.jax_engine import JaxEngine
    from hwbench.plugins.kernels.io_ehh import IoEhhKernel

    engine = JaxEngine()
    kernel = IoEhhKernel()
    workload = kernel.make_workload(args.cells, connected=True, seed=0)
    configs: list[tuple[str, str, bool | None, Any]] = [("native", "-", None, None)]
    for name in args.modes.split(","):
        mode = RoundingMode(name.strip())
        profile = full_profile(mode, args.mantissa_bits)
        configs.append((f"all classes, {mode.value}", mode.value, False, emulating_ops(profile, counters=False)))
        configs.append(
            (f"all classes, {mode.value}, counters", mode.value, True, emulating_ops(profile, counters=True))
        )
    executors: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for label, mode_name, counters, wrapper in configs:
        print(f"building {label} ...", file=sys.stderr)
        executors[label], setup = build(engine, kernel, workload, wrapper)
        rows.append({"config": label, "mode": mode_name, "counters": counters, "setup_s": setup})
    print("timing ...", file=sys.stderr)
    nsamples = max(1, args.steps // kernel.info.sample_every)
    us = round_robin_us_per_step(executors, kernel, workload, nsamples, args.repeat)
    for row in rows:
        row["us_per_step"] = us[row["config"]]
        row["ratio"] = row["us_per_step"] / us["native"]

    count = roundings_per_step(kernel, workload, full_profile(RoundingMode.NEAREST_EVEN, args.mantissa_bits))
    cost = ns_per_rounding(RoundingMode.NEAREST_EVEN, args.mantissa_bits, args.repeat)
    floor = {
        "roundings_per_step": count,
        "ns_per_rounding": cost,
        "rounding_us_per_step": count * cost / 1e3,
        "ratio": 1 + count * cost / 1e3 / us["native"],
    }
    meta = {
        "floor": floor,
        "kernel": "io-ehh",
        "cells": args.cells,
        "connected": True,
        "engine": "jax",
        "dtype": "float32",
        "steps": args.steps,
        "repeat": args.repeat,
        "format_mantissa_bits": args.mantissa_bits,
        "goal_ratio": GOAL_RATIO,
    }
    if args.json:
        json.dump({"meta": meta, "results": rows}, sys.stdout, indent=2)
        print()
        return 0
    print(
        f"io-ehh, {args.cells} cells connected, JAX float32, min of {args.repeat} x {args.steps} steps; "
        f"every op class rounded to m{args.mantissa_bits} (fp32 exponent range)"
    )
    print(f"{'configuration':<36} {'setup s':>8} {'us/step':>9} {'x native':>9}")
    for row in rows:
        print(f"{row['config']:<36} {row['setup_s']:8.2f} {row['us_per_step']:9.1f} {row['ratio']:9.2f}")
    best = min((r["ratio"] for r in rows if r["counters"] is False and r["mode"] == "nearest-even"), default=np.nan)
    print(f"goal: nearest-even, counters off within {GOAL_RATIO}x of native; measured {best:.2f}x")
    floor = meta["floor"]
    print(
        f"floor: {floor['roundings_per_step']:,} element roundings per step x {floor['ns_per_rounding']:.4f} ns "
        f"(nearest-even, in cache) = {floor['rounding_us_per_step']:.1f} us on top of native: "
        f">= {floor['ratio']:.2f}x with this rounding sequence"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
