"""The op-level evaluator's core: one walk, a device's arithmetic, the host folding constants."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from hwbench.core.engines.jax_engine import JaxOps  # noqa: E402
from hwbench.core.engines.numpy_engine import NumpyOps  # noqa: E402
from hwbench.core.errors import UnavailableError, UsageError  # noqa: E402
from hwbench.core.plugins import get_registry  # noqa: E402
from hwbench.evaluator.arith import Arith  # noqa: E402
from hwbench.evaluator.onnx.evaluate import compile_graph  # noqa: E402
from hwbench.evaluator.onnx.graph import OnnxGraph  # noqa: E402
from hwbench.plugins.devices.arithmetic import device_arith  # noqa: E402


def _mlp() -> tuple[object, np.ndarray]:
    rng = np.random.default_rng(1)
    w1 = rng.normal(0, 0.3, (16, 32)).astype(np.float32)
    w2 = rng.normal(0, 0.3, (32, 5)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Tanh", ["h"], ["t"], name="act"),
        helper.make_node("Transpose", ["w2"], ["w2t"], name="w2t", perm=[1, 0]),
        helper.make_node("Gemm", ["t", "w2t"], ["z"], name="fc2", transB=1),
        helper.make_node("Softmax", ["z"], ["y"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 5])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, rng.normal(0, 1, (8, 16)).astype(np.float32)


def _ulps(a: np.ndarray, b: np.ndarray) -> int:
    ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(2**31) - ia, ia)
    ib = np.where(ib < 0, -(2**31) - ib, ib)
    return int(np.max(np.abs(ia - ib)))


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_fp32_path_equals_onnx_runtime_within_a_few_ulps(backend: str) -> None:
    model, x = _mlp()
    ops = JaxOps("float32") if backend == "jax" else NumpyOps("float32")
    out = compile_graph(OnnxGraph(model), Arith(ops, backend))({"x": x}).outputs["y"]
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert out.dtype == np.float32
    assert _ulps(out, expected[0]) <= 8


def test_constants_fold_on_the_host_and_products_with_inputs_run_on_the_chip() -> None:
    """The transposed weight is folded (no intermediate); fc2's product reads the input: rounded."""
    model, x = _mlp()
    graph = OnnxGraph(model)
    ipu = device_arith(get_registry(), "ipu", "fp16-sr", backend="numpy")
    run = compile_graph(graph, ipu, intermediates=True)({"x": x})
    assert "w2t" not in run.tensors and {"h", "t", "z", "y"} <= set(run.tensors)
    for name in ("h", "z"):
        v = run.tensors[name]
        assert np.array_equal(v.astype(np.float16).astype(np.float32), v), name  # fp16 results, carried in fp32
    fp32 = compile_graph(graph, Arith(NumpyOps("float32"), "numpy"), intermediates=True)({"x": x})
    assert not np.array_equal(run.tensors["h"], fp32.tensors["h"])


def test_a_node_kept_wider_computes_with_the_wider_arithmetic() -> None:
    model, x = _mlp()
    graph = OnnxGraph(model)
    reg = get_registry()
    fp8 = device_arith(reg, "h100", "fp8-e4m3", backend="numpy")
    wide = device_arith(reg, "h100", "fp16", backend="numpy")
    narrow = compile_graph(graph, fp8, intermediates=True)({"x": x}).tensors
    kept = compile_graph(graph, fp8, intermediates=True, overrides={"fc1": wide})({"x": x}).tensors
    alone = compile_graph(graph, wide, intermediates=True)({"x": x}).tensors
    assert np.array_equal(kept["h"], alone["h"]) and not np.array_equal(kept["h"], narrow["h"])


def test_block_fma_unit_gives_the_same_bits_on_both_backends() -> None:
    model, x = _mlp()
    graph = OnnxGraph(model)
    reg = get_registry()
    outs = [
        compile_graph(graph, device_arith(reg, "a100", "tensorrt", backend=b), intermediates=True)({"x": x}).tensors
        for b in ("numpy", "jax")
    ]
    assert np.array_equal(outs[0]["h"], outs[1]["h"]) and np.array_equal(outs[0]["z"], outs[1]["z"])


def test_unsupported_op_and_neuromorphic_device_are_refused() -> None:
    node = helper.make_node("NonMaxSuppression", ["a", "b"], ["c"], name="nms")
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 4, 4]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 1, 4]),
        ],
        [helper.make_tensor_value_info("c", TensorProto.INT64, [1, 3])],
    )
    with pytest.raises(UsageError, match="node 'nms': ONNX op NonMaxSuppression is not supported"):
        OnnxGraph(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    with pytest.raises(UnavailableError, match=r"loihi.*neuromorphic"):
        device_arith(get_registry(), "loihi")


def test_node_errors_grow_along_the_graph_and_name_the_first_above_the_floor() -> None:
    from hwbench.evaluator.compare import first_divergent, node_errors

    model, x = _mlp()
    graph = OnnxGraph(model)
    reg = get_registry()
    ref = compile_graph(graph, Arith(NumpyOps("float64"), "numpy"), intermediates=True)({"x": x}).tensors
    fp32 = compile_graph(graph, Arith(NumpyOps("float32"), "numpy"), intermediates=True)({"x": x}).tensors
    fp8 = compile_graph(graph, device_arith(reg, "h100", "fp8-e4m3", backend="numpy"), intermediates=True)({"x": x})
    errors = node_errors(graph.infos, fp8.tensors, ref, floor=fp32)
    assert [e.name for e in errors] == ["fc1", "act", "fc2", "softmax"]
    first = first_divergent(errors)
    assert first is not None and first.name == "fc1" and first.max_ulps > 1000
    floor_only = node_errors(graph.infos, fp32, ref, floor=fp32)
    assert first_divergent(floor_only) is None


@pytest.mark.parametrize("device", ["a100:tensorrt", "a100:cuda-fp32", "h100:fp8-e4m3"])
def test_a_contracting_device_computes_the_same_bits_on_both_backends_across_nodes(device: str) -> None:
    """A global average pool (a sum times 1/169) then a softmax, on a device whose compiler
    contracts: each node's output is stored before the next reads it, so no FMA reaches from the
    pool's product into the softmax's ``x - max`` (XLA:CPU would contract it, the numpy backend
    never does: ``x * c - max`` then lies ~300 below 0 for values near 1e10 and every exp is 0,
    the output NaN). Found on ONNX's light SqueezeNet, whose logits are all about 1.05e10."""
    nodes = [
        helper.make_node("GlobalAveragePool", ["x"], ["p"], name="pool"),
        helper.make_node("Softmax", ["p"], ["y"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "pool-softmax",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 13, 13])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 1, 1])],
    )
    model = OnnxGraph(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    x = np.random.default_rng(0).uniform(2.8e9, 1.4e10, (1, 64, 13, 13)).astype(np.float32)
    name, mode = device.split(":")
    outs = [
        np.asarray(compile_graph(model, device_arith(get_registry(), name, mode, backend=b))({"x": x}).outputs["y"])
        for b in ("numpy", "jax")
    ]
    assert np.isfinite(outs[0]).all()
    np.testing.assert_array_equal(outs[1], outs[0])
