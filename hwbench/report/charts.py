"""The report's plots: matplotlib (Agg, imported lazily) rendered to base64 PNG data URIs."""

from __future__ import annotations

import base64
import io
import math
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


def divergence_chart(series: list[Series], *, t_violation: float, title: str, ylabel: str) -> str:
    """:func:`divergence_figure` as a data URI."""
    return data_uri(divergence_figure(series, t_violation=t_violation, title=title, ylabel=ylabel))


def divergence_figure(series: list[Series], *, t_violation: float, title: str, ylabel: str) -> Any:
    """The probe around a first violation in three panels, so that the onset shows beside the blow-up:
    the whole window on a symlog axis (linear within the reference's scale, logarithmic beyond, where a
    diverged run reaches 1e36), the window before the violation on the probe's own linear scale, and
    each run minus the reference there (the onset). ``series``: the reference first."""
    import numpy as np

    plt = _pyplot()
    fig, (whole, before, diff) = plt.subplots(3, 1, figsize=(7, 8.5), sharex=False)
    ref = np.asarray(series[0].y, dtype=float) if series else np.zeros(0)
    scale = float(np.nanmax(np.abs(ref[np.isfinite(ref)]), initial=1.0))
    linthresh = 10.0 ** math.ceil(math.log10(scale)) if scale > 0 else 1.0
    top = linthresh
    for i, s in enumerate(series):
        t, y = np.asarray(s.x, dtype=float), np.asarray(s.y, dtype=float)
        early = t <= t_violation
        # one colour per run in every panel; the reference dashed on top, where the others may hide it
        look = {"color": f"C{i}", "zorder": 2} if i else {"color": "k", "ls": "--", "lw": 1.0, "zorder": 3}
        top = max(top, float(np.nanmax(np.abs(y[np.isfinite(y)]), initial=0.0)))
        whole.plot(t, y, label=s.label, **look)
        before.plot(t[early], y[early], label=s.label, **look)
        if i and len(y) == len(ref):
            diff.plot(t[early], (y - ref)[early], label=f"{s.label} - reference", **look)
    whole.set_yscale("symlog", linthresh=linthresh)
    whole.set_yticks(_symlog_ticks(linthresh, top))
    whole.set_title(f"{title}\nwhole window (symlog: linear within +-{linthresh:g}, logarithmic beyond)", fontsize=9)
    before.set_title("before the first violation, on the probe's scale", fontsize=9)
    diff.set_title("minus the reference, before the first violation: the onset", fontsize=9)
    for ax, label in ((whole, ylabel), (before, ylabel), (diff, f"difference {ylabel}")):
        ax.axvline(t_violation, color="tab:red", lw=0.8, ls="--")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    diff.axhline(0.0, color="k", lw=0.5)
    diff.set_xlabel("biological time (ms)")
    fig.tight_layout()
    return fig


def _symlog_ticks(linthresh: float, top: float, most: int = 4) -> list[float]:
    """0 and at most ``most`` decades on each side, the highest at or above ``top``, evenly spaced down
    towards ``linthresh`` (the decades next to 0 are left out where they would crowd it)."""
    first, last = round(math.log10(linthresh)), math.ceil(math.log10(max(top, linthresh)))
    step = max(1, math.ceil((last - first) / most))
    decades = [10.0**e for e in range(last, first - 1, -step)]
    return sorted({0.0, *decades, *(-d for d in decades)})
