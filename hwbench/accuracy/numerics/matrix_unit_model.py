"""A matrix unit's inner-product arithmetic as data: the block-FMA feature set.

A tensor core (NVIDIA) or matrix core (AMD) does not multiply and add like a chain of fp32 FMAs.
Published measurements on real GPUs (Khattak & Mikaitis, "Accurate Models of NVIDIA Tensor
Cores", arXiv:2512.07004, code github.com/north-numerical-computing/MATLAB-tensor-core; Fasi,
Higham, Mikaitis, Pranesh, PeerJ CS 7:e330, 2021) show a *block* FMA: the exact products of a
block of ``block_terms`` input pairs are aligned to the block's largest exponent (``c`` included
or not), the bits below a fixed point are cut off, the aligned integers are added exactly,
normalised once and rounded once onto the output format. Long inner products chain blocks: the
result of one block is the ``c`` of the next.

:class:`MatrixUnitModel` holds every feature the published models vary (one model per unit and
input/output format pair), and names where each value came from. The arithmetic itself is in
:mod:`.block_fma` (the plain reference) and :mod:`.block_fma_vec` (vectorised, numpy or JAX).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from hwbench.accuracy.numerics.formats import FloatFormat, get_format
from hwbench.accuracy.numerics.profile import Confidence

__all__ = [
    "ACCUMULATOR_FRACTION_BITS",
    "INPUT_FORMATS",
    "OUTPUT_FORMATS",
    "MatrixUnitModel",
]

#: The fraction bits of the aligned significands before extra bits: an fp32 significand's 23.
#: Every published model aligns on this fp32 frame, whatever the output format.
ACCUMULATOR_FRACTION_BITS = 23
#: The fp32 exponent floor used for ``c``'s exponent (a subnormal ``c`` counts as 2^-126).
ACCUMULATOR_EMIN = -126

InputFormat = Literal["fp16", "bf16", "tf32", "fp8-e5m2", "fp8-e4m3"]
OutputFormat = Literal["fp16", "fp32"]
INPUT_FORMATS: tuple[str, ...] = ("fp16", "bf16", "tf32", "fp8-e5m2", "fp8-e4m3")
OUTPUT_FORMATS: tuple[str, ...] = ("fp16", "fp32")

# The project's format presets for each name (fp8 depends on the OCP / fnuz variant).
_OCP = {"fp8-e4m3": "fp8-e4m3fn", "fp8-e5m2": "fp8-e5m2"}
_FNUZ = {"fp8-e4m3": "fp8-e4m3fnuz", "fp8-e5m2": "fp8-e5m2fnuz"}

Rounding = Literal["toward-zero", "nearest-even", "down", "up"]


class MatrixUnitModel(BaseModel, frozen=True):
    """One matrix unit computing ``d = a . b + c`` for one input / output format pair.

    ``summation`` picks the family: ``aligned`` is the block FMA (NVIDIA, AMD CDNA3),
    ``exact`` adds the block's products and ``c`` exactly and rounds once (AMD CDNA1,
    a Kulisch accumulator), ``pairwise`` adds fp32-rounded products in a binary tree of fp32
    additions and adds ``c`` last (AMD CDNA2).

    ``extra_alignment_bits`` is the number of bits kept below the fp32 frame of the block's
    largest exponent (23 + extra fraction bits survive alignment). A negative value is the
    Hopper / Ada fp8 *product precision limit*: only 23 + extra (13 for -10) fraction bits of
    each aligned product survive, and the result keeps at most that many fraction bits (13 of an
    fp32 output, as the published model rounds it; all 10 of an fp16 output, as the Ada fp8 ->
    fp16 vectors show). ``min_alignment_exponent`` is a floor on the alignment exponent: products
    smaller than ``2^min_alignment_exponent`` are cut on that exponent's grid instead (which is
    how subnormal results lose bits on silicon).

    ``c_position``: ``alignment`` aligns ``c`` with the products; ``after`` adds it to the
    products' (unnormalised) sum in a second two-operand addition that rounds the smaller
    operand with ``late_rounding`` after giving the products ``late_extra_bits`` more bits
    (AMD CDNA3); ``after-rounded`` sums an instruction's products without ``c`` (its blocks
    chained from zero, each block's result rounded onto the output format with ``late_rounding``)
    and then adds ``c`` with one ``final_rounding`` (B200 fp8 -> fp32, Hopper / Blackwell fp8 ->
    fp16, fitted to their vectors). ``odd_even_grouping`` sums even- and odd-indexed products
    separately and adds the two sums the same way (CDNA3 fp8).

    ``instruction_terms`` is the products of one matrix instruction (a whole number of blocks;
    None: one block; more than one block with ``after-rounded`` only): ``c`` joins once per
    instruction, and ``interleave`` deals an instruction's terms to its blocks in runs of that
    many consecutive terms, round-robin (None: each block takes consecutive terms; interleaved
    blocks keep at least one alignment bit below the result's, which is how the probes find
    their lanes). Hopper's and Blackwell's fp8 -> fp16 instruction of 32 terms runs as two
    16-term blocks, the first taking terms 0, 1, 4, 5, 8, 9, ... (runs of 2), the second the rest.

    The other fields: ``alignment_rounding`` (``truncate``, or ``sticky``: one more bit below the
    cut, set when any bit was lost); ``final_rounding`` (``toward-zero`` / ``nearest-even``);
    ``c_zero_exponent`` (the exponent a zero ``c`` takes in a late addition; None: far below);
    ``normalised_products`` (renormalise a product significand in [2, 4) to [1, 2) before
    alignment); ``product_overflow_limit`` (a product of ``2^(emax_out + 1)`` or more makes the
    block an infinity); ``subnormals_in`` / ``subnormals_out`` (``keep`` or ``flush`` the inputs /
    results and ``c`` below the format's smallest normal); ``fp8_variant`` (``ocp``: e4m3fn and
    e5m2; ``fnuz``: the bias-8 / bias-16 variants); ``pad_k`` (K not a whole number of
    instructions is padded with zero products, else refused). ``source``, ``confidence`` and
    ``notes`` say where the values come from (``notes`` maps a field name to its own citation
    where it differs).
    Carries are never lost: the aligned integers are added exactly, as in every published model.
    """

    name: str = "custom"
    input_format: InputFormat
    output_format: OutputFormat = "fp32"
    summation: Literal["aligned", "exact", "pairwise"] = "aligned"
    block_terms: int = Field(ge=1, le=256)
    extra_alignment_bits: int = Field(default=0, ge=-20, le=8)
    alignment_rounding: Literal["truncate", "sticky"] = "truncate"
    final_rounding: Literal["toward-zero", "nearest-even"] = "toward-zero"
    c_position: Literal["alignment", "after", "after-rounded"] = "alignment"
    late_rounding: Rounding = "toward-zero"
    late_extra_bits: int = Field(default=7, ge=0, le=16)
    instruction_terms: int | None = Field(default=None, ge=1, le=256)
    interleave: int | None = Field(default=None, ge=1, le=128)
    c_zero_exponent: int | None = None
    odd_even_grouping: bool = False
    normalised_products: bool = False
    min_alignment_exponent: int = Field(default=-1024, ge=-1024, le=0)
    product_overflow_limit: bool = False
    subnormals_in: Literal["keep", "flush"] = "keep"
    subnormals_out: Literal["keep", "flush"] = "keep"
    fp8_variant: Literal["ocp", "fnuz"] = "ocp"
    pad_k: bool = True
    source: str = "user-described"
    confidence: Confidence = Confidence.ASSUMED
    notes: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> MatrixUnitModel:
        problems = []
        if self.alignment_rounding == "sticky" and (self.c_position == "after" or self.odd_even_grouping):
            problems.append("a sticky alignment bit is modelled only with c in the alignment and no grouping")
        if self.extra_alignment_bits < 0 and (self.c_position == "after" or self.odd_even_grouping):
            problems.append("negative extra_alignment_bits are modelled only with c in the alignment")
        if self.summation == "pairwise" and self.block_terms & (self.block_terms - 1):
            problems.append("pairwise summation needs a power-of-two block_terms")
        if self.summation != "aligned" and self.odd_even_grouping:
            problems.append("odd_even_grouping applies to aligned summation only")
        if self.summation == "pairwise" and self.output_format != "fp32":
            problems.append("pairwise summation is modelled with fp32 output only")
        if self.c_position == "after-rounded" and self.late_rounding not in ("toward-zero", "nearest-even"):
            problems.append("after-rounded rounds the products' sum toward-zero or nearest-even")
        problems += self._instruction_problems()
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def _instruction_problems(self) -> list[str]:
        n, k, run = self.step_terms, self.block_terms, self.interleave
        problems = []
        if n % k:
            problems.append(f"instruction_terms ({n}) must be a whole number of blocks of {k}")
        elif n > k and (self.summation != "aligned" or self.c_position != "after-rounded"):
            problems.append("instructions of several blocks are modelled with aligned summation and after-rounded c")
        if run is not None and (n // k < 2 or n % (run * (n // k))):
            problems.append(f"interleave {run} must deal an instruction of {n} terms evenly to its {n // k} blocks")
        if run is not None and ACCUMULATOR_FRACTION_BITS + self.extra_alignment_bits <= self.output_fraction_bits:
            problems.append("interleaved lanes are modelled with an alignment bit below the result's")
        return problems

    @property
    def step_terms(self) -> int:
        """Products of one instruction: the unit K is cut into (its blocks, and where c joins)."""
        return self.instruction_terms or self.block_terms

    def term_order(self) -> list[int] | None:
        """The order in which an instruction's blocks take its terms (block 0's first), or None
        when each block takes consecutive terms."""
        run, blocks = self.interleave, self.step_terms // self.block_terms
        if run is None:
            return None
        return sorted(range(self.step_terms), key=lambda t: ((t // run) % blocks, t))

    # --- derived formats ----------------------------------------------------------------
    @property
    def input_float(self) -> FloatFormat:
        """The project's float format of the inputs (the fp8 variant picks OCP or fnuz)."""
        name: str = self.input_format
        if name.startswith("fp8"):
            name = (_FNUZ if self.fp8_variant == "fnuz" else _OCP)[name]
        fmt = get_format(name)
        assert isinstance(fmt, FloatFormat)
        return fmt

    @property
    def output_float(self) -> FloatFormat:
        fmt = get_format(self.output_format)
        assert isinstance(fmt, FloatFormat)
        return fmt

    @property
    def output_fraction_bits(self) -> int:
        """Fraction bits the final rounding keeps (fewer than the format's under a product limit)."""
        return min(self.output_float.mantissa_bits, ACCUMULATOR_FRACTION_BITS + self.extra_alignment_bits)

    @property
    def label(self) -> str:
        return f"{self.name} {self.input_format}->{self.output_format}"
