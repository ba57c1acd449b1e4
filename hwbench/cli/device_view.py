"""``hwbench devices NAME``: one device in full, its spec with sources and every mode's numerics profile.

Each mode's profile is a table of its op classes (format, rounding, confidence, source), its
knobs (the parameters ``--set`` changes, with their values) and its notes; sources are numbered
once and listed after the tables, so a long citation is printed once. ``--json`` prints the same
record ``hwbench devices --json`` has for the device.
"""

from __future__ import annotations

from typing import Any

from hwbench.cli.listing import device_record
from hwbench.cli.output import print_json, print_table, stdout
from hwbench.core.device import Device
from hwbench.core.plugins import Registry

_SPEC_FIELDS = ("vendor", "model", "kind", "memory", "process_nm", "transistors_bn", "clock_mhz", "tdp_w", "software")


class _Sources:
    """Citations numbered in order of first use."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    def cite(self, source: str | None) -> str:
        if not source:
            return "-"
        return f"[{self.numbers.setdefault(source, len(self.numbers) + 1)}]"


def show_device(registry: Registry, device: Device, as_json: bool) -> None:
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
        stdout.print(f"[{number}] {source}", highlight=False, markup=False)


def _format(value: Any) -> str:
    """A preset's name (``fp16``), or a custom format's name and width."""
    if not isinstance(value, dict):
        return str(value)
    bits = value.get("mantissa_bits")
    return f"{value.get('name', 'custom')}" + (f" ({bits} fraction bits)" if bits is not None else "")


def _show_mode(device: Device, mode: str, profile: dict[str, Any] | None, sources: _Sources) -> None:
    default = " (used when no mode is given)" if mode == device.default_mode else ""
    if profile is None:
        stdout.print(f"\nmode {mode}{default}: the host's native IEEE arithmetic (no profile)", highlight=False)
        return
    if "error" in profile:
        stdout.print(f"\nmode {mode}{default}: profile unavailable: {profile['error']}", highlight=False, markup=False)
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
        stdout.print(f"  - {note}", highlight=False, markup=False)
