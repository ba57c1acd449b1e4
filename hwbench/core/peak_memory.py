"""Peak host memory of one measured phase, read from the kernel's own counter, never estimated.

Linux keeps a process's peak resident set size (``VmHWM`` in ``/proc/self/status``) and lets the
process reset it to the current resident size (writing ``5`` to ``/proc/self/clear_refs``, Linux
4.0+). :class:`PeakMemory` does that at the start of a phase, after handing the heap that earlier
phases freed back to the kernel (``gc.collect`` and glibc's ``malloc_trim``: otherwise this phase
could reuse those pages without their showing up as new resident memory), and reads ``VmHWM`` at
the end. The phase's figure is that peak minus the resident size at its start: every byte the
phase held at once, whoever allocated it (numpy, XLA's buffers and compiler, TensorFlow, ONNX
Runtime), because all of it is the process's resident memory. tracemalloc would see only what
Python's allocators hand out (numpy's arrays, not XLA's buffers); ``ru_maxrss`` cannot be reset,
so it shows a phase's peak only when it exceeds every earlier one.

It is host memory: an accelerator's own memory is not in it. Where the counter cannot be reset
(not Linux, or ``clear_refs`` not writable) the reading says "not measured", with the reason.
"""

from __future__ import annotations

import ctypes
import functools
import gc
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")
RESET_PEAK = "5"  # clear_refs: reset the peak RSS (VmHWM) to the current RSS (Documentation/filesystems/proc)
METHOD = (
    "peak resident set size of the process (Linux VmHWM, reset through /proc/self/clear_refs at the "
    "phase's start, after gc and malloc_trim) minus the resident size at the start: host memory only"
)


class MemoryReading(BaseModel, defer_build=True):
    """Host memory of one phase: measured (with the method) or not measured (with the reason)."""

    status: Literal["measured", "not measured"]
    peak_bytes: int | None = Field(None, description="the most host memory the phase held at once, above its start")
    start_bytes: int | None = Field(None, description="the process's resident size when the phase started")
    estimate_bytes: int | None = Field(None, description="the host guard's estimate (kernel's + engine's)")
    method: str = METHOD
    reason: str | None = None


def _status_kib(field: str) -> int:
    """A ``kB`` field of /proc/self/status, in KiB."""
    for line in STATUS.read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise OSError(f"{STATUS} has no {field}")


@functools.cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim`` from the process's own symbols (None where the C library has none)."""
    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except OSError:
        return None


def _trim_heap() -> None:
    """Free what is unreachable and give glibc's free heap pages back to the kernel (no-op elsewhere)."""
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


class PeakMemory:
    """``start()`` then ``stop()`` around a phase; ``stop`` returns its :class:`MemoryReading`."""

    def __init__(self) -> None:
        self._start_kib: int | None = None
        self._reason: str | None = None

    def start(self) -> None:
        _trim_heap()
        try:
            CLEAR_REFS.write_text(RESET_PEAK)
            self._start_kib = _status_kib("VmRSS")
            self._reason = None
        except OSError as exc:
            self._start_kib = None
            self._reason = f"the peak resident size cannot be reset here ({exc.__class__.__name__}: {exc})"

    def stop(self, estimate_bytes: int | None = None) -> MemoryReading:
        if self._start_kib is None:
            reason = self._reason or "start() was not called"
            return MemoryReading(status="not measured", estimate_bytes=estimate_bytes, reason=reason)
        try:
            peak_kib = _status_kib("VmHWM")
        except OSError as exc:
            reason = f"the peak resident size cannot be read ({exc})"
            return MemoryReading(status="not measured", estimate_bytes=estimate_bytes, reason=reason)
        return MemoryReading(
            status="measured",
            peak_bytes=max(0, peak_kib - self._start_kib) * 1024,
            start_bytes=self._start_kib * 1024,
            estimate_bytes=estimate_bytes,
        )
