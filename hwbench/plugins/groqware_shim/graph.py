"""ONNX model plumbing for the shim compiler: loading, constant folding, pruning.

Loading is the op-level evaluator's safe loader (:mod:`hwbench.evaluator.onnx.model`: one-line
errors, external data only from the model's folder, output shapes completed, the ONNX checker).

Why fold first: tf2onnx exports TensorFlow's ``unsorted_segment_sum`` as index arithmetic (TopK,
ScatterND, Shape, ...) over the *constant* connectivity, and a compiler that lowers gathers to
one-hot matrices needs those indices as numbers at compile time, as the GroqChip compiler did.
Folding evaluates every node whose inputs are known with the evaluator's op table on the host
(the specification's semantics, IEEE arithmetic, every cast to its own type), and a ``Shape`` of
a tensor whose shape is static. What is left is the part of the graph that runs on the chip.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hwbench.evaluator.onnx.graph import attributes, topological
from hwbench.evaluator.onnx.model import check, static_shapes
from hwbench.evaluator.onnx.model import load_model as load_onnx

__all__ = ["attributes", "check_model", "fold_constants", "load_model", "prune", "static_shapes", "topological"]

# Ops whose outputs are not a function of their inputs: never folded.
NONDETERMINISTIC = {
    "RandomNormal",
    "RandomUniform",
    "RandomNormalLike",
    "RandomUniformLike",
    "Multinomial",
    "Bernoulli",
}


def load_model(path: str | Path) -> Any:
    """Read and check an ONNX model; anything malformed is a one-line UsageError."""
    return load_onnx(path)


def check_model(model: Any, origin: str = "model") -> Any:
    """The ONNX checker's verdict as a one-line UsageError (a graph with no nodes is refused too)."""
    check(model, origin)
    return model


def _host() -> Any:
    """The host arithmetic a compiler folds with: numpy, IEEE, casts to their own types."""
    from hwbench.core.engines.numpy_engine import NumpyOps
    from hwbench.evaluator.arith import Arith

    return Arith(NumpyOps(np.float32), "numpy", label="groq-compiler (shim) folding", typed=True)


def fold_constants(model: Any) -> tuple[Any, int]:
    """A copy of ``model`` with every compile-time-computable node replaced by an initializer.

    Returns the new model and the number of nodes folded away.
    """
    import onnx
    from onnx import numpy_helper

    from hwbench.evaluator.onnx.evaluate import fold_node

    g = model.graph
    shapes = static_shapes(model)
    opset = next((int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    host = _host()
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
        if op == "Shape" and ins[0] in shapes and ins[0] not in consts:
            attrs = attributes(node)
            shape = shapes[ins[0]]
            start, end = attrs.get("start", 0), attrs.get("end", len(shape))
            consts[node.output[0]] = np.asarray(shape[start:end], dtype=np.int64)
        elif op == "Constant" or (ins and all(i in consts for i in ins)):
            args = [consts[i] if i else None for i in node.input]
            with np.errstate(all="ignore"):
                values = fold_node(node, opset, args, host)
            for name, value in zip(node.output, values):
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
