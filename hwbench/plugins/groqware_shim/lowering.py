"""Gather / scatter lowered to one-hot matrix products: the rewrite the GroqChip compiler did.

The founding study reports that the Groq compiler turned the gap-junction gather and
scatter-add into dense one-hot matrix products on the matrix unit (fp16 inputs, fp32
accumulation). This module performs that rewrite on a constant-folded ONNX graph, as a real
graph transformation, so that both the capacity model and the runner see the program the chip
would run:

* ``Gather(x, idx)`` with compile-time ``idx`` -> ``MatMul(x, OneHot)`` with
  ``OneHot[n, k] = [idx[k] == n]`` (``ncells x ngj``), plus a ``Reshape`` for multi-dimensional
  indices; axis 0 of a matrix becomes ``MatMul(OneHot^T, x)``.
* ``ReduceSum(Gather(x, table), last axis)`` (tf2onnx's export of ``unsorted_segment_sum``: a
  padded gather table and a row sum) -> ``MatMul(x, S)`` with ``S[j, t]`` = how often ``j``
  appears in row ``t`` (``ngj x ncells``): the scatter-add as one product. A zero column that
  tf2onnx appends for the padding is peeled off.
* ``ScatterElements`` / ``ScatterND`` into a vector with compile-time indices (reduction
  ``add``, or ``none`` with distinct indices) -> ``data (* keep-mask) + MatMul(updates, OneHot)``.

The one-hot matrices are fp16 initializers (exact: entries are 0 and 1, and counts are small
integers) followed by a ``Cast`` to float32, so the rewritten graph is still a valid float32
ONNX model that ONNX Runtime runs to the same values. Numerics (fp16 rounding of the matrix
unit's inputs, fp32 accumulation) are not baked into the graph: they are the numerics
profile's ``matmul_input`` / ``matmul_accumulate`` entries, applied by the runner.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.plugins.groqware_shim.capacity import OneHotUse
from hwbench.plugins.groqware_shim.graph import attributes, prune, static_shapes

LOWERED_OPS = ("Gather", "ScatterElements", "ScatterND")
"""Ops that must not survive lowering when they act on run-time data."""
UNSUPPORTED_INDEXING = ("GatherElements", "GatherND")
ONEHOT_DOC = "groqshim:one-hot"


class LoweringError(UsageError):
    """A gather/scatter the one-hot lowering cannot express (e.g. indices known only at run time)."""


@dataclass
class LoweringReport:
    """What the rewrite did (goes into the compile statistics)."""

    lowered: dict[str, int] = field(
        default_factory=lambda: {"Gather": 0, "segment-sum": 0, "ScatterElements": 0, "ScatterND": 0}
    )
    uses: list[OneHotUse] = field(default_factory=list)
    pruned_nodes: int = 0


class _Rewriter:
    def __init__(self, model: Any) -> None:
        from onnx import numpy_helper

        self.model = model
        self.g = model.graph
        self.consts: dict[str, np.ndarray] = {i.name: numpy_helper.to_array(i) for i in self.g.initializer}
        self.shapes = static_shapes(model)
        self.report = LoweringReport()
        self.matrices: dict[str, str] = {}  # key -> fp32 tensor name (after the Cast)
        self.new_inits: list[Any] = []
        self.counter = 0

    # --- helpers ---------------------------------------------------------------------------
    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"groqshim_{stem}_{self.counter}"

    def const(self, value: np.ndarray, stem: str) -> str:
        from onnx import numpy_helper

        name = self.fresh(stem)
        self.new_inits.append(numpy_helper.from_array(np.asarray(value), name))
        self.consts[name] = np.asarray(value)
        return name

    def shape_of(self, name: str) -> tuple[int, ...] | None:
        if name in self.consts:
            return tuple(self.consts[name].shape)
        return self.shapes.get(name)

    def matrix(
        self, kind: str, shape: tuple[int, int], ident: bytes, build: Callable[[], np.ndarray], out_nodes: list[Any]
    ) -> str:
        """The fp32 view of a one-hot matrix (stored once as fp16, however often it is used).

        ``ident`` identifies the matrix (its index data); ``build`` makes it, only the first time.
        """
        import onnx

        key = f"{kind}:{shape}:{hashlib.sha1(ident).hexdigest()}"
        self.report.uses.append(OneHotUse(kind, int(shape[0]), int(shape[1]), key))
        if key not in self.matrices:
            stored = self.const(np.asarray(build(), dtype=np.float16), f"onehot_{kind}")
            as_f32 = self.fresh(f"onehot_{kind}_f32")
            out_nodes.append(
                onnx.helper.make_node("Cast", [stored], [as_f32], to=onnx.TensorProto.FLOAT, doc_string=ONEHOT_DOC)
            )
            self.matrices[key] = as_f32
        return self.matrices[key]

    def matmul(self, a: str, b: str, out: str, out_nodes: list[Any]) -> None:
        import onnx

        out_nodes.append(
            onnx.helper.make_node("MatMul", [a, b], [out], name=self.fresh("matmul"), doc_string=ONEHOT_DOC)
        )

    def reshape(self, x: str, shape: tuple[int, ...], out: str, out_nodes: list[Any]) -> None:
        import onnx

        target = self.const(np.asarray(shape, dtype=np.int64), "shape")
        out_nodes.append(onnx.helper.make_node("Reshape", [x, target], [out], name=self.fresh("reshape")))

    def runtime_float(self, name: str) -> bool:
        return name not in self.consts

    # --- the rewrite -----------------------------------------------------------------------
    def run(self) -> LoweringReport:
        consumers: dict[str, list[Any]] = {}
        for node in self.g.node:
            for i in node.input:
                consumers.setdefault(i, []).append(node)
        outputs = {o.name for o in self.g.output}
        replaced: dict[int, list[Any]] = {}  # id(node) -> nodes that replace it
        dropped: set[int] = set()
        for node in self.g.node:
            if id(node) in dropped:
                continue
            op = node.op_type
            if op == "Gather" and len(node.input) == 2 and self.runtime_float(node.input[0]):
                users = consumers.get(node.output[0], [])
                reduce = users[0] if len(users) == 1 and node.output[0] not in outputs else None
                if reduce is not None and self._is_row_sum(node, reduce):
                    replaced[id(reduce)] = self._segment_sum(node, reduce)
                    dropped.add(id(node))
                    continue
                replaced[id(node)] = self._gather(node)
            elif op in ("ScatterElements", "ScatterND") and self.runtime_float_any(node):
                replaced[id(node)] = self._scatter(node)
        new_nodes: list[Any] = []
        for node in self.g.node:
            if id(node) in dropped:
                continue
            new_nodes.extend(replaced.get(id(node), [node]))
        del self.g.node[:]
        self.g.node.extend(new_nodes)
        self.g.initializer.extend(self.new_inits)
        self.report.pruned_nodes = prune(self.model)
        self._check_nothing_left()
        return self.report

    def runtime_float_any(self, node: Any) -> bool:
        return any(self.runtime_float(i) for i in (node.input[0], node.input[2]))

    def _indices(self, node: Any, name: str) -> np.ndarray:
        if name not in self.consts:
            raise LoweringError(
                f"cannot lower {node.op_type} '{node.name or node.output[0]}' to a one-hot product: its indices are "
                "computed at run time, and the GroqChip compiler needs them at compile time"
            )
        return np.asarray(self.consts[name]).astype(np.int64)

    def _data_shape(self, node: Any, name: str) -> tuple[int, ...]:
        shape = self.shape_of(name)
        if shape is None:
            raise LoweringError(
                f"cannot lower {node.op_type} '{node.name or node.output[0]}': the shape of '{name}' is not static"
            )
        return shape

    def _is_row_sum(self, gather: Any, reduce: Any) -> bool:
        """``ReduceSum`` over exactly the last index axis of a gather from a vector."""
        if reduce.op_type != "ReduceSum" or attributes(gather).get("axis", 0) != 0:
            return False
        data_shape = self.shape_of(gather.input[0])
        idx = self.consts.get(gather.input[1])
        if data_shape is None or len(data_shape) != 1 or idx is None or idx.ndim != 2:
            return False
        attrs = attributes(reduce)
        if len(reduce.input) > 1 and reduce.input[1]:
            axes_input = self.consts.get(reduce.input[1])
            if axes_input is None:
                return False
            axes = [int(a) for a in np.ravel(axes_input)]
        else:
            axes = list(attrs.get("axes", []))
        return [a % 2 for a in axes] == [1] and attrs.get("keepdims", 1) == 0

    def _peel_zero_pad(self, data: str, n: int) -> tuple[str, int]:
        """tf2onnx pads the gathered vector with a zero: use the unpadded vector when it can."""
        for node in self.g.node:
            if data in node.output and node.op_type == "Concat" and len(node.input) == 2:
                head, tail = node.input
                pad = self.consts.get(tail)
                head_shape = self.shape_of(head)
                if pad is not None and head_shape is not None and len(head_shape) == 1 and not np.any(pad):
                    return head, head_shape[0]
        return data, n

    def _segment_sum(self, gather: Any, reduce: Any) -> list[Any]:
        table = self._indices(gather, gather.input[1])
        (n,) = self._data_shape(gather, gather.input[0])
        table = np.where(table < 0, table + n, table)
        src, rows = self._peel_zero_pad(gather.input[0], n)
        nseg = table.shape[0]

        def build() -> np.ndarray:
            counts = np.zeros((n, nseg), dtype=np.int64)
            np.add.at(counts, (table.ravel(), np.repeat(np.arange(nseg), table.shape[1])), 1)
            counts = counts[:rows]  # rows beyond the peeled vector index the zero padding: no contribution
            if counts.max(initial=0) > 2048:  # fp16 holds integers exactly only up to 2048
                raise LoweringError(f"segment sum '{reduce.output[0]}': a value is summed more than 2048 times")
            return counts.astype(np.float16)

        nodes: list[Any] = []
        s = self.matrix("scatter", (rows, nseg), table.tobytes() + str(rows).encode(), build, nodes)
        self.matmul(src, s, reduce.output[0], nodes)
        self.report.lowered["segment-sum"] += 1
        return nodes

    def _gather(self, node: Any) -> list[Any]:
        idx = self._indices(node, node.input[1])
        shape = self._data_shape(node, node.input[0])
        axis = attributes(node).get("axis", 0) % len(shape)
        n = shape[axis]
        flat = np.where(idx < 0, idx + n, idx).ravel()
        if flat.size and (flat.min() < 0 or flat.max() >= n):
            raise LoweringError(f"Gather '{node.name or node.output[0]}': index out of range 0..{n - 1}")

        def build() -> np.ndarray:
            onehot = np.zeros((n, flat.size), dtype=np.float16)
            onehot[flat, np.arange(flat.size)] = 1
            return onehot

        ident = flat.tobytes() + str(n).encode()
        nodes: list[Any] = []
        out = node.output[0]
        if axis == len(shape) - 1:
            m = self.matrix("gather", (n, flat.size), ident, build, nodes)
            final = tuple(shape[:-1]) + tuple(idx.shape)
            tmp = out if idx.ndim == 1 else self.fresh("gathered")
            self.matmul(node.input[0], m, tmp, nodes)
            if idx.ndim != 1:
                self.reshape(tmp, final, out, nodes)
        elif axis == 0:
            m = self.matrix("gather", (flat.size, n), ident + b"T", lambda: build().T, nodes)
            rest = tuple(shape[1:])
            data = node.input[0]
            if len(shape) != 2:
                data = self.fresh("as_matrix")
                self.reshape(node.input[0], (n, int(np.prod(rest))), data, nodes)
            tmp = self.fresh("gathered")
            self.matmul(m, data, tmp, nodes)
            self.reshape(tmp, tuple(idx.shape) + rest, out, nodes)
        else:  # a middle axis: moved last (an exact transpose), gathered there, the index moved back
            self._gather_middle(
                node, shape, axis, idx, self.matrix("gather", (n, flat.size), ident, build, nodes), nodes
            )
        self.report.lowered["Gather"] += 1
        return nodes

    def _gather_middle(
        self, node: Any, shape: tuple[int, ...], axis: int, idx: np.ndarray, onehot: str, nodes: list[Any]
    ) -> None:
        """A gather on a middle axis as the last-axis product: the data transposed so the axis is last,
        multiplied by the one-hot matrix, reshaped and transposed so the index's axes stand where
        the gathered axis stood (ONNX's order). Transposes move data and compute nothing: the
        arithmetic is the last-axis gather's (an assumption about the chip's compiler)."""
        import onnx

        rank = len(shape)
        moved = self.fresh("axis_last")
        nodes.append(
            onnx.helper.make_node(
                "Transpose", [node.input[0]], [moved], perm=[*range(axis), *range(axis + 1, rank), axis]
            )
        )
        gathered, shaped = self.fresh("gathered"), self.fresh("gathered_shaped")
        self.matmul(moved, onehot, gathered, nodes)
        rest = (*shape[:axis], *shape[axis + 1 :])
        self.reshape(gathered, (*rest, *idx.shape), shaped, nodes)
        k = idx.ndim
        order = [*range(axis), *range(rank - 1, rank - 1 + k), *range(axis, rank - 1)]
        nodes.append(onnx.helper.make_node("Transpose", [shaped], [node.output[0]], perm=order))

    def _scatter(self, node: Any) -> list[Any]:
        import onnx

        op = node.op_type
        data, idx_name, updates = node.input[:3]
        shape = self._data_shape(node, data)
        idx = self._indices(node, idx_name)
        attrs = attributes(node)
        reduction = attrs.get("reduction", b"none")
        reduction = reduction.decode() if isinstance(reduction, bytes) else str(reduction)
        where = f"{op} '{node.name or node.output[0]}'"
        if len(shape) != 1:
            raise LoweringError(f"{where}: only scatters into a vector can be lowered to a one-hot product")
        if op == "ScatterND" and (idx.ndim != 2 or idx.shape[1] != 1):
            raise LoweringError(f"{where}: indices of shape {idx.shape}; only (k, 1) can be lowered")
        n = shape[0]
        flat = np.where(idx < 0, idx + n, idx).ravel()
        if flat.size and (flat.min() < 0 or flat.max() >= n):
            raise LoweringError(f"{where}: index out of range 0..{n - 1}")
        if reduction not in ("add", "none"):
            raise LoweringError(f"{where}: reduction '{reduction}' cannot be lowered (only add and none)")
        if reduction == "none" and len(np.unique(flat)) != flat.size:
            raise LoweringError(f"{where}: repeated indices with reduction 'none' have no defined result")

        def build() -> np.ndarray:
            onehot = np.zeros((flat.size, n), dtype=np.float16)
            onehot[np.arange(flat.size), flat] = 1
            return onehot

        nodes: list[Any] = []
        m = self.matrix("scatter", (flat.size, n), flat.tobytes() + str(n).encode(), build, nodes)
        upd = updates
        if self.shape_of(updates) is not None and len(self.shape_of(updates) or ()) != 1:
            upd = self.fresh("updates_vector")
            self.reshape(updates, (flat.size,), upd, nodes)
        product = self.fresh("scattered")
        self.matmul(upd, m, product, nodes)
        base = data
        if reduction == "none":
            keep = np.ones(n, dtype=np.float32)
            keep[flat] = 0
            base = self.fresh("kept")
            nodes.append(
                onnx.helper.make_node("Mul", [data, self.const(keep, "keep_mask")], [base], name=self.fresh("mask"))
            )
        nodes.append(onnx.helper.make_node("Add", [base, product], [node.output[0]], name=self.fresh("scatter_add")))
        self.report.lowered[op] += 1
        return nodes

    def _check_nothing_left(self) -> None:
        for node in self.g.node:
            if node.op_type in UNSUPPORTED_INDEXING:
                raise LoweringError(
                    f"{node.op_type} '{node.name or node.output[0]}' cannot be lowered to a one-hot "
                    "product by this compiler; export gathers as Gather with constant indices"
                )
            if node.op_type in LOWERED_OPS:
                raise LoweringError(
                    f"{node.op_type} '{node.name or node.output[0]}' was not lowered to a one-hot product: its data or "
                    "indices are only known at run time"
                )


def lower_gather_scatter(model: Any) -> LoweringReport:
    """Rewrite ``model`` (constant-folded, modified in place); see the module docstring."""
    return _Rewriter(model).run()
