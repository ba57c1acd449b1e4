"""JAX's persistent compilation cache, so a second audit or bench skips XLA compilation.

Compiled executables are keyed by the HLO (connectivity closed over as constants included), the
compile options and the jax/jaxlib version, so a hit is always the same program. The cache lives
in ``jax`` in hwbench's cache folder (:func:`hwbench.core.disk_cache.cache_root`: ``$HWBENCH_CACHE_DIR``,
else ``$XDG_CACHE_HOME/hwbench``, else ``~/.cache/hwbench``); ``HWBENCH_JAX_CACHE=0`` turns it off.
"""

from __future__ import annotations

import os
from pathlib import Path

from hwbench.core.disk_cache import cache_root

_enabled: bool | None = None


def cache_dir() -> Path:
    return cache_root() / "jax"


def enable_compilation_cache() -> bool:
    """Turn the cache on once per process (imports jax). Returns whether it is on.

    Also sets the engine's XLA flags first: XLA reads them once, when JAX's backend starts.
    """
    global _enabled
    if _enabled is not None:
        return _enabled
    from hwbench.core.engines.jax_engine import prepare_xla_flags

    prepare_xla_flags()
    if os.environ.get("HWBENCH_JAX_CACHE", "1") in ("0", "false", "off"):
        _enabled = False
        return False
    try:
        import jax

        path = cache_dir()
        path.mkdir(parents=True, exist_ok=True)
        jax.config.update("jax_compilation_cache_dir", str(path))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        _enabled = True
    except (ImportError, OSError, AttributeError):
        _enabled = False
    return _enabled
