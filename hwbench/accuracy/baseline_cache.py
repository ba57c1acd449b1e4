"""The audit's baseline cache: reference, gold and ensemble traces kept on disk between audits.

The CPU fp32 reference, the fp64 gold and the ensemble members are the same for every device an
audit judges: they depend on the kernel, its workload and seed, the protocol's scenario, the
engine and the host, never on the candidate. Of a full audit's CPU time most goes to them (issue
31: 30 of 39 CPU-seconds), so an audit keeps them here and the next audit of the same kernel and
seed only runs its candidates.

Content-addressed: an entry's name is the SHA-256 of everything its trace depends on (the key
fields, :func:`baseline_key`): the kernel's name and a fingerprint of its source, the workload's
and the scenario's contents (parameters, connectivity, initial state, stimulus, seed), the
protocol, the device and mode, the engine asked for and the versions of every engine library
installed, hwbench's version and a fingerprint of its core (engines, scenario runner), the host
CPU model and ``XLA_FLAGS``. Anything that changes a trace's bits changes its name, so a stale
entry is never found, only evicted.

Verified when read: an entry is a directory holding ``payload.npz`` (the arrays; no pickle) and
``meta.json`` (a :class:`EntryMeta`, with the payload's SHA-256 and size). A payload whose
checksum, size or metadata does not match is discarded and the run recomputed.

Safe under concurrent audits: an entry is written into a private temporary directory and renamed
into place in one step; when two audits write the same entry, the second rename finds the first's
complete entry and keeps it (both succeed). Eviction renames an entry away before deleting it, so
a reader sees a whole entry or none.

Location: ``$HWBENCH_BASELINE_CACHE``, else ``baselines`` in hwbench's cache folder, next to the JAX
compilation cache (:func:`hwbench.core.disk_cache.cache_root`: ``$HWBENCH_CACHE_DIR``, else
``$XDG_CACHE_HOME/hwbench``, else ``~/.cache/hwbench``).
``HWBENCH_BASELINE_CACHE=off`` turns it off, as ``hwbench audit --no-cache`` does for one audit.
Size limit: ``$HWBENCH_BASELINE_CACHE_SIZE`` (bytes, or with a K/M/G suffix; default 2G); after each
write the least recently used entries (by last read or write) go until the cache fits.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from hwbench.core.disk_cache import (
    OFF,
    EntryFolder,
    cache_root,
    code_fingerprint,
    digest,
    package_fingerprint,
    payload_intact,
    size_from_env,
    workload_digest,
)
from hwbench.core.scenario import Checkpoint, Trace

FORMAT: Final = "hwbench.baseline-cache/1"
DEFAULT_SIZE = "2G"
ENGINE_DISTRIBUTIONS = ("numpy", "jax", "jaxlib", "ml_dtypes", "tensorflow", "tensorflow-cpu", "onnx", "onnxruntime")


class EntryMeta(BaseModel):
    """``meta.json`` of one entry: what it was computed from, its payload's checksum, the trace's scalars."""

    format: Literal["hwbench.baseline-cache/1"] = FORMAT
    key: str = Field(description="SHA-256 of the canonical JSON of key_fields: the entry's directory name")
    key_fields: dict[str, Any]
    payload_sha256: str
    payload_bytes: int
    created: float
    label: str
    counters: dict[str, int]
    violation: dict[str, Any] | None = None
    execution: Literal["real", "emulated"]
    detail: str
    refine: int
    run_s: float = Field(description="seconds the run took when it was computed")
    setup_s: float
    layout: dict[str, Any] = Field(description="where final_state and the checkpoints' states sit in the payload")


# --- the key ----------------------------------------------------------------------------------


def _core_fingerprint() -> str:
    """SHA-256 over hwbench's core sources (engines, scenario runner, ops): the code every run goes through."""
    import hwbench.core

    return package_fingerprint(hwbench.core.__name__)


@cache
def engine_versions() -> dict[str, str]:
    """Installed versions of the libraries an engine may run on (absent: ``-``); read without importing them."""
    out = {}
    for dist in ENGINE_DISTRIBUTIONS:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "-"
    return out


def baseline_key(
    *,
    protocol: str,
    scenario: Any,
    kernel: Any,
    workload: Any,
    device: Any,
    mode: str,
    engine: str | None,
    sample_every: int | None,
    refine: int = 1,
) -> tuple[str, dict[str, Any]]:
    """The entry name (hex SHA-256) of one baseline run, and the readable fields it hashes."""
    import hwbench
    from hwbench.core.host import host_cpu

    fields = {
        "format": FORMAT,
        "protocol": protocol,
        "scenario": scenario.name,
        "scenario_sha256": digest(scenario),
        "kernel": kernel.name,
        "kernel_code_sha256": code_fingerprint(kernel),
        "workload_sha256": workload_digest(workload),
        "seed": scenario.seed,
        "device": device.name,
        "device_code_sha256": code_fingerprint(device),
        "mode": mode,
        "sample_every": sample_every,
        "refine": refine,
        "engine": engine or "default (fastest available)",
        "engine_versions": engine_versions(),
        "hwbench": hwbench.__version__,
        "hwbench_core_sha256": _core_fingerprint(),
        "host_cpu": host_cpu(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest(), fields


# --- the payload --------------------------------------------------------------------------------


def _pack(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    """A JSON layout of ``value`` (arrays, tuples/lists/dicts of them, scalars); arrays go into ``arrays``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"v": value}
    if isinstance(value, (tuple, list)):
        return {type(value).__name__: [_pack(v, arrays) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: _pack(v, arrays) for k, v in value.items()}}
    name = f"a{len(arrays)}"
    arrays[name] = np.asarray(value)  # an array (numpy or a device array) or a numpy scalar
    return {"array": name, "scalar": np.ndim(value) == 0 and not isinstance(value, np.ndarray)}


def _unpack(layout: Any, arrays: Any) -> Any:
    if "v" in layout:
        return layout["v"]
    if "tuple" in layout or "list" in layout:
        kind = "tuple" if "tuple" in layout else "list"
        items = [_unpack(v, arrays) for v in layout[kind]]
        return tuple(items) if kind == "tuple" else items
    if "dict" in layout:
        return {k: _unpack(v, arrays) for k, v in layout["dict"].items()}
    arr = arrays[layout["array"]]
    return arr[()] if layout.get("scalar") else arr


def _payload(trace: Trace) -> tuple[bytes, dict[str, Any]]:
    """The trace's arrays as .npz bytes (uncompressed: loading must stay far cheaper than running)."""
    arrays: dict[str, np.ndarray] = {"probes": np.asarray(trace.probes)}
    if trace.spikes is not None:
        spikes = np.asarray(trace.spikes)  # first-crossing offsets, -1 almost everywhere: kept sparse
        where = np.flatnonzero(spikes.ravel() != -1)
        arrays.update(spike_at=where, spike_offset=spikes.ravel()[where], spike_shape=np.asarray(spikes.shape))
        arrays["spike_dtype"] = np.zeros(0, spikes.dtype)
    layout = {
        "spikes": trace.spikes is not None,
        "final_state": _pack(trace.final_state, arrays),
        "checkpoints": [{"sample": c.sample, "segment": c.segment, "state": _pack(c.state, arrays)}
                        for c in trace.checkpoints],
    }  # fmt: skip
    buf = io.BytesIO()
    np.savez(buf, allow_pickle=False, **arrays)
    return buf.getvalue(), layout


def _spikes(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """The dense spike array back from its sparse form (every other entry -1)."""
    spikes = np.full(int(np.prod(arrays["spike_shape"])), -1, dtype=arrays["spike_dtype"].dtype)
    spikes[arrays["spike_at"]] = arrays["spike_offset"]
    return spikes.reshape(tuple(int(n) for n in arrays["spike_shape"]))


def _trace(meta: EntryMeta, payload: bytes) -> Trace:
    with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    layout = meta.layout
    return Trace(
        label=meta.label,
        probes=arrays["probes"],
        spikes=_spikes(arrays) if layout["spikes"] else None,
        counters=dict(meta.counters),
        final_state=_unpack(layout["final_state"], arrays),
        violation=meta.violation,
        checkpoints=[Checkpoint(c["sample"], c["segment"], _unpack(c["state"], arrays)) for c in layout["checkpoints"]],
        execution=meta.execution,
        detail=meta.detail,
        refine=meta.refine,
        run_s=meta.run_s,
        setup_s=meta.setup_s,
    )


# --- the cache ----------------------------------------------------------------------------------


def default_root() -> Path:
    """``$HWBENCH_BASELINE_CACHE``, else ``baselines`` in hwbench's cache folder
    (:func:`hwbench.core.disk_cache.cache_root`, where the JAX compilation cache lives too)."""
    explicit = os.environ.get("HWBENCH_BASELINE_CACHE")
    if explicit and explicit.lower() not in OFF:
        return Path(explicit).expanduser()
    return cache_root() / "baselines"


@dataclass(frozen=True)
class BaselineCache(EntryFolder):
    """A folder of verified baseline traces, LRU-evicted down to ``max_bytes``."""

    @classmethod
    def from_env(cls) -> BaselineCache | None:
        """The cache the environment names (None when ``HWBENCH_BASELINE_CACHE`` is ``off``).

        A bad ``HWBENCH_BASELINE_CACHE_SIZE`` is a UsageError naming the variable."""
        if os.environ.get("HWBENCH_BASELINE_CACHE", "").lower() in OFF:
            return None
        return cls(default_root(), size_from_env("HWBENCH_BASELINE_CACHE_SIZE", DEFAULT_SIZE))

    def load(self, key: str) -> Trace | None:
        """The trace stored under ``key``, verified; None on a miss. A corrupt entry is removed."""
        entry = self.root / key
        try:
            meta = EntryMeta.model_validate_json((entry / "meta.json").read_bytes())
            payload = (entry / "payload.npz").read_bytes()
        except FileNotFoundError:
            return None
        except (OSError, ValidationError, ValueError):
            self._discard(entry)
            return None
        if meta.key != key or not payload_intact(payload, meta.payload_bytes, meta.payload_sha256):
            self._discard(entry)
            return None
        try:
            trace = _trace(meta, payload)
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            self._discard(entry)
            return None
        self._touch(entry)
        return trace

    def store(self, key: str, fields: dict[str, Any], trace: Trace) -> bool:
        """Keep ``trace`` under ``key`` (atomic; an entry another audit wrote first is kept).

        Returns whether an entry is now there. Never raises for a full or read-only disk: the
        audit's result does not depend on the cache."""
        try:
            payload, layout = _payload(trace)
        except (TypeError, ValueError):
            return False  # a state that is no tree of arrays: not kept
        if len(payload) > self.max_bytes:
            return False
        meta = EntryMeta(
            key=key,
            key_fields=fields,
            payload_sha256=hashlib.sha256(payload).hexdigest(),
            payload_bytes=len(payload),
            created=time.time(),
            label=trace.label,
            counters=trace.counters,
            violation=_jsonable(trace.violation),
            execution=trace.execution,
            detail=trace.detail,
            refine=trace.refine,
            run_s=trace.run_s,
            setup_s=trace.setup_s,
            layout=layout,
        )
        try:
            return self._write(key, {"payload.npz": payload, "meta.json": meta.model_dump_json().encode()})
        except OSError:
            return False


def _jsonable(value: Any) -> Any:
    """``value`` with numpy scalars and arrays as plain Python (JSON) values."""
    return json.loads(json.dumps(value, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))
