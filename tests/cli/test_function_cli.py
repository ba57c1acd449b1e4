"""``hwbench audit --function MODULE:NAME --inputs args.npz --device ...``: the user's module imported
from the working folder, the arguments from the file in key order, the verdict as the exit code."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hwbench.testing.badinput import run_cli

MODULE = """import jax
import jax.numpy as jnp


def attention(q, k):
    scores = q @ k.T / 4.0
    return jax.nn.softmax(scores, axis=-1)
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "mymodel.py").write_text(MODULE)
    rng = np.random.default_rng(0)
    q, k = rng.normal(0, 1, (6, 16)).astype(np.float32), rng.normal(0, 1, (5, 16)).astype(np.float32)
    np.savez(tmp_path / "args.npz", arg0=q, arg1=k)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HWBENCH_STORE", "none")
    return tmp_path


def _audit(*extra: str) -> tuple[int, str, str]:
    out = run_cli(["audit", "--function", "mymodel:attention", "--inputs", "args.npz", *extra])
    return out.code, out.stdout, out.stderr


def test_json_report_names_the_users_lines(folder: Path) -> None:
    code, stdout, _ = _audit("-d", "groq", "-d", "a100:tensorrt", "--json")
    assert code == 0  # WARN: above the fp32 floor, no tolerance given, not --strict
    report = json.loads(stdout)
    protocol = report["protocols"][0]
    assert protocol["protocol"] == "jax-function" and report["verdict"] == "WARN"
    groq = protocol["candidates"][0]
    first = next(n for n in groq["nodes"] if n["name"] == groq["first_divergent_node"])
    assert first["source"] == "mymodel.py:6 (attention)" and first["op_type"] == "dot_general"
    shapes = [i["shape"] for i in report["settings"]["inputs"]]
    assert shapes == [[6, 16], [5, 16]]


def test_tolerances_strict_and_out(folder: Path) -> None:
    code, stdout, _ = _audit("-d", "groq", "--rtol", "1e-6")
    assert code == 1 and "Overall: FAIL" in stdout
    assert "mymodel.py:6 (attention) dot_general" in stdout
    assert _audit("-d", "groq", "--rtol", "0.05")[0] == 0
    assert _audit("-d", "groq", "--strict")[0] == 1  # WARN is a failure with --strict
    code, _, stderr = _audit("-d", "cpu", "--out", "result")
    assert code == 0 and "wrote result/report.json" in stderr
    assert json.loads((folder / "result" / "report.json").read_text())["verdict"] == "PASS"
