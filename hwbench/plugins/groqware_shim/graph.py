"""ONNX model plumbing for the shim compiler: loading with one-line errors, static shapes, and
constant folding.

Why fold first: tf2onnx exports TensorFlow's ``unsorted_segment_sum`` as index arithmetic (TopK,
ScatterND, Shape, ...) over the *constant* connectivity, and a compiler that lowers gathers to
one-hot matrices needs those indices as numbers at compile time, as the GroqChip compiler did.
Folding evaluates every node whose inputs are known (with ONNX's reference evaluator: the
specification's semantics, host IEEE arithmetic), and a ``Shape`` of a tensor whose shape is
static. What is left is the part of the graph that runs on the chip.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from hwbench.core.errors import UsageError

# Ops whose outputs are not a function of their inputs: never folded.
NONDETERMINISTIC = {
    "RandomNormal",
    "RandomUniform",
    "RandomNormalLike",
    "RandomUniformLike",
    "Multinomial",
    "Bernoulli",
}


def one_line(text: object) -> str:
    """``str(text)`` (an exception too) with its whitespace runs, newlines included, made one space."""
    return " ".join(str(text).split())


def load_model(path: str | Path) -> Any:
    """Read and check an ONNX model; anything malformed is a one-line UsageError."""
    import onnx

    path = Path(path)
    try:
        model = onnx.load(str(path))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such ONNX file") from None
    except Exception as exc:  # protobuf DecodeError, OSError, ...
        raise UsageError(f"{path}: not a valid ONNX model ({type(exc).__name__}: {one_line(exc)[:200]})") from None
    complete_output_shapes(model)
    return check_model(model, str(path))


def complete_output_shapes(model: Any) -> None:
    """Give graph outputs declared without a shape their inferred static shape (in place).

    The chip's compiler needs every shape at compile time anyway; exporters sometimes leave an
    output's shape out, which the ONNX checker rejects although the shape is inferable.
    """
    if all(o.type.tensor_type.HasField("shape") for o in model.graph.output):
        return
    try:
        shapes = static_shapes(model)
    except Exception:  # a malformed model: the checker will say what is wrong
        return
    for out in model.graph.output:
        tt = out.type.tensor_type
        if not tt.HasField("shape") and out.name in shapes:
            tt.shape.SetInParent()
            for d in shapes[out.name]:
                tt.shape.dim.add().dim_value = d


def check_model(model: Any, origin: str = "model") -> Any:
    """The ONNX checker's verdict as a one-line UsageError (a graph with no nodes is refused too)."""
    import onnx

    try:
        onnx.checker.check_model(model)
    except Exception as exc:  # onnx.checker.ValidationError and friends
        first = one_line(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
        raise UsageError(f"{origin}: not a valid ONNX model ({first[:200]})") from None
    if not model.graph.node:
        raise UsageError(f"{origin}: the ONNX graph has no nodes")
    return model


def static_shapes(model: Any) -> dict[str, tuple[int, ...]]:
    """Every tensor whose shape ONNX shape inference can pin down completely."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:  # inference is a help, never a requirement
        inferred = model
    shapes: dict[str, tuple[int, ...]] = {}
    g = inferred.graph
    for vi in [*g.input, *g.value_info, *g.output]:
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            continue
        dims = tt.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            shapes[vi.name] = tuple(int(d.dim_value) for d in dims)
    return shapes


def attributes(node: Any) -> dict[str, Any]:
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def topological(nodes: Iterable[Any], available: set[str]) -> list[Any]:
    """Nodes ordered so every input is produced before use (ONNX requires it; we check)."""
    pending = list(nodes)
    known = set(available)
    ordered: list[Any] = []
    while pending:
        progress = False
        rest = []
        for node in pending:
            if all(not i or i in known for i in node.input):
                ordered.append(node)
                known.update(o for o in node.output if o)
                progress = True
            else:
                rest.append(node)
        if not progress:
            missing = sorted({i for n in rest for i in n.input if i and i not in known})
            raise UsageError(f"ONNX graph is not well formed: inputs never produced: {', '.join(missing[:5])}")
        pending = rest
    return ordered


def _evaluate(node: Any, values: dict[str, np.ndarray]) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    feeds = {i: values[i] for i in node.input if i}
    return [np.asarray(v) for v in ReferenceEvaluator(node).run(None, feeds)]


def fold_constants(model: Any) -> tuple[Any, int]:
    """A copy of ``model`` with every compile-time-computable node replaced by an initializer.

    Returns the new model and the number of nodes folded away.
    """
    import onnx
    from onnx import numpy_helper

    g = model.graph
    shapes = static_shapes(model)
    consts: dict[str, np.ndarray] = {init.name: numpy_helper.to_array(init) for init in g.initializer}
    graph_inputs = {i.name for i in g.input} - set(consts)
    kept: list[Any] = []
    folded = 0
    for node in topological(g.node, set(consts) | graph_inputs):
        op = node.op_type
        ins = [i for i in node.input if i]
        if node.domain not in ("", "ai.onnx") or op in NONDETERMINISTIC:
            kept.append(node)
            continue
        if op == "Constant":
            consts[node.output[0]] = _evaluate(node, consts)[0]
        elif op == "Shape" and ins[0] in shapes and ins[0] not in consts:
            attrs = attributes(node)
            shape = shapes[ins[0]]
            start, end = attrs.get("start", 0), attrs.get("end", len(shape))
            consts[node.output[0]] = np.asarray(shape[start:end], dtype=np.int64)
        elif ins and all(i in consts for i in ins):
            for name, value in zip(node.output, _evaluate(node, consts)):
                if name:
                    consts[name] = value
        else:
            kept.append(node)
            continue
        folded += 1

    outputs = {o.name for o in g.output}
    used = {i for n in kept for i in n.input if i} | outputs
    new = onnx.helper.make_graph(
        kept,
        g.name,
        [i for i in g.input if i.name in graph_inputs],
        list(g.output),
        [numpy_helper.from_array(np.asarray(v), name) for name, v in consts.items() if name in used],
    )
    out = onnx.helper.make_model(new, opset_imports=list(model.opset_import), producer_name="hwbench-groqshim")
    out.ir_version = model.ir_version
    # a graph output that folded to a constant needs a producer node
    for name in sorted(outputs & set(consts) - {o for n in kept for o in n.output}):
        out.graph.node.append(onnx.helper.make_node("Identity", [name + "__const"], [name]))
        out.graph.initializer.append(numpy_helper.from_array(np.asarray(consts[name]), name + "__const"))
        out.graph.initializer.remove(next(i for i in out.graph.initializer if i.name == name))
    return out, folded


def prune(model: Any) -> int:
    """Remove nodes and initializers nothing consumes (in place); returns nodes removed."""
    g = model.graph
    needed = {o.name for o in g.output}
    keep = []
    for node in reversed(list(g.node)):
        if any(o in needed for o in node.output if o):
            keep.append(node)
            needed.update(i for i in node.input if i)
    removed = len(g.node) - len(keep)
    del g.node[:]
    g.node.extend(reversed(keep))
    inits = [i for i in g.initializer if i.name in needed]
    del g.initializer[:]
    g.initializer.extend(inits)
    return removed
