"""fp8 matrix products with per-tensor amax scaling (Transformer Engine's current scaling, cuBLASLt's
scale factors): each operand scaled by fp8_max / amax before its cast, the product unscaled after."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ml_dtypes = pytest.importorskip("ml_dtypes")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from hwbench.accuracy.numerics.matrix_unit import matrix_unit  # noqa: E402
from hwbench.core.plugins import get_registry  # noqa: E402
from hwbench.evaluator.arith import amax_scaled  # noqa: E402
from hwbench.evaluator.onnx.evaluate import compile_graph  # noqa: E402
from hwbench.evaluator.onnx.graph import OnnxGraph  # noqa: E402
from hwbench.plugins.devices.arithmetic import device_arith  # noqa: E402

FP8 = {"fp8-e4m3": (ml_dtypes.float8_e4m3fn, 448.0), "fp8-e5m2": (ml_dtypes.float8_e5m2, 57344.0)}


def _matmul_model(w: np.ndarray) -> object:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, w.shape[0]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, w.shape[1]])],
        [numpy_helper.from_array(w, "w")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _by_hand(x: np.ndarray, w: np.ndarray, mode: str) -> np.ndarray:
    """The scaling written out from its sources, the product on the H100 fp8 model."""
    fp8, top = FP8[mode]
    scales = [np.float32(top) / np.float32(np.max(np.abs(v))) for v in (x, w)]
    cast = [(v * s).astype(fp8).astype(np.float64) for v, s in zip((x, w), scales)]  # nearest even
    acc = matrix_unit("h100", mode, "fp32").matmul(*cast).astype(np.float32)
    return acc * ((np.float32(1) / scales[0]) * (np.float32(1) / scales[1]))


@pytest.mark.parametrize("mode", ["fp8-e4m3", "fp8-e5m2"])
@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_operands_are_scaled_per_tensor_before_their_cast(mode: str, backend: str) -> None:
    rng = np.random.default_rng(3)
    x = (rng.normal(0, 1, (8, 32)) * 3e-6).astype(np.float32)  # far below fp8's normal range
    w = rng.normal(0, 0.2, (32, 5)).astype(np.float32)
    arith = device_arith(get_registry(), "h100", mode, backend=backend)
    out = compile_graph(OnnxGraph(_matmul_model(w)), arith)({"x": x}).outputs["y"]
    np.testing.assert_array_equal(out.view(np.uint32), _by_hand(x, w, mode).view(np.uint32))
    exact = x.astype(np.float64) @ w.astype(np.float64)
    bound = {"fp8-e4m3": 2**-3, "fp8-e5m2": 2**-2}[mode]  # a few units of the operands' rounding
    assert np.max(np.abs(out - exact)) <= bound * np.max(np.abs(exact))
    unscaled = x.astype(FP8[mode][0]).astype(np.float64) @ w.astype(FP8[mode][0]).astype(np.float64)
    assert np.max(np.abs(unscaled - exact)) > 0.5 * np.max(np.abs(exact))  # what the scaling saves


def test_the_scale_follows_transformer_engines_rules() -> None:
    x = np.array([[0.5, -2.0], [0.25, 1.0]], np.float32)
    scaled, inv = amax_scaled(x, 448.0)
    assert scaled.dtype == np.float32 and np.max(np.abs(scaled)) == np.float32(448.0)
    np.testing.assert_array_equal(inv, np.float32(1) / (np.float32(448) / np.float32(2)))
    zeros, inv0 = amax_scaled(np.zeros((2, 2), np.float32), 448.0)  # amax 0: scale 1
    assert float(inv0) == 1.0 and not zeros.any()
    tiny, inv_tiny = amax_scaled(np.full((1, 1), 1e-45, np.float32), 57344.0)  # the quotient overflows
    assert float(inv_tiny) == float(np.float32(1) / np.finfo(np.float32).max) and np.isfinite(tiny).all()
    _, inv_inf = amax_scaled(np.array([np.inf, 1.0], np.float32), 448.0)  # not finite: scale 1
    assert float(inv_inf) == 1.0


def test_reports_say_which_modes_scale() -> None:
    reg = get_registry()
    assert "amax" in device_arith(reg, "h100", "fp8-e4m3", backend="numpy").describe()["matmul"]
    assert "amax" not in device_arith(reg, "h100", "fp16", backend="numpy").describe()["matmul"]
