"""Shapes of run-time tensors are compile-time constants: a node computed from them alone (the
attention scale 1/sqrt(d) a PyTorch export computes from ``Shape``) is folded on the host, as a
compiler folds it, whichever backend runs the rest; and ``Mod``, which such exports use."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

from hwbench.core.engines.jax_engine import JaxOps  # noqa: E402
from hwbench.core.engines.numpy_engine import NumpyOps  # noqa: E402
from hwbench.evaluator.arith import Arith  # noqa: E402
from hwbench.evaluator.onnx.evaluate import compile_graph  # noqa: E402
from hwbench.evaluator.onnx.graph import OnnxGraph  # noqa: E402

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"


def _scale_model() -> object:
    """y = x / sqrt(float(shape(x)[-1] mod 5)): every node after Shape reads only static values."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "last"], ["d"], name="last_dim", axis=0),
        helper.make_node("Mod", ["d", "five"], ["m"], name="mod"),
        helper.make_node("Cast", ["m"], ["f"], name="cast", to=TensorProto.FLOAT),
        helper.make_node("Sqrt", ["f"], ["r"], name="sqrt"),
        helper.make_node("Div", ["x", "r"], ["y"], name="scale"),
    ]
    graph = helper.make_graph(
        nodes,
        "scale",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
        [
            helper.make_tensor("last", TensorProto.INT64, [], [1]),
            helper.make_tensor("five", TensorProto.INT64, [], [5]),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_nodes_reading_only_shapes_are_folded_on_the_host(backend: str) -> None:
    model = _scale_model()
    x = np.random.default_rng(0).normal(size=(2, 8)).astype(np.float32)
    ops = JaxOps("float32") if backend == "jax" else NumpyOps("float32")
    run = compile_graph(OnnxGraph(model), Arith(ops, backend), intermediates=True)({"x": x})
    assert set(run.tensors) == {"y"}  # the scale is a constant of the program, not a chip tensor
    want = x / np.sqrt(np.float32(3))
    # numpy divides; XLA may multiply by the constant's reciprocal instead (one rounding more)
    assert np.max(np.abs(run.outputs["y"] - want) / np.spacing(np.abs(want))) <= (0 if backend == "numpy" else 1)


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_a_pytorch_transformer_layer_equals_onnx_runtime(backend: str) -> None:
    """The exported TransformerEncoderLayer (its attention scale from Shape, Mod, Sqrt) in fp32."""
    model = onnx.load(str(MODELS / "transformer.onnx"))
    feeds = dict(np.load(MODELS / "transformer_inputs.npz"))
    ops = JaxOps("float32") if backend == "jax" else NumpyOps("float32")
    got = compile_graph(OnnxGraph(model), Arith(ops, backend))(feeds).outputs["y"]
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    scale = np.spacing(np.abs(want).max())  # LayerNorm's output: its error is in ulps of its scale
    assert np.max(np.abs(got - want)) <= 8 * scale


@pytest.mark.parametrize(("fmod", "a", "b", "want"), [(0, [-7, 7], [3, -3], [2, -2]), (1, [-7, 7], [3, -3], [-1, 1])])
def test_mod_of_integers_takes_the_sign_onnx_says(fmod: int, a: list[int], b: list[int], want: list[int]) -> None:
    node = helper.make_node("Mod", ["a", "b"], ["c"], name="mod", fmod=fmod)
    ints = [helper.make_tensor_value_info(n, TensorProto.INT64, [2]) for n in ("a", "b")]
    graph = helper.make_graph([node], "mod", ints, [helper.make_tensor_value_info("c", TensorProto.INT64, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"a": np.array(a, np.int64), "b": np.array(b, np.int64)}
    out = compile_graph(OnnxGraph(model), Arith(NumpyOps("float32"), "numpy"))(feeds).outputs["c"]
    assert out.tolist() == want
    assert ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0].tolist() == want
