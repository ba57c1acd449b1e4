"""The GroqWare SDK shim: compiler (folding, one-hot lowering, capacity, program file) and runner.

Graphs are built by hand with ``onnx.helper`` so these tests need no TensorFlow; the route the
groq device takes through tf2onnx is tested in ``test_groq.py``.
"""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from hwbench.accuracy.numerics.emulate import emulating_ops  # noqa: E402
from hwbench.accuracy.numerics.emulated_array import EmuArray  # noqa: E402
from hwbench.core.engines.numpy_engine import NumpyOps  # noqa: E402
from hwbench.core.errors import UsageError  # noqa: E402
from hwbench.plugins.devices.groq import GroqDevice  # noqa: E402
from hwbench.plugins.groqware_shim import capacity, compiler  # noqa: E402
from hwbench.plugins.groqware_shim.program import read_iop  # noqa: E402
from hwbench.plugins.groqware_shim.runner import tsp  # noqa: E402
from hwbench.plugins.groqware_shim.sdk import load_sdk, real_sdk_status  # noqa: E402

N = 8
IDX = np.array([3, 1, 4, 1, 5, 7], dtype=np.int64)
TABLE = np.array([[0, 6], [1, 6], [2, 3], [6, 6], [4, 5], [6, 6], [6, 6], [6, 6]], dtype=np.int64)  # 6 = zero pad


def _model(graph: object) -> object:
    """Opset 17 at IR version 8, which every ONNX Runtime of the supported range reads."""
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _save(model: object, path: object) -> str:
    onnx.save_model(model, str(path))
    return str(path)


def indexing_model() -> object:
    """Every gather/scatter form the lowering handles, tf2onnx's segment-sum pattern included.

    x (8,) -> g = x[IDX]; s = scatter-add of g into x at IDX; u = s with s[[0, 2]] = g[:2];
    seg[t] = sum of gp[TABLE[t]] with gp = concat(g, [0]) (tf2onnx's unsorted_segment_sum);
    out = u + seg.
    """
    inits = [
        numpy_helper.from_array(IDX, "idx"),
        numpy_helper.from_array(np.array([[0], [2]], dtype=np.int64), "nd_idx"),
        numpy_helper.from_array(TABLE, "table"),
        numpy_helper.from_array(np.zeros(1, np.float32), "pad"),
        numpy_helper.from_array(np.array([0], np.int64), "start"),
        numpy_helper.from_array(np.array([2], np.int64), "stop"),
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
    ]
    nodes = [
        helper.make_node("Gather", ["x", "idx"], ["g"], axis=0),
        helper.make_node("ScatterElements", ["x", "idx", "g"], ["s"], axis=0, reduction="add"),
        helper.make_node("Slice", ["g", "start", "stop"], ["g2"]),
        helper.make_node("ScatterND", ["s", "nd_idx", "g2"], ["u"]),
        helper.make_node("Concat", ["g", "pad"], ["gp"], axis=0),
        helper.make_node("Gather", ["gp", "table"], ["gt"], axis=0),
        helper.make_node("ReduceSum", ["gt", "axis1"], ["seg"], keepdims=0),
        helper.make_node("Add", ["u", "seg"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "indexing",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [N])],
        inits,
    )
    return _model(graph)


def vector_model() -> object:
    """Reduced-precision ops next to IEEE ones: y = exp(x) / (1 + x) + x * 3, z = min(y, 2)."""
    nodes = [
        helper.make_node("Exp", ["x"], ["e"]),
        helper.make_node("Add", ["one", "x"], ["d"]),
        helper.make_node("Div", ["e", "d"], ["q"]),
        helper.make_node("Mul", ["x", "three"], ["m"]),
        helper.make_node("Add", ["q", "m"], ["y"]),
        helper.make_node("Min", ["y", "two"], ["z"]),
    ]
    inits = [
        numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("one", 1.0), ("three", 3.0), ("two", 2.0))
    ]
    graph = helper.make_graph(
        nodes,
        "vector",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, [5]) for name in ("y", "z")],
        inits,
    )
    return _model(graph)


def test_compile_writes_a_program_with_statistics(tmp_path):
    src = _save(indexing_model(), tmp_path / "m.onnx")
    iop = compiler.compile(src, tmp_path / "build", name="prog")
    assert iop == tmp_path / "build" / "prog.iop" and zipfile.is_zipfile(iop)
    program = read_iop(iop)
    stats = json.loads((tmp_path / "build" / "stats.json").read_text())
    assert program.stats == stats and program.name == "prog"
    assert stats["lowered"] == {"Gather": 1, "segment-sum": 1, "ScatterElements": 1, "ScatterND": 1}
    assert stats["onehot_matmul_uses"] == 4 and stats["onehot_matrices"] == 4
    # one-hot matrices: gather 8x6, segment sum 6x8 (pad peeled), scatter 6x8, scatter-nd 2x8; fp16
    assert stats["onehot_bytes"] == 2 * (8 * 6 + 6 * 8 + 6 * 8 + 2 * 8)
    assert stats["sram_bytes_used"] >= stats["onehot_bytes"] and stats["fits"] is True
    assert program.numerics["name"] == "groq-default"  # the default profile travels with the program
    assert [i["name"] for i in program.manifest["inputs"]] == ["x"]


def test_lowering_replaces_every_gather_and_scatter_with_matmul(tmp_path):
    src = _save(indexing_model(), tmp_path / "m.onnx")
    lowered = read_iop(compiler.compile(src, tmp_path)).model
    ops = [n.op_type for n in lowered.graph.node]
    assert not {"Gather", "ScatterElements", "ScatterND", "ReduceSum"} & set(ops)
    assert ops.count("MatMul") == 4
    # the one-hot matrices are fp16 initializers with exactly one 1 per gathered element
    inits = lowered.graph.initializer
    onehots = [numpy_helper.to_array(i) for i in inits if i.name.startswith("groqshim_onehot_gather")]
    assert len(onehots) == 1 and onehots[0].dtype == np.float16
    np.testing.assert_array_equal(onehots[0], (np.arange(N)[:, None] == IDX[None, :]).astype(np.float16))
    # the rewrite is exact: ONNX Runtime gives the same numbers before and after
    x = np.arange(1, N + 1, dtype=np.float32) * 1.5
    before = ort.InferenceSession(onnx.load(src).SerializeToString()).run(None, {"x": x})[0]
    after = ort.InferenceSession(lowered.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_array_equal(before, after)
    expected = x.copy()
    np.add.at(expected, IDX, x[IDX])
    expected[[0, 2]] = x[IDX][:2]
    expected += np.array([sum(np.append(x[IDX], 0)[j] for j in row) for row in TABLE], dtype=np.float32)
    np.testing.assert_allclose(after, expected, rtol=0, atol=0)


def test_runner_applies_the_groq_profile_bit_for_bit(tmp_path):
    """The runner's result equals the emulating ops applied to the same expression by hand."""
    profile = GroqDevice().numerics()
    src = _save(vector_model(), tmp_path / "v.onnx")
    program = tsp.create_tsp_runner(compiler.compile(src, tmp_path, numerics=profile), backend="numpy")
    x = np.array([0.1, 1.0, 2.5, -3.0, 7.25], np.float32)
    out = program(X=x)  # input names match case-insensitively, as with the SDK
    ops = emulating_ops(profile, counters=False)(NumpyOps(np.float32))
    v = EmuArray(x, ops)
    y = ops.exp(v) / (1.0 + v) + v * 3.0
    z = ops.minimum(y, 2.0)
    np.testing.assert_array_equal(out["y"].view(np.uint32), y.raw.view(np.uint32))
    np.testing.assert_array_equal(out["z"].view(np.uint32), z.raw.view(np.uint32))
    # and it is not IEEE fp32: the reduced exp/div show in the low bits
    ieee = np.exp(x) / (np.float32(1) + x) + x * np.float32(3)
    assert np.any(out["y"] != ieee)


def test_runner_gathers_through_fp16_inputs(tmp_path):
    """The lowered one-hot products round their input to fp16 (matmul_input) and sum in fp32."""
    profile = GroqDevice().numerics("fp32-exact-vector")
    src = _save(indexing_model(), tmp_path / "m.onnx")
    program = tsp.create_tsp_runner(compiler.compile(src, tmp_path, numerics=profile), backend="numpy")
    x = np.linspace(-60.3, -55.1, N).astype(np.float32)
    out = program(x=x)["out"]
    h = x.astype(np.float16).astype(np.float32)
    expected = x.copy()
    np.add.at(expected, IDX, h[IDX])
    expected[[0, 2]] = h[IDX][:2].astype(np.float16).astype(np.float32)
    expected += np.array([sum(np.append(h[IDX], 0)[j] for j in row) for row in TABLE], dtype=np.float32)
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-5)
    assert not np.allclose(
        out, ort.InferenceSession(onnx.load(src).SerializeToString()).run(None, {"x": x})[0], rtol=0, atol=1e-5
    )


def test_jax_backend_matches_numpy_backend(tmp_path):
    pytest.importorskip("jax")
    src = _save(vector_model(), tmp_path / "v.onnx")
    iop = compiler.compile(src, tmp_path)
    x = np.array([0.1, 1.0, 2.5, -3.0, 7.25], np.float32)
    a = tsp.create_tsp_runner(iop, backend="numpy")(x=x)
    b = tsp.create_tsp_runner(iop, backend="jax")(x=x)
    np.testing.assert_allclose(a["y"], b["y"], rtol=2**-10)  # numpy's and XLA's fp32 exp may differ by an ulp
    np.testing.assert_array_equal(a["z"], b["z"])


def test_malformed_onnx_is_a_one_line_error(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage that is not a protobuf \xff\xfe")
    with pytest.raises(UsageError) as err:
        compiler.compile(bad, tmp_path / "out")
    message = str(err.value)
    assert "\n" not in message and "bad.onnx" in message and "not a valid ONNX model" in message
    with pytest.raises(UsageError, match="no such file"):
        compiler.compile(tmp_path / "missing.onnx", tmp_path / "out")
    with pytest.raises(UsageError, match="not a GroqWare-shim program"):
        tsp.create_tsp_runner(bad)
    with pytest.raises(UsageError, match="unknown groq-compiler"):
        compiler.compile(bad, tmp_path, effort="high")


def test_runtime_indices_cannot_be_lowered(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["y"], axis=0)],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("i", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    src = _save(_model(graph), tmp_path / "g.onnx")
    with pytest.raises(UsageError, match="indices are computed at run time"):
        compiler.compile(src, tmp_path)


def test_compiler_refuses_programs_beyond_sram(tmp_path):
    """15 x 640,000 streamed values: the working set alone fills the 220 MiB (io-ehh's study limit)."""
    shape = [capacity.IO_EHH_STREAMED_PER_CELL, capacity.STUDY_UNCONNECTED_LIMIT_CELLS]
    graph = helper.make_graph(
        [helper.make_node("Exp", ["s"], ["t"])],
        "big",
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, shape)],
    )
    src = _save(_model(graph), tmp_path / "big.onnx")
    with pytest.raises(compiler.GroqCompilerError, match=r"220\.0 MiB usable") as err:
        compiler.compile(src, tmp_path)
    assert err.value.exit_code == 4 and "\n" not in str(err.value)
    assert json.loads((tmp_path / "stats.json").read_text())["fits"] is False


def test_compiler_refuses_programs_beyond_the_instruction_budget(tmp_path):
    """Many one-hot products: the scheduler message of the study, with the numbers."""
    n, k = 961, 961  # 4 x 4 = 16 MXM tiles per product
    uses = capacity.tile_budget() // 16 + 1
    nodes, acc = [], None
    for u in range(uses):
        nodes.append(helper.make_node("Gather", ["x", "idx"], [f"g{u}"], axis=0))
        if acc is not None:
            nodes.append(helper.make_node("Add", [acc, f"g{u}"], [f"a{u}"]))
        acc = f"g{u}" if acc is None else f"a{u}"
    graph = helper.make_graph(
        nodes,
        "many",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
        [helper.make_tensor_value_info(acc, TensorProto.FLOAT, [k])],
        [numpy_helper.from_array(np.arange(k, dtype=np.int64)[::-1].copy(), "idx")],
    )
    src = _save(_model(graph), tmp_path / "many.onnx")
    with pytest.raises(compiler.GroqCompilerError, match="scheduler could not allocate the instructions"):
        compiler.compile(src, tmp_path)
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["onehot_matrices"] == 1 and stats["onehot_matmul_uses"] == uses
    assert stats["mxm_weight_tiles"] == 16 * uses > stats["mxm_tile_budget"]


def test_capacity_budget_is_the_studys_729_cell_program():
    assert capacity.io_ehh_connected_ngj(729) == 7290
    assert capacity.tile_budget() == 40 * 3 * 23 * 3
    assert capacity.mxm_tiles(320, 321) == 2


def test_sdk_facade_falls_back_to_the_shim():
    usable, detail = real_sdk_status()
    sdk = load_sdk()
    if usable:  # pragma: no cover - only on a host with a GroqCard
        assert sdk.real
    else:
        assert not sdk.real and sdk.name == "groqware-shim" and sdk.tsp is tsp and detail
        assert load_sdk(allow_real=False).tsp.create_tsp_runner is tsp.create_tsp_runner


def test_one_hot_fast_path_equals_the_emulated_dense_product():
    """The runner's O(connections) execution of a one-hot product = the dense emulated matmul."""
    from hwbench.plugins.groqware_shim.onehot import MatrixUnit, plan_for

    profile = GroqDevice().numerics()
    ops = emulating_ops(profile, counters=False)(NumpyOps(np.float32))
    unit = MatrixUnit(profile, "float32")
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 50, 300)
    gather = (np.arange(50)[:, None] == idx[None, :]).astype(np.float16)  # one 1 per column
    x = rng.normal(-60, 5, 50).astype(np.float32)
    v = rng.normal(0, 1, 300).astype(np.float32)
    fast = unit.apply(np, x, plan_for(gather))
    dense = ops.matmul(EmuArray(x, ops), gather.astype(np.float32)).raw
    np.testing.assert_array_equal(fast, dense)  # one product per output: exact either way
    np.testing.assert_array_equal(fast, x.astype(np.float16).astype(np.float32)[idx])
    fast = unit.apply(np, v, plan_for(gather.T))  # one 1 per row: a scatter-add
    dense = ops.matmul(EmuArray(v, ops), gather.T.astype(np.float32)).raw
    np.testing.assert_allclose(fast, dense, rtol=1e-6, atol=1e-6)  # sums differ only in order
    assert plan_for(np.array([[1, 1], [1, 0]])) is None and plan_for(np.array([[0.5, 0], [0, 1]])) is None


def test_sdk_detection_needs_package_tools_and_card(tmp_path, monkeypatch):
    """Each missing piece is named; a 'groq' package with tools but no GroqCard is not the SDK."""
    import importlib
    import os

    if real_sdk_status()[0]:  # pragma: no cover - only on a host with a GroqCard
        pytest.skip("a real GroqWare SDK is installed here")
    (tmp_path / "groq").mkdir()
    (tmp_path / "groq" / "__init__.py").write_text("")  # e.g. the unrelated PyPI 'groq' client
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert "groq-compiler, aa-latest not on PATH" in real_sdk_status()[1]
    (tmp_path / "bin").mkdir()
    for tool in ("groq-compiler", "aa-latest"):
        (tmp_path / "bin" / tool).write_text("#!/bin/sh\nexit 1\n")
        os.chmod(tmp_path / "bin" / tool, 0o755)
    usable, detail = real_sdk_status()
    assert not usable and "no GroqCard on the PCI bus" in detail
    assert not load_sdk().real
