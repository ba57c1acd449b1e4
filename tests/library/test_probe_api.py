"""``hwbench.probe``: the library call the ``hwbench probe`` command is a thin layer over."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import hwbench
from hwbench.core.errors import UsageError


def test_probe_reads_back_the_h100_fp16_model_and_names_what_differs_from_the_a100() -> None:
    report = hwbench.probe("h100:fp16", compare="a100")
    assert (report.device, report.mode, report.execution) == ("h100", "fp16", "emulated")
    assert report.features.block_size == 16 and report.features.extra_alignment_bits == 2
    assert report.compare is not None
    differing = {d["feature"] for d in report.compare.disagreements}
    assert {"block_size", "extra_alignment_bits"} <= differing  # A100 fp16: 8 terms, 1 extra bit


def test_the_cli_prints_what_the_library_returns() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "hwbench.cli.main", "probe", "-d", "h100:fp16", "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out) == hwbench.probe("h100:fp16").model_dump(mode="json", by_alias=True)


def test_a_device_without_a_matrix_unit_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="has no matrix-unit model"):
        hwbench.probe("loihi")
