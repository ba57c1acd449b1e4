"""The precision-sensitivity heatmap: op class x mantissa bits -> verdict, coloured."""

from __future__ import annotations

from pathlib import Path

from hwbench.accuracy.verdict import Verdict
from hwbench.stress.sensitivity import SweepResult

COLOURS = {"PASS": "#2e9e4f", "WARN": "#e6b422", "FAIL": "#c8372d"}
UNTESTED = "#dddddd"


def heatmap(result: SweepResult, path: Path) -> Path:
    """One row per op-class group (and device / rounding / dt), one column per tested width.

    A cell shows the worst verdict over seeds; with several seeds it is annotated ``passes/seeds``.
    Written atomically (temporary file, then rename).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgb

    rows = result.sensitivity
    widths = sorted({b for r in rows for b in r.verdicts})
    split = {(s.device, s.group, s.bits, s.rounding, s.dt): s for s in result.seeds}
    image = [
        [to_rgb(COLOURS[r.verdicts[b].value]) if b in r.verdicts else to_rgb(UNTESTED) for b in widths] for r in rows
    ]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(widths) + 4.0), max(2.5, 0.45 * len(rows) + 1.5)))
    ax.imshow(image, aspect="auto")
    ax.set_xticks(range(len(widths)), [str(b) for b in widths])
    labels = [f"{r.group} ({r.device}, {r.rounding}{f', dt/{r.dt}' if r.dt > 1 else ''})" for r in rows]
    ax.set_yticks(range(len(rows)), labels)
    ax.set_xlabel("mantissa bits (fp32 exponent range)")
    for i, r in enumerate(rows):
        for j, b in enumerate(widths):
            s = split.get((r.device, r.group, b, r.rounding, r.dt))
            if s is not None and len(s.seeds) > 1:
                ax.text(j, i, f"{s.counts[Verdict.PASS]}/{len(s.seeds)}", ha="center", va="center", fontsize=7)
    named = ", ".join(result.spec.protocols) or f"{result.spec.kernel or 'the kernel'}'s protocols"
    protocols = named + (" (quick)" if result.spec.quick else "")
    ax.set_title(f"{protocols}: verdict by mantissa width", fontsize=10)
    from matplotlib.patches import Patch

    legend = [Patch(color=c, label=v) for v, c in COLOURS.items()] + [Patch(color=UNTESTED, label="not run")]
    ax.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    tmp = path.with_name(path.name + ".partial.png")
    fig.savefig(tmp, dpi=120, bbox_inches="tight")
    plt.close(fig)
    tmp.replace(path)
    return path
