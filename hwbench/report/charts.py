"""The report's plots: matplotlib (Agg, imported lazily) rendered to base64 PNG data URIs."""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Series:
    label: str
    x: Sequence[Any]
    y: Sequence[float]


def _pyplot() -> Any:
    import sys

    import matplotlib

    if "ipykernel" not in sys.modules:  # in Jupyter the user's inline backend stays (figures are closed)
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def data_uri(fig: Any) -> str:
    """The figure as ``data:image/png;base64,...`` (the page stays one file)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    _pyplot().close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def line_chart(
    series: list[Series],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    logx: bool = False,
    logy: bool = True,
    vline: float | None = None,
) -> str:
    """Lines (markers when short); ``vline``: an x to mark (a run's first violation)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    if vline is not None:
        ax.axvline(vline, color="tab:red", lw=0.8, ls="--")
    for s in series:
        ax.plot(list(s.x), list(s.y), "o-" if len(s.x) < 50 else "-", label=s.label)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    if series:
        ax.legend(fontsize=7)
    fig.autofmt_xdate() if not logx and vline is None else None
    return data_uri(fig)


def bar_chart(
    labels: list[str], values: list[float], *, title: str, ylabel: str, diverged: dict[str, str] | None = None
) -> str:
    """Horizontal bars on a log axis. ``diverged`` (label -> note): runs with no finite value, drawn as
    a hatched red bar across the whole axis with the note, so a failing run is not left out."""
    plt = _pyplot()
    marks = diverged or {}
    everything = [*labels, *marks]
    fig, ax = plt.subplots(figsize=(7, 0.35 * max(len(everything), 4) + 1))
    positive = [max(v, 1e-12) for v in values]
    ax.barh(range(len(labels)), positive, color="tab:blue")
    if marks:
        top = max(positive, default=1.0) * 10
        rows = range(len(labels), len(everything))
        ax.barh(rows, [top] * len(marks), color="none", edgecolor="tab:red", hatch="//", lw=1)
        for row, note in zip(rows, marks.values(), strict=True):
            ax.text(min(positive, default=1.0), row, f" {note}", va="center", fontsize=7, color="tab:red")
    ax.set_yticks(range(len(everything)), everything, fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    return data_uri(fig)
