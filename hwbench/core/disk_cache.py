"""What hwbench's on-disk caches share: content fingerprints (what a cached result was computed
from) and their size limits.

A cache entry is named by the SHA-256 of everything its content depends on, so a changed input
(a parameter, a connectivity array, a kernel's source) gives another name and the old entry is
never found. Used by the audit's baseline cache (:mod:`hwbench.accuracy.baseline_cache`) and the
JAX engine's program cache (:mod:`hwbench.core.engines.program_cache`).
"""

from __future__ import annotations

import dataclasses
import sys
from functools import cache
from pathlib import Path
from typing import Any


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
