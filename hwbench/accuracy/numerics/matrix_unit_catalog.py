"""The named matrix units: every GPU with published block-FMA parameters, each value cited.

Parameters are those of the published models (Khattak & Mikaitis, "Accurate Models of NVIDIA
Tensor Cores", arXiv:2512.07004; github.com/north-numerical-computing/MATLAB-tensor-core,
``models/*.m``), which the authors measured with the feature tests of Khattak & Mikaitis, HPEC
2025 (arXiv:2510.15884) and validated against outputs of the real GPUs. The NVIDIA units marked
``validated`` reproduce those real-GPU outputs bit for bit in this project's test suite
(tests/accuracy/test_matrix_unit_silicon.py, data in tests/data/tensor_core/).
See docs/matrix-units.md for the table with every parameter and its confidence.
"""

from __future__ import annotations

from typing import Any

from hwbench.accuracy.numerics.matrix_unit_model import MatrixUnitModel
from hwbench.accuracy.numerics.profile import Confidence

__all__ = ["MATRIX_UNITS", "UNIT_SOURCES", "named_models"]

_REPO = "github.com/north-numerical-computing/MATLAB-tensor-core"

#: (unit name) -> (model file in the published repository, whether silicon vectors validate it here).
UNIT_SOURCES: dict[str, tuple[str, bool]] = {
    "v100": ("models/V100TC.m", True),
    "a100": ("models/A100TC.m", True),
    "a2": ("models/A2TC.m (= A100TC)", True),
    "a30": ("models/A30TC.m (= A100TC)", False),
    "ada": ("models/AdaTC.m", True),
    "l40s": ("models/L40STC.m", True),
    "h100": ("models/H100TC.m", True),
    "h200": ("models/H200TC.m (= H100TC)", True),
    "b200": ("models/B200TC.m", True),
    "mi100": ("models/MI100MC.m", False),
    "mi250": ("models/MI250MC.m (= MI210MC)", False),
    "mi300": ("models/MI300MC.m at commit b4bf135 (removed from the repository in d12a5b3)", False),
}

# (block terms, extra alignment bits, min alignment exponent) per (input, output) of each NVIDIA
# generation; fp16 outputs round to nearest even, fp32 outputs toward zero. The fp8 -> fp16 rows
# are this project's fits to the published vectors (_FITTED below), not the published files'.
_NV: dict[str, dict[tuple[str, str], tuple[int, int, int]]] = {
    "volta": {("fp16", "fp32"): (4, 0, -1024), ("fp16", "fp16"): (4, 0, -19)},
    "ampere": {
        ("fp16", "fp32"): (8, 1, -132),
        ("fp16", "fp16"): (8, 1, -20),
        ("bf16", "fp32"): (8, 1, -132),
        ("tf32", "fp32"): (4, 1, -132),
    },
    "ada": {
        ("fp16", "fp32"): (8, 1, -132),
        ("fp16", "fp16"): (8, 1, -20),
        ("bf16", "fp32"): (8, 1, -132),
        ("tf32", "fp32"): (4, 1, -132),
        ("fp8-e5m2", "fp32"): (16, -10, -132),
        ("fp8-e4m3", "fp32"): (16, -10, -132),
        ("fp8-e5m2", "fp16"): (16, -10, -132),
        ("fp8-e4m3", "fp16"): (16, -10, -132),
    },
    "hopper": {
        ("fp16", "fp32"): (16, 2, -133),
        ("fp16", "fp16"): (16, 2, -21),
        ("bf16", "fp32"): (16, 2, -133),
        ("tf32", "fp32"): (8, 2, -133),
        ("fp8-e5m2", "fp32"): (32, -10, -133),
        ("fp8-e4m3", "fp32"): (32, -10, -133),
        ("fp8-e5m2", "fp16"): (16, 2, -21),
        ("fp8-e4m3", "fp16"): (16, 2, -21),
    },
    "blackwell": {
        ("fp16", "fp32"): (16, 2, -133),
        ("fp16", "fp16"): (16, 2, -21),
        ("bf16", "fp32"): (16, 2, -133),
        ("tf32", "fp32"): (8, 2, -133),
        ("fp8-e5m2", "fp32"): (32, 2, -133),
        ("fp8-e4m3", "fp32"): (32, 2, -133),
        ("fp8-e5m2", "fp16"): (16, 2, -21),
        ("fp8-e4m3", "fp16"): (16, 2, -21),
    },
}
_NV_UNITS = {
    "v100": "volta",
    "a100": "ampere",
    "a2": "ampere",
    "a30": "ampere",
    "ada": "ada",
    "l40s": "ada",
    "h100": "hopper",
    "h200": "hopper",
    "b200": "blackwell",
}


def _source(name: str) -> tuple[str, Confidence, dict[str, str]]:
    path, validated = UNIT_SOURCES[name]
    src = f"Khattak & Mikaitis, arXiv:2512.07004; {_REPO} {path}"
    notes = {"validation": "bit-exact against the published real-GPU vectors" if validated else "no silicon vectors"}
    conf = Confidence.ASSUMED if name == "mi300" else Confidence.DOCUMENTED
    return src, conf, notes


def _nvidia(name: str) -> dict[tuple[str, str], MatrixUnitModel]:
    out = {}
    src, conf, notes = _source(name)
    generation = _NV_UNITS[name]
    for (fin, fout), (k, neab, emin) in _NV[generation].items():
        fields: dict[str, Any] = {
            "name": name,
            "input_format": fin,
            "output_format": fout,
            "block_terms": k,
            "extra_alignment_bits": neab,
            "min_alignment_exponent": emin,
            "final_rounding": "nearest-even" if fout == "fp16" else "toward-zero",
            "source": src,
            "confidence": conf,
            "notes": notes,
        }
        if fin.startswith("fp8"):
            fields.update(_FITTED.get((generation, fout), {}))
        out[(fin, fout)] = MatrixUnitModel(**fields)
    return out


_FIT_SCRIPT = "scripts/fit_tensor_core_fp8.py"
_VALIDATED = "bit-exact against the published real-GPU vectors"
_FIT_SOURCE = (
    f"fitted by this project ({_FIT_SCRIPT}) to the real-GPU vectors published with Khattak & Mikaitis, "
    f"arXiv:2512.07004, {_REPO} model_validation/"
)

# Units whose parameters are this project's fits to the published real-GPU vectors (confidence
# measured; the search that finds them: scripts/fit_tensor_core_fp8.py; the reasoning:
# docs/matrix-units.md). Keyed by (generation, output format) of the fp8 inputs.
_FITTED: dict[tuple[str, str], dict[str, Any]] = {
    # B200 fp8 -> fp32: B200TC.m (c in the alignment, toward zero) misses about a third of the
    # vectors by one ulp; all 10,000 fit when the 32 products' block sum is rounded toward zero
    # onto fp32 and c is then added with one nearest-even rounding.
    ("blackwell", "fp32"): {
        "c_position": "after-rounded",
        "final_rounding": "nearest-even",
        "confidence": Confidence.MEASURED,
        "notes": {
            "validation": _VALIDATED,
            "c_position": "fitted to the published B200 fp8 vectors (all 10,000 cases); "
            "the published B200TC.m puts c in the alignment and rounds toward zero",
            "final_rounding": "nearest-even: fitted to the same vectors",
        },
    },
    # Ada fp8 -> fp16: the fp8 -> fp32 unit (16 terms, 13 fraction bits kept at alignment, c in
    # the alignment) with each block rounded to nearest even onto fp16 (all 10 fraction bits).
    ("ada", "fp16"): {
        "source": _FIT_SOURCE,
        "confidence": Confidence.MEASURED,
        "notes": {
            "validation": _VALIDATED + " (Ada; no L40S fp16-output vectors are published)",
            "fit": f"fitted to the published Ada fp8 -> fp16 vectors (every case, {_FIT_SCRIPT}); "
            "AdaTC.m would round fp16 outputs to 10 - 10 = 0 fraction bits",
            "min_alignment_exponent": "-132, the fp8 unit's; not pinned by the vectors",
        },
    },
    # Hopper and Blackwell fp8 -> fp16: the 32-term instruction runs as two 16-term blocks of the
    # generation's fp16 -> fp16 unit (2 extra bits, nearest-even onto fp16), the first taking
    # terms 0, 1, 4, 5, ... (runs of 2), chained from zero; c is then added with one nearest-even
    # rounding. The fp8 values are exact in fp16, so this is the fp16 unit on widened operands.
    **{
        (generation, "fp16"): {
            "instruction_terms": 32,
            "interleave": 2,
            "c_position": "after-rounded",
            "late_rounding": "nearest-even",
            "final_rounding": "nearest-even",
            "source": _FIT_SOURCE,
            "confidence": Confidence.MEASURED,
            "notes": {
                "validation": _VALIDATED,
                "fit": f"fitted to the published {gpus} fp8 -> fp16 vectors (every case, {_FIT_SCRIPT}); "
                "the published model files would round fp16 outputs to 0 fraction bits",
                "extra_alignment_bits": "2, the fp16 -> fp16 unit's; the vectors need at least -5",
                "min_alignment_exponent": "-21, the fp16 -> fp16 unit's; not pinned by the vectors",
            },
        }
        for generation, gpus in (("hopper", "H100, H200"), ("blackwell", "B200"))
    },
}


def _amd(name: str) -> dict[tuple[str, str], MatrixUnitModel]:
    src, conf, notes = _source(name)
    common: dict[str, Any] = {"name": name, "final_rounding": "nearest-even", "source": src, "confidence": conf}
    out = {}
    if name == "mi100":  # CDNA1: exact block sum (Kulisch), 4 fp16 / 2 bf16 terms
        for fin, k in (("fp16", 4), ("bf16", 2)):
            out[(fin, "fp32")] = MatrixUnitModel(
                input_format=fin,  # type: ignore[arg-type]
                block_terms=k,
                summation="exact",
                normalised_products=True,
                notes=notes,
                **common,
            )
    elif name == "mi250":  # CDNA2: fp32 pairwise tree, subnormals flushed, product overflow limited
        for fin in ("fp16", "bf16"):
            out[(fin, "fp32")] = MatrixUnitModel(
                input_format=fin,  # type: ignore[arg-type]
                block_terms=4,
                summation="pairwise",
                normalised_products=True,
                product_overflow_limit=True,
                subnormals_in="flush",
                subnormals_out="flush",
                notes=notes,
                **common,
            )
    else:  # CDNA3: 8 terms, 1 extra bit, c added after the products rounding down; fp8 fnuz odd/even
        late: dict[str, Any] = {
            "extra_alignment_bits": 1,
            "c_position": "after",
            "late_rounding": "down",
            "late_extra_bits": 7,
            "c_zero_exponent": -126,
            "product_overflow_limit": True,
        }
        mi300_notes = {**notes, "status": "removed from the published repository; parameters from its history"}
        for fin, k in (("fp16", 8), ("bf16", 8), ("tf32", 4), ("fp8-e5m2", 16), ("fp8-e4m3", 16)):
            fp8 = fin.startswith("fp8")
            out[(fin, "fp32")] = MatrixUnitModel(
                input_format=fin,  # type: ignore[arg-type]
                block_terms=k,
                odd_even_grouping=fp8,
                fp8_variant="fnuz" if fp8 else "ocp",
                notes=mi300_notes,
                **late,
                **common,
            )
    return out


def named_models() -> dict[str, dict[tuple[str, str], MatrixUnitModel]]:
    """Every named unit's models, keyed by unit then (input format, output format)."""
    units: dict[str, dict[tuple[str, str], MatrixUnitModel]] = {n: _nvidia(n) for n in _NV_UNITS}
    units.update({n: _amd(n) for n in ("mi100", "mi250", "mi300")})
    return units


#: The named units' lower-case names.
MATRIX_UNITS: tuple[str, ...] = tuple(UNIT_SOURCES)
