"""What the GroqChip's saturating special values cost, and what the trace-time bounds save.

Both groq modes saturate every op's result (``special_values = "saturate"``, issue 30). Since
issue 31 :meth:`EmulatingOps._round_and_saturate` shortens the saturation where the values' bounds, known
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

import contextlib
from collections.abc import Iterator
from typing import Any

from _timing import io_ehh_parser, print_io_ehh_variants

VARIANTS = ("full saturation", "bounded saturation", "no saturation")


@contextlib.contextmanager
def variant(name: str) -> Iterator[None]:
    """Trace with the saturation of ``name`` patched in (restored afterwards)."""
    from hwbench.accuracy.numerics import emulate

    saved = emulate.saturate, emulate.clamp, emulate.EmulatingOps._bounds
    if name == "full saturation":
        emulate.EmulatingOps._bounds = lambda self, rule, x: None  # type: ignore[method-assign]
    elif name == "no saturation":
        emulate.saturate = lambda xp, x, max_value, **kw: x
        emulate.clamp = lambda xp, x, max_value, **kw: x
    try:
        yield
    finally:
        emulate.saturate, emulate.clamp, emulate.EmulatingOps._bounds = saved  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    args = io_ehh_parser(__doc__.split("\n\n")[0], ms=50).parse_args(argv)

    def build(kernel: Any, workload: Any, common: dict[str, Any]) -> dict[str, Any]:
        from hwbench.core.plugins import get_registry

        groq, executors = get_registry().devices["groq"], {}
        for mode in ("default", "fp32-exact-vector"):
            for name in VARIANTS:
                with variant(name):
                    executors[f"groq [{mode}], {name}"] = groq.executor_for(kernel, workload, mode=mode, **common)
        return executors

    print_io_ehh_variants(args, "configuration", build)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
