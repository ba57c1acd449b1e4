"""Test helpers for hwbench users and plugin authors.

- :mod:`hwbench.testing.plugin` — the pytest plugin (registered through ``pytest11``): fixtures
  ``hwbench_registry``, ``register_plugin``, ``device``, ``hwbench_device``, ``hwbench_cli``.
- :mod:`hwbench.testing.strategies` — hypothesis strategies: formats, values of a format,
  numerics profiles, workloads, a function's inputs where chips break (``function_inputs``).
- :mod:`hwbench.testing.assertions` — assertions with failure messages that say what differed.
- :mod:`hwbench.testing.functions` — ``assert_device_close``: a user's JAX function on a chip's
  arithmetic against float64, naming the element, the source line and the mechanism.
- :mod:`hwbench.testing.conformance` — the suite a device plugin runs with one import.
"""

from hwbench.testing.assertions import assert_kernel_matches_cpu, assert_verdict, assert_within_ulps, ulp_distance
from hwbench.testing.functions import assert_device_close

__all__ = ["assert_device_close", "assert_kernel_matches_cpu", "assert_verdict", "assert_within_ulps", "ulp_distance"]
