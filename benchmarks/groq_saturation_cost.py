"""What the GroqChip's saturating special values cost, and what the trace-time bounds save.

Both groq modes saturate every op's result (``special_values = "saturate"``, issue 30). Since
issue 31 :meth:`EmulatingOps._saturate` shortens the saturation where the values' bounds, known
while the kernel is traced, allow (:mod:`hwbench.accuracy.numerics.value_bounds`): a clamp without
the NaN select, or one select where the result is in range. This benchmark builds io-ehh natively
and, per groq mode, three times, and times them side by side (round-robin, one process, as
``device_emulation.py``):

* ``full saturation``: every result through the full :func:`native_fp32.saturate`, as before
  issue 31 (the bounds switched off; the same values, bit for bit);
* ``bounded saturation``: the mode as it runs;
* ``no saturation``: the saturation left out (wrong results on overflow, on purpose: what the
  rest of the emulation costs).

    python benchmarks/groq_saturation_cost.py [--cells 729] [--ms 50] [--repeat 9]
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any

from _timing import round_robin_us_per_step

VARIANTS = ("full saturation", "bounded saturation", "no saturation")


@contextlib.contextmanager
def variant(name: str) -> Iterator[None]:
    """Trace with the saturation of ``name`` patched in (restored afterwards)."""
    from hwbench.accuracy.numerics import emulate

    saved = emulate.saturate, emulate.clamp, emulate.EmulatingOps._bounds
    if name == "full saturation":
        emulate.EmulatingOps._bounds = lambda self, rule, x: None  # type: ignore[method-assign]
    elif name == "no saturation":
        emulate.saturate = lambda xp, x, max_value: x
        emulate.clamp = lambda xp, x, max_value, **kw: x
    try:
        yield
    finally:
        emulate.saturate, emulate.clamp, emulate.EmulatingOps._bounds = saved  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=729)
    parser.add_argument("--ms", type=int, default=50, help="simulated ms per timed run (default 50)")
    parser.add_argument("--repeat", type=int, default=9, help="timed runs per configuration (min is kept)")
    args = parser.parse_args(argv)

    from hwbench.core.plugins import get_registry
    from hwbench.plugins.kernels.io_ehh import IoEhhKernel

    kernel = IoEhhKernel()
    workload = kernel.make_workload(args.cells, connected=True, seed=0)
    groq = get_registry().devices["groq"]
    common: dict[str, Any] = {"engine": "jax", "dtype": "float32", "sample_every": kernel.info.sample_every}
    native_device = get_registry().devices["cpu"]
    executors = {"cpu [fp32] (native)": native_device.executor_for(kernel, workload, mode="fp32", **common)}
    for mode in ("default", "fp32-exact-vector"):
        for name in VARIANTS:
            with variant(name):
                executors[f"groq [{mode}], {name}"] = groq.executor_for(kernel, workload, mode=mode, **common)
    us = round_robin_us_per_step(executors, kernel, workload, args.ms, args.repeat, warmup=True)
    native = us["cpu [fp32] (native)"]
    print(f"io-ehh, {args.cells} cells connected, JAX float32, min of {args.repeat} x {args.ms} ms, round-robin")
    print(f"{'configuration':<50} {'us/step':>8} {'x native':>9}")
    for label, value in us.items():
        print(f"{label:<50} {value:8.1f} {value / native:9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
