"""The one loader of a user's ONNX file: every bad model is one line, nothing is written, external
data is read only from inside the model's folder and never echoed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from hwbench.core.engines.numpy_engine import NumpyOps  # noqa: E402
from hwbench.core.errors import UsageError  # noqa: E402
from hwbench.evaluator.arith import Arith  # noqa: E402
from hwbench.evaluator.onnx.evaluate import compile_graph  # noqa: E402
from hwbench.evaluator.onnx.graph import OnnxGraph  # noqa: E402
from hwbench.evaluator.onnx.model import load_graph, load_model  # noqa: E402
from hwbench.testing.bad_models import SECRET, write_bad_models  # noqa: E402
from hwbench.testing.badinput import snapshot  # noqa: E402

NATIVE = Arith(NumpyOps("float32"), "numpy")


def _matmul_model(weight: object) -> object:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
        [weight],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _external(name: str, location: str, data: np.ndarray) -> object:
    tensor = numpy_helper.from_array(data, name)
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "4"), ("length", str(data.nbytes))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor


def test_every_bad_model_is_one_line_names_what_is_wrong_and_changes_nothing(tmp_path: Path) -> None:
    cases = write_bad_models(tmp_path / "models")
    before = snapshot(tmp_path)
    assert len(cases) >= 15
    for case in cases:
        with pytest.raises(UsageError) as err:
            OnnxGraph(load_model(tmp_path / case.file))
        message = str(err.value)
        assert case.fragment in message, (case.id, message)
        assert "\n" not in message and SECRET not in message, (case.id, message)
        assert "secret" not in message, (case.id, message)  # not even the outside file's name
    assert snapshot(tmp_path) == before


def test_external_data_inside_the_models_folder_is_read(tmp_path: Path) -> None:
    weight = np.arange(4, dtype=np.float32).reshape(2, 2)
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "w.bin").write_bytes(b"\0" * 4 + weight.tobytes())  # at offset 4
    (tmp_path / "m.onnx").write_bytes(_matmul_model(_external("w", "weights/w.bin", weight)).SerializeToString())
    graph = load_graph(tmp_path / "m.onnx")
    np.testing.assert_array_equal(graph.constants["w"], weight)
    x = np.eye(2, dtype=np.float32)
    np.testing.assert_array_equal(compile_graph(graph, NATIVE)({"x": x}).outputs["y"], weight)


def test_a_link_that_stays_inside_the_folder_is_followed(tmp_path: Path) -> None:
    weight = np.ones((2, 2), np.float32)
    (tmp_path / "real.bin").write_bytes(b"\0" * 4 + weight.tobytes())
    (tmp_path / "alias.bin").symlink_to(tmp_path / "real.bin")
    (tmp_path / "m.onnx").write_bytes(_matmul_model(_external("w", "alias.bin", weight)).SerializeToString())
    np.testing.assert_array_equal(load_graph(tmp_path / "m.onnx").constants["w"], weight)


def test_external_data_of_the_wrong_size_is_refused(tmp_path: Path) -> None:
    (tmp_path / "w.bin").write_bytes(b"\0" * 64)
    tensor = _external("w", "w.bin", np.ones((2, 2), np.float32))
    tensor.external_data[2].value = "8"  # length: 8 bytes for a 2 x 2 float32 tensor
    (tmp_path / "m.onnx").write_bytes(_matmul_model(tensor).SerializeToString())
    with pytest.raises(UsageError, match="its external data has 8 bytes, its shape and type need 16"):
        load_model(tmp_path / "m.onnx")


def test_local_functions_are_inlined_and_unsorted_nodes_ordered(tmp_path: Path) -> None:
    """A model-local function is ONNX graph, not code: inlined; nodes out of order are sorted."""
    body = [helper.make_node("Neg", ["a"], ["n"]), helper.make_node("Relu", ["n"], ["b"])]
    function = helper.make_function("local", "NegRelu", ["a"], ["b"], body, [helper.make_opsetid("", 17)])
    nodes = [
        helper.make_node("Exp", ["h"], ["y"], name="exp"),  # reads h before it is produced
        helper.make_node("NegRelu", ["x"], ["h"], name="call", domain="local"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],  # no shape: inferred
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
        functions=[function],
        ir_version=8,
    )
    (tmp_path / "f.onnx").write_bytes(model.SerializeToString())
    loaded = load_model(tmp_path / "f.onnx")
    assert not loaded.functions and {n.op_type for n in loaded.graph.node} == {"Neg", "Relu", "Exp"}
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    out = compile_graph(OnnxGraph(loaded), NATIVE)({"x": x}).outputs["y"]
    np.testing.assert_allclose(out, np.exp(np.maximum(-x, 0)), rtol=1e-6)
