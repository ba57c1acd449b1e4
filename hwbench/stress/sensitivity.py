"""The precision-sensitivity answer of a sweep, and the sweep result file (``hwbench.sweep/1``).

For every op-class group of a sweep (at one device, mode, rounding and dt), the question is: how
many mantissa bits does this operation need? :func:`sensitivity` answers per group with

* ``min_pass_bits``: the lowest tested width from which every wider tested width PASSes (for
  every seed), i.e. the width the kernel and protocol tolerate, and
* ``first_fail_bits``: going down from the widest, the first tested width that FAILs (any
  seed), with the audit's reason for it (the first-divergence forensics of the stress test).

Widths that only WARN are neither: they are shown in the verdict row. :func:`seed_distribution`
gives, per group and width, how the verdicts split over seeds (network realisations).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from hwbench.accuracy.verdict import Verdict, combine
from hwbench.core.results import Provenance
from hwbench.stress.sweep_cell import CellOutcome
from hwbench.stress.sweep_spec import Scalar, SweepSpec

SCHEMA: Final = "hwbench.sweep/1"


class WidthRow(BaseModel):
    """One op-class group's tolerance of reduced width (all seeds together)."""

    device: str
    mode: str | None
    group: str
    rounding: str
    dt: int
    verdicts: dict[int, Verdict] = Field(description="width -> worst verdict over seeds (tested widths only)")
    min_pass_bits: int | None = Field(description="lowest width from which every wider tested width PASSes")
    first_fail_bits: int | None = Field(description="widest tested width that FAILs (for some seed)")
    first_fail_reason: str | None = None


class SeedSplit(BaseModel):
    """How the verdicts of one group and width split over seeds."""

    device: str
    group: str
    bits: int | None
    rounding: str
    dt: int
    counts: dict[Verdict, int]
    seeds: dict[int, Verdict | None]


class CellRow(BaseModel):
    """A cell in the result file (its full audit report is in the ledger / store, not here)."""

    key: str
    status: Literal["done", "failed"]
    verdict: Verdict | None
    protocols: dict[str, Verdict]
    reason: str
    elapsed_s: float
    worker: str

    @classmethod
    def of(cls, o: CellOutcome) -> CellRow:
        return cls(**o.model_dump(include={"key", "status", "verdict", "protocols", "reason", "elapsed_s", "worker"}))


class SweepResult(BaseModel):
    """A whole sweep: its spec, where it ran, every cell's verdict, and the sensitivity answer."""

    model_config = ConfigDict(populate_by_name=True)

    schema_: Literal["hwbench.sweep/1"] = Field(SCHEMA, alias="schema")
    provenance: Provenance = Field(default_factory=Provenance)
    sweep_id: str
    spec: SweepSpec
    cluster: dict[str, Any] = Field(description="kind (local / scheduler), address, workers")
    elapsed_s: float
    cells: list[CellRow]
    sensitivity: list[WidthRow]
    seeds: list[SeedSplit]


# (device, mode, group, rounding, dt): the cells that differ only in width
_Axis = tuple[str, str | None, str, str, int]


def _axis(o: CellOutcome) -> _Axis:
    c = o.cell
    return (c.device, c.mode, c.group, c.rounding.value, c.dt)


def sensitivity(outcomes: list[CellOutcome]) -> list[WidthRow]:
    """Per op-class group, the tolerated width and the first failing one (cells with op formats only)."""
    by_axis: dict[_Axis, dict[int, list[CellOutcome]]] = defaultdict(lambda: defaultdict(list))
    for o in outcomes:
        if o.cell.ops and o.status == "done" and o.verdict is not None:
            by_axis[_axis(o)][int(o.cell.bits or 0)].append(o)
    rows = []
    for (device, mode, group, rounding, dt), widths in by_axis.items():
        worst = {b: combine([o.verdict for o in cells if o.verdict is not None]) for b, cells in widths.items()}
        min_pass = None
        for b in sorted(worst, reverse=True):
            if worst[b] is not Verdict.PASS:
                break
            min_pass = b
        first_fail, reason = None, None
        for b in sorted(worst, reverse=True):
            if worst[b] is Verdict.FAIL:
                first_fail = b
                reason = next(o.reason for o in widths[b] if o.verdict is Verdict.FAIL)
                break
        rows.append(
            WidthRow(
                device=device,
                mode=mode,
                group=group,
                rounding=rounding,
                dt=dt,
                verdicts=dict(sorted(worst.items())),
                min_pass_bits=min_pass,
                first_fail_bits=first_fail,
                first_fail_reason=reason,
            )
        )
    return rows


# (device, mode, sorted overrides, group, bits, rounding, dt): the cells that differ only in seed
_SeedGroup = tuple[str, str | None, tuple[tuple[str, Scalar], ...], str, int | None, str, int]


def seed_distribution(outcomes: list[CellOutcome]) -> list[SeedSplit]:
    """Per group and width (or per parameter cell), the verdict of each seed and their counts."""
    groups: dict[_SeedGroup, list[CellOutcome]] = defaultdict(list)
    for o in outcomes:
        c = o.cell
        groups[(c.device, c.mode, tuple(sorted(c.overrides.items())), c.group, c.bits, c.rounding.value, c.dt)].append(
            o
        )
    out = []
    for (device, _mode, _sets, group, bits, rounding, dt), cells in groups.items():
        counts = Counter(o.verdict for o in cells if o.verdict is not None)
        out.append(
            SeedSplit(
                device=device,
                group=group,
                bits=bits,
                rounding=rounding,
                dt=dt,
                counts={v: counts.get(v, 0) for v in Verdict},
                seeds={o.cell.seed: o.verdict for o in cells},
            )
        )
    return out


def summary_line(row: WidthRow) -> str:
    """``exp needs >= 12 bits (11 FAILs: ...)``: the answer in one line."""
    need = f">= {row.min_pass_bits} bits" if row.min_pass_bits is not None else "more than the widest tested width"
    line = f"{row.group} needs {need}"
    if row.first_fail_bits is not None:
        line += f"; first FAIL at {row.first_fail_bits} bits"
    return line
