"""Search the block-FMA parameter space for the published fp8 -> fp16 tensor-core vectors.

The published real-GPU vectors (tests/data/tensor_core/vectors.npz, see its README) hold fp8
(E4M3, E5M2) inputs with fp16 outputs for Ada, H100, H200 and B200: 8 sets of 5,000 inner
products (K = 32, c rounded to fp16 with nearest-even by the CUDA harness). The published model
files have no fp16 rounding for fp8 inputs (they would keep 10 - 10 = 0 fraction bits), so
this script fits one: every combination below of the generic model's parameters
(``MatrixUnitModel``) runs on every case of each set, and the candidates are printed best first
with their mismatch counts per set.

Searched, per GPU: block terms (8, 16, 32); extra alignment bits (-12 to 3; -10 keeps 13
fraction bits, the fp8 -> fp32 units' product precision limit); where c joins (in the alignment
of the first block, or after the products, ``after-rounded``); for ``after-rounded``, how the
products' blocks are rounded (toward zero or to nearest even onto fp16), whether one instruction
of 32 terms holds several blocks and how its terms are dealt to them (consecutively, or in runs
of 1, 2, 4 or 8 in turn); the final rounding (toward zero, nearest even). One hypothesis outside
the family is scored too: the GPU's fp8 -> fp32 unit (with c) followed by a nearest-even
conversion to fp16.

    python scripts/fit_tensor_core_fp8.py [--gpu H100 ...]

Prints, per GPU, how many candidates reproduce every case and the values each parameter takes
among them, the best candidate of each structure (where c joins, block terms, instruction,
interleave), the fp32-then-convert hypothesis, and the catalogue's unit
(``matrix_unit(gpu, fmt, "fp16")``) last. About two minutes per GPU on two cores.
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hwbench.accuracy.numerics.matrix_unit import MatrixUnit, matrix_unit
from hwbench.accuracy.numerics.matrix_unit_model import MatrixUnitModel

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "tensor_core" / "vectors.npz"
FORMATS = {"E4M3": "fp8-e4m3", "E5M2": "fp8-e5m2"}
GPUS = ("Ada", "H100", "H200", "B200")
ROUNDINGS = ("toward-zero", "nearest-even")
SHOWN = ("block_terms", "extra_alignment_bits", "c_position", "instruction_terms", "interleave", "late_rounding")


def load(gpu: str, fmt: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """a, b (5000, 32), c rounded to fp16 as the CUDA harness did, and the GPU's d bits."""
    vectors = np.load(DATA)
    key = f"{gpu}/{fmt}/fp16"
    a, b, c = (vectors[str(k)].view(np.float32).astype(np.float64) for k in vectors[f"ref/{key}"])
    return a, b, c.astype(np.float16).astype(np.float64), vectors[f"set/{key}"]


def candidates(fin: str) -> Iterator[MatrixUnitModel]:
    """Every valid model of the searched space for input format ``fin`` and fp16 output."""
    for block, extra, final in itertools.product((8, 16, 32), range(-12, 4), ROUNDINGS):
        base: dict[str, Any] = {
            "input_format": fin,
            "output_format": "fp16",
            "block_terms": block,
            "extra_alignment_bits": extra,
            "final_rounding": final,
        }
        yield MatrixUnitModel(**base)
        for late, instruction in itertools.product(ROUNDINGS, sorted({block, 32})):
            runs = (None,) if instruction == block else (None, *(r for r in (1, 2, 4, 8) if r < block))
            for run in runs:  # a run of a whole block deals it consecutive terms: the same as None
                fields = {**base, "c_position": "after-rounded", "late_rounding": late}
                yield MatrixUnitModel(**fields, instruction_terms=instruction, interleave=run)


def misses(unit: Any, data: tuple[np.ndarray, ...]) -> int:
    a, b, c, d = data
    got = unit.inner(a, b, c).astype(np.float32).view(np.uint32)
    return int(np.count_nonzero(got != d))


def describe(model: MatrixUnitModel) -> str:
    fields = model.model_dump()
    if model.c_position != "after-rounded":
        fields["late_rounding"] = None  # no late rounding: c joins the first block's alignment
    text = ", ".join(f"{k}={fields[k]}" for k in SHOWN if fields[k] is not None)
    return f"{text}, final_rounding={model.final_rounding}"


def fit(gpu: str) -> None:
    sets = {fmt: load(gpu, fmt) for fmt in FORMATS}
    scored = []
    for fmt_model in zip(*(candidates(fin) for fin in FORMATS.values()), strict=True):
        counts = [misses(MatrixUnit(m), sets[fmt]) for m, fmt in zip(fmt_model, FORMATS, strict=True)]
        scored.append((sum(counts), counts, fmt_model[0]))
    scored.sort(key=lambda row: row[0])
    exact = [m for total, _, m in scored if total == 0]
    print(f"{gpu}: {len(scored)} candidates, {len(exact)} reproduce all {2 * 5000} cases", end="")
    print(":" if exact else "")
    for field in (*SHOWN, "final_rounding") if exact else ():
        values = {getattr(m, field) for m in exact if field != "late_rounding" or m.c_position == "after-rounded"}
        if values:
            print(f"    {field}: {', '.join(str(v) for v in sorted(values, key=lambda v: (v is None, v or 0)))}")
    best = scored[0][2]
    widths = [(m.extra_alignment_bits, total) for total, _, m in scored if _same_but_width(m, best)]
    print("  its alignment widths (extra bits: mismatches):", ", ".join(f"{e}: {n}" for e, n in sorted(widths)))
    print("  the best candidate of each structure (mismatches: total, per set):")
    seen = set()
    for total, counts, model in scored:
        structure = (model.c_position, model.block_terms, model.instruction_terms, model.interleave)
        if structure in seen:
            continue
        seen.add(structure)
        per_set = "  ".join(f"{fmt} {n:5d}" for fmt, n in zip(FORMATS, counts, strict=True))
        print(f"  {total:5d}  ({per_set})  {describe(model)}")
    via_fp32 = [_via_fp32(gpu, fmt, sets[fmt]) for fmt in FORMATS]
    print(f"  fp8 -> fp32 unit, then nearest-even to fp16: {sum(via_fp32)} ({via_fp32})")
    named = [misses(matrix_unit(gpu.lower(), FORMATS[fmt], "fp16"), sets[fmt]) for fmt in FORMATS]
    print(f"  catalogue unit {gpu.lower()} fp8->fp16: {sum(named)} mismatches ({named})")


def _same_but_width(model: MatrixUnitModel, best: MatrixUnitModel) -> bool:
    return model.model_copy(update={"extra_alignment_bits": best.extra_alignment_bits}) == best


def _via_fp32(gpu: str, fmt: str, data: tuple[np.ndarray, ...]) -> int:
    a, b, c, d = data
    wide = matrix_unit(gpu.lower(), FORMATS[fmt], "fp32").inner(a, b, c)
    return int(np.count_nonzero(wide.astype(np.float16).astype(np.float32).view(np.uint32) != d))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", nargs="*", choices=GPUS, default=list(GPUS))
    args = parser.parse_args()
    for gpu in args.gpu:
        fit(gpu)


if __name__ == "__main__":
    main()
