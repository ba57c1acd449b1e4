"""Table cells and footnotes for execution, synaptic events and energy, shared by ``run`` and ``bench``.

Every time is shown with whose it is: the chip's (``real``) or this host's emulation of the chip
(``emul.``), with the real chip's published figure for the same configuration where a study gave
one. Every energy figure is shown with what it is: measured, "modelled" (with its formula) or the
published figure of an emulated chip (with its source); where nothing could be metered the cell
says "not measured" and a footnote says why.
"""

from __future__ import annotations

from collections.abc import Iterable

from hwbench.core.results import HOST_TIME, Timing

EVENT_COLUMNS = ["syn. events/s", "energy", "J/event"]


def execution_cell(t: Timing) -> str:
    """``real`` or ``emul.``: whether the times of this row are the chip's or this host's."""
    return "emul." if t.execution == "emulated" else t.execution


def speed_footnotes(timings: Iterable[Timing]) -> list[str]:
    """What the times of emulated rows are, and the real chip's published figures for these configurations."""
    timings = list(timings)
    lines = [f"exec emul.: the times are {HOST_TIME}"] if any(t.execution == "emulated" for t in timings) else []
    for t in timings:
        where = f"{t.ncells:,} cells {'connected' if t.connected else 'unconnected'}"
        lines += [
            f"published for the real {t.device}, {where}: {p.figure:g} {p.unit} - {p.workload} [{p.source}]"
            for p in t.published
        ]
    return list(dict.fromkeys(lines))


def events_cell(t: Timing) -> str:
    rate = t.metrics.get("synaptic-events", {}).get("events_per_s")
    return "-" if rate is None else f"{rate:.3g}"


def energy_cell(t: Timing) -> str:
    e = t.energy
    if e is None:
        return "-"
    if e.status == "measured" and e.joules is not None:
        return f"{e.joules:.3g} J ({e.watts or 0:.3g} W)"
    if e.status == "modelled" and e.joules is not None:
        return f"{e.joules:.3g} J modelled"
    if e.status == "published":
        return "emulated: published*"
    return "not measured"


def per_event_cell(t: Timing) -> str:
    value = t.metrics.get("energy", {}).get("j_per_synaptic_event")
    if value is None:
        return "-"
    return f"{value:.3g}" + (" modelled" if t.energy is not None and t.energy.status == "modelled" else "")


def event_cells(t: Timing) -> tuple[str, str, str]:
    return events_cell(t), energy_cell(t), per_event_cell(t)


def footnotes(timings: Iterable[Timing]) -> list[str]:
    """One line per distinct convention, energy method, formula and published figure (speed, then energy)."""
    timings = list(timings)
    lines: list[str] = speed_footnotes(timings)
    for t in timings:
        if t.activity is not None and t.activity.synaptic_event_convention:
            lines.append(f"synaptic event ({t.kernel}): {t.activity.synaptic_event_convention}")
        e = t.energy
        if e is None:
            continue
        if e.status == "not measured":
            lines.append(f"energy not measured: {e.method}")
        elif e.status == "modelled":
            lines.append(f"energy MODELLED, not measured: E = TDP x T_wall, TDP = {e.watts:g} W ({e.method})")
        elif e.status == "published":
            lines.append(f"* {e.method}; published for the real chip:")
            lines += [f"    {p.figure:g} {p.unit} - {p.workload} [{p.source}]" for p in e.published]
        else:
            lines.append(f"energy measured: {e.method}")
    return list(dict.fromkeys(lines))
