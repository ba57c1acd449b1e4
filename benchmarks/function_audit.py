"""What auditing a JAX function costs: the emulated function beside the plain one, the io-ehh step
as a function beside the built-in kernel, and the time to trace and transform a jaxpr.

Three measurements, each side by side in this one process, contenders timed in turns (round
robin, the minimum of ``--repeat`` turns kept), so load on a shared machine hits them alike:

1. ``emulated / plain``: a function with a scan, matrix products and a softmax (batch x width,
   ``--steps`` steps), compiled by the op-level evaluator for an operand-rounding device (its
   matrix products: operands rounded to the unit's input format around one native product;
   default ``tpu-v3:default``, bf16 operands, exp with its error model) against ``jax.jit`` of
   the same function (goal: at most 3x);
2. ``function / kernel``: the io-ehh network (``--cells``, ``--ms`` of simulated time) written as
   a plain JAX function (``benchmarks/io_ehh_function.py``) and audited this way, against the
   built-in io-ehh kernel's emulated run on the same device (``groq``: deterministic, so the two
   give the same bits over many steps; checked here) (goal: at most 1.5x);
3. ``trace + transform``: a 1,000-equation function traced to its jaxpr and walked on a
   device's arithmetic into the transformed program (goal: at most 1 s), on the CPU's native
   arithmetic (the walk's own cost) and on the two devices above (the emulation's operations are
   traced too: their number grows with what the device rounds); lowering to XLA is shown apart.

``--quick`` runs small sizes with few repeats (a test runs it); ratios are printed, and with
``--json`` written as JSON on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _rounds(contenders: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    """Minimum wall time of each contender over ``repeat`` turns, after one untimed warm turn."""
    best = dict.fromkeys(contenders, float("inf"))
    for turn in range(repeat + 1):
        for label, call in contenders.items():
            start = time.perf_counter()
            call()
            if turn:
                best[label] = min(best[label], time.perf_counter() - start)
    return best


def model(steps: int) -> Callable[..., Any]:
    """A recurrent layer (scan), a readout and a softmax: the function the first ratio times."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def fn(xs: Any, h0: Any, w: Any, u: Any) -> Any:
        def cell(h: Any, x: Any) -> tuple[Any, Any]:
            h = jnp.tanh(h @ w + x)
            return h, jax.nn.softmax(h @ u, axis=-1)

        _, ys = lax.scan(cell, h0, xs[:steps])
        return ys

    return fn


def emulated_vs_plain(device: str, batch: int, width: int, steps: int, repeat: int) -> dict[str, Any]:
    import jax

    from hwbench.core.plugins import get_registry
    from hwbench.evaluator.jaxpr.program import FunctionProgram
    from hwbench.library.function import resolve_target

    rng = np.random.default_rng(0)
    args = (
        rng.normal(0, 1, (steps, batch, width)).astype(np.float32),
        np.zeros((batch, width), np.float32),
        rng.normal(0, width**-0.5, (width, width)).astype(np.float32),
        rng.normal(0, width**-0.5, (width, width)).astype(np.float32),
    )
    fn = model(steps)
    plain = jax.jit(fn)
    program = FunctionProgram(fn, args)
    emulated = program.compile(resolve_target(get_registry(), device).arith)
    flat = program.flat_inputs(args)
    best = _rounds({"plain": lambda: jax.block_until_ready(plain(*args)), "emulated": lambda: emulated(flat)}, repeat)
    return {
        "device": device,
        "shape": f"{steps} steps, batch {batch}, width {width}",
        "plain_s": best["plain"],
        "emulated_s": best["emulated"],
        "ratio": best["emulated"] / best["plain"],
    }


def io_ehh_function_vs_kernel(device: str, cells: int, ms: int, repeat: int) -> dict[str, Any]:
    from io_ehh_function import make_simulation

    from hwbench.core.plugins import get_registry
    from hwbench.evaluator.jaxpr.program import FunctionProgram
    from hwbench.library.function import resolve_target

    registry = get_registry()
    kernel = registry.kernel("io-ehh")
    workload = kernel.make_workload(cells, seed=42)
    steps = round(ms / kernel.info.dt_ms)
    samples = steps // kernel.info.sample_every
    state0 = workload.state0.astype(np.float32)
    current = np.zeros(cells, np.float32)
    target = resolve_target(registry, device)
    executor = registry.device(target.device).executor_for(kernel, workload, mode=target.mode)
    simulate = make_simulation(dict(workload.params), workload.arrays["src"], workload.arrays["tgt"], cells, steps)
    program = FunctionProgram(simulate, (state0, current))
    run = program.compile(target.arith)
    flat = program.flat_inputs((state0, current))
    got = run(flat).outputs["out0"]
    want = np.asarray(executor.run(state0, {"I_app": current}, samples).state, np.float32)
    best = _rounds(
        {
            "function": lambda: run(flat),
            "kernel": lambda: executor.run(state0, {"I_app": current}, samples),
        },
        repeat,
    )
    return {
        "device": target.label,
        "shape": f"{cells} cells, {steps} steps",
        "function_s": best["function"],
        "kernel_s": best["kernel"],
        "ratio": best["function"] / best["kernel"],
        "bit_identical": bool(np.array_equal(got.view(np.uint32), want.view(np.uint32))),
    }


def chain(equations: int) -> Callable[..., Any]:
    """A function of ``equations`` elementwise equations (a long expression, as generated code is)."""
    import jax.numpy as jnp

    def fn(x: Any) -> Any:
        for k in range(equations // 4):
            x = jnp.tanh(x * (1.0 + k * 1e-3)) + x / 3.0
        return x

    return fn


def trace_and_transform(device: str, equations: int, repeat: int) -> dict[str, Any]:
    """Seconds to trace ``chain(equations)`` to its jaxpr, to walk it on ``device``'s arithmetic into
    the transformed program (a jaxpr), and to lower that to XLA (minimum of ``repeat``)."""
    import jax

    from hwbench.core.engines.jax_engine import x64_mode
    from hwbench.core.plugins import get_registry
    from hwbench.evaluator.jaxpr.program import FunctionProgram
    from hwbench.library.function import resolve_target

    arith = resolve_target(get_registry(), device).arith
    x = np.linspace(-2, 2, 1024, dtype=np.float32)
    fn = chain(equations)
    best = {"trace_s": float("inf"), "transform_s": float("inf"), "lower_s": float("inf")}
    count = produced = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        program = FunctionProgram(fn, (x,))
        t1 = time.perf_counter()
        walked = program.transformed(arith)
        with x64_mode(arith.dtype):
            traced = jax.jit(walked).trace([x], np.int32(0))
            t2 = time.perf_counter()
            traced.lower()
        t3 = time.perf_counter()
        for key, value in zip(best, (t1 - t0, t2 - t1, t3 - t2)):
            best[key] = min(best[key], value)
        count, produced = program.equations, len(traced.jaxpr.eqns)
    return {"device": device, "equations": count, "transformed_equations": produced, **best}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats (for tests)")
    parser.add_argument("--device", default="tpu-v3:default", help="operand-rounding device of the first ratio")
    parser.add_argument("--io-device", default="groq", help="device of the io-ehh comparison")
    parser.add_argument("--cells", type=int, default=729)
    parser.add_argument("--ms", type=int, default=25, help="simulated ms of the io-ehh runs")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    args = parser.parse_args(argv)
    from hwbench.core.engines.jax_engine import prepare_xla_flags

    prepare_xla_flags()  # as every hwbench engine does, before JAX starts
    repeat = 2 if args.quick else args.repeat
    cells, ms = (125, 2) if args.quick else (args.cells, args.ms)
    batch, width, steps = (16, 64, 8) if args.quick else (256, 512, 32)
    results = {
        "emulated_vs_plain": emulated_vs_plain(args.device, batch, width, steps, repeat),
        "io_ehh_function_vs_kernel": io_ehh_function_vs_kernel(args.io_device, cells, ms, repeat),
        "trace_and_transform": [trace_and_transform(d, 1000, repeat) for d in ("cpu", args.device, args.io_device)],
    }
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    a, b, c = results.values()
    print(f"emulated function on {a['device']} / plain jax.jit ({a['shape']}): {a['ratio']:.2f}x "
          f"({a['emulated_s'] * 1e3:.1f} ms / {a['plain_s'] * 1e3:.1f} ms; goal <= 3x)")  # fmt: skip
    print(f"io-ehh as a function / built-in kernel on {b['device']} ({b['shape']}): {b['ratio']:.2f}x "
          f"({b['function_s'] * 1e3:.1f} ms / {b['kernel_s'] * 1e3:.1f} ms; goal <= 1.5x); "
          f"same bits: {b['bit_identical']}")  # fmt: skip
    for t in c:
        print(f"trace + transform, {t['equations']} equations on {t['device']} ({t['transformed_equations']} after): "
              f"{t['trace_s'] + t['transform_s']:.2f} s (trace {t['trace_s']:.2f} s, transform "
              f"{t['transform_s']:.2f} s; goal <= 1 s), lowering to XLA {t['lower_s']:.2f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
