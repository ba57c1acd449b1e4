"""hwbench: run scientific and AI kernels on accelerators, measure speed, audit numerics."""

__version__ = "0.1.0"
