"""What a sweep runs: axes (or an explicit list) of audit cells, as a file or as CLI shorthands.

A sweep is many ordinary audits that differ in one or more *axes*: the device and mode, documented
profile parameters (``--set`` keys), per-op-class formats (op classes x mantissa widths, the
rest of the profile unchanged), the rounding mode of those formats, the seed (network
realisation and stimulus), and the dt divisor (the candidate at dt/k, as the study's dt
refinement). :class:`SweepSpec` holds the axes and expands them into :class:`Cell` records, the
unit of work sent to a Dask worker; a spec may instead list its cells explicitly (``cells``).

Every model here crosses a file or process boundary, so each is a pydantic model; a malformed
spec or shorthand is a one-line :class:`~hwbench.core.errors.UsageError`.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hwbench.accuracy.numerics.formats import RoundingMode
from hwbench.core.audit_protocol import MAX_SEED, STUDY_SEED
from hwbench.core.errors import UsageError
from hwbench.core.ops import OpClass
from hwbench.core.user_data import parse_json, parse_toml

Scalar = bool | int | float | str
MAX_CELLS = 100_000  # a typo such as 1..100000 should be refused, not scheduled
MAX_WIDTH = 23  # mantissa widths of --grid formats: fp32's explicit fraction bits (the carrier)


class OpGrid(BaseModel):
    """Op classes at several mantissa widths (fp32's exponent range), everything else unchanged.

    ``together=False``: each op class is its own row of the sensitivity table (``exp,div:7..23``);
    ``together=True``: the classes change width together (``exp+div:7..23``).
    """

    model_config = ConfigDict(extra="forbid")

    ops: list[OpClass] = Field(min_length=1)
    bits: list[int] = Field(min_length=1)
    together: bool = False

    @field_validator("bits")
    @classmethod
    def _widths(cls, v: list[int]) -> list[int]:
        bad = [b for b in v if not 1 <= b <= MAX_WIDTH]
        if bad:
            raise ValueError(f"mantissa widths must be 1..{MAX_WIDTH} (fp32 carrier), got {bad[0]}")
        return sorted(set(v))

    def groups(self) -> list[tuple[OpClass, ...]]:
        return [tuple(self.ops)] if self.together else [(op,) for op in self.ops]


class Cell(BaseModel):
    """One audit of a sweep: a candidate (device, mode, parameters, per-op formats), seed, dt/k."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    device: str
    mode: str | None = None
    overrides: dict[str, Scalar] = Field(default_factory=dict)
    ops: tuple[OpClass, ...] = ()
    bits: int | None = None
    rounding: RoundingMode = RoundingMode.NEAREST_EVEN
    seed: int = Field(STUDY_SEED, ge=0, le=MAX_SEED)
    dt: int = Field(1, ge=1, description="dt divisor: the candidate is judged at dt/k (1: the kernel's dt)")

    @model_validator(mode="after")
    def _ops_need_bits(self) -> Cell:
        if bool(self.ops) != (self.bits is not None):
            raise ValueError("a cell's 'ops' and 'bits' go together (both or neither)")
        return self

    @property
    def group(self) -> str:
        """The op classes at reduced width, ``exp+div``; ``-`` when the profile is not changed per op."""
        return "+".join(op.value for op in self.ops) or "-"

    def key(self) -> str:
        """A stable, readable identity (resume and store uids use it): equal cells, equal keys."""
        parts = [self.device + (f":{self.mode}" if self.mode else "")]
        parts += [f"{k}={v}" for k, v in sorted(self.overrides.items())]
        if self.ops:
            parts.append(f"{self.group}@m{self.bits}/{self.rounding.value}")
        parts += [f"seed={self.seed}", f"dt/{self.dt}"]
        return "|".join(parts)


class SweepSpec(BaseModel):
    """The axes of a sweep (a full grid: every combination), or an explicit list of ``cells``."""

    model_config = ConfigDict(extra="forbid")

    kernel: str | None = Field(None, description="the kernel audited (default: hwbench's default kernel)")
    devices: list[str] = Field(default_factory=lambda: ["cpu:fp32"], min_length=1)
    protocols: list[str] = Field(
        default_factory=list,
        description="audit protocols every cell runs (empty: the kernel's AuditFacts.sweep_protocols, else every "
        "protocol that applies to it)",
    )
    quick: bool = False
    sets: dict[str, list[Scalar]] = Field(default_factory=dict, description="--set key -> values to try")
    grid: list[OpGrid] = Field(default_factory=list)
    rounding: list[RoundingMode] = Field(default_factory=lambda: [RoundingMode.NEAREST_EVEN], min_length=1)
    seeds: list[Annotated[int, Field(ge=0, le=MAX_SEED)]] = Field(default_factory=lambda: [STUDY_SEED], min_length=1)
    dt: list[int] = Field(default_factory=lambda: [1], min_length=1)
    cells: list[Cell] | None = None
    options: dict[str, Any] = Field(
        default_factory=dict, description="protocol options every cell's audit takes (a model's file and inputs)"
    )

    @field_validator("dt")
    @classmethod
    def _divisors(cls, v: list[int]) -> list[int]:
        if any(k < 1 for k in v):
            raise ValueError("dt divisors must be integers >= 1 (1: the kernel's own dt)")
        return v

    @field_validator("sets")
    @classmethod
    def _values(cls, v: dict[str, list[Scalar]]) -> dict[str, list[Scalar]]:
        empty = [k for k, vals in v.items() if not vals]
        if empty:
            raise ValueError(f"sets.{empty[0]} has no values")
        return v

    def count(self) -> int:
        """How many cells :meth:`expand` builds (duplicates included), computed without building them."""
        if self.cells is not None:
            return len(self.cells)
        combos = math.prod(len(v) for v in self.sets.values())
        ops = sum(len(g.groups()) * len(g.bits) for g in self.grid) * len(self.rounding) if self.grid else 1
        return len(self.devices) * len(self.seeds) * combos * ops * len(self.dt)

    def expand(self) -> list[Cell]:
        """Every cell, in a deterministic order; duplicates removed (a typo's millions refused unbuilt)."""
        if self.count() > MAX_CELLS:
            raise UsageError(
                f"the sweep would have {self.count():,} cells (devices x seeds x set values x grid widths x "
                f"roundings x dt divisors); at most {MAX_CELLS:,} are allowed"
            )
        if self.cells is not None:
            cells = list(self.cells)
        else:
            cells = [c for dev in self.devices for c in self._cells_of(dev)]
        unique = list({c.key(): c for c in cells}.values())
        if len(unique) > MAX_CELLS:
            raise UsageError(f"the sweep has {len(unique)} cells; at most {MAX_CELLS} are allowed")
        if not unique:
            raise UsageError("the sweep has no cells")
        return unique

    def _cells_of(self, device: str) -> list[Cell]:
        name, _, mode = device.partition(":")
        keys = sorted(self.sets)
        set_combos = [dict(zip(keys, vals, strict=True)) for vals in itertools.product(*(self.sets[k] for k in keys))]
        op_axis: list[tuple[tuple[OpClass, ...], int | None, RoundingMode]] = [((), None, RoundingMode.NEAREST_EVEN)]
        if self.grid:
            op_axis = [
                (group, bits, rnd)
                for g in self.grid
                for group in g.groups()
                for bits in g.bits
                for rnd in self.rounding
            ]
        # seed outermost: a worker meets one seed's cells together and reuses their base runs
        return [
            Cell(device=name, mode=mode or None, overrides=sets, ops=ops, bits=bits, rounding=rnd, seed=seed, dt=k)
            for seed in self.seeds
            for sets in set_combos
            for ops, bits, rnd in op_axis
            for k in self.dt
        ]

    # --- files ---------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path) -> SweepSpec:
        """A ``.toml`` or ``.json`` spec; anything wrong is a one-line UsageError."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in (".toml", ".json"):
            raise UsageError(f"{path}: unsupported sweep spec type '{suffix or '(none)'}'; use .toml or .json")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: cannot read sweep spec ({exc})") from None
        data = parse_toml(text, str(path)) if suffix == ".toml" else parse_json(text, str(path))
        return cls.parse(data, origin=str(path))

    @classmethod
    def parse(cls, data: object, *, origin: str = "sweep spec") -> SweepSpec:
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            msg = first["msg"].removeprefix("Value error, ")
            raise UsageError(f"{origin}: invalid sweep spec: {loc + ': ' if loc else ''}{msg}") from None


# --- CLI shorthands --------------------------------------------------------------------------------
def parse_ints(text: str, *, what: str, low: int | None = None, high: int | None = None) -> list[int]:
    """``42,1,2`` or ``7..23`` or ``7..23/2`` (step) or a mix: ``8,10..12``; every value in
    ``low..high`` and at most :data:`MAX_CELLS` of them (counted before any list is built)."""
    parts = [_int_range(p.strip(), text, what) for p in text.split(",")]
    count = sum((r.stop - 1 - r.start) // r.step + 1 for r in parts)  # len() overflows past 2^63
    if count > MAX_CELLS:
        raise UsageError(f"{what}: '{text}' is {count:,} values; a sweep has at most {MAX_CELLS:,} cells")
    for r in parts:
        below, above = low is not None and r[0] < low, high is not None and r[-1] > high
        if below or above:
            raise UsageError(
                f"{what}: values must be integers {_allowed(low, high)}, got {r[0] if below else r[-1]} (in '{text}')"
            )
    return [v for r in parts for v in r]


def _allowed(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"from {low} to {high}"
    return f">= {low}" if low is not None else f"<= {high}"


def _int_range(part: str, text: str, what: str) -> range:
    """One item of :func:`parse_ints`: ``N``, ``A..B`` or ``A..B/STEP`` as a (non-empty) range."""
    try:
        if ".." not in part:
            return range(int(part), int(part) + 1)
        lo, _, rest = part.partition("..")
        hi, _, step = rest.partition("/")
        a, b, s = int(lo), int(hi), int(step or 1)
        if s < 1 or b < a:
            raise ValueError
        return range(a, b + 1, s)
    except ValueError:
        raise UsageError(f"{what}: '{part}' is not an integer, A..B or A..B/STEP (in '{text}')") from None


def parse_grid(text: str) -> OpGrid:
    """``exp,div:7..23`` (each class alone) or ``exp+div:7..23`` (together) -> an :class:`OpGrid`."""
    ops_text, sep, bits_text = text.partition(":")
    if not sep or not ops_text.strip() or not bits_text.strip():
        raise UsageError(f"--grid expects OPS:WIDTHS such as 'exp,div:7..23' or 'exp+div:10,16', got '{text}'")
    together = "+" in ops_text
    if together and "," in ops_text:
        raise UsageError(f"--grid '{text}': use ',' (each op class alone) or '+' (together), not both")
    names = [n.strip() for n in ops_text.replace("+", ",").split(",")]
    allowed = [c.value for c in OpClass]
    for name in names:
        if name not in allowed:
            raise UsageError(f"--grid: unknown op class '{name}'; choose from: {', '.join(allowed)}")
    bits = parse_ints(bits_text, what="--grid widths", low=1, high=MAX_WIDTH)
    try:
        return OpGrid(ops=[OpClass(n) for n in names], bits=bits, together=together)
    except ValidationError as exc:
        raise UsageError(f"--grid '{text}': {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None


def parse_set_values(items: tuple[str, ...]) -> dict[str, list[Scalar]]:
    """``--set key=v1,v2``: the values the sweep tries for a settable profile parameter."""
    out: dict[str, list[Scalar]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip() or not raw.strip():
            raise UsageError(f"--set expects KEY=V1[,V2,...], got '{item}'")
        out[key.strip()] = [_scalar(v.strip()) for v in raw.split(",")]
    return out


def parse_rounding(text: str) -> list[RoundingMode]:
    allowed = [m.value for m in RoundingMode]
    out = []
    for name in (n.strip() for n in text.split(",")):
        if name not in allowed:
            raise UsageError(f"--rounding: unknown mode '{name}'; choose from: {', '.join(allowed)}")
        out.append(RoundingMode(name))
    return out


def _scalar(raw: str) -> Scalar:
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return raw
