"""Recurrent layers: RNN, GRU, LSTM, with the standard's gate equations.

The gate products are the matrix unit's (:meth:`Arith.matmul`): the input's for every time step
at once (one ``(steps * batch, input) @ W^T`` product), then each step's ``H @ R^T``, as cuDNN and
ONNX Runtime's CPU kernels lay them out; the two bias vectors are summed first (a constant folded
on the host when both are initializers) and added to the input products, then the recurrent
product is added. Activations (the ``activations`` attribute: Sigmoid, Tanh, Relu, ...) and the
cell update are the device's elementwise arithmetic. Steps run in order; ``sequence_lens``
masks the steps past each sequence's end (the state is held, the output is zero).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.evaluator.onnx.op_table import op
from hwbench.evaluator.onnx.ops.activations import sigmoid_of

if TYPE_CHECKING:
    from hwbench.evaluator.arith import Arith
    from hwbench.evaluator.onnx.call import Call

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DEFAULTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def _activation(ar: Arith, name: str, alpha: float | None, beta: float | None) -> Callable[[Any], Any]:
    """An activation of the ``activations`` attribute as the device's arithmetic."""

    def const(x: Any, v: float) -> np.ndarray:
        return np.asarray(v, dtype=ar.lower(x).dtype)

    table: dict[str, Callable[[Any], Any]] = {
        "sigmoid": lambda x: sigmoid_of(ar, x),
        "tanh": lambda x: ar.function("tanh", x),
        "relu": lambda x: ar.maximum(x, const(x, 0.0)),
        "affine": lambda x: ar.binary("add", ar.binary("mul", const(x, alpha or 1.0), x), const(x, beta or 0.0)),
        "leakyrelu": lambda x: ar.where(
            ar.compare("less", x, const(x, 0.0)), ar.binary("mul", const(x, 0.01 if alpha is None else alpha), x), x
        ),
        "scaledtanh": lambda x: ar.binary(
            "mul", const(x, alpha or 1.0), ar.function("tanh", ar.binary("mul", const(x, beta or 1.0), x))
        ),
        "hardsigmoid": lambda x: ar.maximum(
            ar.minimum(
                ar.binary(
                    "add",
                    ar.binary("mul", const(x, 0.2 if alpha is None else alpha), x),
                    const(x, 0.5 if beta is None else beta),
                ),
                const(x, 1.0),
            ),
            const(x, 0.0),
        ),
        "softsign": lambda x: ar.binary("div", x, ar.binary("add", const(x, 1.0), ar.absolute(x))),
    }
    fn = table.get(name.lower())
    if fn is None:
        raise UsageError(f"recurrent activation '{name}' is not supported; supported: {', '.join(sorted(table))}")
    return fn


@dataclass
class _Layer:
    """What every step of one direction needs."""

    ar: Arith
    hidden: int
    acts: list[Callable[[Any], Any]]
    clip: float | None
    recurrent: Any  # R of this direction: (gates * hidden, hidden), multiplied transposed
    peephole: Any  # LSTM's P of this direction, or None
    linear_before_reset: bool

    def gates(self, pre: Any) -> Any:
        if self.clip is None:
            return pre
        dtype = self.ar.lower(pre).dtype
        clipped = self.ar.maximum(pre, np.asarray(-self.clip, dtype))
        return self.ar.minimum(clipped, np.asarray(self.clip, dtype))

    def part(self, v: Any, k: int) -> Any:
        h = self.hidden
        return self.ar.move(lambda a: a[..., k * h : (k + 1) * h], v)


def _activations(c: Call, directions: int) -> list[list[Callable[[Any], Any]]]:
    names = [a.decode() if isinstance(a, bytes) else str(a) for a in c.attrs.get("activations", [])]
    per = len(DEFAULTS[c.op])
    names = names or DEFAULTS[c.op] * directions
    alphas = list(c.attrs.get("activation_alpha", []))
    betas = list(c.attrs.get("activation_beta", []))
    fns = [
        _activation(c.arith, n, alphas[i] if i < len(alphas) else None, betas[i] if i < len(betas) else None)
        for i, n in enumerate(names)
    ]
    return [fns[d * per : (d + 1) * per] for d in range(directions)]


def _folded_or_moved(c: Call, index: int, fn: Callable[[Any], Any]) -> Any:
    """``fn`` of input ``index`` (a move): on the host for a constant, else on the device."""
    value = c.arg(index)
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return np.asarray(fn(value))
    return c.arith.move(fn, value)


@op("RNN", "GRU", "LSTM")
def recurrent(c: Call) -> list[Any]:
    ar, xp = c.arith, c.xp
    if c.attrs.get("input_forget", 0):
        raise UsageError(f"node '{c.name}' (LSTM): input_forget is not supported")
    layout = int(c.attrs.get("layout", 0))
    x = c.arg(0) if layout == 0 else ar.move(lambda v: xp.swapaxes(v, 0, 1), c.arg(0))
    steps, batch, _ = np.shape(ar.lower(x))
    hidden = int(c.attrs.get("hidden_size") or c.raw(2).shape[-1])
    direction = c.attrs.get("direction", b"forward")
    direction = direction.decode() if isinstance(direction, bytes) else str(direction)
    directions = 2 if direction == "bidirectional" else 1
    lengths = _lengths(c, steps, batch)
    acts = _activations(c, directions)
    outputs, finals, cells = [], [], []
    for d in range(directions):
        reverse = direction == "reverse" or d == 1
        ys, h, cell = _direction(c, d, acts[d], x, hidden, lengths, reverse)
        outputs.append(ys)
        finals.append(h)
        cells.append(cell)
    return _assemble(c, outputs, finals, cells, layout)


def _lengths(c: Call, steps: int, batch: int) -> Any:
    """Each sequence's length, or None when every sequence fills all steps."""
    given = c.arg(4) if len(c.args) > 4 else None
    if given is None:
        return None
    if isinstance(given, np.ndarray) and np.all(given == steps):
        return None
    return c.arith.lower(given)


def _direction(
    c: Call, d: int, acts: list[Callable[[Any], Any]], x: Any, hidden: int, lengths: Any, reverse: bool
) -> tuple[list[Any], Any, Any]:
    ar, xp = c.arith, c.xp
    gates = GATES[c.op]
    steps, batch, width = np.shape(ar.lower(x))
    if reverse:
        x = _reversed(c, x, lengths)
    weight = _folded_or_moved(c, 1, lambda v: v[d])  # (gates * hidden, input): products with its transpose
    layer = _Layer(
        ar,
        hidden,
        acts,
        float(c.attrs["clip"]) if "clip" in c.attrs else None,
        _folded_or_moved(c, 2, lambda v: v[d]),
        _folded_or_moved(c, 7, lambda v: v[d]) if c.op == "LSTM" and len(c.args) > 7 else None,
        bool(c.attrs.get("linear_before_reset", 0)),
    )
    flat = ar.move(lambda v: xp.reshape(v, (steps * batch, width)), x)
    products = ar.matmul(flat, weight, transpose_b=True)
    bias = _bias(c, d, gates, hidden)
    if bias is not None and not (c.op == "GRU" and layer.linear_before_reset):
        products = ar.binary("add", products, c.folding(3).binary("add", bias[0], bias[1]))
    products = ar.move(lambda v: xp.reshape(v, (steps, batch, gates * hidden)), products)
    h = _initial(c, 5, d, batch, hidden)
    cell = _initial(c, 6, d, batch, hidden) if c.op == "LSTM" else None
    step_fn = {"RNN": _rnn_step, "GRU": _gru_step, "LSTM": _lstm_step}[c.op]
    ys = []
    for t in range(steps):
        xw = ar.move(lambda v, t=t: v[t], products)
        new_h, new_cell = step_fn(layer, xw, h, cell, bias)
        if lengths is not None:
            live = xp.reshape(t < lengths, (-1, 1))
            new_h = ar.where(live, new_h, h)
            new_cell = ar.where(live, new_cell, cell) if cell is not None else None
            ys.append(ar.where(live, new_h, np.zeros((), ar.lower(new_h).dtype)))
        else:
            ys.append(new_h)
        h, cell = new_h, new_cell
    if reverse:
        stacked = _reversed(c, ar.move(lambda *v: xp.stack(v), *ys), lengths)
        ys = [ar.move(lambda v, t=t: v[t], stacked) for t in range(steps)]
    return ys, h, cell


def _reversed(c: Call, x: Any, lengths: Any) -> Any:
    """The time axis reversed (each sequence within its own length)."""
    xp = c.xp
    if lengths is None:
        return c.arith.move(lambda v: xp.flip(v, 0), x)
    steps = np.shape(c.arith.lower(x))[0]
    t = xp.arange(steps)[:, None]
    index = xp.where(t < lengths[None, :], lengths[None, :] - 1 - t, t)

    def fn(v: Any) -> Any:
        return xp.take_along_axis(v, xp.reshape(index, (*index.shape, 1)), axis=0)

    return c.arith.move(fn, x)


def _bias(c: Call, d: int, gates: int, hidden: int) -> Any:
    """(Wb, Rb) of direction ``d`` (None when the node has no B)."""
    b = c.arg(3) if len(c.args) > 3 else None
    if b is None:
        return None
    n = gates * hidden
    return _folded_or_moved(c, 3, lambda v: v[d, :n]), _folded_or_moved(c, 3, lambda v: v[d, n:])


def _initial(c: Call, index: int, d: int, batch: int, hidden: int) -> Any:
    value = c.arg(index) if len(c.args) > index else None
    if value is None:
        return np.zeros((batch, hidden), dtype=c.raw(0).dtype)
    return _folded_or_moved(c, index, lambda v: v[d])


def _recur(layer: _Layer, h: Any) -> Any:
    return layer.ar.matmul(h, layer.recurrent, transpose_b=True)


def _rnn_step(layer: _Layer, xw: Any, h: Any, cell: Any, bias: Any) -> tuple[Any, Any]:
    ar = layer.ar
    return layer.acts[0](layer.gates(ar.binary("add", xw, _recur(layer, h)))), None


def _lstm_step(layer: _Layer, xw: Any, h: Any, cell: Any, bias: Any) -> tuple[Any, Any]:
    """i, o, f, c gates (the standard's order); peepholes read the previous cell (i, f) and the
    new one (o)."""
    ar = layer.ar
    f_act, g_act, h_act = layer.acts
    pre = ar.binary("add", xw, _recur(layer, h))
    p = layer.peephole

    def peep(v: Any, k: int, state: Any) -> Any:
        if p is None:
            return v
        weight = p[k * layer.hidden : (k + 1) * layer.hidden] if isinstance(p, np.ndarray) else layer.part(p, k)
        return ar.binary("add", v, ar.binary("mul", weight, state))

    i = f_act(layer.gates(peep(layer.part(pre, 0), 0, cell)))
    f = f_act(layer.gates(peep(layer.part(pre, 2), 2, cell)))
    g = g_act(layer.gates(layer.part(pre, 3)))
    new_cell = ar.binary("add", ar.binary("mul", f, cell), ar.binary("mul", i, g))
    o = f_act(layer.gates(peep(layer.part(pre, 1), 1, new_cell)))
    return ar.binary("mul", o, h_act(new_cell)), new_cell


def _gru_step(layer: _Layer, xw: Any, h: Any, cell: Any, bias: Any) -> tuple[Any, Any]:
    """z, r, h gates; the candidate's recurrent product reads ``r * H`` (or, with
    ``linear_before_reset``, ``r * (H @ Rh^T + Rbh)``)."""
    ar, hd = layer.ar, layer.hidden
    f_act, g_act = layer.acts
    if layer.linear_before_reset:
        rec = _recur(layer, h)
        if bias is not None:
            xw = ar.binary("add", xw, bias[0])
            rec = ar.binary("add", rec, bias[1])
        z = f_act(layer.gates(ar.binary("add", layer.part(xw, 0), layer.part(rec, 0))))
        r = f_act(layer.gates(ar.binary("add", layer.part(xw, 1), layer.part(rec, 1))))
        cand = ar.binary("add", layer.part(xw, 2), ar.binary("mul", r, layer.part(rec, 2)))
    else:
        rec = ar.matmul(h, _rows(ar, layer.recurrent, 0, 2 * hd), transpose_b=True)
        h_weight = _rows(ar, layer.recurrent, 2 * hd, 3 * hd)
        z = f_act(layer.gates(ar.binary("add", layer.part(xw, 0), layer.part(rec, 0))))
        r = f_act(layer.gates(ar.binary("add", layer.part(xw, 1), layer.part(rec, 1))))
        cand = ar.binary("add", layer.part(xw, 2), ar.matmul(ar.binary("mul", r, h), h_weight, transpose_b=True))
    n = g_act(layer.gates(cand))
    one = np.asarray(1.0, dtype=ar.lower(n).dtype)
    return ar.binary("add", ar.binary("mul", ar.binary("sub", one, z), n), ar.binary("mul", z, h)), None


def _rows(ar: Arith, weight: Any, start: int, stop: int) -> Any:
    if isinstance(weight, np.ndarray):
        return weight[start:stop]
    return ar.move(lambda v: v[start:stop], weight)


def _assemble(c: Call, outputs: list[list[Any]], finals: list[Any], cells: list[Any], layout: int) -> list[Any]:
    """Y (steps, directions, batch, hidden), Y_h and Y_c (directions, batch, hidden); layout 1
    puts the batch first."""
    ar, xp = c.arith, c.xp
    per_direction = [ar.move(lambda *v: xp.stack(v), *ys) for ys in outputs]  # steps, batch, hidden
    y = ar.move(lambda *v: xp.stack(v, axis=1), *per_direction)
    y_h = ar.move(lambda *v: xp.stack(v), *finals)
    result = [y, y_h]
    if c.op == "LSTM":
        result.append(ar.move(lambda *v: xp.stack(v), *cells))
    if layout == 1:
        result[0] = ar.move(lambda v: xp.transpose(v, (2, 0, 1, 3)), result[0])
        result[1:] = [ar.move(lambda v: xp.swapaxes(v, 0, 1), r) for r in result[1:]]
    return result[: len(c.node.output)]
