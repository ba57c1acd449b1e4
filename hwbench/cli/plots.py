"""PNG plots (matplotlib, imported lazily with the non-interactive Agg backend)."""

from __future__ import annotations

from pathlib import Path

from hwbench.core.results import BenchResult

MOUSE_IO_CELLS = 1e4  # order of magnitude of the mouse inferior olive (study's figure marks)
HUMAN_IO_CELLS = (1e6, 1e7)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_atomic(fig, path: Path) -> Path:
    tmp = path.with_name(path.stem + ".partial.png")
    fig.savefig(tmp, dpi=120, bbox_inches="tight")
    tmp.replace(path)
    return path


def bench_plot(result: BenchResult, path: str | Path) -> Path:
    """Run time of 100 ms simulated versus cells, with the real-time line and brain-size marks."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    groups: dict[tuple[str, str, bool], list] = {}
    for t in result.timings:
        groups.setdefault((t.engine, t.dtype, t.connected), []).append(t)
    for (engine, dtype, connected), ts in sorted(groups.items()):
        ts = sorted(ts, key=lambda t: t.ncells)
        ax.loglog(
            [t.ncells for t in ts],
            [t.run_s for t in ts],
            "o-" if connected else "s--",
            label=f"{engine} {dtype} {'connected' if connected else 'unconnected'}",
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
    ax.set_title(f"{result.protocol.get('kernel')} on {result.protocol.get('device')}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    return save_atomic(fig, Path(path))
