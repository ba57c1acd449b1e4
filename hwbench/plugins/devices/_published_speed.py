"""The founding study's io-ehh speed figures for the real chips, in its own words.

Landsmeer et al. 2024 plot their run times (Fig. 2, Fig. 3B) and state, in the text, ratios for
particular configurations: those are the chips' own published figures that a bench of the same
configuration sets beside this host's time (:mod:`hwbench.core.published`). Protocol of every
figure: 100 ms simulated, minimum wall time of 5 runs, transfers included (Sec. V-A). The GPU is
the A100 (TF 2.11 with XLA), the CPU a 16-core AMD Threadripper PRO 3955WX (Table I).
"""

from __future__ import annotations

from hwbench.accuracy.numerics.presets import STUDY
from hwbench.core.published import PublishedTiming

KERNEL = "io-ehh"
UNCONNECTED = f"{STUDY}, Sec. VI-B1 (unconnected network)"
CONNECTED = f"{STUDY}, Sec. VI-B2 (connected network)"
LARGEST = f"{STUDY}, abstract and Fig. 3B (connected benchmark, 125,000 cells)"
SPEEDUP_125K = "'for networks of 125,000 cells leads to a 28x respectively 1,208x speedup over CPU runtimes' (GPU, TPU)"

GROQ = [
    PublishedTiming(
        kernel=KERNEL,
        connected=False,
        ncells=64,
        workload="'the GroqChip starts out 2.0x faster than the GPU' (the smallest size of the sweep, 4^3 cells)",
        figure=2.0,
        unit="times the A100's speed",
        source=UNCONNECTED,
    ),
    PublishedTiming(
        kernel=KERNEL,
        connected=True,
        ncells=64,
        workload="'it outperforms the GPU on very small, connected neural networks by a 3.7x speedup' "
        "(64 cells: the smallest connected size of Fig. 3B)",
        figure=3.7,
        unit="times the A100's speed",
        source=CONNECTED,
    ),
]

TPU_V3 = [
    PublishedTiming(
        kernel=KERNEL,
        connected=False,
        workload="'The TPU, similar to the GPU, flatlines across all problem sizes, although being 4.1x slower'",
        figure=4.1,
        unit="times the A100's time",
        source=UNCONNECTED,
    ),
    PublishedTiming(
        kernel=KERNEL,
        connected=True,
        ncells=125_000,
        workload=SPEEDUP_125K,
        figure=1208.0,
        unit="times the study's CPU speed",
        source=LARGEST,
    ),
]

A100 = [
    PublishedTiming(
        kernel=KERNEL,
        connected=True,
        ncells=125_000,
        workload=SPEEDUP_125K,
        figure=28.0,
        unit="times the study's CPU speed",
        source=LARGEST,
    ),
]
