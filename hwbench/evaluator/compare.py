"""Node by node: each node's output against the float64 reference's, and the first that exceeds its floor.

Both front ends produce the same records (:class:`~hwbench.evaluator.records.NodeInfo` and the
tensors an evaluation keeps), so one comparison serves ONNX nodes and jaxpr equations alike.
Errors are those of the node's output as the candidate computed it from *its own* inputs, so they
grow along the graph, as NVIDIA Polygraphy's ``--onnx-outputs mark all`` shows them, but measured
against float64 rather than another low-precision run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel, Field

from hwbench.evaluator.records import NodeInfo


class NodeError(BaseModel, defer_build=True):
    """One node's output error against the reference (the worst of its float outputs)."""

    name: str
    op_type: str
    source: str = Field("", description="where the user wrote it (file:line of a jaxpr equation)")
    elements: int
    nonfinite: int = Field(description="non-finite elements where the reference is finite")
    max_abs_error: float
    max_rel_error: float = Field(description="max |cand - ref| / |ref| over elements with ref != 0")
    max_ulps: float = Field(description="max |cand - ref| in ulps of the reference value in the node's format")
    mean_signed_rel: float = Field(description="mean (cand - ref) / |ref|: a bias (rounding toward zero shows)")
    floor_ulps: float | None = Field(None, description="the same error of the floor run (None: no floor)")
    above_floor: bool = False


def ulp_of(ref: np.ndarray, mantissa_bits: int = 23, emin: int = -126) -> np.ndarray:
    """The spacing of a format's numbers at each reference value (its subnormal spacing below 2**emin)."""
    mag = np.abs(ref.astype(np.float64))
    _, e = np.frexp(np.where(np.isfinite(mag) & (mag > 0), mag, 1.0))
    exp = np.maximum(e - 1, emin)
    spacing: np.ndarray = np.ldexp(1.0, exp - mantissa_bits)
    return spacing


def node_error(
    info: NodeInfo, cand: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray], *, mantissa_bits: int = 23
) -> NodeError | None:
    """The node's error (its float outputs pooled), or None when it has no float output kept."""
    pairs = [
        (np.asarray(cand[o], np.float64), np.asarray(ref[o], np.float64))
        for o in info.outputs
        if o in cand and o in ref and np.asarray(ref[o]).dtype.kind == "f" and np.shape(cand[o]) == np.shape(ref[o])
    ]
    if not pairs:
        return None
    c = np.concatenate([p.reshape(-1) for p, _ in pairs])
    r = np.concatenate([q.reshape(-1) for _, q in pairs])
    ok = np.isfinite(r)
    bad = ok & ~np.isfinite(c)
    keep = ok & np.isfinite(c)
    err = np.abs(c - r)[keep]
    rk = r[keep]
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(rk != 0, err / np.abs(rk), np.where(err == 0, 0.0, np.inf))
        ulps = err / ulp_of(rk, mantissa_bits)
        signed = (c[keep] - rk)[rk != 0] / np.abs(rk[rk != 0])
    return NodeError(
        name=info.name,
        op_type=info.op_type,
        source=info.source,
        elements=int(c.size),
        nonfinite=int(bad.sum()),
        max_abs_error=float(err.max()) if err.size else 0.0,
        max_rel_error=float(rel.max()) if rel.size else 0.0,
        max_ulps=float(ulps.max()) if ulps.size else 0.0,
        mean_signed_rel=float(signed.mean()) if signed.size else 0.0,
    )


def node_errors(
    infos: Sequence[NodeInfo],
    cand: Mapping[str, np.ndarray],
    ref: Mapping[str, np.ndarray],
    floor: Mapping[str, np.ndarray] | Sequence[Mapping[str, np.ndarray]] | None = None,
    *,
    mantissa_bits: int = 23,
) -> list[NodeError]:
    """Every node's error in graph order; with a ``floor`` run (an fp32 run with +1 ulp inputs: the
    noise a correct fp32 computation may show), or several (an ensemble: the floor is the largest of
    their errors), each node is marked above it or not."""
    floors = [] if floor is None else [floor] if isinstance(floor, Mapping) else list(floor)
    out = []
    for info in infos:
        e = node_error(info, cand, ref, mantissa_bits=mantissa_bits)
        if e is None:
            continue
        found = [f for f in (node_error(info, run, ref, mantissa_bits=mantissa_bits) for run in floors) if f]
        if found:
            e.floor_ulps = max(f.max_ulps for f in found)
            e.above_floor = e.nonfinite > 0 or e.max_ulps > max(e.floor_ulps, 1.0)
        out.append(e)
    return out


def first_divergent(errors: Sequence[NodeError]) -> NodeError | None:
    """The first node, in graph order, whose error exceeds its floor."""
    return next((e for e in errors if e.above_floor), None)
