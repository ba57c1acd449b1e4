"""Where the GroqChip default mode's emulation time goes: its reduced-precision rounding, op by op.

groq [default] rounds every EXP, DIV and COMPARE result (about 60,000 per io-ehh step at 729
cells) to fp32's range with 10 fraction bits, by the short integer sequence of
:mod:`hwbench.accuracy.numerics.fast_rounding` (nearest-even: shift, and, add, add, and, plus the
NaN guard). This benchmark answers whether that sequence, or the fusion structure around it, is
what stands between the mode and the issue's 1.5x bound: it builds io-ehh natively and under
groq [default] with that one rounding swapped for cheaper stand-ins, everything else (one-hot
gathers and scatter, fp16 terms) unchanged, and times them side by side (round-robin, one
process, as ``device_emulation.py``):

* ``no reduced rounding``: the rounding left out (what remains is the one-hot part; the same
  program as groq [fp32-exact-vector]);
* ``truncate (1 op)``: ``bits & mask``; ``add+and (2 ops)``: nearest with ties away;
* ``nearest-even, no NaN guard``: the real sequence without its ``isnan`` select;
* ``lax.reduce_precision``: XLA's own op (the same integer sequence, emitted as one HLO op).

The stand-ins compute wrong results on purpose (only their cost is of interest); the real mode
is the ``groq [default]`` row. Each stand-in is patched in only while its executor is traced.

    python benchmarks/groq_rounding_cost.py [--cells 729] [--ms 40] [--repeat 9]
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from _timing import io_ehh_parser, print_io_ehh_variants


def stand_ins() -> dict[str, Callable[[Any], Any] | None]:
    """Label -> replacement of the 10-bit rounding of a float32 JAX array (None: the real one)."""
    import jax.numpy as jnp
    from jax import lax

    def bits(x: Any) -> Any:
        return lax.bitcast_convert_type(x, jnp.uint32)

    def flt(b: Any) -> Any:
        return lax.bitcast_convert_type(b, jnp.float32)

    def u(c: int) -> Any:
        return jnp.asarray(c, jnp.uint32)

    mask = 0xFFFFE000  # fp32 with 10 of its 23 fraction bits kept
    return {
        "groq [default]": None,
        "no reduced rounding": lambda x: x,
        "truncate (1 op)": lambda x: flt(bits(x) & u(mask)),
        "add+and (2 ops)": lambda x: flt((bits(x) + u(0x1000)) & u(mask)),
        "nearest-even, no NaN guard": lambda x: flt((bits(x) + u(0xFFF) + ((bits(x) >> u(13)) & u(1))) & u(mask)),
        "lax.reduce_precision": lambda x: lax.reduce_precision(x, exponent_bits=8, mantissa_bits=10),
    }


@contextlib.contextmanager
def reduced_rounding(replacement: Callable[[Any], Any] | None) -> Iterator[None]:
    """Trace with the JAX nearest-even rounding onto fp32-range formats replaced (numpy untouched)."""
    import numpy as np

    from hwbench.accuracy.numerics import emulate
    from hwbench.accuracy.numerics.formats import RoundingMode

    original = emulate.fast_rounder
    if replacement is None:
        yield
        return

    def patched(fmt: Any, mode: RoundingMode, carrier: str) -> Any:
        real = original(fmt, mode, carrier)
        if real is None or mode is not RoundingMode.NEAREST_EVEN or fmt.emin != -126 or carrier != "float32":
            return real
        return lambda xp, x, **kw: real(xp, x, **kw) if xp is np else replacement(x)

    emulate.fast_rounder = patched
    try:
        yield
    finally:
        emulate.fast_rounder = original


def main(argv: list[str] | None = None) -> int:
    args = io_ehh_parser(__doc__.split("\n\n")[0], ms=40).parse_args(argv)

    def build(kernel: Any, workload: Any, common: dict[str, Any]) -> dict[str, Any]:
        from hwbench.core.plugins import get_registry

        groq, executors = get_registry().devices["groq"], {}
        for label, replacement in stand_ins().items():
            with reduced_rounding(replacement):
                executors[label] = groq.executor_for(kernel, workload, mode="default", **common)
        return executors

    print_io_ehh_variants(args, "reduced-precision rounding of groq [default]", build)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
