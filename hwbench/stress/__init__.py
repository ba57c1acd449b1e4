"""Protocols that push numerics: the spike stress test, dt refinement, precision sweeps."""
