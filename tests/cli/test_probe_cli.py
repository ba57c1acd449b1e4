"""`hwbench probe` through the real CLI: tables, strict JSON, --compare, and the emulated h100."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from hwbench.accuracy.matrix_probe import model_features
from hwbench.accuracy.numerics.matrix_unit import matrix_unit
from hwbench.cli.main import main
from hwbench.core import plugins as host
from hwbench.core.errors import EXIT_OK
from hwbench.plugins.devices.h100 import MODES


@pytest.fixture(autouse=True)
def _fresh_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in ("HWBENCH_LOAD_PLUGINS", "HWBENCH_DISABLE_PLUGINS", "HWBENCH_STRICT_PLUGINS", "HWBENCH_DEBUG"):
        monkeypatch.delenv(key, raising=False)
    host.reset_registry()
    yield
    host.reset_registry()


@pytest.mark.parametrize("mode", list(MODES))
def test_probe_json_reads_back_the_h100_model(mode: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--device", f"h100:{mode}", "--json"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "NaN" not in out and "Infinity" not in out
    report = json.loads(out)
    assert report["schema"] == "hwbench.probe/1" and report["execution"] == "emulated"
    assert report["unit"] == f"block-FMA model h100 {MODES[mode][0]}->fp32"
    want = model_features(matrix_unit("h100", MODES[mode][0], "fp32").model)
    assert {k: report["features"][k] for k in want} == want


def test_probe_table_fits_80_columns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "-d", "h100:fp16"]) == EXIT_OK
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "block size (terms)" in out and "16" in out and "toward-zero" in out


def test_compare_lists_where_chip_and_model_disagree(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "-d", "h100:fp16", "--compare", "a100", "--json"]) == EXIT_OK
    report = json.loads(capsys.readouterr().out)
    diffs = {d["feature"]: (d["measured"], d["model"]) for d in report["compare"]["disagreements"]}
    assert diffs["block_size"] == (16, 8) and diffs["extra_alignment_bits"] == (2, 1)
    assert "final_rounding" not in diffs
    assert main(["probe", "-d", "h100:fp16", "--compare", "h200", "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["compare"]["disagreements"] == []


def test_compare_table_marks_differences(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "-d", "h100:bf16", "--compare", "a100"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "<- differs" in out and "feature(s) differ from a100 bf16->fp32" in out


@pytest.mark.parametrize(
    ("spec", "subnormals_in"), [("tpu-v3", "flushed"), ("tpu-v3:highest", "flushed"), ("ipu:fp16-sr", "kept")]
)
def test_described_units_read_back_their_assumed_description(
    spec: str, subnormals_in: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """TPU MXU and IPU AMP: published facts (exact products, fp32 accumulation) plus labelled
    assumptions (one nearest-even rounding per product), probed like any other unit."""
    from hwbench.core.plugins import get_registry

    assert main(["probe", "-d", spec, "--json"]) == EXIT_OK
    report = json.loads(capsys.readouterr().out)
    assert report["unit"].endswith("(assumed)")
    name, _, mode = spec.partition(":")
    dev = get_registry().device(name)
    model = dev.matrix_unit_model(mode or dev.modes[0])
    want = model_features(model)
    assert {k: report["features"][k] for k in want} == want
    assert (report["features"]["block_size"], report["features"]["c_rounding"]) == (1, "nearest-even")
    assert report["features"]["subnormal_inputs"] == subnormals_in
