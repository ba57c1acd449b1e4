"""What hwbench's on-disk caches share: content fingerprints (what a cached result was computed
from) and their size limits.

A cache entry is named by the SHA-256 of everything its content depends on, so a changed input
(a parameter, a connectivity array, a kernel's source) gives another name and the old entry is
never found. Used by the audit's baseline cache (:mod:`hwbench.accuracy.baseline_cache`) and the
JAX engine's program cache (:mod:`hwbench.core.engines.program_cache`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

OFF = ("0", "off", "false", "no")  # values of a cache's variable that turn it off
STALE_TMP_S = 3600.0  # a temporary folder this old was left by a writer that died


def _feed(h: Any, obj: Any) -> None:
    """Feed ``obj`` into hash ``h`` unambiguously (type-tagged; arrays by dtype, shape and bytes)."""
    import numpy as np

    if isinstance(obj, np.ndarray) or type(obj).__module__.startswith(("jax", "jaxlib")):
        arr = np.ascontiguousarray(np.asarray(obj))
        h.update(f"<array {arr.dtype.str} {arr.shape}>".encode())
        h.update(arr.tobytes())
    elif isinstance(obj, dict):
        h.update(f"<dict {len(obj)}>".encode())
        for k in sorted(obj, key=repr):
            _feed(h, k)
            _feed(h, obj[k])
    elif isinstance(obj, (list, tuple)):
        h.update(f"<{type(obj).__name__} {len(obj)}>".encode())
        for item in obj:
            _feed(h, item)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        h.update(f"<{type(obj).__qualname__}>".encode())
        _feed(h, {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
    else:  # scalars (numpy's included), strings, None
        h.update(f"<{type(obj).__name__} {obj!r}>".encode())


def digest(obj: Any) -> str:
    """SHA-256 of ``obj``'s contents (nested dicts, lists, dataclasses and arrays)."""
    import hashlib

    h = hashlib.sha256()
    _feed(h, obj)
    return h.hexdigest()


def workload_digest(workload: Any) -> str:
    """SHA-256 of what a workload computes from: its parameters, arrays and initial state."""
    return digest({"params": workload.params, "arrays": workload.arrays, "state0": workload.state0})


def _source_files(classes: tuple[type, ...]) -> list[Path]:
    """The source files of ``classes`` (their whole MRO) and of the modules next to them."""
    files: set[Path] = set()
    for cls in classes:
        for klass in cls.__mro__:
            module = sys.modules.get(klass.__module__)
            path = getattr(module, "__file__", None)
            if path and path.endswith(".py") and klass.__module__ not in ("abc", "builtins"):
                files.add(Path(path))
                files.update(Path(path).parent.glob("*.py"))
            elif klass.__module__ not in ("abc", "builtins"):
                files.add(Path(f"<{klass.__module__}>"))  # no source file: its name (and the versions) only
    return sorted(files)


def code_fingerprint(*objects: Any) -> str:
    """SHA-256 over the source of ``objects``' classes and their sibling modules: a changed kernel
    (or device) gets another fingerprint, so its old cache entries are never found."""
    return _class_fingerprint(tuple(type(o) for o in objects))


@cache
def _class_fingerprint(classes: tuple[type, ...]) -> str:
    """(Once per process: the files are read at the first use, as the modules were imported.)"""
    import hashlib

    h = hashlib.sha256()
    for path in _source_files(classes):
        h.update(str(path.name).encode())
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"<unreadable>")  # (e.g. a module from a zip): its version is in the key
    return h.hexdigest()


@cache
def package_fingerprint(package: str) -> str:
    """SHA-256 over every source file of an imported package (``"hwbench"``: all of hwbench, ~5 ms
    to read). Once per process."""
    import hashlib

    module = sys.modules[package]
    root = Path(module.__file__ or "").parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def cache_root() -> Path:
    """hwbench's cache folder, which every on-disk cache sits in unless its own variable says
    otherwise: ``$HWBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/hwbench``, else ``~/.cache/hwbench``."""
    base = os.environ.get("HWBENCH_CACHE_DIR")
    if base:
        return Path(base).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "hwbench"


def size_from_env(variable: str, default: str) -> int:
    """A cache's size limit in bytes from ``$variable`` (else ``default``); a bad value is a
    UsageError naming the variable."""
    from hwbench.core.errors import UsageError

    try:
        return parse_size(os.environ.get(variable) or default)
    except ValueError as exc:
        raise UsageError(f"{variable}: {exc}") from None


def payload_intact(payload: bytes, size: int, sha256: str) -> bool:
    """Whether an entry's payload is the one its ``meta.json`` describes (length and SHA-256)."""
    import hashlib

    return len(payload) == size and hashlib.sha256(payload).hexdigest() == sha256


def parse_size(text: str) -> int:
    """Bytes from ``"2G"``, ``"500M"``, ``"64K"`` or a plain number; a ValueError says what is allowed."""
    units = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
    s = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = units.get(s[-1:], 1)
    number = s[:-1] if s[-1:] in units else s
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError(f"a size in bytes, optionally with K, M or G (e.g. 2G, 500M), got {text!r}")
    return int(value * scale)


@dataclasses.dataclass(frozen=True)
class EntryFolder:
    """A folder of cache entries: one sub-folder per key holding ``meta.json`` and its payload file,
    written atomically (a private folder renamed into place: readers see an entry whole or not at
    all, and a second writer keeps the first's), LRU-evicted down to ``max_bytes`` (last use is the
    mtime of ``meta.json``, touched when read: file systems mounted noatime keep no atime)."""

    root: Path
    max_bytes: int

    def _write(self, key: str, files: dict[str, bytes]) -> bool:
        """Put ``files`` (name: bytes) under ``key``; raises OSError (the callers' cache then
        simply holds nothing: a result never depends on it)."""
        import shutil
        import uuid

        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".tmp-{key[:16]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            for name, data in files.items():
                (tmp / name).write_bytes(data)
            try:
                os.rename(tmp, self.root / key)
            except OSError:
                if not (self.root / key / "meta.json").exists():
                    raise
                # another process wrote this entry first: theirs is as good (same key, same content)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.evict()
        return True

    def entries(self) -> list[tuple[float, int, Path]]:
        """(last use, bytes, path) of every entry, least recently used first."""
        out: list[tuple[float, int, Path]] = []
        if not self.root.is_dir():
            return out
        for entry in self.root.iterdir():
            if entry.name.startswith("."):
                continue
            try:
                used = (entry / "meta.json").stat().st_mtime
                size = sum(f.stat().st_size for f in entry.iterdir())
            except OSError:
                continue
            out.append((used, size, entry))
        return sorted(out)

    def evict(self) -> int:
        """Remove least recently used entries until the folder fits its limit; returns how many went."""
        self._sweep_tmp()
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        removed = 0
        for _, size, entry in entries:
            if total <= self.max_bytes:
                break
            self._discard(entry)
            total -= size
            removed += 1
        return removed

    def _discard(self, entry: Path) -> None:
        """Rename the entry away (atomic: readers see it whole or not at all), then delete it."""
        import shutil
        import uuid

        trash = self.root / f".trash-{entry.name[:16]}-{uuid.uuid4().hex[:8]}"
        try:
            os.rename(entry, trash)
        except OSError:
            return  # already gone (another process evicted or discarded it)
        shutil.rmtree(trash, ignore_errors=True)

    def _sweep_tmp(self) -> None:
        """Delete temporary folders left by writers that died (older than ``STALE_TMP_S``)."""
        import shutil
        import time

        now = time.time()
        for tmp in self.root.glob(".tmp-*"):
            try:
                if now - tmp.stat().st_mtime > STALE_TMP_S:
                    shutil.rmtree(tmp, ignore_errors=True)
            except OSError:
                continue

    @staticmethod
    def _touch(entry: Path) -> None:
        """Mark the entry used now (eviction is by last use)."""
        with contextlib.suppress(OSError):
            os.utime(entry / "meta.json")
