"""``hwbench train`` and ``hwbench train-bench`` end to end, in process: outputs, exit codes, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("jax")

from hwbench.cli.main import main
from hwbench.plugins.kernels.snn.results import TrainBenchResult, TrainResult

TINY = ["--inputs", "64", "--hidden", "16", "--batch", "32", "--steps", "10", "--lr", "2e-3"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_train_writes_a_valid_result_with_deployment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["train", *TINY, "--epochs", "1", "--encoding", "rate", "--reset", "zero", "--deploy", "spinnaker"]
    code, out, err = run(capsys, *argv, "--out", str(tmp_path))
    assert code == 0, err
    result = TrainResult.model_validate_json((tmp_path / "train.json").read_text())
    assert result.dataset.startswith("scikit-learn digits (8x8") and len(result.epochs) == 1
    assert 0.0 <= result.final_test_accuracy <= 1.0 and result.images_per_s > 0
    assert result.deployments[0].device == "spinnaker" and result.deployments[0].execution == "emulated"
    assert "held-out accuracy" in out and "spinnaker" in out and "epoch 1:" in err


def test_train_json_on_synthetic_data(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "train", *TINY, "--dataset", "synthetic", "--samples", "64", "--epochs", "1", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["schema"] == "hwbench.train/1" and data["final_test_accuracy"] is None
    assert data["dataset"].startswith("synthetic")


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["train", *TINY, "--batch", "0"], "'--batch': must be an integer from 1 to 65536"),
        (["train", *TINY, "--deploy", "loihi"], "--encoding rate"),
        (["train", *TINY, "--encoding", "rate", "--deploy", "loihi"], "--deploy loihi needs --reset zero"),
        (["train", "--net", "csnn", "--neuron", "rleaky"], "no recurrent variant"),
        (["train", *TINY, "--net", "csnn"], "--hidden is the DSNN's hidden width"),
        (["train", "--inputs", "64", "--net", "csnn"], "28x28"),
        (["train", *TINY, "--batch", "5000"], "exceeds the 1438 training samples"),
        (["train-bench", "--sweep", "nope"], "unknown sweep nope"),
        (["train", *TINY, "--precision", "fp8"], "fp8"),
    ],
)
def test_bad_input_is_a_one_line_usage_error(capsys: pytest.CaptureFixture[str], argv: list, fragment: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and fragment in err and out == ""


def test_out_must_be_a_directory_and_a_file_there_is_left_alone(tmp_path: Path, capsys) -> None:
    f = tmp_path / "taken"
    f.write_text("keep")
    code, _, err = run(capsys, "train", *TINY, "--epochs", "1", "--out", str(f))
    assert code == 2 and "exists and is not a folder" in err and f.read_text() == "keep"


def test_train_bench_writes_json_and_one_plot_per_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["train-bench", "--sweep", "precision", "--hidden", "32", "--batch", "8", "--steps", "5", "--repeats", "1"]
    code, out, err = run(capsys, *argv, "--out", str(tmp_path))
    assert code == 0, err
    result = TrainBenchResult.model_validate_json((tmp_path / "train-bench.json").read_text())
    points = result.sweeps["precision"]
    assert [p.precision for p in points] == ["fp32", "bf16", "fp16"]
    assert all(p.images_per_s > 0 and p.flops_per_step > 0 for p in points)
    assert (tmp_path / "train-bench-precision.png").stat().st_size > 1000
    assert "precision sweep" in out
