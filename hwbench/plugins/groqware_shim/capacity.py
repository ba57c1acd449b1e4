"""The GroqChip capacity model, shared by the device's ``supports()`` and the shim compiler.

Two limits, each stated as a model with the published fact it is calibrated to (no compiler
internals are public, so both are calibrations, not simulations of the Groq scheduler):

**On-chip memory (220 MiB usable SRAM, study Table I).** A program keeps in SRAM its constants
(parameters, and the fp16 one-hot matrices that gather/scatter are lowered to) and a *working
set* for the values it streams: every per-cell value that enters the program (state rows and
inputs) is held with its output buffer and the compiler's intermediates. No public source says
how large that working set is, so it is calibrated to the study's observation that unconnected
``io-ehh`` networks of more than ~640,000 cells do not fit: 220 MiB / (640,000 cells x 15
streamed values per cell: 14 state rows + the applied current) = ~24 bytes, i.e. ~6 fp32 words
of SRAM per streamed value. Other kernels are scaled by the values they stream.

**Instruction scheduling (connected networks).** The compiler lowered gather / scatter-add to
dense one-hot matrix products on the matrix unit (MXM); a one-hot matrix of a gather over
``ngj`` connections from ``ncells`` cells has ``ncells x ngj`` fp16 entries, and the MXM
consumes weights in 320 x 320 tiles (Abts et al., ISCA 2020), so the instructions a fused
program needs grow with the number of weight tiles its one-hot products stream. The study
compiled connected ``io-ehh`` networks up to 729 cells (40 steps fused per program; the next
size tried, 1000 cells, failed because "the scheduler could not allocate the instructions").
The budget is therefore the tile count of that largest program: 40 steps x 3 one-hot products
(2 gathers + 1 scatter-add) x ceil(7290/320) x ceil(729/320) = 8,280 tiles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

STUDY = (
    "Landsmeer, Engelen, Miedema, Strydis, 'Tricking AI chips into simulating the human brain: a detailed "
    "performance analysis', Neurocomputing (2024) 127953"
)
TSP_PAPER = (
    "Abts et al., 'Think Fast: A Tensor Streaming Processor (TSP) for Accelerating Deep Learning Workloads', ISCA 2020"
)

SRAM_BYTES = 220 * 2**20
"""Usable on-chip memory (study, Table I: 230 MB SRAM, 220 MiB usable memory modules)."""
MXM_TILE = 320
"""Edge of the MXM's weight tiles (320 x 320; TSP paper)."""
ONEHOT_BYTES_PER_ENTRY = 2
"""One-hot matrices are fp16 (the matrix unit's float input format)."""

STUDY_CONNECTED_MAX_CELLS = 729
"""Largest connected io-ehh network the study compiled (9^3; 10^3 failed)."""
STUDY_UNCONNECTED_LIMIT_CELLS = 640_000
"""Unconnected io-ehh networks of more than ~640,000 cells did not fit (study)."""
STUDY_FUSED_STEPS = 40
"""Steps fused into one program in the study (1 ms at dt = 0.025 ms)."""
IO_EHH_MEAN_DEGREE = 10
"""Gap junctions per cell (docs/io-ehh.md): ngj = 10 x ncells directed entries."""
IO_EHH_ONEHOT_PER_STEP = 3
"""One-hot products per io-ehh step: gather V[src], gather V[tgt], scatter-add into targets."""
IO_EHH_STREAMED_PER_CELL = 15
"""Per-cell values an io-ehh program takes in: 14 state rows and the applied current."""

WORKING_SET_BYTES_PER_VALUE = SRAM_BYTES / (STUDY_UNCONNECTED_LIMIT_CELLS * IO_EHH_STREAMED_PER_CELL)
"""SRAM per streamed per-cell value, calibrated so unconnected io-ehh fits below ~640,000 cells."""


def mxm_tiles(rows: int, cols: int) -> int:
    """320 x 320 MXM weight tiles a ``rows x cols`` matrix occupies."""
    return math.ceil(rows / MXM_TILE) * math.ceil(cols / MXM_TILE)


def io_ehh_connected_ngj(ncells: int) -> int:
    """Directed gap-junction entries of a connected io-ehh network (pairs stored both ways)."""
    return 2 * round(IO_EHH_MEAN_DEGREE * ncells / 2)


def tile_budget() -> int:
    """MXM weight tiles of the largest connected program the study compiled (729 cells, 40 steps)."""
    n = STUDY_CONNECTED_MAX_CELLS
    return STUDY_FUSED_STEPS * IO_EHH_ONEHOT_PER_STEP * mxm_tiles(io_ehh_connected_ngj(n), n)


@dataclass(frozen=True)
class OneHotUse:
    """One one-hot matrix product in a program: ``kind`` gather or scatter, its matrix shape.

    ``key`` identifies the matrix (its index data and shape): uses with the same key share one
    matrix in SRAM, but each use is its own stream of MXM instructions.
    """

    kind: str
    rows: int
    cols: int
    key: str

    @property
    def tiles(self) -> int:
        return mxm_tiles(self.rows, self.cols)

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * ONEHOT_BYTES_PER_ENTRY


@dataclass
class Footprint:
    """What one program needs on the chip, as the capacity model counts it."""

    onehot_uses: list[OneHotUse] = field(default_factory=list)
    constant_bytes: int = 0
    streamed_values: int = 0
    cells: int | None = None

    @property
    def onehot_bytes(self) -> int:
        shapes = {u.key: u.nbytes for u in self.onehot_uses}
        return int(sum(shapes.values()))

    @property
    def onehot_matrices(self) -> int:
        return len({u.key for u in self.onehot_uses})

    @property
    def working_set_bytes(self) -> int:
        return math.ceil(self.streamed_values * WORKING_SET_BYTES_PER_VALUE)

    @property
    def sram_bytes(self) -> int:
        return self.constant_bytes + self.onehot_bytes + self.working_set_bytes

    @property
    def tiles(self) -> int:
        return sum(u.tiles for u in self.onehot_uses)

    def stats(self) -> dict[str, int]:
        """The numbers a compile report shows (all integers, JSON-ready)."""
        return {
            "sram_bytes_used": self.sram_bytes,
            "sram_bytes_available": SRAM_BYTES,
            "constant_bytes": self.constant_bytes,
            "onehot_matrices": self.onehot_matrices,
            "onehot_bytes": self.onehot_bytes,
            "onehot_matmul_uses": len(self.onehot_uses),
            "working_set_bytes": self.working_set_bytes,
            "streamed_values": self.streamed_values,
            "mxm_weight_tiles": self.tiles,
            "mxm_tile_budget": tile_budget(),
        }


def mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


def sram_problem(fp: Footprint) -> str | None:
    """Why ``fp`` does not fit in on-chip memory, or None when it does."""
    if fp.sram_bytes < SRAM_BYTES:
        return None
    cells = f" for {fp.cells:,} cells" if fp.cells else ""
    return (
        f"the program needs {mib(fp.sram_bytes)} of on-chip SRAM{cells} (working set of {fp.streamed_values:,} "
        f"streamed values {mib(fp.working_set_bytes)}, one-hot matrices {mib(fp.onehot_bytes)}, other constants "
        f"{mib(fp.constant_bytes)}) but the GroqChip has {mib(SRAM_BYTES)} usable; the study found unconnected "
        f"io-ehh networks fit only below ~{STUDY_UNCONNECTED_LIMIT_CELLS:,} cells. Use a smaller network"
    )


def schedule_problem(fp: Footprint) -> str | None:
    """Why the scheduler could not allocate ``fp``'s instructions, or None when it can."""
    budget = tile_budget()
    if fp.tiles <= budget:
        return None
    return (
        f"the scheduler could not allocate the instructions: the {len(fp.onehot_uses):,} one-hot matrix products "
        f"that gather/scatter were lowered to stream {fp.tiles:,} MXM weight tiles of 320x320, more than the "
        f"{budget:,} of the largest connected program the study compiled ({STUDY_CONNECTED_MAX_CELLS} cells, "
        f"{STUDY_FUSED_STEPS} steps fused). Use a connected network of at most {STUDY_CONNECTED_MAX_CELLS} cells, "
        "fewer steps per program, or an unconnected one"
    )


def problem(fp: Footprint) -> str | None:
    """The first capacity problem of ``fp`` (memory, then instructions), or None."""
    return sram_problem(fp) or schedule_problem(fp)
