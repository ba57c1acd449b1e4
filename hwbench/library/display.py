"""Jupyter rendering (``_repr_html_``) of the library's results, through the report pages' renderer
(:mod:`hwbench.report.html`), so a notebook shows what ``hwbench report`` would: the verdict, the
tables, and the plots inline."""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hwbench.accuracy.audit import ProtocolData
    from hwbench.accuracy.report import AuditReport


def _images(paths: list[Path]) -> dict[str, str]:
    return {p.name: "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode("ascii") for p in paths}


def audit_html(report: AuditReport, data: dict[str, ProtocolData]) -> str:
    """The audit as an HTML fragment: the report's sections and the PNG plots ``--out`` would write."""
    from hwbench.library.plots import audit_plots
    from hwbench.report.html import ReportSource, render_fragment

    with tempfile.TemporaryDirectory(prefix="hwbench-plots-") as tmp:
        images = _images(audit_plots(data, Path(tmp)))
    doc = report.model_dump(mode="json", by_alias=True)
    return render_fragment(ReportSource(doc, "audit", "this session", None, {}, "", images))


def document_html(doc: dict[str, Any], kind: str) -> str:
    """A run or bench result as an HTML fragment (timings, traces, skipped configurations)."""
    from hwbench.report.html import ReportSource, render_fragment

    return render_fragment(ReportSource(doc, kind, "this session", None, {}, "", {}))
