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
SUMMING = frozenset(
    {
        "ReduceSum",
        "ReduceMean",
        "ReduceL1",
        "ReduceL2",
        "ReduceLogSum",
        "ReduceLogSumExp",
        "ReduceSumSquare",
        "ReduceProd",
        "AveragePool",
        "GlobalAveragePool",
        "LpPool",
        "GlobalLpPool",
        "Softmax",
        "LogSoftmax",
        "LayerNormalization",
        "InstanceNormalization",
        "GroupNormalization",
        "MeanVarianceNormalization",
        "LRN",
        "CumSum",
        "Einsum",
    }
)
"""Ops whose outputs are sums in an order the engine picks: computed once (:meth:`Arith.once`), so
that XLA cannot copy one into several readers, each summing in its own order."""
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
    which are static), its outputs written to ``env`` as host arrays in the carrier dtype."""
    node, info = graph.nodes[index], graph.infos[index]
    args = [env[i] if i else None for i in node.input]
    call = Call(node, info.name, graph.attrs[index], args, [False] * len(args), host, graph.opset_of(node), host)
    for out_name, value in zip(node.output, _run_node(graph, index, call, None)):
        if out_name:
            env[out_name] = to_carrier(np.asarray(host.lower(value)), host.dtype)


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
    store_every_node: bool = True,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run every node that reads a run-time value (traceable by JAX; ``constants`` already folded
    by :func:`fold`): the graph outputs and, with ``intermediates``, every run-time node output,
    as engine arrays. ``overrides`` gives named nodes another arithmetic (a wider format the device
    offers: the precision map's nodes kept wider); ``step`` keys stochastic rounding; ``zero``: see
    :meth:`Arith.begin`. ``store_every_node=False`` applies the device's store rounding to the
    graph outputs only (a program whose outputs are a kernel's state, as the GroqWare shim runs)."""
    overrides = overrides or {}
    for a in {id(arith): arith, **{id(o): o for o in overrides.values()}}.values():
        a.begin(step, zero)
    env: dict[str, Any] = dict(constants)
    dynamic = set(feeds)
    for name, value in feeds.items():
        env[name] = arith.lift(value)
    tensors: dict[str, Any] = {}
    static = host
    for index, (node, info) in enumerate(zip(graph.nodes, graph.infos)):
        flags = [bool(i) and i in dynamic for i in node.input]
        if not any(flags):
            if any(o and o not in env for o in node.output):  # reads a static shape: known now
                static = static or _host(arith.dtype)
                _fold_node(graph, index, env, static)
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
            value = chip.kernel_output(value)
            if node.op_type in SUMMING:
                value = chip.once(value)
            if store_every_node:
                value = chip.store(value)  # a tensor in the device's memory
            env[out_name] = value
            dynamic.add(out_name)
            if intermediates:
                tensors[out_name] = chip.lower(value)
    if not store_every_node:
        return {n: arith.lower(arith.store(env[n]) if n in dynamic else env[n]) for n in graph.outputs}, tensors
    return {name: arith.lower(env[name]) for name in graph.outputs}, tensors


def _host(dtype: np.dtype) -> Arith:
    from hwbench.evaluator.arith import native_arith

    return native_arith(str(dtype), "numpy", label="host (constant folding)")


def _run_node(graph: OnnxGraph, index: int, call: Call, hook: NodeHook | None) -> list[Any]:
    """The node's results: the client's hook's where it lowers the node, else its op's."""

    def run() -> list[Any]:
        done = hook(index, call) if hook is not None else None
        return done if done is not None else graph.impls[index](call)

    return _guarded(call, run)


def _guarded(call: Call, run: Callable[[], list[Any]]) -> list[Any]:
    """``run()``; an op's own failure (a shape that cannot be, a bad attribute) is one UsageError
    naming the node."""
    try:
        return run()
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
    step_input: str | None = None,
    store_every_node: bool = True,
) -> Callable[[Mapping[str, np.ndarray]], Evaluation]:
    """A callable from named input arrays to an :class:`Evaluation` (compiled on the first call on
    the JAX backend). Inputs are converted to the carrier dtype; names and shapes are checked by
    the caller. ``step_input`` names an integer input that keys stochastic rounding and error
    models (a program's global step), when the graph has it; ``store_every_node``: see
    :func:`evaluate`."""
    carrier = arith.dtype
    host = _host(carrier)
    exact = _exact_outputs(graph)
    with np.errstate(all="ignore"):
        consts = fold(graph, {k: to_carrier(v, carrier) for k, v in graph.constants.items()}, host)

    def walk(
        feeds: Mapping[str, Any], constants: Mapping[str, Any], zero: Any
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        step = feeds.get(step_input, 0) if step_input else 0
        return evaluate(
            graph,
            feeds,
            constants,
            arith,
            host=host,
            intermediates=intermediates,
            overrides=overrides,
            hook=hook,
            step=step,
            zero=zero,
            store_every_node=store_every_node,
        )

    if arith.backend == "numpy":

        def run_numpy(feeds: Mapping[str, np.ndarray]) -> Evaluation:
            inputs = {k: to_carrier(np.asarray(v), carrier) for k, v in feeds.items()}
            with np.errstate(all="ignore"):
                return _evaluation(*walk(inputs, consts, None), exact)

        return run_numpy
    return _compile_jax(walk, carrier, consts, exact)


def _compile_jax(
    walk: Callable[..., Any], carrier: np.dtype, consts: dict[str, np.ndarray], exact: Mapping[str, np.dtype]
) -> Callable[[Mapping[str, np.ndarray]], Evaluation]:
    import jax

    from hwbench.core.engines.jax_engine import compile_lowered, x64_mode

    big = {k: v for k, v in consts.items() if v.size > ARG_CONSTANT_ELEMENTS}
    small = {k: v for k, v in consts.items() if k not in big}

    def program(feeds: dict[str, Any], big_consts: dict[str, Any], zero: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        # big constants arrive as traced arguments, but they are still compile-time constants of
        # the model (folded before: no node computes with them alone)
        return walk(feeds, {**small, **big_consts}, zero)  # type: ignore[no-any-return]

    with x64_mode(carrier):
        jitted = jax.jit(program)
        on_device = jax.device_put(big)
    compiled: dict[tuple[Any, ...], Any] = {}  # one executable per input signature

    def run(feeds: Mapping[str, np.ndarray]) -> Evaluation:
        inputs = {k: to_carrier(np.asarray(v), carrier) for k, v in feeds.items()}
        key = tuple(sorted((k, v.shape, v.dtype.str) for k, v in inputs.items()))
        with x64_mode(carrier):
            if key not in compiled:  # the project's XLA options: 512-bit vectors, a memory-minded schedule
                compiled[key] = compile_lowered(jitted.lower(inputs, on_device, np.int32(0)))[0]
            outs, tensors = jax.block_until_ready(compiled[key](inputs, on_device, np.int32(0)))
        return _evaluation(outs, tensors, exact)

    return run


def _evaluation(outs: Mapping[str, Any], tensors: Mapping[str, Any], exact: Mapping[str, np.dtype]) -> Evaluation:
    """Host arrays; integer and boolean outputs in their declared type (JAX without 64-bit types
    computes int64 as int32), floats in the carrier."""
    arrays = {k: np.asarray(v) for k, v in outs.items()}
    arrays = {k: v.astype(exact[k]) if k in exact and v.dtype != exact[k] else v for k, v in arrays.items()}
    return Evaluation(arrays, {k: np.asarray(v) for k, v in tensors.items()})


def _exact_outputs(graph: OnnxGraph) -> dict[str, np.dtype]:
    """The declared types of the graph's integer and boolean outputs."""
    from hwbench.evaluator.onnx.dtypes import element_dtype

    out = {}
    for value in graph.model.graph.output:
        elem = value.type.tensor_type.elem_type if value.type.HasField("tensor_type") else 0
        dtype = element_dtype(elem) if elem else None
        if dtype is not None and dtype.kind in "iub":
            out[value.name] = dtype
    return out


def fold_node(node: Any, opset: int, args: list[np.ndarray | None], host: Arith) -> list[np.ndarray]:
    """One node computed from compile-time values on the host (a compiler's constant folding of a
    single node, for a client that rewrites a model): its outputs as host arrays. ``host`` is a
    numpy arithmetic; ``Arith(..., typed=True)`` keeps every cast's target type."""
    import hwbench.evaluator.onnx.ops  # noqa: F401  (registers the op implementations)
    from hwbench.evaluator.onnx.graph import attributes
    from hwbench.evaluator.onnx.op_table import lookup

    name = node.name or f"{node.op_type} node"
    impl = lookup(node.op_type, node.domain, opset, name)
    call = Call(node, name, attributes(node), list(args), [False] * len(args), host, opset, host)
    return [np.asarray(host.lower(v)) for v in _guarded(call, lambda: impl(call))]
