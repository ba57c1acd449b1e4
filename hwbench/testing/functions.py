"""Precision tests of a user's own JAX function on a chip's arithmetic, for the user's test suite.

``assert_device_close(fn, *args, device="h100:fp8-e4m3", rtol=2e-3)`` computes ``fn(*args)`` with
the device's arithmetic (the op-level evaluator, emulated where the chip is not here) and in
float64, and fails unless every output element is within the tolerances. The failure message names
the worst output element (both values), the equation and source line where the error first grows
beyond what fp32 itself shows (the fp32 floor), and the device's mechanism there where it is known
(saturation, fp8 overflow, a reduced-precision exp, flushed subnormals, matrix-unit inputs in a
narrower format). Programs are compiled once per function, argument shapes and device, so the
assertion can sit inside a hypothesis ``@given`` test (docs/testing.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.core.errors import UsageError

if TYPE_CHECKING:
    from hwbench.core.audit_report import CandidateNodes
    from hwbench.evaluator.jaxpr.program import FunctionProgram
    from hwbench.evaluator.judge import Criteria
    from hwbench.library.function import Target


def assert_device_close(
    fn: Callable[..., Any],
    *args: Any,
    device: str,
    rtol: float | None = None,
    atol: float | None = None,
    ulps: float | None = None,
    mode: str | None = None,
    seed: int = 0,
) -> Any:
    """Every output of ``fn(*args)`` on ``device`` (``NAME`` or ``NAME:MODE``) within ``atol + rtol *
    |ref|`` or ``ulps`` fp32 ulps of the float64 result (any one suffices); returns the device's
    outputs in ``fn``'s tree. A device that cannot run functions, an untraceable function or
    arguments that are not arrays raise :class:`hwbench.core.errors.UsageError`."""
    from hwbench.core.plugins import get_registry
    from hwbench.evaluator.arith import native_arith
    from hwbench.evaluator.judge import Criteria, beyond
    from hwbench.library.function import resolve_target
    from hwbench.library.function_cache import compiled_for, program_for

    criteria = Criteria(rtol, atol, ulps)
    if not criteria.tolerances:
        raise UsageError("assert_device_close needs a tolerance: rtol, atol or ulps")
    program = program_for(fn, args)
    flat = program.flat_inputs(args)
    target = resolve_target(get_registry(), device, mode, seed)
    ref = compiled_for(program, "float64", lambda: native_arith("float64"), False)(flat).outputs
    got = compiled_for(program, target.key, lambda: target.arith, False)(flat).outputs
    for key, want in ref.items():
        if want.dtype.kind != "f":
            continue
        found = beyond(got[key], want, criteria)
        if found is not None:
            index, count = found
            worst = _worst(program, key, index, count, got[key], want, criteria)
            raise AssertionError(_message(program, target, criteria, worst, _located(fn, args, target, criteria)))
    return program.unflatten(got)


def _worst(
    program: FunctionProgram,
    key: str,
    index: tuple[int, ...],
    count: int,
    got: np.ndarray,
    want: np.ndarray,
    criteria: Criteria,
) -> str:
    c, r = float(got[index]), float(want[index])
    allowed = float(criteria.allowed(np.asarray(r)))
    where = f"element {list(index)}" if index else "its value"
    error = f"|error| {abs(c - r):.3g}" if np.isfinite(c) else "not finite"
    return (
        f"output {program.output_names[key]} {where}: {c:.7g} on the device, {r:.7g} in float64 ({error}, allowed "
        f"{allowed:.3g}); {count} of {got.size} elements beyond"
    )


def _located(fn: Callable[..., Any], args: Any, target: Target, criteria: Criteria) -> CandidateNodes:
    """The device's audit, every equation against float64 and the fp32 floor."""
    from hwbench.library.function import audit_function

    report, _ = audit_function(fn, args, [target.label], criteria=criteria, seed=target.seed)
    return report.protocols[0].candidates[0]


def _message(program: FunctionProgram, target: Target, criteria: Criteria, worst: str, cand: CandidateNodes) -> str:
    lines = [f"{program.name} on {target.label} is not within {criteria.describe()} of float64:", f"  {worst}"]
    first = next((n for n in cand.nodes if n.name == cand.first_divergent_node), None)
    if first is None:
        lines.append("  no equation's error exceeds the fp32 floor: the tolerance is tighter than fp32 computes this")
        return "\n".join(lines)
    where = f"{first.source} {first.op_type}" if first.source else f"{first.name} {first.op_type}"
    bad = f", {first.nonfinite} non-finite" if first.nonfinite else ""
    lines.append(
        f"  the error first grows at {where}: {first.max_ulps:.3g} ulp of {cand.ulp_format.split(' ')[0]}{bad} "
        f"(fp32 floor {first.floor_ulps or 0:.3g} ulp)"
    )
    lines.append(f"  mechanism: {first.mechanism or 'not identified (the op rounds as the device does)'}")
    return "\n".join(lines)
