"""``hwbench.run(model=...)`` and ``hwbench.audit(model=..., devices=[...], inputs=...)``: a user's ONNX
model through the library, the same path as the CLI; its report validates against the published
``hwbench schema audit``, and keeps no input arrays in its settings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import hwbench
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.testing.badinput import run_cli

pytest.importorskip("onnxruntime")
MODELS = Path(__file__).resolve().parents[1] / "data" / "models"


def test_run_returns_the_outputs_by_name_and_writes_them(tmp_path: Path) -> None:
    inputs = dict(np.load(MODELS / "mlp_inputs.npz"))
    run = hwbench.run(model=MODELS / "mlp.onnx", device="ipu:fp16-sr", inputs=inputs, outputs=tmp_path / "y.npz")
    assert set(run.outputs) == {"y"} and run.outputs["y"].shape == (8, 10)
    assert run.timing.kernel == "onnx" and run.timing.execution == "emulated" and run.profile == "ipu-fp16-sr"
    assert run.timing.engine.startswith("hwbench evaluator (numpy, ipu:fp16-sr")
    with np.load(tmp_path / "y.npz") as saved:
        assert np.array_equal(saved["y"], run.outputs["y"])
    y = run.outputs["y"]
    assert np.array_equal(y, y.astype(np.float16).astype(np.float32))  # stored in the IPU's fp16


def test_run_generates_inputs_from_the_graph_when_none_are_given() -> None:
    a = hwbench.run(model=MODELS / "cnn.onnx", device="cpu", seed=3)
    b = hwbench.run(model=MODELS / "cnn.onnx", device="cpu", seed=3)
    assert np.array_equal(a.outputs["y"], b.outputs["y"]) and a.workload["inputs"] == {
        "x": {"shape": [4, 3, 16, 16], "dtype": "float32"}
    }
    assert "uniform on [-1, 1], seed 3" in a.workload["inputs_from"]


def test_audit_takes_arrays_and_reports_node_by_node() -> None:
    inputs = dict(np.load(MODELS / "cnn_inputs.npz"))
    audit = hwbench.audit(model=MODELS / "cnn.onnx", devices=["tpu-v3", "cpu"], inputs=inputs, progress="none")
    (protocol,) = audit.protocols
    tpu, cpu = protocol.candidates
    assert tpu.first_divergent_node == "/features/features.0/Conv" and tpu.nodes[0].above_floor
    assert tpu.arithmetic["matmul"] == "operand-rounding approximation"  # one bf16 pass: operands rounded
    assert cpu.verdict.value == "PASS" and cpu.first_divergent_node is None
    assert cpu.engine.startswith("onnxruntime")
    options = audit.report.settings["options"]
    assert options["inputs"] == "in memory: x" and not any(k.startswith("_") for k in options)
    json.loads(audit.to_json())  # nothing of the arrays in the report


def test_the_model_report_validates_against_the_published_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(run_cli(["schema", "audit"]).stdout)
    audit = hwbench.audit(model=MODELS / "mlp.onnx", devices=["h100:fp8-e4m3"], progress="none")
    document = json.loads(audit.to_json())
    jsonschema.validate(document, schema)
    assert {"candidates"} <= set(schema["$defs"]["ProtocolReport"]["properties"])
    nodes = document["protocols"][0]["candidates"][0]["nodes"]
    assert {"name", "op_type", "max_rel_error", "max_ulps", "above_floor"} <= set(nodes[0])


def test_wrong_calls_are_refused_before_any_work() -> None:
    with pytest.raises(UsageError, match="only with model="):
        hwbench.audit("groq", rtol=0.1)
    with pytest.raises(UsageError, match="cannot be combined with kernel='gemm'"):
        hwbench.audit("tpu-v3", model=MODELS / "mlp.onnx", kernel="gemm")
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        hwbench.run(model=MODELS / "mlp.onnx", colour="red")
    with pytest.raises(TypeError, match="unexpected keyword argument 'quik'"):
        hwbench.audit("groq", quik=True)
    with pytest.raises(UsageError, match="only with model="):
        hwbench.run(device="cpu", outputs="y.npz")
    with pytest.raises(UnavailableError, match="no floating-point arithmetic"):
        hwbench.run(model=MODELS / "mlp.onnx", device="loihi")
