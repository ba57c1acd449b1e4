"""`hwbench bench` / `hwbench audit` / `hwbench kernels` for the DL primitives, through the real CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hwbench.cli.main import main
from hwbench.core import plugins as host
from hwbench.core.errors import EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE
from hwbench.core.results import BenchResult

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def _fresh_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in ("HWBENCH_LOAD_PLUGINS", "HWBENCH_DISABLE_PLUGINS", "HWBENCH_STRICT_PLUGINS", "HWBENCH_DEBUG"):
        monkeypatch.delenv(key, raising=False)
    host.reset_registry()
    yield
    host.reset_registry()


def test_kernels_lists_the_dl_primitives(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kernels", "--json"]) == EXIT_OK
    names = {k["name"] for k in json.loads(capsys.readouterr().out)}
    assert {"gemm", "conv2d", "conv2d-bw", "relu", "lstm"} <= names


def test_bench_gemm_writes_json_table_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "b"
    argv = [
        "bench",
        "--kernel",
        "gemm",
        "--config",
        "gemm_k2",
        "--precision",
        "fp32,tf32,bf16",
        "--engine",
        "jax",
        "--engine",
        "numpy",
        "--repeats",
        "1",
        "--out",
        str(out),
    ]
    assert main(argv) == EXIT_OK
    text = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert "GFLOPS" in text and "peak: derived:" in text
    # whose times they are: TF32 rows time this host's emulation of TF32, and say so
    assert "exec" in text and "emul." in text and "not those of a unit with that arithmetic" in text
    result = BenchResult.model_validate_json((out / "bench.json").read_text())
    ran = {(t.engine, t.dl.precision) for t in result.timings}
    assert ran == {("jax", "fp32"), ("jax", "tf32"), ("jax", "bf16"), ("numpy", "fp32"), ("numpy", "tf32")}
    assert [s["precision"] for s in result.skipped] == ["bf16"]  # numpy has no bf16 BLAS: said, not hidden
    for t in result.timings:
        assert t.dl.flops == 2 * 2560 * 64 * 2560 and t.dl.tflops == pytest.approx(t.dl.flops / t.run_s / 1e12)
        assert t.dl.fraction_of_peak > 0 and t.dl.precision_execution == (
            "emulated" if t.dl.precision == "tf32" else "real"
        )
    assert (out / "bench.png").read_bytes().startswith(PNG)


@pytest.mark.parametrize(
    "argv,fragment",
    [
        (["bench", "--kernel", "gemm", "--config", "gemm_k9"], "gemm_k1"),
        (["bench", "--kernel", "gemm", "--precision", "fp8"], "fp32, tf32, bf16, fp16"),
        (["bench", "--kernel", "gemm", "--engine", "onnx"], "jax, numpy, tensorflow"),
        (["bench", "--kernel", "gemm", "--device", "tpu-v3"], "hwbench audit"),
        (["audit", "--kernel", "gemm", "--device", "loihi"], "floating-point"),
        (["audit", "--kernel", "gemm", "--device", "tpu-v3", "--config", "conv_k1"], "gemm_k1"),
        (["audit", "--kernel", "gemm", "--device", "tpu-v3:fastest"], "default, high, highest"),
        (["audit"], "--device NAME"),  # io-ehh (the default kernel) still needs a device
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, capsys, argv: list[str], fragment: str) -> None:
    assert main([*argv, "--out", str(tmp_path / "o")]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_audit_gemm_tpu_quick_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["audit", "--kernel", "gemm", "--device", "tpu-v3", "--quick", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK and report["schema"] == "hwbench.audit/1" and report["verdict"] == "PASS"
    assert len(report["protocols"]) == 3  # normal, uniform-positive, wide-exponent
    for p in report["protocols"]:
        assert [v["mode"] for v in p["verdicts"]] == ["default", "high", "highest"]
        for run in p["runs"][1:]:
            assert 0 < run["deviation"]["max_over_det"] <= 1 and "K = 1760" in run["deviation"]["bound"]


def test_audit_exit_1_on_fail(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A profile whose matrix unit is worse than its claimed format: an element beyond the bound."""
    from hwbench.plugins.kernels.dl import audit_protocol as dl_audit

    real = dl_audit.bound_model
    monkeypatch.setattr(dl_audit, "bound_model", lambda profile, k: real(None, 1))  # claims one fp32 rounding
    code = main(["audit", "--kernel", "gemm", "--device", "a100:tensorrt", "--quick"])
    out = " ".join(capsys.readouterr().out.split())  # undo the table's line wrapping
    assert code == EXIT_CHECK_FAILED and "beyond the deterministic bound" in out and "Overall: FAIL" in out


def test_audit_gemm_h100_fp16_quick_runs_the_block_model(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 29: the h100's tensor cores in a DL audit, with the signed mean error that shows the
    toward-zero bias of its block sums (positive data: below the fp32 reference's)."""
    code = main(["audit", "--kernel", "gemm", "--device", "h100:fp16", "--quick", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK and report["verdict"] == "PASS"
    by_dist = {p["name"]: p["runs"] for p in report["protocols"]}
    ref, h100 = by_dist["dl-gemm uniform-positive"]
    assert h100["deviation"]["matmul"] == "block-FMA model h100 fp16->fp32"
    assert "matmul" not in ref["deviation"]
    assert h100["deviation"]["mean_signed_rel"] < 0
    assert h100["deviation"]["mean_signed_rel"] < 10 * min(ref["deviation"]["mean_signed_rel"], -1e-9)
    assert "K = 1760" in h100["deviation"]["bound"]


def test_audit_table_has_the_mean_error_column(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--kernel", "gemm", "--device", "h100:fp8-e4m3", "--quick"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "mean" in out and "block-FMA model h100 fp8-e4m3->fp32" in out


@pytest.mark.parametrize("kernel", ["conv2d", "lstm"])
def test_audit_conv2d_lstm_h100_fp8_keep_bounds_and_add_mean_error(
    kernel: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["audit", "--kernel", kernel, "--device", "h100:fp8-e4m3", "--quick", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code in (EXIT_OK, EXIT_CHECK_FAILED)
    for p in report["protocols"]:
        ref, h100 = p["runs"]
        assert h100["deviation"]["matmul"] == "block-FMA model h100 fp8-e4m3->fp32"
        assert isinstance(h100["deviation"]["mean_signed_rel"], float)
        assert ("bound" in h100["deviation"]) and isinstance(ref["deviation"]["mean_signed_rel"], float)
