"""Assertions whose failure messages say where and by how much things differ."""

from __future__ import annotations

from typing import Any

import numpy as np

from hwbench.accuracy.numerics.formats import FloatFormat, get_format


def _float_format(fmt: FloatFormat | str) -> FloatFormat:
    """``fmt`` itself, or the float preset it names (a fixed-point name has no ulp: refused)."""
    if not isinstance(fmt, str):
        return fmt
    found = get_format(fmt)
    if not isinstance(found, FloatFormat):
        raise ValueError(f"'{fmt}' is a fixed-point format: ulps are defined for float formats only")
    return found


def ulp_distance(actual: Any, expected: Any, fmt: FloatFormat | str) -> np.ndarray:
    """|actual - expected| in units of the ulp of ``fmt`` at ``expected`` (inf where non-finite
    values differ, 0 where both are the same non-finite value)."""
    fmt = _float_format(fmt)
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    ulp = np.asarray(fmt.ulp(e), dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        dist = np.abs(a - e) / ulp
    same_special = (np.isnan(a) & np.isnan(e)) | (np.isinf(a) & (a == e))
    return np.where(same_special, 0.0, np.where(np.isfinite(dist), dist, np.inf))


def assert_within_ulps(actual: Any, expected: Any, fmt: FloatFormat | str, ulps: float = 1.0) -> None:
    """Every element of ``actual`` within ``ulps`` ulps (of ``fmt``) of ``expected``."""
    fmt_obj = _float_format(fmt)
    dist = ulp_distance(actual, expected, fmt_obj)
    if dist.size and dist.max() > ulps:
        bad = np.argwhere(dist > ulps)
        i = tuple(int(k) for k in np.unravel_index(int(np.argmax(dist)), dist.shape)) if dist.ndim else ()
        a = float(np.asarray(actual, dtype=np.float64)[i])
        e = float(np.asarray(expected, dtype=np.float64)[i])
        raise AssertionError(
            f"{len(bad)} of {dist.size} values differ by more than {ulps:g} ulp of {fmt_obj.name}; "
            f"worst at index {list(i)}: actual {a!r} vs expected {e!r} ({float(dist[i]):.3g} ulp)"
        )


def assert_kernel_matches_cpu(
    kernel: str,
    device: str,
    *,
    mode: str | None = None,
    size: int = 64,
    samples: int = 5,
    max_abs: float = 1.0,
    reference_mode: str = "fp64",
    profile: Any = None,
) -> float:
    """Run ``kernel`` on ``device`` and on the CPU (fp64 gold by default) from the same workload;
    assert the probes agree within ``max_abs``. Returns the max deviation observed."""
    from hwbench.core.plugins import get_registry

    registry = get_registry()
    k = registry.kernel(kernel)
    d = registry.device(device)
    workload = k.make_workload(size, seed=0)
    support = d.supports(k, workload)
    if not support.ok:
        raise AssertionError(f"{device} refuses {kernel} at size {size}: {support.reason}")
    inputs = k.default_inputs(workload)
    out = d.executor_for(k, workload, mode=mode, profile=profile).run(workload.state0, inputs, samples)
    ref = registry.device("cpu").executor_for(k, workload, mode=reference_mode).run(workload.state0, inputs, samples)
    a = np.asarray(out.probes, dtype=np.float64)
    r = np.asarray(ref.probes, dtype=np.float64)
    dev = np.abs(a - r)
    worst = float(dev.max()) if np.isfinite(dev).all() else float("inf")
    if not worst <= max_abs:
        i = np.unravel_index(int(np.nanargmax(np.where(np.isfinite(dev), dev, np.inf))), dev.shape)
        raise AssertionError(
            f"{kernel} on {device} [{mode or d.default_mode}] deviates {worst:.4g} from CPU {reference_mode} "
            f"(limit {max_abs:g}); worst at sample {i[0]}, index {i[1:]}: {a[i]!r} vs {r[i]!r}"
        )
    return worst


def assert_verdict(report: Any, expected: str, *, protocol: str | None = None) -> None:
    """An audit report's overall (or one protocol's) verdict equals ``expected``, or say why not."""
    verdicts = {p.name: p for p in report.protocols}
    got = verdicts[protocol].verdict.value if protocol else report.verdict.value
    if got != expected:
        reasons = "; ".join(report.reasons)
        where = f"protocol {protocol}" if protocol else "overall"
        raise AssertionError(f"audit verdict ({where}) is {got}, expected {expected}: {reasons}")
