"""A deliberately plain block-FMA matrix unit, written from the published description only, so the
probes of ``hwbench.accuracy.matrix_probe`` can be tested against a whole space of parameters
(hypothesis) independently of the project's model (``matrix_unit``).

Per block of ``block`` products: each product is exact; the block's terms (and ``c`` when it joins
the alignment) are aligned to the largest exponent keeping ``frac_bits`` fraction bits (truncated,
optionally with a sticky bit), summed exactly, normalised once and rounded to ``result_bits``
fraction bits (toward zero or to nearest even). Blocks chain through ``c``. With ``instruction``,
``c`` is added once per instruction of that many products instead: the instruction's blocks
chain from zero, the ``interleave``-th runs of its terms dealt to them in turn, and ``c`` is added
to their result with one rounding. Exact rational arithmetic (``fractions``), one row at a time:
slow and obviously right.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from hwbench.accuracy.numerics.formats import float_format

FORMAT_ALIASES = {"fp8-e4m3": "fp8-e4m3fn"}


@dataclass(frozen=True)
class RefUnit:
    input_format: str
    output_format: str
    block: int = 8
    frac_bits: int | None = 24  # None: exact accumulation
    sticky: bool = False
    final_rounding: str = "toward-zero"
    c_in_alignment: bool = True
    subnormals_in: bool = True
    subnormals_out: bool = True
    result_bits: int | None = None  # None: the output format's fraction bits
    instruction: int | None = None  # products per c addition (several blocks); None: c chains every block
    interleave: int | None = None  # runs of an instruction's terms dealt to its blocks in turn

    def _fmt(self, name: str):  # type: ignore[no-untyped-def]
        return float_format(FORMAT_ALIASES.get(name, name))

    def inner(self, a: NDArray[np.float64], b: NDArray[np.float64], c: NDArray[np.float64]) -> NDArray[np.float64]:
        a, b, c = np.atleast_2d(a), np.atleast_2d(b), np.atleast_1d(c)
        return np.array([self._row(a[i], b[i], float(c[i])) for i in range(a.shape[0])])

    def _row(self, a: NDArray[np.float64], b: NDArray[np.float64], c: float) -> float:
        fin, fout = self._fmt(self.input_format), self._fmt(self.output_format)
        if not self.subnormals_in:
            a = np.where(np.abs(a) < fin.min_normal, 0.0, a)
            b = np.where(np.abs(b) < fin.min_normal, 0.0, b)
        prods = [Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a, b)]
        acc = Fraction(c)
        if self.instruction is None:
            return float(self._chain(prods, acc, fin.emin, fout.emin))
        for start in range(0, len(prods), self.instruction):
            terms = prods[start : start + self.instruction]
            run, blocks = self.interleave, self.instruction // self.block
            if run is not None:
                terms = [terms[t] for t in sorted(range(len(terms)), key=lambda t: ((t // run) % blocks, t))]
            acc = self._round(self._chain(terms, Fraction(0), fin.emin, fout.emin) + acc)
        return float(acc)

    def _chain(self, prods: list[Fraction], acc: Fraction, emin_in: int, emin_out: int) -> Fraction:
        fout = self._fmt(self.output_format)
        for start in range(0, len(prods), self.block):
            if not self.subnormals_out and abs(acc) < fout.min_normal:
                acc = Fraction(0)
            acc = self._round(self._block_sum(prods[start : start + self.block], acc, emin_in, emin_out))
        return acc

    def _block_sum(self, prods: list[Fraction], c: Fraction, emin_in: int, emin_out: int) -> Fraction:
        if self.frac_bits is None:
            return sum(prods, Fraction(0)) + c
        terms = [(p, _exp(p, 2 * emin_in)) for p in prods if p != 0]
        if self.c_in_alignment:
            if c != 0:
                terms.append((c, _exp(c, emin_out)))
            return self._aligned(terms)
        s = self._aligned(terms)
        if c == 0:
            return s
        # c after the products: a two-term addition with 7 more bits (as the published CDNA3 model)
        return self._aligned([(x, _exp(x, emin_out)) for x in (s, c) if x != 0], extra=7)

    def _aligned(self, terms: list[tuple[Fraction, int]], extra: int = 0) -> Fraction:
        if not terms:
            return Fraction(0)
        assert self.frac_bits is not None
        lsb = Fraction(2) ** (max(e for _, e in terms) - self.frac_bits - extra)
        total = Fraction(0)
        for x, _ in terms:
            q = abs(x) / lsb
            kept = Fraction(math.floor(q))
            if self.sticky and kept != q:
                kept += Fraction(1, 2)
            total += kept if x > 0 else -kept
        return total * lsb

    def _round(self, v: Fraction) -> Fraction:
        fout = self._fmt(self.output_format)
        bits = fout.mantissa_bits if self.result_bits is None else self.result_bits
        if v == 0:
            return v
        ulp = Fraction(2) ** (max(_exp(v, fout.emin), fout.emin) - bits)
        q = abs(v) / ulp
        n = math.floor(q)
        if self.final_rounding == "nearest-even" and (q - n > Fraction(1, 2) or (q - n == Fraction(1, 2) and n % 2)):
            n += 1
        out = n * ulp if v > 0 else -n * ulp
        if not self.subnormals_out and abs(out) < fout.min_normal:
            return Fraction(0)
        return out


def _exp(x: Fraction, floor: int) -> int:
    """floor(log2 |x|), never below ``floor`` (a subnormal's exponent is the format's emin)."""
    e = abs(x).numerator.bit_length() - abs(x).denominator.bit_length()
    if Fraction(2) ** e > abs(x):
        e -= 1
    return max(e, floor)
