"""TFLOPS per configuration and precision, one panel per engine (like Figs. 1-4 of Emani et al.)."""

from __future__ import annotations

from pathlib import Path

from hwbench.core.results import BenchResult
from hwbench.library.plots import _pyplot, save_atomic


def dl_bench_plot(result: BenchResult, path: str | Path) -> Path:
    plt = _pyplot()
    engines = sorted({t.engine for t in result.timings})
    fig, axes = plt.subplots(1, len(engines), figsize=(4.5 * len(engines) + 1, 4.2), squeeze=False)
    configs = list(dict.fromkeys(t.dl.config for t in result.timings if t.dl))
    precisions = list(dict.fromkeys(t.dl.precision for t in result.timings if t.dl))
    width = 0.8 / max(1, len(precisions))
    colors = {p: f"C{i}" for i, p in enumerate(precisions)}
    for ax, engine in zip(axes[0], engines):
        for j, prec in enumerate(precisions):
            xs, ys, labels = [], [], []
            for i, cfg in enumerate(configs):
                for t in result.timings:
                    if t.engine == engine and t.dl and t.dl.config == cfg and t.dl.precision == prec:
                        xs.append(i + (j - (len(precisions) - 1) / 2) * width)
                        ys.append(t.dl.tflops)
                        labels.append("*" if t.dl.batch_scaled_from else "")
            if not xs:  # this engine has no such precision (skipped): no empty legend entry
                continue
            emulated = any(t.dl and t.dl.precision == prec and t.dl.precision_execution == "emulated"
                           for t in result.timings)  # fmt: skip
            label = prec + (" (emulated: host time)" if emulated else "")
            bars = ax.bar(xs, ys, width, label=label, color=colors[prec])
            for bar, mark in zip(bars, labels):
                if mark:
                    ax.text(bar.get_x() + bar.get_width() / 2, bar.get_height(), mark, ha="center", va="bottom")
        peaks = {t.dl.peak_tflops for t in result.timings if t.engine == engine and t.dl and t.dl.peak_tflops}
        for p in peaks:
            ax.axhline(p, color="k", lw=0.8, ls=":")
        ax.set_xticks(range(len(configs)), configs, rotation=30)
        ax.set_title(f"{result.protocol.get('kernel')} on {result.protocol.get('device')}: {engine}")
        ax.set_ylabel("TFLOPS (real op count; dotted: peak)")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    fig.text(0.01, -0.04, "* batch scaled down (memory or --max-gflop; see bench.json)", fontsize=7)
    return save_atomic(fig, Path(path))
