"""Shared test configuration: hypothesis profiles.

``ci`` (default): derandomised, at least 10,000 examples for properties marked with
``settings(max_examples=...)`` via the ``EXAMPLES`` constant; ``thorough``: 10x more; ``dev``: fast.
Select with ``HWBENCH_HYPOTHESIS_PROFILE``.
"""

import atexit
import os
import shutil
import tempfile

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=10_000, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", max_examples=100_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=300, deadline=None)
settings.load_profile(os.environ.get("HWBENCH_HYPOTHESIS_PROFILE", "ci"))

pytest_plugins = ["pytester"]

# XLA reads XLA_FLAGS once, when JAX's backend starts. hwbench's JAX engine sets its small-loop
# option then (the CLI imports the engine first); a test that starts JAX on its own would otherwise
# decide it for the whole session. The option changes how XLA:CPU compiles a step loop, and with it
# the low bits of some emulated results (tests/accuracy/test_emulation_fixtures.py pins them), so it
# is set here, before any test can start JAX.
from hwbench.core.engines.jax_engine import prepare_xla_flags  # noqa: E402

prepare_xla_flags()

# The results store (docs/results.md): the suite records into a throw-away SQLite file, never into the
# user's data directory. Subprocess CLI tests inherit it; tests that strip HWBENCH_* from the environment
# still land in the temporary XDG_DATA_HOME; tests that need their own store set their own.
_STORE_DIR = tempfile.mkdtemp(prefix="hwbench-test-store-")
atexit.register(shutil.rmtree, _STORE_DIR, ignore_errors=True)
os.environ["XDG_DATA_HOME"] = _STORE_DIR
if not os.environ.get("HWBENCH_STORE"):
    os.environ["HWBENCH_STORE"] = os.path.join(_STORE_DIR, "results.sqlite")

# The audit's baseline cache (docs/audit.md, "Baseline cache"): the suite keeps its reference, gold
# and ensemble runs in a throw-away folder, never in the user's ~/.cache/hwbench/baselines; tests that
# strip HWBENCH_* from the environment still land in the temporary XDG_CACHE_HOME.
os.environ["XDG_CACHE_HOME"] = os.path.join(_STORE_DIR, "cache")
if not os.environ.get("HWBENCH_BASELINE_CACHE"):
    os.environ["HWBENCH_BASELINE_CACHE"] = os.path.join(_STORE_DIR, "baselines")

# The JAX engine's program cache (docs/audit.md, "Program cache"): off in the suite. Its key holds
# the sources' fingerprints, which do not change when a test replaces a function at run time, so a
# program traced before such a test could be found by it. Its own tests turn it on in a folder of
# their own (tests/engines/test_program_cache.py).
os.environ["HWBENCH_PROGRAM_CACHE"] = "off"
