"""The GroqChip route of a user's model: compiled by the GroqWare SDK's shim (capacity checked), run
by its runner; the per-node errors an audit reports come from the evaluator with the same
arithmetic, so the two must give the same outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from hwbench.core.plugins import get_registry  # noqa: E402
from hwbench.plugins.devices.arithmetic import device_arith  # noqa: E402
from hwbench.plugins.kernels.model.groq_route import compile_program  # noqa: E402
from hwbench.plugins.kernels.model.runs import evaluator_run  # noqa: E402
from hwbench.plugins.kernels.model.source import open_model  # noqa: E402
from hwbench.testing.badinput import run_cli  # noqa: E402


def _softmax_model(path: Path, rows: int = 4) -> Path:
    """A dense layer and a softmax written as the ops the shim's runner executes (MatMul, Add, Exp,
    ReduceSum, Div)."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"),
        helper.make_node("Add", ["h", "b"], ["z"], name="bias"),
        helper.make_node("Exp", ["z"], ["e"], name="exp"),
        helper.make_node("ReduceSum", ["e", "axes"], ["s"], name="sum", keepdims=1),
        helper.make_node("Div", ["e", "s"], ["y"], name="softmax"),
    ]
    consts = {
        "w": rng.normal(0, 0.5, (16, 8)).astype(np.float32),
        "b": rng.normal(0, 0.1, (8,)).astype(np.float32),
        "axes": np.array([1], np.int64),
    }
    graph = helper.make_graph(
        nodes,
        "softmax",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, 8])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize(
    ("mode", "backend"), [("default", "numpy"), ("default", "jax"), ("fp32-exact-vector", "numpy")]
)
def test_the_evaluator_with_the_groq_arithmetic_gives_the_programs_outputs(
    tmp_path: Path, mode: str, backend: str
) -> None:
    model = open_model(_softmax_model(tmp_path / "softmax.onnx"))
    feeds = {"x": np.random.default_rng(1).normal(0, 1, (4, 16)).astype(np.float32)}
    registry = get_registry()
    program = compile_program(model, registry.device("groq").numerics(mode))
    assert program.sdk_name == "groqware-shim" and program.runner is not None and program.stats["fits"]
    on_chip = program.run(feeds).outputs["y"]
    evaluated = evaluator_run(model.graph, device_arith(registry, "groq", mode, backend=backend), feeds).outputs["y"]
    assert np.array_equal(on_chip, evaluated)
    exact = evaluator_run(model.graph, device_arith(registry, "cpu", "fp32", backend="numpy"), feeds).outputs["y"]
    if mode == "default":  # the reduced-precision exp and division show
        assert not np.array_equal(on_chip, exact)


def test_a_model_that_does_not_fit_the_chip_is_refused_as_the_compiler_refuses_it(tmp_path: Path) -> None:
    """10 million streamed inputs need more than the 220 MiB of SRAM (capacity.py's working set)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [10_000_000])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [10_000_000])
    graph = helper.make_graph([helper.make_node("Exp", ["x"], ["y"], name="exp")], "big", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(tmp_path / "big.onnx"))
    for argv in (["run"], ["audit"]):
        outcome = run_cli([*argv, "--model", str(tmp_path / "big.onnx"), "-d", "groq", "--no-store"])
        assert outcome.code == 4, outcome.stderr
        assert "groq-compiler (shim) failed" in outcome.error_lines[0] and "SRAM" in outcome.error_lines[0]
        assert len(outcome.error_lines) == 1 and outcome.stdout == ""
