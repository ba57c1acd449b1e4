"""The plots moved to :mod:`hwbench.library.plots` (the library writes them); kept for old imports."""

from hwbench.library.plots import audit_plots, bench_plot, save_atomic

__all__ = ["audit_plots", "bench_plot", "save_atomic"]
