"""The feature probes recover the parameters of block-FMA units they know nothing about.

The units here are the plain exact-rational reference of ``block_fma_reference.py`` over a space
of parameters (hypothesis); the named models of ``matrix_unit`` are held to the same contract in
``test_matrix_probe_models.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from hwbench.accuracy.matrix_probe import MatrixUnitFeatures, disagreements, probe

sys.path.insert(0, str(Path(__file__).parent))
from block_fma_reference import RefUnit


def expected(u: RefUnit) -> dict[str, object]:
    """What the probes must read off ``u``, with the observability rules the docs state."""
    out_bits = 10 if u.output_format == "fp16" else 23
    r = out_bits if u.result_bits is None else u.result_bits
    f = u.frac_bits
    block = u.block if u.interleave is not None or u.instruction is None else u.instruction
    want: dict[str, object] = {
        "result_fraction_bits": r,
        "block_size": block,
        "instruction_size": u.instruction or u.block,
        "interleave": u.interleave,
        "extra_alignment_bits": None if f is None else f - 23,
        "final_rounding": u.final_rounding,
        "c_rounding": u.final_rounding,
        "subnormal_inputs": "kept" if u.subnormals_in else "flushed",
        "subnormal_outputs": "kept" if u.subnormals_out else "flushed",
    }
    if f is None:
        want["alignment_rounding"], want["c_in_alignment"] = "exact", None
    else:
        raw = f + 1 if u.sticky else f
        seen = u.final_rounding == "toward-zero" or (raw >= r + 1 and block >= 3)
        want["alignment_rounding"] = ("sticky" if u.sticky else "truncation") if seen else None
        joins = u.c_in_alignment and u.instruction is None
        want["c_in_alignment"] = joins if 2 ** (f - r + 2) <= block else None
    return want


def check(u: RefUnit) -> MatrixUnitFeatures:
    got = probe(u, u.input_format, u.output_format)
    measured = {k: getattr(got, k) for k in expected(u)}
    assert measured == expected(u), got.notes
    return got


@pytest.mark.parametrize(
    "unit",
    [
        RefUnit("fp16", "fp32", block=4, frac_bits=23),  # V100-like
        RefUnit("fp16", "fp32", block=8, frac_bits=24),  # A100-like
        RefUnit("fp16", "fp16", block=8, frac_bits=24, final_rounding="nearest-even"),
        RefUnit("bf16", "fp32", block=16, frac_bits=25),  # H100-like
        RefUnit("tf32", "fp32", block=8, frac_bits=25),
        RefUnit("fp8-e4m3", "fp32", block=32, frac_bits=13, result_bits=13),  # Hopper fp8
        RefUnit("fp8-e5m2", "fp32", block=32, frac_bits=13, result_bits=13),
        RefUnit("fp16", "fp32", block=4, frac_bits=None, final_rounding="nearest-even"),  # MI100-like
        RefUnit("bf16", "fp32", block=2, frac_bits=None, final_rounding="nearest-even"),
        RefUnit("fp16", "fp32", block=8, frac_bits=24, c_in_alignment=False, final_rounding="nearest-even"),
        RefUnit("bf16", "fp32", block=8, frac_bits=24, subnormals_in=False, subnormals_out=False),
        RefUnit("fp16", "fp32", block=16, frac_bits=24, sticky=True),
        # Hopper / Blackwell fp8 -> fp16: two 16-term blocks dealt runs of 2, c added once per 32
        RefUnit("fp8-e4m3", "fp16", 16, 25, final_rounding="nearest-even", instruction=32, interleave=2),
        RefUnit("bf16", "fp32", block=4, frac_bits=24, instruction=16, interleave=1),  # four blocks, every 4th term
        RefUnit("fp16", "fp32", block=8, frac_bits=24, instruction=16),  # consecutive blocks read as one
    ],
    ids=repr,
)
def test_probe_recovers_reference_units(unit: RefUnit) -> None:
    check(unit)


def test_a100_like_unit_reads_as_published() -> None:
    """The HPEC 2025 sample output for A30 fp16 (same generation): 1 extra bit, 3 carry bits,
    block 8, late normalisation, toward-zero fp32 results."""
    got = check(RefUnit("fp16", "fp32", block=8, frac_bits=24))
    assert (got.carry_bits, got.normalisation, got.monotonic) == (3, "late", "violated")


@settings(
    max_examples=15,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # shrinking a slow exact model takes minutes
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    fin=st.sampled_from(["fp16", "bf16", "tf32", "fp8-e5m2", "fp8-e4m3"]),
    block=st.sampled_from([2, 4, 8, 16, 32]),
    frac=st.sampled_from([None, 23, 24, 25, 26]),
    sticky=st.booleans(),
    final=st.sampled_from(["toward-zero", "nearest-even"]),
    c_in=st.booleans(),
    sub_in=st.booleans(),
    sub_out=st.booleans(),
)
def test_probe_recovers_any_reference_unit(
    fin: str, block: int, frac: int | None, sticky: bool, final: str, c_in: bool, sub_in: bool, sub_out: bool
) -> None:
    check(RefUnit(fin, "fp32", block, frac, sticky, final, c_in, sub_in, sub_out))


def test_exact_accumulation_is_monotonic_and_truncation_is_not() -> None:
    assert check(RefUnit("fp16", "fp32", block=4, frac_bits=None)).monotonic == "no violation found"
    assert check(RefUnit("fp16", "fp32", block=8, frac_bits=23)).monotonic == "violated"


def test_disagreements_name_each_differing_feature() -> None:
    a = probe(RefUnit("fp16", "fp32", block=8, frac_bits=24), "fp16", "fp32")
    b = probe(RefUnit("fp16", "fp32", block=16, frac_bits=25), "fp16", "fp32")
    names = [name for name, _, _ in disagreements(a, b)]
    assert "block_size" in names and "extra_alignment_bits" in names
    assert "final_rounding" not in names
    assert disagreements(a, a) == []


def test_probe_output_is_strict_json() -> None:
    got = probe(RefUnit("fp16", "fp32", block=8, frac_bits=24), "fp16", "fp32")
    text = got.model_dump_json()
    assert "NaN" not in text and "Infinity" not in text
    assert MatrixUnitFeatures.model_validate_json(text) == got


def test_a_unit_returning_the_wrong_shape_is_refused() -> None:
    from hwbench.core.errors import UsageError

    class Broken:
        def inner(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
            return np.zeros(3)

    with pytest.raises(UsageError, match="returned shape"):
        probe(Broken(), "fp16", "fp32")
