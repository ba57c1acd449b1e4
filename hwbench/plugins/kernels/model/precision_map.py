"""The precision map: a small set of nodes to keep at a wider format the device offers, so that the
model's outputs pass.

As NVIDIA Polygraphy's ``debug precision`` does, the nodes are bisected in topological order: the
shortest prefix of the graph that, computed with the wider mode's arithmetic (the evaluator's
``overrides``), makes the outputs pass. Then a greedy pass drops, last node first, every node of
that prefix the outputs do not need. The set is checked by rerunning the model with it kept wider
(its verdict is reported), and its cost is the share of the model's matrix-product FLOPs (and of its
nodes) it keeps wide. Bisection assumes that keeping more nodes wider does not make the outputs
worse; the greedy pass and the final rerun do not rely on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hwbench.evaluator.onnx.graph import OnnxGraph

Passes = Callable[[Sequence[str]], bool]


@dataclass
class Search:
    keep: list[str]
    evaluations: int
    found: bool  # False: even every node kept wider does not pass


def search(nodes: Sequence[str], passes: Passes) -> Search:
    """Bisection over prefixes of ``nodes`` (graph order), then a greedy pass removing nodes."""
    count = 0

    def check(keep: Sequence[str]) -> bool:
        nonlocal count
        count += 1
        return passes(keep)

    if check([]):
        return Search([], count, True)
    if not check(nodes):
        return Search(list(nodes), count, False)
    lo, hi = 0, len(nodes)  # the prefix of length hi passes; lo does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if check(nodes[:mid]):
            hi = mid
        else:
            lo = mid
    keep = list(nodes[:hi])
    for name in reversed(nodes[:hi]):
        trial = [n for n in keep if n != name]
        if check(trial):
            keep = trial
    return Search(keep, count, True)


def matrix_flops(graph: OnnxGraph, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, float]:
    """Each matrix-product node's FLOPs (2 x output elements x reduction length), from tensor shapes."""
    out: dict[str, float] = {}
    for node, info, attrs in zip(graph.nodes, graph.infos, graph.attrs):
        if node.op_type not in ("MatMul", "Gemm", "Conv", "ConvTranspose") or not node.output:
            continue
        y = shapes.get(node.output[0])
        a = shapes.get(node.input[0])
        w = shapes.get(node.input[1]) if len(node.input) > 1 else None
        if y is None or a is None or w is None:
            continue
        if node.op_type == "Conv":
            k = math.prod(w[1:])
        elif node.op_type == "ConvTranspose":
            k = w[0] * math.prod(w[2:]) // max(1, w[1])
        else:
            k = a[-2] if node.op_type == "Gemm" and attrs.get("transA") else a[-1]
        out[info.name] = 2.0 * math.prod(y) * k
    return out


def shapes_of(graph: OnnxGraph, tensors: Mapping[str, Any], feeds: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """Every known tensor's shape: constants, inputs, and the node outputs a run kept."""
    found = {**graph.constants, **feeds, **tensors}
    return {k: tuple(np.shape(v)) for k, v in found.items()}
