"""The peak host memory of a phase (hwbench.core.peak_memory): what it allocated, and only that."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hwbench.core import peak_memory
from hwbench.core.peak_memory import PeakMemory

MIB = 2**20
linux_only = pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's resettable VmHWM")


def phase(mib: int) -> int:
    """The measured peak of a phase that fills ``mib`` MiB (touched, then freed). Up to about a MiB
    of it may come from pages already resident when the phase started (the heap's kept top)."""
    memory = PeakMemory()
    memory.start()
    block = np.ones(mib * MIB // 8)
    del block
    reading = memory.stop()
    assert reading.status == "measured" and reading.peak_bytes is not None
    return reading.peak_bytes


@linux_only
def test_a_phase_counts_what_it_held() -> None:
    assert 63 * MIB <= phase(64) < 96 * MIB


@linux_only
def test_each_phase_has_its_own_peak() -> None:
    """A small phase after a large one reports its own peak (a process-lifetime maximum such as
    ``ru_maxrss`` would report the large one's)."""
    phase(128)
    assert 7 * MIB <= phase(8) < 40 * MIB


def test_not_measured_where_the_peak_cannot_be_reset(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(peak_memory, "CLEAR_REFS", tmp_path / "missing" / "clear_refs")
    memory = PeakMemory()
    memory.start()
    reading = memory.stop(estimate_bytes=123)
    assert reading.status == "not measured" and reading.peak_bytes is None and reading.estimate_bytes == 123
    assert reading.reason is not None and "cannot be reset" in reading.reason
