"""The JAX engine's program cache: compiled sample loops kept on disk, found without tracing.

JAX's persistent compilation cache (:mod:`hwbench.core.engines.jax_cache`) skips XLA's compiler,
but it is keyed by the lowered program, so every build still traces the kernel's step in Python
and lowers it first. For an emulated device that is most of a build (io-ehh under the GroqChip
profile: ~0.65 s of tracing and ~0.25 s of lowering against ~0.08 s to load the executable), and
a warm ``hwbench audit --quick`` builds three such programs (issue 31). This cache keys the
compiled executable by what the program is traced from instead, so a hit skips tracing, lowering
and compiling alike and gives the very executable a fresh build would (the same machine code, so
the same bits).

The key (:func:`program_key`) is the SHA-256 of everything the traced program depends on: the
kernel's name and a fingerprint of its source, the workload's contents (parameters, connectivity,
initial state), the ops' trace key (:func:`trace_key_of`: their dtype and lowering choices, and
for emulating ops the profile, counters and seed), the dtype, steps per sample, chunking and the
other build options, hwbench's version and a fingerprint of all its sources, the versions of
numpy, jax, jaxlib and ml_dtypes, the host CPU model, ``XLA_FLAGS`` and the JAX settings that
change tracing. Ops whose class does not define ``trace_key`` itself (a wrapper whose
configuration the key could not see) are never cached: they trace as before.

Only freshly compiled executables are kept: one that JAX's compilation cache loaded does not
serialize again into one that runs (XLA:CPU then misses its kernels), so a miss compiles under a
name of its own, which that cache cannot hold (:func:`fresh_compile`), once. Verified when read (the payload's
SHA-256 and size); a damaged entry is discarded and the program built again. Safe under
concurrent audits (written into a private folder and renamed into place; a second writer keeps
the first's entry). The payload is JAX's
own serialization of the executable (a pickle, as ``jax.experimental.serialize_executable``
writes it): like JAX's compilation cache, which holds machine code, it is trusted as the
user's own files are.

Location: ``$HWBENCH_PROGRAM_CACHE``, else ``programs`` next to JAX's compilation cache
(in hwbench's cache folder, :func:`hwbench.core.disk_cache.cache_root`). On wherever JAX's
compilation cache is (audits, runs and benches turn it on); off with ``HWBENCH_PROGRAM_CACHE=off``
or with JAX's (``HWBENCH_JAX_CACHE=0``).
Size limit: ``$HWBENCH_PROGRAM_CACHE_SIZE`` (bytes, or with a K/M/G suffix; default 1G); after
each write the least recently used entries go until the cache fits.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from hwbench.core.disk_cache import OFF, EntryFolder, package_fingerprint, payload_intact, size_from_env
from hwbench.core.host import host_cpu

FORMAT: Final = "hwbench.program-cache/1"
DEFAULT_SIZE = "1G"
# JAX settings that change what a step traces to (dtype promotion, default matmul precision, ...)
JAX_SETTINGS = (
    "jax_default_matmul_precision",
    "jax_numpy_dtype_promotion",
    "jax_numpy_rank_promotion",
    "jax_enable_x64",
    "jax_default_prng_impl",
    "jax_threefry_partitionable",
    "jax_dynamic_shapes",
)


def trace_key_of(ops: Any) -> Any:
    """What about ``ops`` shapes the traced program (a JSON value), or None: not cacheable.

    Only a class that defines ``trace_key`` itself answers; a subclass that does not (it may add
    state of its own that changes the trace) is not cached."""
    method = type(ops).__dict__.get("trace_key")
    return None if method is None else ops.trace_key()


def _versions() -> dict[str, str]:
    """Versions of the libraries a traced program depends on (all imported by the time a program builds)."""
    import sys

    out = {}
    for name in ("numpy", "jax", "jaxlib", "ml_dtypes"):
        module = sys.modules.get(name)
        out[name] = str(getattr(module, "__version__", "-"))
    return out


def program_key(fields: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The entry name (hex SHA-256) of a program, and every field it hashes.

    ``fields`` are the build's own (kernel, workload, ops, dtype, ...: the engine's); the
    environment's are added here: hwbench's version and sources, library versions, host CPU,
    ``XLA_FLAGS``, JAX's backend and tracing settings."""
    import hashlib
    import json

    import jax

    import hwbench

    backend = jax.devices()[0].client
    env = {
        "format": FORMAT,
        "hwbench": hwbench.__version__,
        "hwbench_sha256": package_fingerprint("hwbench"),
        "versions": _versions(),
        "backend": [backend.platform, backend.platform_version],
        "jax_settings": {name: repr(getattr(jax.config, name, None)) for name in JAX_SETTINGS},
        "host_cpu": host_cpu(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }
    all_fields = {**fields, **env}
    text = json.dumps(all_fields, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest(), all_fields


def default_root(jax_cache: str) -> Path:
    """``$HWBENCH_PROGRAM_CACHE``, else ``programs`` next to JAX's compilation cache folder ``jax_cache``."""
    explicit = os.environ.get("HWBENCH_PROGRAM_CACHE")
    if explicit and explicit.lower() not in OFF:
        return Path(explicit).expanduser()
    return Path(jax_cache).parent / "programs"


@dataclass(frozen=True)
class Program:
    """A cached build: the executable (None where the traced step did not qualify, e.g. a
    finite-state program whose step does not keep the state finite) and what the build noted."""

    compiled: Any
    notes: dict[str, Any]


@dataclass(frozen=True)
class ProgramCache(EntryFolder):
    """A folder of verified compiled programs, LRU-evicted down to ``max_bytes``."""

    @classmethod
    def from_env(cls) -> ProgramCache | None:
        """The cache the environment names; None when it is off, or JAX's compilation cache is
        (:func:`hwbench.core.engines.jax_cache.enable_compilation_cache` turns that on for audits,
        runs and benches; a program is cached only where its compilation would be).

        A bad ``HWBENCH_PROGRAM_CACHE_SIZE`` is a UsageError naming the variable."""
        import jax

        jax_cache = getattr(jax.config, "jax_compilation_cache_dir", None)
        if os.environ.get("HWBENCH_PROGRAM_CACHE", "").lower() in OFF or not jax_cache:
            return None
        if not getattr(jax.config, "jax_enable_compilation_cache", False):
            return None
        return cls(default_root(jax_cache), size_from_env("HWBENCH_PROGRAM_CACHE_SIZE", DEFAULT_SIZE))

    def load(self, key: str) -> Program | None:
        """The program stored under ``key``, verified and loaded; None on a miss. A damaged entry is removed."""
        import json

        entry = self.root / key
        try:
            meta = json.loads((entry / "meta.json").read_bytes())
            payload = (entry / "program.bin").read_bytes()
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            self._discard(entry)
            return None
        try:
            ok = (
                meta["format"] == FORMAT
                and meta["key"] == key
                and payload_intact(payload, meta["payload_bytes"], meta["payload_sha256"])
            )
            compiled = _deserialize(payload) if ok and payload else None
            program = Program(compiled, dict(meta["notes"])) if ok else None
        except Exception:  # a payload that does not load (another jaxlib's, damaged): built again
            program = None
        if program is None:
            self._discard(entry)
            return None
        self._touch(entry)
        return program

    def store(self, key: str, fields: dict[str, Any], compiled: Any, notes: dict[str, Any]) -> bool:
        """Keep ``compiled`` (a freshly compiled ``jax.stages.Compiled``, or None) under ``key``.

        Returns whether an entry is now there. Never raises for a full or read-only disk or an
        executable that does not serialize: the build's result does not depend on the cache."""
        import hashlib
        import json
        import time

        try:
            payload = b"" if compiled is None else _serialize(compiled)
        except Exception:
            return False
        if len(payload) > self.max_bytes:
            return False
        meta = {
            "format": FORMAT,
            "key": key,
            "key_fields": fields,
            "payload_sha256": hashlib.sha256(payload).hexdigest(),
            "payload_bytes": len(payload),
            "created": time.time(),
            "notes": notes,
        }
        try:
            text = json.dumps(meta, default=repr)
            return self._write(key, {"program.bin": payload, "meta.json": text.encode()})
        except OSError:
            return False


def _serialize(compiled: Any) -> bytes:
    import pickle

    from jax.experimental.serialize_executable import serialize

    return pickle.dumps(serialize(compiled), protocol=pickle.HIGHEST_PROTOCOL)


def _deserialize(payload: bytes) -> Any:
    import pickle

    from jax.experimental.serialize_executable import deserialize_and_load

    serialized, in_tree, out_tree = pickle.loads(payload)  # our own verified entry (see the module doc)
    return deserialize_and_load(serialized, in_tree, out_tree)


_HIT_EVENT = "/jax/compilation_cache/cache_hits"  # what JAX records when its compilation cache answers
_local = threading.local()  # this thread's count of such answers
_listening = threading.Lock()
_listener: list[Any] = []


def _count_hits(event: str, **_: Any) -> None:
    if event == _HIT_EVENT:
        _local.hits = getattr(_local, "hits", 0) + 1


@contextlib.contextmanager
def fresh_compile() -> Iterator[Callable[[], bool]]:
    """Compile one program inside, lowered under a name of its own (:func:`unique_name`): yields
    a check, true afterwards if what was compiled inside is XLA's own compilation (so it may be
    kept), false if JAX's compilation cache answered in this thread all the same (trace and lower
    outside: tracing may compile small helpers eagerly, which that cache may answer).

    Why: an executable that JAX's compilation cache loaded does not serialize again into one
    that runs (XLA:CPU misses its kernels then), and that cache keys a program by its lowered
    text, so a program named afresh is never found there; nor is it written there (its minimum
    compile time is raised in this thread), so such one-off names do not pile up in it. JAX's hit
    events, counted per thread, confirm it. Where this JAX has no per-thread switch for that
    minimum, the check is always false: nothing is kept."""

    try:
        import jax.monitoring
        from jax._src import config as jax_config

        min_compile_time = jax_config.persistent_cache_min_compile_time_secs
    except (ImportError, AttributeError):
        yield lambda: False
        return
    with _listening:
        if not _listener:
            jax.monitoring.register_event_listener(_count_hits)
            _listener.append(_count_hits)
    before = getattr(_local, "hits", 0)
    with min_compile_time(float("inf")):
        yield lambda: getattr(_local, "hits", 0) == before


def unique_name(base: str) -> str:
    """``base`` with a random suffix: the name a program compiled for this cache is lowered under.
    (A name is not compiled into the arithmetic; it only changes the lowered text JAX's
    compilation cache keys by.)"""
    import uuid

    return f"{base}_{uuid.uuid4().hex}"
