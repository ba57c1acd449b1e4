"""Energy of the timed state-propagation phase, metered where the host lets us, never invented.

Sources, each read at the start and at the end of every timed run (``EnergyMeter.start`` / ``stop``
around ``Executor.run``, so allocation, compilation and result collection outside it are excluded):

- Linux powercap RAPL (``/sys/class/powercap/intel-rapl:*/energy_uj``; AMD CPUs expose the same
  tree). Top-level zones (``intel-rapl:N``, one per CPU package) are summed; their sub-zones (core,
  uncore, dram) are reported but not added, since a package already contains its cores. The counter
  wraps at ``max_energy_range_uj``: a stop reading below the start one adds that range once (a run
  long enough to wrap twice — hundreds of kJ — is not detectable from two readings). A counter that
  cannot be read (often root-only since Linux 5.10) is "unreadable", with the reason — never zero.
- NVIDIA NVML (``pynvml`` from the ``nvidia-ml-py`` package, imported only if installed):
  ``nvmlDeviceGetTotalEnergyConsumption`` (mJ since the driver loaded; Volta and newer) per GPU.

The total is the sum of every top-level domain that was measured; if none was, the reading says
"not measured". Modelled figures (TDP x busy time) and published figures (for emulated devices) are
separate readings with ``status`` "modelled" / "published", each with its formula or source.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

POWERCAP = Path("/sys/class/powercap")
DomainStatus = Literal["measured", "unreadable", "not available"]


# defer_build=True: pydantic builds such a model's validator when it is first used, not at import;
# hwbench devices imports this module and validates none of them (docs/cli.md, "Start-up time").
class DomainEnergy(BaseModel, defer_build=True):
    """One metered counter over one phase."""

    name: str = Field(description="e.g. 'rapl:package-0', 'rapl:package-0/core', 'nvml:gpu0'")
    status: DomainStatus
    joules: float | None = None
    top_level: bool = Field(True, description="counted in the total (sub-zones are already inside their package)")
    wrapped: bool = False
    reason: str | None = None


class PublishedEnergy(BaseModel):
    """An energy or power figure a study published for a real chip (shown for emulated devices)."""

    workload: str = Field(description="what was measured, in the study's words")
    figure: float
    unit: str
    source: str


class EnergyReading(BaseModel, defer_build=True):
    """Energy of one phase: measured, not measured, modelled (with formula) or published (with source)."""

    status: Literal["measured", "not measured", "modelled", "published"]
    seconds: float = Field(description="wall time of the phase the energy covers")
    joules: float | None = None
    watts: float | None = Field(None, description="joules / seconds")
    method: str = ""
    formula: str | None = None
    published: list[PublishedEnergy] = Field(default_factory=list)
    domains: list[DomainEnergy] = Field(default_factory=list)


@dataclass
class _Counter:
    """One readable energy counter: how to read it (joules) and where it wraps (joules, or None)."""

    name: str
    read: Callable[[], float]
    wrap_j: float | None
    top_level: bool


@dataclass
class _Broken:
    name: str
    status: DomainStatus
    reason: str
    top_level: bool = True


def rapl_counters(root: Path = POWERCAP) -> tuple[list[_Counter], list[_Broken]]:
    """The RAPL zones under ``root``: readable counters, and the unreadable ones with their reason."""
    if not root.is_dir():
        return [], [_Broken("rapl", "not available", f"{root} does not exist (no powercap driver)")]
    zones = sorted(p for p in root.glob("intel-rapl:*") if (p / "energy_uj").exists() or (p / "name").exists())
    if not zones:
        return [], [_Broken("rapl", "not available", f"no intel-rapl zones under {root}")]
    good: list[_Counter] = []
    bad: list[_Broken] = []
    for zone in zones:
        top = zone.name.count(":") == 1
        label = _zone_label(zone, zones)
        try:
            wrap = int((zone / "max_energy_range_uj").read_text().split()[0]) / 1e6
            _read_uj(zone / "energy_uj")
        except (OSError, ValueError, IndexError) as exc:
            bad.append(_Broken(label, *_why(exc, zone), top_level=top))
            continue
        good.append(_Counter(label, _reader(zone / "energy_uj"), wrap, top))
    return good, bad


def _zone_label(zone: Path, zones: list[Path]) -> str:
    name = _text(zone / "name") or zone.name
    parent_id = zone.name.rsplit(":", 1)[0]
    if zone.name.count(":") == 1:
        return f"rapl:{name}"
    parent = next((z for z in zones if z.name == parent_id), None)
    return f"rapl:{_text(parent / 'name') if parent else parent_id}/{name}"


def _text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _read_uj(path: Path) -> float:
    return int(path.read_text().split()[0]) / 1e6


def _reader(path: Path) -> Callable[[], float]:
    return lambda: _read_uj(path)


def _why(exc: BaseException, zone: Path) -> tuple[DomainStatus, str]:
    if isinstance(exc, PermissionError):
        return "unreadable", f"{zone}/energy_uj: permission denied (RAPL counters are often root-only)"
    if isinstance(exc, FileNotFoundError):
        return "not available", f"{zone}: {Path(exc.filename or '').name or 'counter'} missing"
    return "unreadable", f"{zone}: {exc.__class__.__name__}: {exc}"


def nvml_counters() -> tuple[list[_Counter], list[_Broken]]:
    """Per-GPU total-energy counters through NVML, if ``pynvml`` is installed and a driver answers."""
    try:
        import pynvml
    except ImportError:
        return [], [_Broken("nvml", "not available", "pynvml (package nvidia-ml-py) is not installed")]
    try:
        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
    except Exception as exc:  # NVMLError subclasses: no driver, no GPU
        return [], [_Broken("nvml", "not available", f"NVML: {exc}")]
    good: list[_Counter] = []
    bad: list[_Broken] = []
    for i in range(count):
        handle = pynvml.nvmlDeviceGetHandleByIndex(i)

        def read(h: Any = handle) -> float:
            return float(pynvml.nvmlDeviceGetTotalEnergyConsumption(h)) / 1e3  # mJ, an int

        try:
            read()
        except Exception as exc:  # pre-Volta GPUs: NVML_ERROR_NOT_SUPPORTED
            bad.append(_Broken(f"nvml:gpu{i}", "unreadable", f"total energy counter: {exc}"))
            continue
        good.append(_Counter(f"nvml:gpu{i}", read, None, True))
    return good, bad


class EnergyMeter:
    """Reads every available counter at ``start()`` and ``stop()``; ``stop`` returns the phase's energy."""

    def __init__(self, *, powercap: Path = POWERCAP, nvml: bool = True) -> None:
        counters, broken = rapl_counters(powercap)
        if nvml:
            more, more_broken = nvml_counters()
            counters += more
            broken += more_broken
        self.counters = counters
        self.broken = broken
        self._start: dict[str, float | BaseException] = {}
        self._t0 = 0.0

    @property
    def can_measure(self) -> bool:
        return any(c.top_level for c in self.counters)

    def start(self) -> None:
        self._start = {c.name: _safe(c.read) for c in self.counters}
        self._t0 = time.perf_counter()

    def stop(self) -> EnergyReading:
        seconds = time.perf_counter() - self._t0
        domains = [
            DomainEnergy(name=b.name, status=b.status, reason=b.reason, top_level=b.top_level) for b in self.broken
        ]
        for counter in self.counters:
            domains.append(_delta(counter, self._start.get(counter.name), _safe(counter.read)))
        measured = [d for d in domains if d.top_level and d.status == "measured" and d.joules is not None]
        if not measured:
            return EnergyReading(status="not measured", seconds=seconds, method=_no_meter(domains), domains=domains)
        joules = sum(d.joules for d in measured if d.joules is not None)
        return EnergyReading(
            status="measured",
            seconds=seconds,
            joules=joules,
            watts=joules / seconds if seconds > 0 else None,
            method="sum of " + ", ".join(d.name for d in measured),
            domains=domains,
        )


def _safe(read: Callable[[], float]) -> float | BaseException:
    try:
        return read()
    except Exception as exc:
        return exc


def _delta(counter: _Counter, start: float | BaseException | None, stop: float | BaseException) -> DomainEnergy:
    """stop - start, adding the counter's range once when it wrapped; a failed read says so."""
    for value in (start, stop):
        if value is None or isinstance(value, BaseException):
            why = "not started" if value is None else f"{value.__class__.__name__}: {value}"
            return DomainEnergy(name=counter.name, status="unreadable", reason=why, top_level=counter.top_level)
    assert isinstance(start, float) and isinstance(stop, float)
    delta = stop - start
    wrapped = delta < 0
    if wrapped:
        if counter.wrap_j is None:
            return DomainEnergy(
                name=counter.name, status="unreadable", reason="counter went backwards", top_level=counter.top_level
            )
        delta += counter.wrap_j
    return DomainEnergy(
        name=counter.name, status="measured", joules=delta, top_level=counter.top_level, wrapped=wrapped
    )


def _no_meter(domains: list[DomainEnergy]) -> str:
    reasons = [f"{d.name}: {d.status} ({d.reason})" for d in domains if d.top_level and d.status != "measured"]
    return "no energy counter could be read: " + ("; ".join(reasons) or "none found")


def modelled(seconds: float, tdp_w: float | None, device: str) -> EnergyReading:
    """TDP x busy time: an upper-bound style estimate, labelled "modelled" (only when asked for)."""
    if tdp_w is None:
        return EnergyReading(status="not measured", seconds=seconds, method=f"{device}: no TDP published to model from")
    return EnergyReading(
        status="modelled",
        seconds=seconds,
        joules=tdp_w * seconds,
        watts=tdp_w,
        method=f"modelled from the TDP in the spec of {device}, not measured on this host",
        formula=f"E = TDP x T_wall = {tdp_w:g} W x {seconds:.6g} s",
    )


def published(seconds: float, figures: list[PublishedEnergy], device: str) -> EnergyReading:
    """An emulated device: the real chip's energy cannot be measured here; quote what was published."""
    method = f"{device} is emulated: no energy of the real chip can be measured here"
    if not figures:
        return EnergyReading(status="not measured", seconds=seconds, method=method + "; no published figure")
    return EnergyReading(status="published", seconds=seconds, method=method, published=list(figures))
