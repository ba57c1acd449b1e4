"""One evaluator, two front ends: a JAX function and the same computation as an ONNX model give the
same numbers on a device's arithmetic.

The function is a recurrent layer (``lax.scan`` of a matrix product, an addition and a tanh), its
per-step sums, and a softmax. The ONNX model is its hand export with ``onnx.helper``: the loop
unrolled (the ONNX front end has no ``Scan``), each equation of the jaxpr one node in the same
order, the softmax written as ``jax.nn.softmax`` computes it (``ReduceMax``, ``Max`` with -inf,
``Sub``, ``Exp``, ``ReduceSum``, ``Div``). "The same errors" means here: on each device, every
output is the same bits on both routes, every ONNX node's output is the same bits as the jaxpr
equation that computes it (a loop-body equation's per-iteration outputs against the unrolled
nodes), so each node's error against the float64 reference, computed by the one
``evaluator.compare``, is the same number. Devices whose storage format is the carrier's
(every node's ``store`` a no-op, as it is for the jaxpr route's intermediates). A device whose
arithmetic draws random streams (error models, stochastic rounding) keys them by a loop's
iteration on the jaxpr route and by the unrolled node's position on the ONNX one: there the
comparison is of one step written without a loop, whose operations are numbered alike.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from hwbench.core.plugins import get_registry  # noqa: E402
from hwbench.evaluator.arith import native_arith  # noqa: E402
from hwbench.evaluator.compare import node_error  # noqa: E402
from hwbench.evaluator.jaxpr.program import FunctionProgram  # noqa: E402
from hwbench.evaluator.onnx.evaluate import compile_graph  # noqa: E402
from hwbench.evaluator.onnx.graph import OnnxGraph  # noqa: E402
from hwbench.evaluator.records import NodeInfo  # noqa: E402
from hwbench.plugins.devices.arithmetic import device_arith  # noqa: E402

T, B, N = 4, 3, 8
BODY = ("dot_general", "add", "tanh", "reduce_sum")
SOFTMAX = ("mul", "reduce_max", "max", "sub", "exp", "reduce_sum", "div")


def cell(h, xt, w):
    h = jnp.tanh(h @ w + xt)
    return h, jnp.sum(h, axis=-1)


def recurrent(x, h0, w):
    h, sums = lax.scan(lambda h, xt: cell(h, xt, w), h0, x)
    return jax.nn.softmax(h * 4.0, axis=-1), sums


def one_step(x, h0, w):
    h, s = cell(h0, x[0], w)
    return jax.nn.softmax(h * 4.0, axis=-1), s[None]


def _model(w: np.ndarray, steps: int) -> object:
    """``recurrent`` (``one_step`` for one step) exported by hand: node names say which equation
    each one is."""
    nodes = [helper.make_node("Split", ["x"], [f"x{t}_" for t in range(steps)], name="split", axis=0)]
    h = "h0"
    for t in range(steps):
        nodes += [
            helper.make_node("Squeeze", [f"x{t}_", "zero"], [f"x{t}"], name=f"squeeze{t}"),
            helper.make_node("MatMul", [h, "w"], [f"m{t}"], name=f"dot_general{t}"),
            helper.make_node("Add", [f"m{t}", f"x{t}"], [f"a{t}"], name=f"add{t}"),
            helper.make_node("Tanh", [f"a{t}"], [f"h{t + 1}"], name=f"tanh{t}"),
            helper.make_node("ReduceSum", [f"h{t + 1}", "last"], [f"s{t}"], name=f"reduce_sum{t}", keepdims=0),
            helper.make_node("Unsqueeze", [f"s{t}", "zero"], [f"s{t}_"], name=f"unsqueeze{t}"),
        ]
        h = f"h{t + 1}"
    nodes += [
        helper.make_node("Concat", [f"s{t}_" for t in range(steps)], ["sums"], name="stack", axis=0),
        helper.make_node("Mul", [h, "four"], ["z"], name="mul"),
        helper.make_node("ReduceMax", ["z", "last"], ["zmax"], name="reduce_max", keepdims=1),
        helper.make_node("Max", ["zmax", "ninf"], ["zmax2"], name="max"),
        helper.make_node("Sub", ["z", "zmax2"], ["d"], name="sub"),
        helper.make_node("Exp", ["d"], ["e"], name="exp"),
        helper.make_node("ReduceSum", ["e", "last"], ["se"], name="reduce_sum", keepdims=1),
        helper.make_node("Div", ["e", "se"], ["y"], name="div"),
    ]
    consts = {
        "w": w,
        "four": np.float32(4.0),
        "ninf": np.float32(-np.inf),
        "zero": np.array([0], np.int64),
        "last": np.array([-1], np.int64),
    }
    graph = helper.make_graph(
        nodes,
        "recurrent",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [steps, B, N]),
            helper.make_tensor_value_info("h0", TensorProto.FLOAT, [B, N]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, N]),
            helper.make_tensor_value_info("sums", TensorProto.FLOAT, [steps, B]),
        ],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _pairs(prog: FunctionProgram, steps: int) -> list[tuple[str, list[str]]]:
    """(jaxpr tensor, the ONNX tensors computing it: one per step for a loop-body equation), in
    the jaxpr's order, the equations of the cell first and the softmax's after."""
    cell_names = {"dot_general": "m", "add": "a", "tanh": "h", "reduce_sum": "s"}
    tail_names = {"mul": "z", "reduce_max": "zmax", "max": "zmax2", "sub": "d", "exp": "e", "reduce_sum": "se"}
    tail_names["div"] = "y"
    infos = [i for i in prog.infos if i.op_type in (*BODY, *SOFTMAX)]
    pairs = []
    for i in infos[: len(BODY)]:
        first = int(i.op_type == "tanh")  # h1 is the first step's tanh
        pairs.append((i.outputs[0], [f"{cell_names[i.op_type]}{t + first}" for t in range(steps)]))
    rest = [i for i in infos[len(BODY) :] if i.name.count(".") == 0 and i.op_type != "scan"]
    return pairs + [(i.outputs[0], [tail_names[i.op_type]]) for i in rest[-len(SOFTMAX) :]]


CASES = [
    *[(recurrent, T, d) for d in ("groq", "a100:tensorrt")],  # deterministic: the loop as it is
    *[(one_step, 1, d) for d in ("h100:fp8-e4m3", "tpu-v3", "a100:cuda-fp32")],  # random streams
]


@pytest.mark.parametrize(("fn", "steps", "device"), CASES, ids=[f"{f.__name__}-{d}" for f, _, d in CASES])
def test_function_and_its_onnx_export_give_the_same_errors(fn, steps: int, device: str) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(0, 1, (steps, B, N)).astype(np.float32)
    h0 = rng.normal(0, 0.5, (B, N)).astype(np.float32)
    w = rng.normal(0, 0.4, (N, N)).astype(np.float32)
    prog = FunctionProgram(lambda x, h0: fn(x, h0, w), (x, h0))
    graph = OnnxGraph(_model(w, steps))
    name, _, mode = device.partition(":")
    arith = device_arith(get_registry(), name, mode or None)
    jx = prog.compile(arith, intermediates=True)(prog.flat_inputs((x, h0)))
    ox = compile_graph(graph, arith, intermediates=True)({"x": x, "h0": h0})
    jref = prog.compile(native_arith("float64"), intermediates=True)(prog.flat_inputs((x, h0)))
    oref = compile_graph(graph, native_arith("float64"), intermediates=True)({"x": x, "h0": h0})

    assert np.array_equal(jx.outputs["out0"], ox.outputs["y"])
    assert np.array_equal(jx.outputs["out1"], ox.outputs["sums"])
    pairs = _pairs(prog, steps)
    assert len(pairs) == len(BODY) + len(SOFTMAX)
    worst = 0.0
    for tensor, names in pairs:
        unrolled = np.stack([ox.tensors[n] for n in names]) if len(names) > 1 else ox.tensors[names[0]]
        unrolled_ref = np.stack([oref.tensors[n] for n in names]) if len(names) > 1 else oref.tensors[names[0]]
        got = jx.tensors[tensor].reshape(unrolled.shape)
        assert np.array_equal(got, unrolled), (device, tensor, names)
        info = NodeInfo(tensor, "", (tensor,))
        via_jaxpr = node_error(info, {tensor: got}, {tensor: jref.tensors[tensor].reshape(unrolled.shape)})
        via_onnx = node_error(info, {tensor: unrolled}, {tensor: unrolled_ref})
        assert via_jaxpr == via_onnx, (device, tensor)
        worst = max(worst, via_onnx.max_ulps if via_onnx else 0.0)
    assert worst > 8  # the device's arithmetic shows: these are errors, not equal zeros


def test_a_function_and_its_onnx_export_audit_to_the_same_report(tmp_path) -> None:
    """The public routes, ``hwbench.audit(fn, ...)`` and ``hwbench.audit(model=...)``, judge with one
    evaluator: the same report fields in the same places, the same output errors (the same output
    bits on the same backend, against float64 references equal to about 1e-16), the same mechanism at
    the first matrix product, and the first node above the floor named among the verdict's reasons."""
    import json

    import hwbench

    rng = np.random.default_rng(3)
    x = rng.normal(0, 1, (1, B, N)).astype(np.float32)
    h0 = rng.normal(0, 0.5, (B, N)).astype(np.float32)
    w = rng.normal(0, 0.4, (N, N)).astype(np.float32)
    proto = _model(w, 1)
    proto.opset_import[0].version, proto.ir_version = 18, 8  # its ReduceMax takes axes as an input: opset 18
    onnx.save(proto, str(tmp_path / "step.onnx"))
    by_fn = hwbench.audit(lambda x, h0: one_step(x, h0, w), x, h0, devices="groq", rtol=0.5, progress="none")
    by_model = hwbench.audit(model=tmp_path / "step.onnx", devices=["groq"], inputs={"x": x, "h0": h0}, rtol=0.5,
                             backend="jax", progress="none")  # fmt: skip
    fn_doc, model_doc = (json.loads(a.to_json())["protocols"][0] for a in (by_fn, by_model))
    f, m = fn_doc["candidates"][0], model_doc["candidates"][0]
    assert set(f) == set(m) and set(f["nodes"][0]) == set(m["nodes"][0])
    assert set(fn_doc["verdicts"][0]) == set(model_doc["verdicts"][0])
    assert set(fn_doc["runs"][-1]["deviation"]) == set(model_doc["runs"][-1]["deviation"])
    assert [r["label"] for r in fn_doc["runs"]] == [r["label"] for r in model_doc["runs"]]
    assert f["verdict"] == m["verdict"] == "PASS"
    for fo, mo in zip(f["outputs"].values(), m["outputs"].values()):  # out0, out1 and y, sums
        errors = [fo["max_rel_error"], fo["max_ulps_fp32"], *fo["worst"]]  # float64 references: numpy's, XLA's
        assert errors == pytest.approx([mo["max_rel_error"], mo["max_ulps_fp32"], *mo["worst"]], rel=1e-9)
        assert fo["worst_index"] == mo["worst_index"]
    assert next(n for n in m["nodes"] if n["name"] == m["first_divergent_node"])["op_type"] == "MatMul"
    mechanism = "matrix-unit inputs rounded to fp16 (10 fraction bits)"
    assert f["mechanism"] == m["mechanism"] == mechanism
    for doc in (fn_doc, model_doc):
        last = doc["verdicts"][0]["reasons"][-1]
        assert " on groq, first above the floor (" in last and last.endswith(f"ulp) ({mechanism})")
