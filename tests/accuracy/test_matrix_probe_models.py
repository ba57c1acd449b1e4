"""``hwbench probe``'s contract on emulated units: the probes recover every named model exactly.

Each (unit, input, output) of the catalogue is probed black-box through ``inner()`` and every
parameter the probes can observe must equal the model's (``model_features``); that mapping is
the only place where a model's fields meet the feature table.
"""

from __future__ import annotations

import pytest

from hwbench.accuracy.matrix_probe import PARAMETER_FIELDS, disagreements, model_features, probe
from hwbench.accuracy.numerics.matrix_unit import matrix_unit
from hwbench.accuracy.numerics.matrix_unit_catalog import named_models

CASES = [(name, fin, fout) for name, pairs in named_models().items() for (fin, fout) in pairs]


@pytest.mark.parametrize(("name", "fin", "fout"), CASES, ids=[f"{n}-{i}-{o}" for n, i, o in CASES])
def test_probe_recovers_named_model(name: str, fin: str, fout: str) -> None:
    unit = matrix_unit(name, fin, fout)
    got = probe(unit, unit.model.input_float, fout, name=fin)
    want = model_features(unit.model)
    assert set(want) == set(PARAMETER_FIELDS)
    assert {k: getattr(got, k) for k in want} == want, got.notes


def test_every_named_unit_is_covered() -> None:
    assert {n for n, _, _ in CASES} == {
        "v100", "a100", "a2", "a30", "ada", "l40s", "h100", "h200", "b200", "mi100", "mi250", "mi300",
    }  # fmt: skip


def test_the_published_generations_differ_where_the_papers_say() -> None:
    """V100 -> A100 -> H100 fp16: 4 / 8 / 16 terms and 0 / 1 / 2 extra bits; Hopper fp8 keeps 13 bits."""
    feats = {n: probe(matrix_unit(n, "fp16", "fp32"), "fp16", "fp32") for n in ("v100", "a100", "h100")}
    assert [(f.block_size, f.extra_alignment_bits) for f in feats.values()] == [(4, 0), (8, 1), (16, 2)]
    assert {d[0] for d in disagreements(feats["a100"], feats["h100"])} >= {"block_size", "extra_alignment_bits"}
    fp8 = probe(matrix_unit("h100", "fp8-e4m3", "fp32"), "fp8-e4m3", "fp32")
    assert (fp8.result_fraction_bits, fp8.extra_alignment_bits, fp8.block_size) == (13, -10, 32)
