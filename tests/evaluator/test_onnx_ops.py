"""Ops whose lowering is the evaluator's own choice: recurrent gates on the matrix unit, device
gathers, activations as the device's functions, Einsum as one product, ONNX Runtime where it runs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from hwbench.accuracy.numerics.emulated_array import EmuArray  # noqa: E402
from hwbench.core.engines.jax_engine import JaxOps  # noqa: E402
from hwbench.core.engines.numpy_engine import NumpyOps  # noqa: E402
from hwbench.core.plugins import get_registry  # noqa: E402
from hwbench.evaluator.arith import Arith  # noqa: E402
from hwbench.evaluator.onnx.evaluate import compile_graph  # noqa: E402
from hwbench.evaluator.onnx.graph import OnnxGraph  # noqa: E402
from hwbench.plugins.devices.arithmetic import device_arith  # noqa: E402

ULPS = 8


def _model(nodes: list[Any], inputs: list[Any], outputs: list[str], inits: list[Any], opset: int = 17) -> Any:
    graph = helper.make_graph(
        nodes, "g", inputs, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], inits
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _native(backend: str) -> Arith:
    return Arith(JaxOps("float32") if backend == "jax" else NumpyOps("float32"), backend)


def _ort(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return list(ort.InferenceSession(model.SerializeToString(), options).run(None, feeds))


def _normwise_ulps(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a.astype(np.float64) - b)) / np.spacing(np.max(np.abs(b)).astype(np.float32)))


def _lstm() -> tuple[Any, dict[str, np.ndarray]]:
    """A bidirectional LSTM with peepholes, initial states and sequences of different lengths."""
    rng = np.random.default_rng(7)
    steps, batch, width, hidden = 5, 3, 4, 6

    def tensor(name: str, *shape: int) -> Any:
        return numpy_helper.from_array(rng.normal(0, 0.4, shape).astype(np.float32), name)

    inits = [
        tensor("W", 2, 4 * hidden, width),
        tensor("R", 2, 4 * hidden, hidden),
        tensor("B", 2, 8 * hidden),
        numpy_helper.from_array(np.array([5, 3, 4], np.int32), "lens"),
        tensor("h0", 2, batch, hidden),
        tensor("c0", 2, batch, hidden),
        tensor("P", 2, 3 * hidden),
    ]
    node = helper.make_node(
        "LSTM",
        ["x", "W", "R", "B", "lens", "h0", "c0", "P"],
        ["y", "y_h", "y_c"],
        name="lstm",
        hidden_size=hidden,
        direction="bidirectional",
    )
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [steps, batch, width])
    feeds = {"x": rng.normal(0, 1, (steps, batch, width)).astype(np.float32)}
    return _model([node], [x], ["y", "y_h", "y_c"], inits), feeds


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_lstm_equals_onnx_runtime(backend: str) -> None:
    model, feeds = _lstm()
    graph = OnnxGraph(model)
    outs = compile_graph(graph, _native(backend))(feeds).outputs
    for name, expected in zip(graph.outputs, _ort(model, feeds)):
        assert _normwise_ulps(outs[name], expected) <= ULPS, name


@pytest.mark.parametrize("linear_before_reset", [0, 1])
def test_gru_equals_onnx_runtime(linear_before_reset: int) -> None:
    rng = np.random.default_rng(3)
    hidden, width = 5, 3
    inits = [
        numpy_helper.from_array(rng.normal(0, 0.5, (1, 3 * hidden, width)).astype(np.float32), "W"),
        numpy_helper.from_array(rng.normal(0, 0.5, (1, 3 * hidden, hidden)).astype(np.float32), "R"),
        numpy_helper.from_array(rng.normal(0, 0.5, (1, 6 * hidden)).astype(np.float32), "B"),
    ]
    node = helper.make_node(
        "GRU", ["x", "W", "R", "B"], ["y", "y_h"], hidden_size=hidden, linear_before_reset=linear_before_reset
    )
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2, width])
    model = _model([node], [x], ["y", "y_h"], inits)
    feeds = {"x": rng.normal(0, 1, (4, 2, width)).astype(np.float32)}
    graph = OnnxGraph(model)
    outs = compile_graph(graph, _native("jax"))(feeds).outputs
    for name, expected in zip(graph.outputs, _ort(model, feeds)):
        assert _normwise_ulps(outs[name], expected) <= ULPS, name


class _Counting(Arith):
    """An arithmetic that counts its matrix products (the matrix unit's work)."""

    products = 0

    def matmul(self, a: Any, b: Any, *, transpose_b: bool = False) -> Any:
        type(self).products += 1
        return super().matmul(a, b, transpose_b=transpose_b)


def test_recurrent_gate_products_run_on_the_matrix_unit() -> None:
    """Per direction: one product of the inputs of every step, then one per step for the state."""
    model, feeds = _lstm()
    _Counting.products = 0
    compile_graph(OnnxGraph(model), _Counting(NumpyOps("float32"), "numpy"))(feeds)
    assert _Counting.products == 2 * (1 + 5)


def test_activations_are_the_devices_exp_and_division() -> None:
    """Sigmoid on the GroqChip: its reduced-precision exp and division, as XLA expands it."""
    x = np.linspace(-6, 6, 41).astype(np.float32)
    model = _model(
        [helper.make_node("Sigmoid", ["x"], ["y"])], [helper.make_tensor_value_info("x", 1, [41])], ["y"], []
    )
    groq = device_arith(get_registry(), "groq", backend="numpy")
    got = compile_graph(OnnxGraph(model), groq)({"x": x}).outputs["y"]
    ops = groq.ops
    v = EmuArray(x, ops)
    by_hand = np.asarray((1.0 / (1.0 + ops.exp(-v))).raw)
    np.testing.assert_array_equal(got.view(np.uint32), by_hand.view(np.uint32))
    assert np.any(got != (1 / (1 + np.exp(-x))).astype(np.float32))  # not IEEE fp32


def test_a_gather_on_the_groqchip_goes_through_its_matrix_unit() -> None:
    """The GroqChip's compiler lowers gathers to one-hot products: fp16 operands (the profile's GATHER)."""
    x = np.array([1.0001, 2.0002, 3.0003, 4.0004], np.float32)
    model = _model(
        [helper.make_node("Gather", ["x", "i"], ["y"], axis=0)],
        [helper.make_tensor_value_info("x", 1, [4])],
        ["y"],
        [numpy_helper.from_array(np.array([3, 0, 0], np.int64), "i")],
    )
    got = compile_graph(OnnxGraph(model), device_arith(get_registry(), "groq", backend="numpy"))({"x": x})
    np.testing.assert_array_equal(got.outputs["y"], x.astype(np.float16).astype(np.float32)[[3, 0, 0]])
    native = compile_graph(OnnxGraph(model), _native("numpy"))({"x": x}).outputs["y"]
    np.testing.assert_array_equal(native, x[[3, 0, 0]])


@pytest.mark.parametrize("backend", ["numpy", "jax"])
@pytest.mark.parametrize(
    "equation", ["ij,jk->ik", "bij,bjk->bik", "ij,kj->ik", "bhqd,bhkd->bhqk", "ij->ji", "ijk,k->ij"]
)
def test_einsum_equals_numpys(backend: str, equation: str) -> None:
    rng = np.random.default_rng(11)
    sizes = dict(zip("bhijkqd", (2, 3, 4, 5, 6, 3, 4)))
    terms = equation.split("->")[0].split(",")
    arrays = [rng.normal(size=[sizes[c] for c in t]).astype(np.float32) for t in terms]
    names = [f"x{i}" for i in range(len(terms))]
    model = _model(
        [helper.make_node("Einsum", names, ["y"], equation=equation)],
        [helper.make_tensor_value_info(n, 1, list(a.shape)) for n, a in zip(names, arrays)],
        ["y"],
        [],
    )
    out = compile_graph(OnnxGraph(model), _native(backend))(dict(zip(names, arrays))).outputs["y"]
    np.testing.assert_allclose(out, np.einsum(equation, *arrays), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_quantize_dequantize_equals_onnx_runtime(backend: str) -> None:
    """A QDQ pair, per tensor and per channel, int8 and uint8: the integers exactly as ONNX Runtime's."""
    rng = np.random.default_rng(5)
    x = rng.normal(0, 2, (2, 3, 4)).astype(np.float32)
    inits = [
        numpy_helper.from_array(np.array(0.05, np.float32), "s"),
        numpy_helper.from_array(np.array(-3, np.int8), "z"),
        numpy_helper.from_array(np.array([0.02, 0.04, 0.08], np.float32), "sc"),
        numpy_helper.from_array(np.array([128, 100, 10], np.uint8), "zc"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"]),
        helper.make_node("QuantizeLinear", ["x", "sc", "zc"], ["qc"], axis=1),
        helper.make_node("DequantizeLinear", ["qc", "sc", "zc"], ["yc"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "qdq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [
            helper.make_tensor_value_info("q", TensorProto.INT8, None),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("qc", TensorProto.UINT8, None),
            helper.make_tensor_value_info("yc", TensorProto.FLOAT, None),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    outs = compile_graph(OnnxGraph(model), _native(backend))({"x": x}).outputs
    for name, expected in zip(["q", "y", "qc", "yc"], _ort(model, {"x": x})):
        np.testing.assert_array_equal(outs[name], expected, err_msg=name)


def test_the_docs_list_every_supported_op_and_no_other() -> None:
    """docs/models.md's op table names each op of the table (in backticks), and only those."""
    import re
    from pathlib import Path

    import hwbench.evaluator.onnx.ops  # noqa: F401  (registers the op table)
    from hwbench.evaluator.onnx.op_table import supported

    page = (Path(__file__).resolve().parents[2] / "docs" / "models.md").read_text()
    section = page.split("### The ops", 1)[1].split("\nOpset differences", 1)[0]
    first_cells = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    listed = {name for cell in first_cells for name in re.findall(r"`([A-Z][A-Za-z0-9]+)`", cell)}
    assert listed == set(supported())
