"""PNG plots (matplotlib, imported lazily with the non-interactive Agg backend)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, BinaryIO

from hwbench.core.files import OutputFiles, write_atomic
from hwbench.core.results import HOST_TIME, BenchResult, Timing

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from hwbench.accuracy.audit import ProtocolData

MOUSE_IO_CELLS = 1e4  # order of magnitude of the mouse inferior olive (study's figure marks)
HUMAN_IO_CELLS = (1e6, 1e7)


def _pyplot() -> ModuleType:
    import sys

    import matplotlib

    if "ipykernel" not in sys.modules:  # in Jupyter the user's inline backend stays (figures are closed)
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_atomic(fig: Figure, path: Path, files: OutputFiles | None = None) -> Path:
    """PNG written atomically; with ``files`` only staged (it appears when that set is committed)."""

    def writer(fh: BinaryIO) -> None:
        fig.savefig(fh, format="png", dpi=120, bbox_inches="tight")

    if files is not None:
        return files.write(path, writer)
    return write_atomic(path, writer)


def bench_plot(result: BenchResult, path: str | Path, files: OutputFiles | None = None) -> Path:
    """Run time of 100 ms simulated versus cells, with the real-time line and brain-size marks."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    groups: dict[tuple[str, str, bool, str], list[Timing]] = {}
    for t in result.timings:
        groups.setdefault((t.engine, t.dtype, t.connected, t.execution), []).append(t)
    for (engine, dtype, connected, execution), ts in sorted(groups.items()):
        ts = sorted(ts, key=lambda t: t.ncells)
        ax.loglog(
            [t.ncells for t in ts],
            [t.run_s for t in ts],
            "o-" if connected else "s--",
            label=f"{engine} {dtype} {'connected' if connected else 'unconnected'} ({execution})",
        )
    sim_s = result.protocol.get("simulated_ms", 100.0) / 1000.0
    ax.axhline(sim_s, color="k", lw=1, ls=":", label="real time")
    ax.axvline(MOUSE_IO_CELLS, color="tab:green", lw=1, ls="-.")
    ax.text(MOUSE_IO_CELLS, ax.get_ylim()[1], " mouse IO", va="top", color="tab:green", fontsize=8)
    ax.axvspan(*HUMAN_IO_CELLS, color="tab:red", alpha=0.08)
    ax.text(HUMAN_IO_CELLS[0], ax.get_ylim()[1], " human IO", va="top", color="tab:red", fontsize=8)
    ax.set_xlim(left=min([t.ncells for t in result.timings] + [10]) / 2, right=2e7)
    ax.set_xlabel("cells")
    ax.set_ylabel(f"wall time for {sim_s * 1000:g} ms simulated (s, min of {result.protocol.get('repeats')})")
    title = f"{result.protocol.get('kernel')} on {result.protocol.get('device')}"
    if any(t.execution == "emulated" for t in result.timings):
        title += f"\nemulated: {HOST_TIME}"
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    return save_atomic(fig, Path(path), files)


DIVERGED_MV = 1e3  # deviations above this (and non-finite ones) are drawn at this level


def _audit_colors(labels: list[str]) -> dict[str, object]:
    from matplotlib import colormaps

    cmap = colormaps["tab20"]  # a listed map: cmap(k) is its k-th colour
    palette = [cmap(k) for k in range(20)]
    order = [*range(0, 20, 2), *range(1, 20, 2)]  # the ten strong colours first, then their light pairs
    return {lab: palette[order[i % 20]] for i, lab in enumerate(labels)}


def audit_plots(data: dict[str, ProtocolData], out_dir: Path, files: OutputFiles | None = None) -> list[Path]:
    """Box plots of deviation (first / last second), trace overlays with deviation over time, and
    the stress-test traces. ``data`` is ``Auditor.data`` (in-memory traces)."""
    plt = _pyplot()
    written: list[Path] = []
    for name, pdata in data.items():
        if "reference" not in pdata.traces:
            continue
        others = [lab for lab in pdata.traces if lab != "reference"]
        for suffix, draw in (("box", _deviation_boxes), ("traces", _traces_and_deviation)):
            fig = draw(plt, name, pdata, others)
            written.append(save_atomic(fig, out_dir / f"{name}_{suffix}.png", files))
            plt.close(fig)
    return written


def _deviation_boxes(plt: Any, name: str, pdata: ProtocolData, others: list[str]) -> Any:
    """Box plots of |probe - reference| in the first and the last second, every run side by side (study Fig. 4)."""
    import numpy as np

    from hwbench.accuracy.metrics import abs_deviation

    ref = pdata.traces["reference"]
    per_s = max(1, round(1000 / pdata.sample_ms))
    fig, axes = plt.subplots(1, 2, figsize=(max(6, 1.4 * len(others) + 3), 4.5), sharey=True)
    for ax, (title, sl) in zip(axes, (("first 1 s", slice(0, per_s)), ("last 1 s", slice(-per_s, None))), strict=True):
        series = []
        for lab in others:
            dev = abs_deviation(pdata.traces[lab].probes, ref.probes)[sl].ravel()
            dev = dev[np.isfinite(dev)]
            series.append(np.clip(dev, 1e-9, None) if dev.size else np.array([np.nan]))
        ax.boxplot(series, showfliers=True, flierprops={"markersize": 2})
        ax.set_xticks(range(1, len(others) + 1), others, rotation=35, ha="right", fontsize=7)
        ax.set_yscale("log")
        ax.set_title(f"{name}: |{pdata.probe} - reference| {title}")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel("absolute deviation from CPU fp32")
    return fig


def _traces_and_deviation(plt: Any, name: str, pdata: ProtocolData, others: list[str]) -> Any:
    """Two cells' probes overlaid (reference and candidates), and the deviation over time on a log axis."""
    import numpy as np

    ref = pdata.traces["reference"]
    colors = _audit_colors(others)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    t = (np.arange(len(ref.probes)) + 1) * pdata.sample_ms * 1e-3  # seconds
    cells = [0, ref.probes.shape[1] // 2]
    for c in cells:
        ax1.plot(t, ref.probes[:, c], color="k", lw=0.8, label=f"reference cell {c}" if c == cells[0] else None)
    for lab in (lab for lab in others if pdata.roles[lab] in ("candidate", "dt-refine")):
        probes = pdata.traces[lab].probes
        for c in cells:
            label = lab if c == cells[0] else None
            shown = np.clip(probes[:, c], -150, 150)  # a diverged run stays on the reference's scale
            ax1.plot(t[: len(probes)], shown, color=colors[lab], lw=0.6, alpha=0.8, label=label)
    ax1.set_ylabel(pdata.probe)
    ax1.legend(fontsize=7, loc="upper right")
    for lab in others:
        dev = pdata.deviations.get(lab)
        if dev is not None:
            shown = np.clip(np.where(np.isfinite(dev), dev, DIVERGED_MV), 1e-9, DIVERGED_MV)
            ax2.semilogy(t[: len(dev)], shown, color=colors[lab], lw=0.8, label=f"{lab} ({pdata.roles[lab]})")
    ax2.axhline(DIVERGED_MV, color="k", lw=0.5, ls=":")
    ax2.text(0, DIVERGED_MV, f" >= {DIVERGED_MV:g} or non-finite: diverged", va="bottom", fontsize=7)
    ax2.set_ylabel(pdata.deviation_label)
    ax2.set_xlabel("biological time (s)")
    ax2.legend(fontsize=7, loc="lower right")
    ax2.grid(True, which="both", alpha=0.3)
    return fig
