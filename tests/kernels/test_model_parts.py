"""The parts of a model audit that need no device: the real-GPU route's choice from the provider
list, inputs read and generated from a graph, the precision map's search, the memory estimate's
units (the verdict rules and mechanisms, shared with function audits: tests/evaluator/test_judge.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from hwbench.core.errors import UsageError  # noqa: E402
from hwbench.evaluator.onnx.graph import OnnxGraph  # noqa: E402
from hwbench.plugins.kernels.model.gpu import CUDA, TRT, gpu_plan  # noqa: E402
from hwbench.plugins.kernels.model.inputs import InputOptions, check_feeds, make_feeds  # noqa: E402
from hwbench.plugins.kernels.model.memory import parse_memory  # noqa: E402
from hwbench.plugins.kernels.model.precision_map import search  # noqa: E402

BOTH = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]


# --------------------------------------------------------------------------- the real GPU run
@pytest.mark.parametrize(
    ("device", "mode", "gpus", "providers", "provider", "options"),
    [
        ("a100", "tensorrt", ["NVIDIA A100-SXM4-80GB"], BOTH, TRT, {}),
        ("a100", "tf32", ["NVIDIA A100-SXM4-80GB"], BOTH, CUDA, {"use_tf32": 1}),
        ("a100", "cuda-fp32", ["NVIDIA A100-PCIE-40GB"], BOTH, CUDA, {"use_tf32": 0}),
        ("h100", "fp16", ["NVIDIA H100 80GB HBM3"], BOTH, TRT, {"trt_fp16_enable": True}),
        ("h100", "bf16", ["NVIDIA H200"], BOTH, TRT, {"trt_bf16_enable": True}),
    ],
)
def test_the_provider_that_computes_each_mode_is_chosen(device, mode, gpus, providers, provider, options) -> None:
    plan = gpu_plan(device, mode, gpus, providers)
    assert plan is not None and plan.possible and plan.provider == provider and plan.options == options
    assert plan.chip == gpus[0]


@pytest.mark.parametrize(
    ("device", "mode", "gpus", "providers", "why"),
    [
        ("a100", "tensorrt", [], BOTH, "no NVIDIA GPU found"),
        ("a100", "tensorrt", ["NVIDIA H100 80GB HBM3"], BOTH, "needs an A100 GPU; found: NVIDIA H100"),
        ("h100", "tf32", ["NVIDIA A100-SXM4-80GB"], BOTH, "needs an H100 or H200 GPU"),
        (
            "a100",
            "tensorrt",
            ["NVIDIA A100-SXM4-80GB"],
            ["CUDAExecutionProvider", "CPUExecutionProvider"],
            "no Tensorrt",
        ),
        ("a100", "tf32", ["NVIDIA A100-SXM4-80GB"], ["CPUExecutionProvider"], "no CUDAExecutionProvider"),
        ("h100", "fp8-e4m3", ["NVIDIA H100 80GB HBM3"], BOTH, "quantize/dequantize"),
    ],
)
def test_a_real_run_that_cannot_be_made_says_why(device, mode, gpus, providers, why) -> None:
    plan = gpu_plan(device, mode, gpus, providers)
    assert plan is not None and not plan.possible and why in plan.reason


def test_devices_without_an_onnx_runtime_route_have_no_plan() -> None:
    assert gpu_plan("tpu-v3", "default", ["NVIDIA A100"], BOTH) is None
    assert gpu_plan("groq", "default", [], BOTH) is None


# --------------------------------------------------------------------------- inputs
def _graph(dims: list[int | str], elem: int = TensorProto.FLOAT, extra: bool = False) -> OnnxGraph:
    inputs = [helper.make_tensor_value_info("x", elem, dims)]
    nodes = [helper.make_node("Identity", ["x"], ["y"], name="id")]
    if extra:
        inputs.append(helper.make_tensor_value_info("m", TensorProto.INT64, ["batch"]))
        nodes.append(helper.make_node("Identity", ["m"], ["n"], name="id2"))
    outputs = [helper.make_tensor_value_info("y", elem, None)]
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return OnnxGraph(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


def test_generated_inputs_follow_the_declared_shape_dtype_range_and_seed() -> None:
    g = _graph(["batch", 3], extra=True)
    opts = InputOptions(shapes={"x": (2, 3), "m": (2,)}, input_range=(-4.0, 4.0), seed=7)
    a, b = make_feeds(g, opts), make_feeds(g, opts)
    assert a["x"].shape == (2, 3) and a["x"].dtype == np.float32 and a["m"].dtype == np.int64
    assert np.all(np.abs(a["x"]) <= 4) and np.all(np.abs(a["m"]) <= 4)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["x"], make_feeds(g, InputOptions(shapes=opts.shapes, seed=8))["x"])


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        (InputOptions(), "graph input 'x' has symbolic dimension 'batch': give its size with --shape x:D,3"),
        (InputOptions(shapes={"x": (2, 4)}), "dimension 1 is 3 in the graph (batch, 3), got 4"),
        (InputOptions(shapes={"x": (2,)}), "has 2 dimension(s) (batch, 3), got 1"),
        (InputOptions(shapes={"y": (2, 3)}), "--shape names 'y', which is no graph input"),
    ],
)
def test_symbolic_and_contradicting_shapes_are_refused_naming_them(opts: InputOptions, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_feeds(_graph(["batch", 3]), opts)


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({}, "has no array 'x'"),
        ({"x": np.zeros((2, 3), np.float32), "z": np.zeros(1)}, "has array 'z', which is no graph input"),
        ({"x": np.zeros((2, 3), np.float64)}, "input 'x' is float64; the graph declares float32"),
        ({"x": np.zeros((2, 4), np.float32)}, "dimension 1 is 3 in the graph"),
    ],
)
def test_given_inputs_are_checked_against_the_graph(arrays: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        check_feeds(_graph(["batch", 3]), arrays, "inputs file in.npz")


def test_a_symbolic_dimension_has_one_size_across_inputs() -> None:
    g = _graph(["batch", 3], extra=True)
    with pytest.raises(UsageError, match="'batch' is 2 in input 'x' but 5 in input 'm'"):
        check_feeds(g, {"x": np.zeros((2, 3), np.float32), "m": np.zeros(5, np.int64)}, "the inputs")


# --------------------------------------------------------------------------- the precision map's search
@settings(max_examples=200, deadline=None)
@given(st.integers(1, 24), st.data())
def test_the_search_finds_a_passing_set_without_nodes_it_does_not_need(n: int, data: st.DataObject) -> None:
    """Outputs pass when every node of a hidden set is kept wider: the search returns exactly it."""
    nodes = [f"n{i}" for i in range(n)]
    needed = set(data.draw(st.lists(st.sampled_from(nodes), unique=True, max_size=n)))
    found = search(nodes, lambda keep: needed <= set(keep))
    assert found.found and set(found.keep) == needed
    assert found.evaluations <= 2 + n.bit_length() + n


def test_the_search_says_when_no_set_passes() -> None:
    found = search(["a", "b"], lambda keep: False)
    assert not found.found and found.keep == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "value"), [("512M", 512 * 10**6), ("2GiB", 2 * 2**30), ("1000", 1000), ("1.5g", 1.5e9)]
)
def test_memory_sizes_read_with_their_units(text: str, value: float) -> None:
    assert parse_memory(text) == int(value)


@pytest.mark.parametrize("text", ["", "0", "-1", "1e400", "lots", "5X", "nan"])
def test_bad_memory_sizes_are_refused(text: str) -> None:
    with pytest.raises(UsageError, match="--max-memory"):
        parse_memory(text)
