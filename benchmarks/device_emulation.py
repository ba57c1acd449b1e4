"""What emulating each built-in device costs: every device mode side by side with the native run.

``benchmarks/emulation_overhead.py`` measures a synthetic profile that rounds every op class (the
floor of full-rounding emulation). What users wait for is the real device profiles: every audit
on a machine without the chip and every cell of a sweep runs through them. This benchmark builds
io-ehh (``--cells`` connected, float32, JAX engine) once natively (``cpu`` fp32) and once per
built-in device mode that runs io-ehh, in one process, and times them in turns (round-robin, so a
change in machine load hits all alike): the minimum over ``--repeat`` runs of ``--ms`` simulated
milliseconds each (40 steps per 1 ms sample, probes and spikes recorded), with the first run of
each executor as warm-up. It prints us/step, the ratio to the native run measured here, the
setup (trace + compile) time, and the issue's bound for the mode: 1.5x native, 3x for modes
with stochastic rounding.

    python benchmarks/device_emulation.py [--cells 729] [--ms 100] [--repeat 7]
        [--devices a100,groq] [--floor] [--ablate] [--json]

``--floor`` adds, per emulating mode, the floor of its arithmetic on this machine: the roundings one
step performs times the measured cost of each (see :func:`rounding_floor`). ``--ablate`` adds, per
emulating mode, one run per op class its profile changes, with that class computed natively, timed
in the same turns: where the mode's time goes (see :func:`ablations`).

Since issue 30 the native-fp32 modes (a100 cuda-fp32, ipu fp32) emulate too, by default: FMA
contraction and exp / division error models (``docs/numerics.md``, "Native fp32 is not the CPU");
they are timed like every other mode. A mode whose profile changes nothing (e.g. ``--set
exp_ulps=0`` on ipu fp32) would compile the native program. Loihi and SpiNNaker refuse io-ehh and
are skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from _timing import compiled_ns_per_element, round_robin_us_per_step

BOUND = 1.5  # the bound for a device mode's emulated run vs native
STOCHASTIC_BOUND = 3.0  # ... for modes with stochastic rounding


@dataclass(frozen=True)
class Config:
    """One column of the comparison: a device and mode (``cpu``/``fp32`` is the native run)."""

    device: str
    mode: str
    stochastic: bool

    @property
    def label(self) -> str:
        return f"{self.device} [{self.mode}]"

    @property
    def bound(self) -> float:
        return STOCHASTIC_BOUND if self.stochastic else BOUND


def configs(kernel: Any, only: set[str] | None) -> list[Config]:
    """The native run first, then every device mode that supports io-ehh."""
    from hwbench.accuracy.numerics.formats import RoundingMode
    from hwbench.core.plugins import get_registry

    out = [Config("cpu", "fp32", False)]
    for name, device in get_registry().devices.items():
        if name == "cpu" or (only is not None and name not in only) or not device.supports(kernel).ok:
            continue
        for mode in device.modes:
            profile = device.numerics(mode)
            stochastic = any(op.rounding is RoundingMode.STOCHASTIC for op in profile.ops.values())
            out.append(Config(name, mode, stochastic))
    return out


def build(config: Config, kernel: Any, workload: Any) -> tuple[Any, float]:
    """The emulated executor of one device mode (``sample_every`` given: never the real chip)."""
    from hwbench.core.plugins import get_registry

    device = get_registry().devices[config.device]
    start = time.perf_counter()
    executor = device.executor_for(
        kernel, workload, mode=config.mode, engine="jax", dtype="float32", sample_every=kernel.info.sample_every
    )
    return executor, time.perf_counter() - start


def ablations(config: Config, kernel: Any, workload: Any) -> dict[str, Any]:
    """Executors of ``config`` with one op class at a time computed natively (IEEE fp32, nearest,
    no error model, no lowering): the drop in time from the full mode is that class's share. Not a
    device mode anyone runs; a profiling aid, so the executors are labelled ``... without <class>``.
    """
    from hwbench.accuracy.numerics.emulated_device import emulated_executor
    from hwbench.accuracy.numerics.profile import OpNumerics
    from hwbench.core.device import RunRequest
    from hwbench.core.plugins import get_registry

    profile = get_registry().devices[config.device].numerics(config.mode)
    if profile is None:  # the native program: nothing to ablate
        return {}
    request = RunRequest.make(kernel, workload, engine="jax", dtype="float32", sample_every=kernel.info.sample_every)
    out: dict[str, Any] = {}
    for cls, op in profile.ops.items():
        native = OpNumerics(format="fp32", source="ablation: computed natively", confidence=op.confidence)
        if op.model_dump(exclude={"source", "confidence"}) == native.model_dump(exclude={"source", "confidence"}):
            continue
        ablated = profile.model_copy(update={"ops": {**profile.ops, cls: native}})
        out[f"{config.label} without {cls.value}"] = emulated_executor(request, ablated)
    return out


def rounding_floor(config: Config, kernel: Any, workload: Any, native_us: float) -> dict[str, float]:
    """The floor of a mode: the element roundings (and error-model perturbations) of one step, each
    at the cost of the emulation's own sequence for its format and mode inside a compiled loop, in
    cache, added to the native step. No schedule of the same roundings can beat it.

    Counted by running one step through the mode's emulating namespace on numpy; costed with the
    JAX emulating namespace's ``_round_to`` / ``_perturb``. For stochastic modes it also gives the
    floor of their random bits alone: one multiply of the step's element words per rounding
    (:func:`hwbench.accuracy.numerics.random_bits.op_bits`; the words are hashed once per step and
    shape, so here they are a constant of the loop, as they are for all but one rounding of a step).
    """
    import jax.numpy as jnp

    from hwbench.accuracy.numerics.emulate import EmulatingOps, emulating_ops
    from hwbench.accuracy.numerics.formats import RoundingMode
    from hwbench.accuracy.numerics.random_bits import element_words, op_bits
    from hwbench.core.engine import kernel_params
    from hwbench.core.engines.jax_engine import JaxOps
    from hwbench.core.engines.numpy_engine import NumpyOps
    from hwbench.core.plugins import get_registry

    profile = get_registry().devices[config.device].numerics(config.mode)
    counted: dict[tuple[Any, ...], int] = {}
    errors: dict[str, Any] = {}  # error models by their JSON (pydantic models are not hashable)

    class Counting(EmulatingOps):
        inside = False

        def _round_to(self, x: Any, fmt: Any, mode: Any, random_bits: int, **kw: Any) -> Any:
            if not Counting.inside:
                counted["round", fmt, mode, random_bits] = counted.get(("round", fmt, mode, random_bits), 0) + x.size
            return super()._round_to(x, fmt, mode, random_bits, **kw)

        def _perturb(self, y: Any, error: Any, fmt: Any, function: str) -> Any:
            key = ("perturb", error.model_dump_json(), fmt, function)
            counted[key] = counted.get(key, 0) + y.size
            errors[key[1]] = error
            Counting.inside = True
            try:
                return super()._perturb(y, error, fmt, function)
            finally:
                Counting.inside = False

    ops = emulating_ops(profile, counters=False)(NumpyOps(np.float32))
    ops.__class__ = Counting
    params = kernel_params(workload, lambda a: np.asarray(a, np.float32), np.asarray)
    inputs = {k: np.asarray(v, np.float32) for k, v in kernel.default_inputs(workload).items()}
    ops.begin_step(0)
    with np.errstate(all="ignore"):
        ops.store(kernel.step(ops, ops.load(np.asarray(workload.state0, np.float32)), params, inputs, 0))
    jax_ops = emulating_ops(profile, counters=False)(JaxOps(np.float32))
    total_ns, count, stochastic = 0.0, 0, 0

    def words_for(shape: tuple[int, ...]) -> np.ndarray:
        """The step's element words of the stochastic-rounding stream (numpy: a loop constant)."""
        return np.asarray(element_words(1, 3, np.arange(int(np.prod(shape)), dtype=np.uint32).reshape(shape), np))

    for key, n in counted.items():

        def rounding(v: Any, key: tuple[Any, ...] = key) -> Any:
            jax_ops.begin_step(jnp.int32(3))
            jax_ops._words[(tuple(v.shape), 0)] = jnp.asarray(words_for(v.shape))
            if key[0] == "round":
                return jax_ops._round_to(v, *key[1:])
            return jax_ops._perturb(v, errors[key[1]], key[2], key[3])

        total_ns += n * ns_per_element(rounding)
        count += n
        stochastic += n if key[0] == "round" and key[2] is RoundingMode.STOCHASTIC else 0
    out = {"roundings_per_step": count, "ns_per_rounding": total_ns / max(count, 1)}
    out["floor_ratio"] = 1 + total_ns / 1e3 / native_us
    if stochastic:

        def random_bits_only(v: Any) -> Any:
            bits = op_bits(jnp.asarray(words_for(v.shape)), (1 << 32) | 5, jnp)
            return v + (bits >> jnp.uint32(31)).astype(v.dtype)  # keep the bits alive, one add

        out["stochastic_roundings_per_step"] = stochastic
        out["random_bits_floor_ratio"] = 1 + stochastic * ns_per_element(random_bits_only) / 1e3 / native_us
    return out


def ns_per_element(rounding: Any, repeat: int = 7) -> float:
    """One rounding's cost inside a compiled loop, in cache: (x*a+b, rounded) - (x*a+b)."""
    rounded = compiled_ns_per_element(lambda v: rounding(v * 1.0001 + 0.5), 500, repeat)
    return rounded - compiled_ns_per_element(lambda v: v * 1.0001 + 0.5, 500, repeat)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=729)
    parser.add_argument("--ms", type=int, default=100, help="simulated ms per timed run (default 100)")
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per configuration (min is kept)")
    parser.add_argument("--devices", default=None, help="comma-separated devices (default: every built-in one)")
    parser.add_argument("--floor", action="store_true", help="also measure each emulating mode's rounding floor")
    parser.add_argument("--ablate", action="store_true", help="also time each mode with one op class made native")
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    args = parser.parse_args(argv)

    from hwbench.plugins.kernels.io_ehh import IoEhhKernel

    kernel = IoEhhKernel()
    workload = kernel.make_workload(args.cells, connected=True, seed=0)
    only = None if args.devices is None else {d.strip() for d in args.devices.split(",")}
    chosen = configs(kernel, only)
    executors: dict[str, Any] = {}
    setup: dict[str, float] = {}
    for config in chosen:
        print(f"building {config.label} ...", file=sys.stderr)
        executors[config.label], setup[config.label] = build(config, kernel, workload)
    ablated: dict[str, Any] = {}
    for config in chosen[1:] if args.ablate else []:
        print(f"building {config.label} with one op class at a time native ...", file=sys.stderr)
        ablated.update(ablations(config, kernel, workload))
    print("timing ...", file=sys.stderr)
    us = round_robin_us_per_step({**executors, **ablated}, kernel, workload, args.ms, args.repeat, warmup=True)
    native = us[chosen[0].label]
    rows = [
        {
            "device": c.device,
            "mode": c.mode,
            "stochastic": c.stochastic,
            "setup_s": setup[c.label],
            "us_per_step": us[c.label],
            "ratio": us[c.label] / native,
            "bound": c.bound,
            "within_bound": us[c.label] / native <= c.bound,
        }
        for c in chosen
    ]
    for row, config in zip(rows, chosen):
        if args.floor and row["ratio"] > 1.2:  # the modes that emulate something
            print(f"floor of {config.label} ...", file=sys.stderr)
            row["floor"] = rounding_floor(config, kernel, workload, native)
    meta = {
        "kernel": "io-ehh",
        "cells": args.cells,
        "connected": True,
        "engine": "jax",
        "dtype": "float32",
        "ms_per_run": args.ms,
        "repeat": args.repeat,
        "cpus": os.cpu_count(),
        "load_avg_1min": os.getloadavg()[0],
    }
    if args.json:
        ablation_rows = [{"label": label, "us_per_step": us[label], "ratio": us[label] / native} for label in ablated]
        json.dump({"meta": meta, "results": rows, "ablations": ablation_rows}, sys.stdout, indent=2)
        print()
        return 0
    print(
        f"io-ehh, {args.cells} cells connected, JAX float32, min of {args.repeat} x {args.ms} ms, round-robin; "
        f"{meta['cpus']} CPUs, load {meta['load_avg_1min']:.1f}"
    )
    print(f"{'device [mode]':<32} {'setup s':>8} {'us/step':>9} {'x native':>9} {'bound':>6}")
    for row in rows:
        flag = "" if row["within_bound"] else "  over"
        label = f"{row['device']} [{row['mode']}]"
        print(
            f"{label:<32} {row['setup_s']:8.2f} {row['us_per_step']:9.1f} {row['ratio']:9.2f} {row['bound']:6.1f}{flag}"
        )
    for row in rows:
        if "floor" in row:
            f = row["floor"]
            line = (
                f"floor of {row['device']} [{row['mode']}]: {f['roundings_per_step']:,} roundings per step x "
                f"{f['ns_per_rounding']:.3f} ns (mean, in cache) on top of native: >= {f['floor_ratio']:.2f}x"
            )
            if "random_bits_floor_ratio" in f:
                line += f"; the random bits of its stochastic ones alone: >= {f['random_bits_floor_ratio']:.2f}x"
            print(line)
    for label in ablated:
        print(f"  {label:<46} {us[label]:9.1f} {us[label] / native:9.2f}")
    worst = max(r["ratio"] for r in rows)
    print(f"within bound: {sum(r['within_bound'] for r in rows)} of {len(rows)}; highest ratio {worst:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
