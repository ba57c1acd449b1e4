"""Walk an ONNX graph once, every node computed with a device's :class:`~hwbench.evaluator.arith.Arith`.

Which arithmetic a node gets: a node with at least one *run-time* operand (computed from the
graph's inputs) runs on the chip, with the device's arithmetic; a node whose operands are all
compile-time constants (initializers, ``Constant``, shapes) is what a compiler folds on the host,
so it runs natively at the same carrier precision. So weights times inputs are always chip
products; a weight reshaped or transposed is a constant. ``Shape`` and ``Size`` of a run-time
tensor are constants (static shapes).

Float tensors are carried in the arithmetic's dtype (float32 for a device, float64 for the
reference): initializers and inputs are converted on entry, exactly (a float32 value is a float64
value). Every tensor a chip node writes goes through the device's ``store`` rounding (its storage
format: fp16 activations on an IPU in fp16, whatever the unit accumulated in).

:func:`compile_graph` turns the walk into a callable: on the numpy backend it walks node by node;
on the JAX backend the walk is traced once into one XLA program (rounding fused in), large
constants passed as arguments rather than embedded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.evaluator.arith import Arith
from hwbench.evaluator.onnx.call import Call
from hwbench.evaluator.onnx.graph import OnnxGraph
from hwbench.evaluator.records import Evaluation

STATIC_RESULTS = frozenset({"Shape", "Size"})
"""Ops whose results are compile-time constants even when their inputs are run-time values."""
ARG_CONSTANT_ELEMENTS = 4096
"""Constants larger than this are passed to the compiled program as arguments, not embedded."""

NodeHook = Callable[[int, Call], "list[Any] | None"]
"""A client's own lowering of a node (the GroqWare shim's one-hot products): results, or None."""


def to_carrier(value: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A float array in the carrier dtype (ints and bools unchanged)."""
    return value.astype(dtype) if value.dtype.kind == "f" and value.dtype != dtype else value


def fold(graph: OnnxGraph, constants: Mapping[str, np.ndarray], host: Arith) -> dict[str, np.ndarray]:
    """The constants plus every node output computable from constants alone, computed on the host
    (a compiler's constant folding): what the chip program then reads as constants."""
    env = dict(constants)
    for index, node in enumerate(graph.nodes):
        if all(not i or i in env for i in node.input):
            _fold_node(graph, index, env, host)
    return env


def _fold_node(graph: OnnxGraph, index: int, env: dict[str, Any], host: Arith) -> None:
    """Node ``index`` computed on the host from ``env`` (constants, and shapes of run-time tensors,
    which are static), its outputs written to ``env`` as host arrays."""
    node, info = graph.nodes[index], graph.infos[index]
    args = [env[i] if i else None for i in node.input]
    call = Call(node, info.name, graph.attrs[index], args, [False] * len(args), host, graph.opset_of(node), host)
    for out_name, value in zip(node.output, _run_node(graph, index, call, None)):
        if out_name:
            env[out_name] = np.asarray(host.lower(value))


def evaluate(
    graph: OnnxGraph,
    feeds: Mapping[str, Any],
    constants: Mapping[str, Any],
    arith: Arith,
    *,
    host: Arith | None = None,
    intermediates: bool = False,
    overrides: Mapping[str, Arith] | None = None,
    hook: NodeHook | None = None,
    step: Any = 0,
    zero: Any = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run every node that reads a run-time value (traceable by JAX; ``constants`` already folded
    by :func:`fold`): the graph outputs and, with ``intermediates``, every run-time node output,
    as engine arrays. ``overrides`` gives named nodes another arithmetic (a wider format the device
    offers: the precision map's nodes kept wider); ``step`` keys stochastic rounding; ``zero``: see
    :meth:`Arith.begin`."""
    overrides = overrides or {}
    for a in {id(arith): arith, **{id(o): o for o in overrides.values()}}.values():
        a.begin(step, zero)
    env: dict[str, Any] = dict(constants)
    dynamic = set(feeds)
    for name, value in feeds.items():
        env[name] = arith.lift(value)
    tensors: dict[str, Any] = {}
    for index, (node, info) in enumerate(zip(graph.nodes, graph.infos)):
        flags = [bool(i) and i in dynamic for i in node.input]
        if not any(flags):
            if any(o and o not in env for o in node.output):  # reads a static shape: folded at compile time
                _fold_node(graph, index, env, host or arith)
            continue  # folded
        chip = overrides.get(info.name, arith)
        args = [(chip.lift(chip.lower(env[i])) if f else env[i]) if i else None for i, f in zip(node.input, flags)]
        call = Call(node, info.name, graph.attrs[index], args, flags, chip, graph.opset_of(node), host)
        results = _run_node(graph, index, call, hook)
        for out_name, value in zip(node.output, results):
            if not out_name:
                continue
            if node.op_type in STATIC_RESULTS:
                env[out_name] = value
                continue
            env[out_name] = value = chip.store(value)  # a tensor in the device's memory
            dynamic.add(out_name)
            if intermediates:
                tensors[out_name] = chip.lower(value)
    return {name: arith.lower(env[name]) for name in graph.outputs}, tensors


def _run_node(graph: OnnxGraph, index: int, call: Call, hook: NodeHook | None) -> list[Any]:
    """The node's results; an op's own failure (a shape that cannot be, a bad attribute) is one
    UsageError naming the node."""
    try:
        if hook is not None:
            done = hook(index, call)
            if done is not None:
                return done
        return graph.impls[index](call)
    except UsageError:
        raise
    except Exception as exc:
        text = str(exc).splitlines()[0] if str(exc) else ""
        raise UsageError(f"node '{call.name}' ({call.op}) failed: {type(exc).__name__}: {text[:200]}") from exc


def compile_graph(
    graph: OnnxGraph,
    arith: Arith,
    *,
    intermediates: bool = False,
    overrides: Mapping[str, Arith] | None = None,
    hook: NodeHook | None = None,
) -> Callable[[Mapping[str, np.ndarray]], Evaluation]:
    """A callable from named input arrays to an :class:`Evaluation` (compiled on the first call on
    the JAX backend). Inputs are converted to the carrier dtype; names and shapes are checked by
    the caller (:mod:`hwbench.evaluator.onnx.inputs`)."""
    from hwbench.core.engines.numpy_engine import NumpyOps

    carrier = arith.dtype
    host = Arith(NumpyOps(carrier), "numpy", label="host (constant folding)")
    with np.errstate(all="ignore"):
        consts = fold(graph, {k: to_carrier(v, carrier) for k, v in graph.constants.items()}, host)

    if arith.backend == "numpy":

        def run_numpy(feeds: Mapping[str, np.ndarray]) -> Evaluation:
            inputs = {k: to_carrier(np.asarray(v), carrier) for k, v in feeds.items()}
            with np.errstate(all="ignore"):
                outs, tensors = evaluate(
                    graph, inputs, consts, arith, host=host, intermediates=intermediates, overrides=overrides, hook=hook
                )
            return Evaluation(
                {k: np.asarray(v) for k, v in outs.items()}, {k: np.asarray(v) for k, v in tensors.items()}
            )

        return run_numpy
    return _compile_jax(graph, arith, host, consts, intermediates, overrides, hook)


def _compile_jax(
    graph: OnnxGraph,
    arith: Arith,
    host: Arith,
    consts: dict[str, np.ndarray],
    intermediates: bool,
    overrides: Mapping[str, Arith] | None,
    hook: NodeHook | None,
) -> Callable[[Mapping[str, np.ndarray]], Evaluation]:
    import jax

    from hwbench.core.engines.jax_engine import x64_mode

    big = {k: v for k, v in consts.items() if v.size > ARG_CONSTANT_ELEMENTS}
    small = {k: v for k, v in consts.items() if k not in big}
    carrier = arith.dtype

    def program(feeds: dict[str, Any], big_consts: dict[str, Any], zero: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        # big constants arrive as traced arguments, but they are still compile-time constants of
        # the model (folded before: no node computes with them alone)
        return evaluate(
            graph,
            feeds,
            {**small, **big_consts},
            arith,
            host=host,
            intermediates=intermediates,
            overrides=overrides,
            hook=hook,
            zero=zero,
        )

    with x64_mode(carrier):
        jitted = jax.jit(program)
        on_device = jax.device_put(big)

    def run(feeds: Mapping[str, np.ndarray]) -> Evaluation:
        inputs = {k: to_carrier(np.asarray(v), carrier) for k, v in feeds.items()}
        with x64_mode(carrier):
            outs, tensors = jax.block_until_ready(jitted(inputs, on_device, np.int32(0)))
        return _evaluation(outs, tensors)

    return run


def _evaluation(outs: Mapping[str, Any], tensors: Mapping[str, Any]) -> Evaluation:
    return Evaluation({k: np.asarray(v) for k, v in outs.items()}, {k: np.asarray(v) for k, v in tensors.items()})
