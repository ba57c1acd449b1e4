"""Test helpers for hwbench users and plugin authors.

- :mod:`hwbench.testing.plugin` — the pytest plugin (registered through ``pytest11``): fixtures
  ``hwbench_registry``, ``register_plugin``, ``device``, ``hwbench_cli``.
- :mod:`hwbench.testing.strategies` — hypothesis strategies: formats, values of a format,
  numerics profiles, workloads.
- :mod:`hwbench.testing.assertions` — assertions with failure messages that say what differed.
- :mod:`hwbench.testing.conformance` — the suite a device plugin runs with one import.
"""

from hwbench.testing.assertions import assert_kernel_matches_cpu, assert_verdict, assert_within_ulps, ulp_distance

__all__ = ["assert_kernel_matches_cpu", "assert_verdict", "assert_within_ulps", "ulp_distance"]
