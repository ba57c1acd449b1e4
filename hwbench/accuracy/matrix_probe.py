"""Feature-detection probes of a matrix unit: what its inner products do, measured black-box.

The probes follow the published methods: Fasi, Higham, Mikaitis & Pranesh, "Numerical behavior
of NVIDIA tensor cores", PeerJ Computer Science 7:e330 (2021) (result rounding, block size,
normalisation); Khattak & Mikaitis, HPEC 2025 (arXiv:2510.15884, code
github.com/faiziktk/IEEE_HPEC2025_block_FMA_tests, "Algorithm 1": block size and carry bits;
extra alignment bits; alignment and output rounding read from a +/- pair); Li et al., FTTN
(arXiv:2403.00232, github.com/LLNL/FTTN: subnormal and ordering tests); Mikaitis, "Monotonicity
of multi-term floating-point adders", IEEE Trans. Computers 73(6), 2024 (the witness below).
The code here is hwbench's own; the test vectors are re-derived for any input/output format.

A probe only calls ``unit.inner(a, b, c)``, so the same probes measure an emulated unit (the
block-FMA model) or silicon (``hwbench.plugins.devices.h100``'s JAX path). Every vector is exact
in the input format; products are built as ``a = m * 2**ea``, ``b = 2**eb``.

Order matters and is fixed: result bits R first (the output's effective fraction bits), then the
instruction size with R-scaled vectors (where ``c`` is rounded in), then the lanes of the first
block (which terms it takes: consecutive ones, or runs dealt to several blocks), then, on those
lanes, final rounding, alignment bits F, alignment rounding, where ``c`` joins, subnormals,
carry bits, normalisation and monotonicity. A feature whose probe cannot be built for this unit
(too few terms per block, a format too narrow) is ``None`` and its note says why: never a guess.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from hwbench.accuracy.numerics.formats import FloatFormat, float_format
from hwbench.accuracy.numerics.matrix_unit_model import ACCUMULATOR_FRACTION_BITS, MatrixUnitModel
from hwbench.core.errors import UsageError

Array = NDArray[np.float64]
T = TypeVar("T")
ProbeK = 128  # terms per probe row: a whole number of blocks for every block size up to 128
MAX_ALIGN_BITS = 60  # alignment probed down to 2**-60 below the largest term; beyond: "exact"
FORMAT_ALIASES = {"fp8-e4m3": "fp8-e4m3fn"}

Rounding = Literal["toward-zero", "nearest-even", "up", "down", "other"]
AlignRounding = Literal["truncation", "sticky", "exact"]


class InnerUnit(Protocol):
    """What a probe needs: ``inner(a, b, c)`` with (n, K) inputs and (n,) accumulators."""

    def inner(self, a: Array, b: Array, c: Array) -> Array: ...


class MatrixUnitFeatures(BaseModel):
    """The measured feature table of one matrix unit for one (input, output) format pair.

    ``None`` means "not measurable with these probes on this unit"; ``notes`` says why.
    """

    model_config = ConfigDict(extra="forbid")

    input_format: str
    output_format: str
    result_fraction_bits: int = Field(
        description="fraction bits of the unit's rounded result (fp32: 23; Hopper fp8: 13)"
    )
    block_size: int | None = Field(
        description="products added per block before one rounding; None: no boundary up to K"
    )
    instruction_size: int | None = Field(
        default=None,
        description="products between two roundings of c into the result (the block, unless c is added "
        "once per instruction of several blocks); None: no boundary up to K",
    )
    interleave: int | None = Field(
        default=None,
        description="runs of consecutive terms an instruction deals to its blocks in turn; None: consecutive blocks",
    )
    extra_alignment_bits: int | None = Field(
        description="fraction bits kept at alignment beyond fp32's 23 (negative: fewer); None: exact accumulation"
    )
    alignment_rounding: AlignRounding | None
    final_rounding: Rounding | None = Field(description="rounding of the products' block sum (c = 0)")
    c_rounding: Rounding | None = Field(description="rounding of the result when c is added (one product)")
    c_in_alignment: bool | None = Field(description="c aligned with the block's products (True) or added after (False)")
    subnormal_inputs: Literal["kept", "flushed"] | None
    subnormal_outputs: Literal["kept", "flushed"] | None
    carry_bits: int | None = Field(description="extra carry bits of the block accumulator (HPEC 2025, Algorithm 1)")
    normalisation: Literal["late", "immediate", "other"] | None
    monotonic: Literal["violated", "no violation found"] | None
    notes: list[str] = Field(default_factory=list)


PARAMETER_FIELDS = (
    "result_fraction_bits",
    "block_size",
    "instruction_size",
    "interleave",
    "extra_alignment_bits",
    "alignment_rounding",
    "final_rounding",
    "c_rounding",
    "c_in_alignment",
    "subnormal_inputs",
    "subnormal_outputs",
)
"""Features that are parameters of a block-FMA model (the rest are measured consequences)."""


def fmt(name: str | FloatFormat) -> FloatFormat:
    """The float format of a matrix-unit format name (``fp8-e4m3`` is OCP e4m3fn)."""
    if isinstance(name, FloatFormat):
        return name
    return float_format(FORMAT_ALIASES.get(name, name))


class _Probe:
    """One probing session: the unit, its formats, and the features measured so far."""

    def __init__(self, unit: InnerUnit, input_format: str | FloatFormat, output_format: str | FloatFormat) -> None:
        self.unit = unit
        self.fin, self.fout = fmt(input_format), fmt(output_format)
        self.notes: list[str] = []
        self.block: int | None = None
        self.order = list(range(ProbeK))  # probe term j goes to the unit's position order[j]
        self.frac: int | None = None
        self.rbits = self.fout.mantissa_bits
        self.scale = 1.0

    def set_scale(self) -> None:
        """Scale the unit-sized probes so their smallest term (about 2**-(R+3)) is a product of
        normals: an fp8 e4m3 product cannot go below 2**-12 unscaled."""
        self.scale = 2.0 ** max(0, self.rbits + 4 + 2 * self.fin.emin)

    # -------------------------------------------------------------------------- building rows
    def factor(self, p: float) -> tuple[float, float]:
        """``a, b`` in the input format with ``a * b == p`` exactly (``p = m * 2**e``)."""
        if p == 0:
            return 0.0, 0.0
        m, e = math.frexp(abs(p))
        m, e = m * 2, e - 1  # m in [1, 2)
        if m * 2**self.fin.mantissa_bits != int(m * 2**self.fin.mantissa_bits):
            raise _Unbuildable(f"{p!r} needs more than {self.fin.mantissa_bits} fraction bits")
        lo, hi = self.fin.emin, self.fin.emax
        ea = min(max(e - hi, lo), hi) if e > 2 * hi else min(max(e // 2, lo), hi)
        eb = e - ea
        if not lo <= eb <= hi:
            raise _Unbuildable(f"{p!r} is not a product of two normal {self.fin.name} values")
        return math.copysign(m * 2.0**ea, p), 2.0**eb

    def rows(self, products: list[list[float]], cs: list[float], scaled: bool = True) -> Array:
        """Evaluate rows given as product lists (padded with zeros to ``ProbeK``, term j at the
        unit's position ``order[j]``: the first block's lanes first) and their c, all multiplied by
        the session's power-of-two scale (undone on the result) if ``scaled``."""
        k = self.scale if scaled else 1.0
        n = len(products)
        a, b = np.zeros((n, ProbeK)), np.zeros((n, ProbeK))
        for i, row in enumerate(products):
            for j, p in enumerate(row):
                a[i, self.order[j]], b[i, self.order[j]] = self.factor(p * k)
        return self.call(a, b, np.array(cs, dtype=np.float64) * k) / k

    def call(self, a: Array, b: Array, c: Array) -> Array:
        out = np.asarray(self.unit.inner(a, b, c), dtype=np.float64)
        if out.shape != c.shape:
            raise UsageError(f"the unit's inner() returned shape {out.shape}, expected {c.shape}")
        return out

    def signed(self, products: list[float], c: float, scaled: bool = True) -> tuple[float, float]:
        """The row and its negation (HPEC's dp, dn pair): tells directed roundings apart."""
        d = self.rows([products, [-p for p in products]], [c, -c], scaled=scaled)
        return float(d[0]), float(d[1])


class _Unbuildable(Exception):
    """A probe vector that the unit's formats cannot hold."""


def _classify(dp: float, dn: float, low: float, high: float) -> Rounding:
    """Rounding from a +/- pair whose exact value lies strictly between ``low`` and ``high``."""
    table: dict[tuple[float, float], Rounding] = {
        (low, low): "toward-zero",
        (high, high): "nearest-even",
        (high, low): "up",
        (low, high): "down",
    }
    return table.get((dp, -dn), "other")


# ------------------------------------------------------------------------------------ probes
def _result_bits(pr: _Probe) -> int:
    """Largest t with ``0 + c == c`` for ``c = 1 + 2**-t``: the result's fraction bits."""
    q = pr.fout.mantissa_bits
    cs = [1.0 + 2.0**-t for t in range(1, q + 1)]
    d = pr.rows([[] for _ in cs], cs, scaled=False)
    ok = d == np.array(cs)
    return int(np.argmin(ok)) if not ok.all() else q


def _block_size(pr: _Probe) -> int | None:
    """HPEC Algorithm 1 (FMA size): ``1`` first and a tiny term at k; both c + all must stay exact."""
    tiny = 2.0**-pr.rbits
    want = 2.0 + 2 * tiny
    prods = []
    for k in range(2, ProbeK + 1):
        row = [0.0] * k
        row[0], row[k - 1] = 1.0, tiny
        prods.append(row)
    n = len(prods)
    d = pr.rows(prods + [[-p for p in r] for r in prods], [1 + tiny] * n + [-(1 + tiny)] * n)
    bad = (d[:n] != want) & (np.abs(d[n:]) != want)
    return int(np.argmax(bad)) + 1 if bad.any() else None


def _later_block(pr: _Probe, pairs: list[tuple[int, int]]) -> list[bool]:
    """For each (i, j): does position j's block come after position i's? Row: ``2**-(R+1)`` at
    position 0 (the first block), 1 at i, -1 at j, c = 0. Within one block (or with j's block
    first) the sum is exact; when the running result holds 1 + 2**-(R+1) before j's -1 arrives,
    the half ulp is rounded away."""
    tiny = 2.0 ** (-pr.rbits - 1)
    rows = []
    for i, j in pairs:
        row = [0.0] * (max(i, j) + 1)
        row[0], row[i], row[j] = tiny, 1.0, -1.0
        rows.append(row)
    return list(pr.rows(rows, [0.0] * len(rows)) != tiny)


def _lanes(pr: _Probe, n: int | None) -> tuple[int | None, int | None]:
    """The first block's lanes within an instruction of n terms: (block size, interleave run).

    A partner p of position 0 (searched among positions 1 to 8) is a position no other comes
    before; the positions that do not come after p share the first block. Consecutive blocks are
    not split (a binary tree of roundings, as on CDNA2, reads the same); interleaved lanes must be
    runs dealt round-robin."""
    if n is None or n < 4:
        return n, None
    if all(_later_block(pr, [(1, 2), (2, 1)])):
        pr.notes.append("lanes: not observable (a half ulp below the result is lost within a block)")
        return n, None
    partner = next((p for p in range(1, min(n - 1, 9)) if not any(_later_block(pr, _column(n, p, into=True)))), None)
    if partner is None:
        pr.notes.append("lanes: no position shares the first block with position 0")
        return n, None
    later = _later_block(pr, _column(n, partner, into=False))
    lanes = sorted({0, partner} | {j for (_, j), lost in zip(_column(n, partner, into=False), later) if not lost})
    run = next((k for k, t in enumerate(lanes) if k != t), len(lanes))
    if run == len(lanes) or n % len(lanes):
        return n, None
    blocks = n // len(lanes)
    if lanes != [t for t in range(n) if (t // run) % blocks == 0]:
        pr.notes.append(f"lanes: the first block takes positions {lanes}, not runs dealt round-robin")
        return n, None
    first = sorted(range(n), key=lambda t: ((t // run) % blocks, t))
    pr.order = [start + t for start in range(0, ProbeK, n) for t in first][:ProbeK]
    return len(lanes), run


def _column(n: int, p: int, *, into: bool) -> list[tuple[int, int]]:
    """Pairs (j, p) (does p come after j?) or (p, j), for every position j < n but 0 and p."""
    return [(j, p) if into else (p, j) for j in range(1, n) if j != p]


def _final_rounding(pr: _Probe) -> Rounding | None:
    """Result rounding from an exact block value 0.75 ulp above a representable one (HPEC 3/4).

    With 3 or 4 terms per block, ``c`` carries the low bits (HPEC's vectors): a unit that adds
    ``c`` after the products and keeps no bits below its result precision there reads as
    toward-zero.
    """
    r = pr.rbits
    if pr.block is None or pr.block >= 5:  # [1, 1, 1, 1, 0.75 * 2**(2-r)] + 0: c plays no part
        dp, dn = pr.signed([1.0, 1.0, 1.0, 1.0, 3 * 2.0**-r], 0.0)
        return _classify(dp, dn, 4.0, 4.0 + 2.0 ** (2 - r))
    if pr.block >= 3:  # HPEC: [1, 1, 1] + (1 + 3 * 2**-r) = 4 + 0.75 ulp(4); c must keep 2**-r
        dp, dn = pr.signed([1.0, 1.0, 1.0], 1.0 + 3 * 2.0**-r)
        return _classify(dp, dn, 4.0, 4.0 + 2.0 ** (2 - r))
    if pr.block == 2:  # [1, 1] + (1 + 3 * 2**-r) = 3 + 1.5 ulp(3): a tie only nearest-even splits evenly
        dp, dn = pr.signed([1.0, 1.0], 1.0 + 3 * 2.0**-r)
        return _classify(dp, dn, 3.0 + 2.0 ** (1 - r), 3.0 + 2.0 ** (2 - r))
    pr.notes.append("final rounding: not probed (fewer than 2 products per block)")
    return None


def _c_rounding(pr: _Probe) -> Rounding:
    """``[1] + (1 + 3 * 2**-R) = 2 + 1.5 ulp(2)``: how the result rounds once c is added. A unit
    that rounds its block sum and then adds c (Blackwell fp8) rounds the two steps differently."""
    r = pr.rbits
    dp, dn = pr.signed([1.0], 1.0 + 3 * 2.0**-r)
    return _classify(dp, dn, 2.0 + 2.0 ** (1 - r), 2.0 + 2.0 ** (2 - r))


def _alignment_bits(pr: _Probe) -> int | None:
    """Largest t with ``2**s - 2**s + 2**(s-t) == 2**(s-t)``: fraction bits kept at alignment.

    None when every representable t passes (exact accumulation, as far as the formats reach).
    """
    s = _align_top(pr)
    ts = [t for t in range(1, MAX_ALIGN_BITS + 1) if _representable(pr, 2.0 ** (s - t))]
    if pr.block is None or pr.block >= 3:
        rows, cs = [[2.0**s, -(2.0**s), 2.0 ** (s - t)] for t in ts], [0.0] * len(ts)
    else:
        rows, cs = [[-(2.0**s), 2.0 ** (s - t)] for t in ts], [2.0**s] * len(ts)
    d = pr.rows(rows, cs, scaled=False)
    ok = d == np.array([2.0 ** (s - t) for t in ts])
    if ok.all():
        pr.notes.append(f"alignment: every probed bit kept (down to 2**-{ts[-1]} of the largest term): exact")
        return None
    return ts[int(np.argmin(ok))] - 1


def _align_top(pr: _Probe) -> int:
    """The exponent of the largest term of the alignment probes: as high as the formats allow,
    so the terms far below it are still products of normal inputs (fp8 e4m3 stops at 2**-12)."""
    return min(2 * pr.fin.emax, pr.fout.emax - 1)


def _representable(pr: _Probe, x: float) -> bool:
    """x is a product of two normal inputs and a normal output value."""
    if x < pr.fout.min_normal:
        return False
    try:
        pr.factor(x)
    except _Unbuildable:
        return False
    return True


def _alignment_rounding(pr: _Probe, final: Rounding | None) -> AlignRounding | None:
    """Truncation or a sticky bit: a term lost at alignment either vanishes or leaves a trace.

    ``pr.frac`` is the raw reach F' of :func:`_alignment_bits` (a sticky bit reaches one bit
    further: it reproduces a lost power of two exactly). With T the alignment probes' top term,
    ``[T, -0.75 * 2**-F' T]``: truncation gives T; a sticky bit leaves T - epsilon, which rounds
    toward zero to the value below T. Under nearest-even, ``[T, 2**-(R+1) T, 2**-(F'+1) T]`` is a
    tie under truncation (-> T) and above it with a sticky bit (-> T + 2**-R T).
    """
    if pr.frac is None:
        return "exact"
    f, r, top = pr.frac, pr.rbits, 2.0 ** _align_top(pr)
    if final == "toward-zero":
        dp, _ = pr.signed([top, -3 * 2.0 ** (-f - 2) * top], 0.0, scaled=False)
        return "truncation" if dp == top else "sticky"
    if final == "nearest-even" and f >= r + 1 and (pr.block is None or pr.block >= 3):
        dp, _ = pr.signed([top, 2.0 ** (-r - 1) * top, 2.0 ** (-f - 1) * top], 0.0, scaled=False)
        return "truncation" if dp == top else "sticky"
    pr.notes.append("alignment rounding: not observable with this block size / final rounding")
    return None


def _c_in_alignment(pr: _Probe, rounding: str | None) -> bool | None:
    """``c = 1`` and n products of ``2**-(F+2)`` summing to one result ulp: cut away (or each
    kept as one sticky half-LSB, twice their value) when c joins the alignment, exact when c is
    added to the products' own sum afterwards."""
    if pr.frac is None:
        pr.notes.append("c placement: not observable (exact accumulation)")
        return None
    f, r = pr.frac, pr.rbits
    n = 2 ** (f - r + 2)
    if (pr.block is not None and n > pr.block) or n > ProbeK:
        pr.notes.append(f"c placement: not observable (needs {n} products in one block)")
        return None
    d = float(pr.rows([[2.0 ** (-f - 2)] * n], [1.0])[0])
    joined = 1.0 + 2.0 ** (1 - r) if rounding == "sticky" else 1.0
    if d not in (joined, 1.0 + 2.0**-r):
        pr.notes.append(f"c placement: unclassified result {d!r}")
        return None
    return d == joined


def _subnormal_inputs(pr: _Probe) -> Literal["kept", "flushed"]:
    """FTTN-style: the smallest input subnormal times a power of two landing at 0.5 in the output."""
    tiny = pr.fin.min_subnormal
    big = 2.0 ** (-1 - round(math.log2(tiny)))
    if big > pr.fin.max_value:
        big = 2.0**pr.fin.emax
    a, b = np.zeros((1, ProbeK)), np.zeros((1, ProbeK))
    a[0, 0], b[0, 0] = tiny, big
    d = pr.call(a, b, np.zeros(1))
    return "kept" if d[0] == tiny * big else "flushed"


def _subnormal_outputs(pr: _Probe) -> Literal["kept", "flushed"]:
    """A result in the output's subnormal range: from a product of normals, else from c alone."""
    x = pr.fout.min_normal / 2
    try:
        d = pr.rows([[x]], [0.0], scaled=False)
    except _Unbuildable:
        d = pr.rows([[]], [x], scaled=False)
    return "kept" if d[0] == x else "flushed"


def _carry_bits(pr: _Probe) -> int | None:
    """HPEC Algorithm 1 (carry part): k - 1 near-2 terms, a tiny one and a c with low bits set."""
    if pr.block is None or pr.block < 2:
        return None
    pin, r = pr.fin.mantissa_bits + 1, pr.rbits
    top = 2 - 2.0 ** (1 - pin)
    rows, cs, want = [], [], []
    for k in range(2, pr.block + 1):
        lgk = math.ceil(math.log2(k))
        c = top + sum(2.0**e for e in range(-r, -r + lgk))
        row = [top] * (k - 1) + [2.0**-r]
        rows.append(row)
        cs.append(c)
        want.append(c + sum(row))
    ok = pr.rows(rows, cs) == np.array(want)
    passed = [k for k, good in zip(range(2, pr.block + 1), ok) if good]
    return math.floor(math.log2(passed[-1] * top)) if passed else 0


def _normalisation(pr: _Probe) -> Literal["late", "immediate", "other"] | None:
    """HPEC feature 10: ``(1 - 2**(t-R-1)) + 2 x 2**(-R-1)(2**t + 1)``; late keeps 2**-R."""
    t = min(3, pr.fin.mantissa_bits)
    r = pr.rbits
    if pr.block is not None and pr.block < 2:
        return None
    y = 2.0 ** (-r - 1) * (2**t + 1)
    d = float(pr.rows([[y, y]], [1 - 2.0 ** (t - r - 1)])[0])
    late, immediate = 1 + 2.0 ** (t - r - 1) + 2.0**-r, 1 + 2.0 ** (t - r - 1)
    return "late" if d == late else "immediate" if d in (immediate, immediate + 2.0 ** (1 - r)) else "other"


def _monotonic(pr: _Probe) -> Literal["violated", "no violation found"]:
    """Mikaitis (2024): raising c from just below 1 to 1 moves the alignment point up a binade,
    so n small products that counted before are truncated away and the sum goes down."""
    f = pr.frac if pr.frac is not None else MAX_ALIGN_BITS
    r = pr.rbits
    below = 1 - 2.0 ** (-r - 1)
    n = min(pr.block or ProbeK, ProbeK)
    y = 2.0 ** (-1 - f)
    if not _representable(pr, y * pr.scale):
        return "no violation found"
    d = pr.rows([[y] * n, [y] * n], [below, 1.0])
    return "violated" if d[1] < d[0] else "no violation found"


def probe(
    unit: InnerUnit, input_format: str | FloatFormat, output_format: str | FloatFormat, *, name: str | None = None
) -> MatrixUnitFeatures:
    """Run every probe against ``unit`` and return its feature table. Give the input format as a
    :class:`FloatFormat` where the name is ambiguous (fp8 fnuz); ``name`` labels it in the table."""
    pr = _Probe(unit, input_format, output_format)
    pr.rbits = _result_bits(pr)
    pr.set_scale()
    instruction = _block_size(pr)
    lanes = _guard(pr, "lanes", lambda: _lanes(pr, instruction))
    pr.block, interleave = lanes if lanes is not None else (instruction, None)
    final: Rounding | None = _guard(pr, "final rounding", lambda: _final_rounding(pr))
    pr.frac = _guard(pr, "alignment bits", lambda: _alignment_bits(pr))
    rounding: AlignRounding | None = _guard(pr, "alignment rounding", lambda: _alignment_rounding(pr, final))
    if rounding == "sticky" and pr.frac is not None:
        pr.frac -= 1  # the sticky bit, not a kept bit, reproduced the lowest lost power of two
    bits = pr.frac
    return MatrixUnitFeatures(
        input_format=name or (input_format if isinstance(input_format, str) else pr.fin.name),
        output_format=output_format if isinstance(output_format, str) else pr.fout.name,
        result_fraction_bits=pr.rbits,
        block_size=pr.block,
        instruction_size=instruction,
        interleave=interleave,
        extra_alignment_bits=None if bits is None else bits - fmt("fp32").mantissa_bits,
        alignment_rounding=rounding,
        final_rounding=final,
        c_rounding=_guard(pr, "c rounding", lambda: _c_rounding(pr)),
        c_in_alignment=_guard(pr, "c placement", lambda: _c_in_alignment(pr, rounding)),
        subnormal_inputs=_guard(pr, "subnormal inputs", lambda: _subnormal_inputs(pr)),
        subnormal_outputs=_guard(pr, "subnormal outputs", lambda: _subnormal_outputs(pr)),
        carry_bits=_guard(pr, "carry bits", lambda: _carry_bits(pr)),
        normalisation=_guard(pr, "normalisation", lambda: _normalisation(pr)),
        monotonic=_guard(pr, "monotonicity", lambda: _monotonic(pr)),
        notes=pr.notes,
    )


def _guard(pr: _Probe, what: str, run: Callable[[], T | None]) -> T | None:
    """A probe whose vectors the formats cannot hold is reported as not probed, with the reason."""
    try:
        return run()
    except _Unbuildable as exc:
        pr.notes.append(f"{what}: not probed ({exc})")
        return None


def disagreements(measured: MatrixUnitFeatures, model: MatrixUnitFeatures) -> list[tuple[str, object, object]]:
    """(feature, measured, model) for every feature where the two tables differ."""
    skip = {"notes", "input_format", "output_format"}
    return [
        (name, getattr(measured, name), getattr(model, name))
        for name in MatrixUnitFeatures.model_fields
        if name not in skip and getattr(measured, name) != getattr(model, name)
    ]


def model_features(model: MatrixUnitModel) -> dict[str, object]:
    """The parameters the probes must read off a unit running ``model``: its block size, extra
    alignment bits, roundings, where c joins and subnormal handling, each mapped to the feature
    table's terms, with the probes' observability limits (a feature no probe vector of at most
    one block can reach is ``None``, as the probe reports it).

    Exact and pairwise summation have no alignment point: the cancellation probes find every bit
    kept, so they read as exact (``extra_alignment_bits`` None, c placement not observable).
    Consecutive blocks of one instruction read as one block (the lanes probe splits interleaved
    lanes only: a binary tree of roundings would read as consecutive blocks too).
    """
    r = model.output_fraction_bits
    block_final = model.late_rounding if model.c_position == "after-rounded" else model.final_rounding
    f = ACCUMULATOR_FRACTION_BITS + model.extra_alignment_bits
    block = model.block_terms if model.interleave is not None else model.step_terms
    want: dict[str, object] = {
        "result_fraction_bits": r,
        "block_size": block,
        "instruction_size": model.step_terms,
        "interleave": model.interleave,
        "final_rounding": block_final if block >= 2 else None,  # one product: no block sum
        "c_rounding": model.final_rounding,
        "subnormal_inputs": "kept" if model.subnormals_in == "keep" else "flushed",
        "subnormal_outputs": "kept" if model.subnormals_out == "keep" else "flushed",
    }
    if model.summation != "aligned":
        return {**want, "extra_alignment_bits": None, "alignment_rounding": "exact", "c_in_alignment": None}
    sticky = model.alignment_rounding == "sticky"
    seen = block_final == "toward-zero" or (f + sticky >= r + 1 and block >= 3)
    want["extra_alignment_bits"] = model.extra_alignment_bits
    want["alignment_rounding"] = ("sticky" if sticky else "truncation") if seen else None
    reach = 2 ** (f - r + 2) <= min(block, ProbeK)
    want["c_in_alignment"] = model.c_position == "alignment" if reach else None
    return want
