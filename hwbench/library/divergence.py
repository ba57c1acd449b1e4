"""The probed traces around a run's first divergence, kept in the audit report.

The published report keeps summaries, not traces, so a page made from a stored audit could not
show what went wrong. The forensics name the time and the cell of a candidate's first hard-check
violation; this adds the probe of that cell around that time, for the reference, the fp64 gold and
the candidate, to that violation's record (``violation["traces"]``, a free-form field of the
report), so ``hwbench report`` and Jupyter draw it as the ``--out`` trace PNGs do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from hwbench.accuracy.audit import ProtocolData
    from hwbench.accuracy.report import AuditReport

WINDOW_MS = (-60.0, 15.0)  # from 60 ms before the first violation to 15 ms after (the candidate is NaN there)


def attach_divergence_traces(report: AuditReport, data: dict[str, ProtocolData]) -> None:
    """Add ``violation["traces"]`` to every run whose violation names a time and a cell."""
    for protocol in report.protocols:
        pdata = data.get(protocol.name)
        if pdata is None or "reference" not in pdata.traces:
            continue
        for run in protocol.runs:
            v = run.violation
            if isinstance(v, dict) and isinstance(v.get("t_ms"), (int, float)) and isinstance(v.get("cell"), int):
                excerpt = _excerpt(pdata, run.label, float(v["t_ms"]), int(v["cell"]))
                if excerpt is not None:
                    v["traces"] = excerpt


def _excerpt(pdata: ProtocolData, label: str, t_ms: float, cell: int) -> dict[str, Any] | None:
    ref = pdata.traces["reference"].probes
    if cell >= ref.shape[1] or label not in pdata.traces:
        return None
    times = (np.arange(len(ref)) + 1) * pdata.sample_ms
    keep = (times >= t_ms + WINDOW_MS[0]) & (times <= t_ms + WINDOW_MS[1])
    gold = next((lab for lab, role in pdata.roles.items() if role == "gold"), None)
    series = {}
    for lab in ("reference", gold, label):
        if lab is not None and lab in pdata.traces:
            probes = np.asarray(pdata.traces[lab].probes, dtype=float)
            series[lab] = probes[: len(times)][keep[: len(probes)], cell].tolist()
    return {"cell": cell, "probe": pdata.probe, "t_ms": times[keep].tolist(), "series": series}
