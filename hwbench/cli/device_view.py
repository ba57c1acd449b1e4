"""What ``hwbench devices`` says about a device: its record (``--json``) and, for ``hwbench devices NAME``,
the device in full: its spec with sources and every mode's numerics profile.

Each mode's profile is a table of its op classes (format, rounding, confidence, source), its
knobs (the parameters ``--set`` changes, with their values) and its notes; sources are numbered
once and listed after the tables, so a long citation is printed once. ``--json`` prints the same
record ``hwbench devices --json`` has for the device.
"""

from __future__ import annotations

from typing import Any

from hwbench.cli import output
from hwbench.cli.output import print_json, print_table
from hwbench.core.device import Device

_SPEC_FIELDS = ("vendor", "model", "kind", "memory", "process_nm", "transistors_bn", "clock_mhz", "tdp_w", "software")


def device_record(device: Device, *, profiles: bool = True) -> dict[str, Any]:
    """Everything ``hwbench devices --json`` says about one device, every mode's profile with its
    sources (``profiles=False``: without them, for the table, which shows the default mode's only,
    :func:`numerics_cells`)."""
    record = _device_summary(device)
    if profiles:
        record["profiles"] = _profiles(device)
    return record


def _device_summary(device: Device) -> dict[str, Any]:
    try:
        probe = device.probe()
        status, reason = probe.status, probe.reason
    except Exception as exc:  # a device plugin's probe must not take the listing down
        status, reason = "unavailable", f"probe failed: {exc.__class__.__name__}: {exc}"
    return {
        "name": device.name,
        "status": status,
        "reason": reason,
        "modes": list(device.modes),
        "default_mode": device.default_mode,
        "spec": device.spec.model_dump(mode="json"),
    }


def _profiles(device: Device) -> dict[str, Any]:
    profiles: dict[str, Any] = {}
    for mode in device.modes:
        try:
            profile = device.numerics(mode)
            profiles[mode] = None if profile is None else profile.model_dump(mode="json")
        except Exception as exc:
            profiles[mode] = {"error": f"{exc.__class__.__name__}: {exc}"}
    return profiles


def numerics_cells(device: Device) -> tuple[str, str]:
    """The table's profile and knobs of a device's default mode: the profile's name with its weakest
    confidence, and the parameters ``--set`` may change (only the default mode's profile is built:
    every mode's was a tenth of the command's time; ``hwbench devices NAME`` shows them all)."""
    try:
        profile = device.numerics(device.default_mode)
        knobs = ", ".join(device.settable(device.default_mode)) or "-"
    except Exception as exc:  # a device plugin's profile must not take the listing down
        return f"error: {exc.__class__.__name__}", "-"
    if profile is None:
        return "native IEEE", knobs
    confidence = profile.confidence()
    return f"{profile.name} ({confidence.value if confidence else 'native'})", knobs


def _line(text: str) -> None:
    """One line of text on stdout (rich is imported here, not when ``hwbench devices`` loads this module)."""
    output.stdout.print(text, highlight=False, markup=False)


class _Sources:
    """Citations numbered in order of first use."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    def cite(self, source: str | None) -> str:
        if not source:
            return "-"
        return f"[{self.numbers.setdefault(source, len(self.numbers) + 1)}]"


def show_device(device: Device, as_json: bool) -> None:
    """``hwbench devices NAME``: the device's record as JSON, or its tables."""
    record = device_record(device)
    if as_json:
        print_json(record)
        return
    sources = _Sources()
    spec = record["spec"]
    rows = [("status", f"{record['status']}: {record['reason']}"), ("modes", ", ".join(record["modes"]))]
    rows += [(f, spec[f]) for f in _SPEC_FIELDS if spec.get(f) not in (None, "")]
    rows += [(f"peak {k}", v) for k, v in spec.get("peak", {}).items()]
    rows.append(("sources", " ".join(sources.cite(s) for s in spec.get("sources", []))))
    print_table(f"Device {device.name}", ["field", "value"], rows)
    for mode in device.modes:
        _show_mode(device, mode, record["profiles"][mode], sources)
    for source, number in sources.numbers.items():
        _line(f"[{number}] {source}")


def _format(value: Any) -> str:
    """A preset's name (``fp16``), or a custom format's name and width."""
    if not isinstance(value, dict):
        return str(value)
    bits = value.get("mantissa_bits")
    return f"{value.get('name', 'custom')}" + (f" ({bits} fraction bits)" if bits is not None else "")


def _show_mode(device: Device, mode: str, profile: dict[str, Any] | None, sources: _Sources) -> None:
    default = " (used when no mode is given)" if mode == device.default_mode else ""
    if profile is None:
        _line(f"\nmode {mode}{default}: the host's native IEEE arithmetic (no profile)")
        return
    if "error" in profile:
        _line(f"\nmode {mode}{default}: profile unavailable: {profile['error']}")
        return
    ops = [
        (op, _format(entry["format"]), entry["rounding"], entry["confidence"], sources.cite(entry.get("source")))
        for op, entry in profile["ops"].items()
    ]
    title = f"mode {mode}{default}: profile {profile['name']} ({profile['description']})"
    print_table(title, ["op class", "format", "rounding", "confidence", "source"], ops or [("-", "native", "", "", "")])
    knobs = device.settable(mode)
    if knobs:
        print_table(f"{mode}: knobs (--set)", ["knob", "value"], list(knobs.items()))
    for note in profile.get("notes", []):
        _line(f"  - {note}")
