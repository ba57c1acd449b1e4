"""An ONNX graph interpreter whose every operation goes through hwbench's emulating ops.

This is how the shim's runner executes a compiled program with the GroqChip's arithmetic: each
ONNX node is mapped to the ops-namespace call a kernel would make (``Add`` -> ``a + b`` on an
emulated array, ``Exp`` -> ``ops.exp``, ``MatMul`` -> ``ops.matmul``, ...), so every result is
rounded per its op class by :mod:`hwbench.accuracy.numerics.emulate`, exactly as the fast emulation route
rounds the kernel's own Python code. The compiler's one-hot products (constant 0/1 matrices)
run as the gathers and ordered sums they are equivalent to, with the matrix unit's rounding
(:mod:`.onehot`), rather than as dense products. Two ways to run the same interpretation:

* ``backend="numpy"`` (the runner's default): node by node with numpy, no compile step.
* ``backend="jax"``: the whole graph traced once into one XLA program (``jax.jit``), rounding
  fused in. Fast to run but slow to compile: fine for short blocks, impractical for the 40-step
  io-ehh block (~12,000 nodes; XLA did not finish within 15 minutes on a 2-core host).

Which values are rounded: everything computed from the program's inputs ("run time" values) is
chip arithmetic and rounded per op class; arithmetic among constants alone is what a compiler
folds on the host, so it runs natively. Boolean and integer results are exact. Graph outputs
leave through the profile's ``store`` rounding. Stochastic rounding, if a profile has it, is
keyed by the program's ``g0`` input (the global step of the block's first step) when the graph
has one, with one op sequence across the whole fused block (a fused graph has no step
boundaries), so its random streams differ from the step-by-step emulation's.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.plugins.groqware_shim.graph import attributes, topological

BACKENDS = ("jax", "numpy")
STATIC_RESULTS = ("Shape", "Size", "ConstantOfShape")
"""Ops whose results are compile-time constants even when their inputs are run-time values."""
ARG_CONSTANT_ELEMENTS = 4096
"""Constants larger than this are passed to the compiled program as arguments, not embedded."""

_ARITH = {"Add": operator.add, "Sub": operator.sub, "Mul": operator.mul, "Div": operator.truediv}
_COMPARE = {
    "Less": operator.lt,
    "Greater": operator.gt,
    "LessOrEqual": operator.le,
    "GreaterOrEqual": operator.ge,
    "Equal": operator.eq,
}
_LOGIC = {"And": "logical_and", "Or": "logical_or", "Xor": "logical_xor"}
_UNARY_OPS = {"Exp": "exp", "Log": "log", "Sqrt": "sqrt"}
_MOVES = (
    "Identity",
    "Concat",
    "Unsqueeze",
    "Squeeze",
    "Reshape",
    "Slice",
    "Transpose",
    "Expand",
    "Tile",
    "Split",
    "Flatten",
)
SUPPORTED = tuple(
    sorted(
        {
            *_ARITH,
            *_COMPARE,
            *_LOGIC,
            *_UNARY_OPS,
            *_MOVES,
            "Not",
            "Neg",
            "Abs",
            "Reciprocal",
            "Pow",
            "Min",
            "Max",
            "Where",
            "Cast",
            "MatMul",
            "ReduceSum",
            "ReduceMax",
            "ReduceMin",
            "Gather",
            "Shape",
            "ConstantOfShape",
            "Constant",
            "Size",
        }
    )
)


def raw_ops(backend: str, dtype: Any) -> Any:
    """The engine ops namespace the interpreter computes with (matrix products at full fp32)."""
    if backend == "numpy":
        from hwbench.core.engines.numpy_engine import NumpyOps

        return NumpyOps(dtype)
    from hwbench.core.engines.jax_engine import JaxOps

    class ExactJaxOps(JaxOps):
        """JAX ops whose matmul never drops to TF32/bf16 passes on a GPU or TPU host."""

        def matmul(self, a: Any, b: Any, precision: str | None = None) -> Any:
            """Always ``HIGHEST``: the hint ``precision`` is ignored, as the numpy gold ignores it."""
            return self._jnp.matmul(a, b, precision=self._jax.lax.Precision.HIGHEST)

    return ExactJaxOps(dtype)


def _np_dtype(elem_type: int) -> np.dtype:
    import onnx

    return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))


class GraphInterpreter:
    """Evaluates one ONNX graph; :meth:`compile` turns it into a callable on named numpy arrays."""

    def __init__(self, model: Any, profile: Any = None, *, backend: str = "numpy") -> None:
        from onnx import numpy_helper

        if backend not in BACKENDS:
            raise UsageError(f"unknown interpreter backend '{backend}'; choose from: {', '.join(BACKENDS)}")
        g = model.graph
        self.backend = backend
        self.profile = profile
        self.constants = {i.name: numpy_helper.to_array(i) for i in g.initializer}
        graph_inputs = [i for i in g.input if i.name not in self.constants]
        self.inputs = {i.name: _np_dtype(i.type.tensor_type.elem_type) for i in graph_inputs}
        self.input_shapes = {i.name: tuple(d.dim_value for d in i.type.tensor_type.shape.dim) for i in graph_inputs}
        self.outputs = [o.name for o in g.output]
        self.nodes = topological(g.node, set(self.constants) | set(self.inputs))
        unsupported = sorted(
            {n.op_type for n in self.nodes if n.op_type not in SUPPORTED or n.domain not in ("", "ai.onnx")}
        )
        if unsupported:
            raise UsageError(
                f"the GroqWare-shim runner cannot execute ONNX op(s) {', '.join(unsupported)}; it runs: "
                f"{', '.join(SUPPORTED)}"
            )
        floats = [dt for dt in self.inputs.values() if dt.kind == "f"]
        self.dtype = np.dtype(floats[0]) if floats else np.dtype(np.float32)
        if backend == "jax" and self.dtype != np.float32:
            raise UsageError(
                f"the jax backend of the GroqWare-shim runner runs float32 programs; this one is {self.dtype} "
                "(use backend='numpy')"
            )
        self._attrs = [attributes(n) for n in self.nodes]
        self.onehot_plans = self._plan_onehot_products()

    def _plan_onehot_products(self) -> dict[int, Any]:
        """Node index -> plan, for the compiler's one-hot products (see :mod:`.onehot`)."""
        from hwbench.plugins.groqware_shim.lowering import ONEHOT_DOC
        from hwbench.plugins.groqware_shim.onehot import plan_for

        cast_of = {n.output[0]: n.input[0] for n in self.nodes if n.op_type == "Cast" and n.input[0] in self.constants}
        plans: dict[str, Any] = {}
        out: dict[int, Any] = {}
        for i, node in enumerate(self.nodes):
            if node.op_type != "MatMul" or node.doc_string != ONEHOT_DOC:
                continue
            source = cast_of.get(node.input[1], node.input[1])
            if source not in self.constants:
                continue
            if source not in plans:
                plans[source] = plan_for(self.constants[source])
            if plans[source] is not None:
                out[i] = plans[source]
        return out

    # --- running ---------------------------------------------------------------------------
    def compile(self) -> Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]:
        """A callable from named input arrays to named output arrays (jit-compiled on first call)."""
        if self.backend == "numpy":

            def run_numpy(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
                out = self.evaluate(self._check(feeds), self.constants)
                return {k: np.asarray(v) for k, v in out.items()}

            return run_numpy
        import jax

        big = {k: v for k, v in self.constants.items() if v.size > ARG_CONSTANT_ELEMENTS}
        small = {k: v for k, v in self.constants.items() if k not in big}
        on_device = jax.device_put(big)

        def program(feeds: dict[str, Any], big_consts: dict[str, Any]) -> dict[str, Any]:
            return self.evaluate(feeds, {**small, **big_consts})

        jitted = jax.jit(program)

        def run(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            out = jitted(self._check(feeds), on_device)
            return {k: np.asarray(v) for k, v in out.items()}

        return run

    def _check(self, feeds: dict[str, Any]) -> dict[str, np.ndarray]:
        missing = sorted(set(self.inputs) - set(feeds))
        extra = sorted(set(feeds) - set(self.inputs))
        if missing or extra:
            raise UsageError(
                f"program inputs: missing {', '.join(missing) or 'none'}, unknown {', '.join(extra) or 'none'}; "
                f"it takes: {', '.join(sorted(self.inputs))}"
            )
        out = {}
        for name, dt in self.inputs.items():
            arr = np.asarray(feeds[name], dtype=dt)
            if arr.shape != self.input_shapes[name]:
                raise UsageError(
                    f"program input '{name}' has shape {arr.shape}; the program takes {self.input_shapes[name]}"
                )
            out[name] = arr
        return out

    def evaluate(self, feeds: dict[str, Any], constants: dict[str, Any]) -> dict[str, Any]:
        """Run every node (traceable by JAX); returns the graph outputs as engine arrays."""
        from hwbench.accuracy.numerics.emulate import EmulatingOps, emulating_ops
        from hwbench.core.engine import SteppedOps

        raw = raw_ops(self.backend, self.dtype)
        ops = emulating_ops(self.profile, counters=False)(raw) if self.profile is not None else raw
        store = ops.store if isinstance(ops, EmulatingOps) else None  # graph outputs leave rounded
        ev = _Evaluator(ops, raw, self.backend)
        if self.onehot_plans:
            from hwbench.plugins.groqware_shim.onehot import MatrixUnit

            unit = MatrixUnit(self.profile, self.dtype.name)
            ev.matrix_unit = unit if unit.usable else None
        if isinstance(ops, SteppedOps):
            ops.begin_step(feeds.get("g0", 0))
        env: dict[str, Any] = dict(constants)
        dynamic = set(feeds)  # values computed from the program's inputs: chip arithmetic
        for name, value in feeds.items():
            env[name] = ev.wrap(ev.xp.asarray(value))
        for index, (node, attrs) in enumerate(zip(self.nodes, self._attrs)):
            args = [env[i] if i else None for i in node.input]
            flags = [bool(i) and i in dynamic for i in node.input]
            try:
                plan = self.onehot_plans.get(index)
                if plan is not None and ev.matrix_unit is not None and flags[0] and not flags[1]:
                    results = [ev.wrap(ev.matrix_unit.apply(ev.xp, ev.unwrap(args[0]), plan))]
                else:
                    results = ev.run(node, args, attrs, flags)
            except UsageError:
                raise
            except Exception as exc:
                raise UsageError(
                    f"GroqWare-shim runner: {node.op_type} node '{node.name or node.output[0]}' failed: "
                    f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                ) from exc
            for name, value in zip(node.output, results):
                if name:
                    env[name] = value
                    if any(flags) and node.op_type not in STATIC_RESULTS:
                        dynamic.add(name)
        outs = {}
        for name in self.outputs:
            value = env[name]
            if store is not None and ev.is_float(value) and name in dynamic:
                value = store(value)
            outs[name] = ev.unwrap(value)
        return outs


class _Evaluator:
    """The op table: one method per ONNX op family.

    ``flags[i]`` says whether argument ``i`` is a run-time value (computed from the program's
    inputs). Float run-time values are emulated arrays, so Python operators on them round per
    op class; everything else (host constants, integers, booleans) is exact or native.
    """

    def __init__(self, ops: Any, raw: Any, backend: str) -> None:
        from hwbench.accuracy.numerics.emulated_array import EmuArray, unwrap

        self.ops = ops
        self.raw = raw
        self.emulating = bool(getattr(ops, "emulated", False))
        self.EmuArray = EmuArray
        self.unwrap = unwrap
        if backend == "jax":
            import jax.numpy as jnp

            self.xp: Any = jnp
        else:
            self.xp = np
        self.matrix_unit: Any = None  # set when one-hot products may take the fast path

    # --- value helpers -----------------------------------------------------------------------
    def is_float(self, v: Any) -> bool:
        dt = getattr(self.unwrap(v), "dtype", None)
        return dt is not None and np.dtype(dt).kind == "f"

    def wrap(self, v: Any) -> Any:
        if self.emulating and not isinstance(v, self.EmuArray) and self.is_float(v):
            return self.EmuArray(v, self.ops)
        return v

    def emu(self, v: Any, dyn: bool) -> Any:
        """An operand for an emulated operation: run-time floats wrapped, scalar constants as numbers."""
        if dyn:
            return self.wrap(v)
        if isinstance(v, np.ndarray) and v.ndim == 0:
            return float(v) if v.dtype.kind == "f" else int(v)
        return v

    def host(self, v: Any, what: str) -> np.ndarray:
        """A value that must be known at compile time (shapes, axes, exponents)."""
        try:
            return np.asarray(self.unwrap(v))
        except Exception:  # a traced value
            raise UsageError(f"{what} must be a compile-time constant") from None

    def xp_for(self, args: list[Any]) -> Any:
        return np if all(isinstance(a, np.ndarray | type(None)) for a in args) else self.xp

    def chip(self, args: list[Any], flags: list[bool]) -> bool:
        """Whether the op runs emulated: a float op with at least one run-time operand."""
        return self.emulating and any(flags) and any(self.is_float(a) for a in args if a is not None)

    # --- dispatch --------------------------------------------------------------------------
    def run(self, node: Any, args: list[Any], attrs: dict[str, Any], flags: list[bool]) -> list[Any]:
        """The node's results: its op's handler from :data:`_HANDLERS` (data movement otherwise)."""
        call = _Call(node.op_type, args, attrs, flags, self.chip(args, flags), any(flags))
        handler = _HANDLERS.get(call.op)
        if handler is None:
            return self.move(call.op, args, attrs, call.dyn)
        return handler(self, call)

    def _operand(self, call: _Call, i: int) -> Any:
        """Argument ``i`` as an emulated operation takes it (see :meth:`emu`)."""
        return self.emu(call.args[i], call.flags[i])

    def _arith(self, call: _Call) -> list[Any]:
        if call.chip:
            return [_ARITH[call.op](self._operand(call, 0), self._operand(call, 1))]
        return [self.native_arith(call.op, call.args)]

    def _pow(self, call: _Call) -> list[Any]:
        return [self.power(call.args, call.flags, call.chip)]

    def _compare(self, call: _Call) -> list[Any]:
        if call.chip:  # booleans are exact; the comparison itself is the COMPARE class
            return [self.unwrap(_COMPARE[call.op](self._operand(call, 0), self._operand(call, 1)))]
        fn = getattr(self.xp_for(call.args), _COMPARE_FUNCTIONS[call.op])
        return [fn(self.unwrap(call.args[0]), self.unwrap(call.args[1]))]

    def _logic(self, call: _Call) -> list[Any]:
        fn = getattr(self.xp_for(call.args), _LOGIC[call.op])
        return [fn(self.unwrap(call.args[0]), self.unwrap(call.args[1]))]

    def _not(self, call: _Call) -> list[Any]:
        return [self.xp_for(call.args).logical_not(self.unwrap(call.args[0]))]

    def _unary(self, call: _Call) -> list[Any]:
        if call.chip:
            return [getattr(self.ops, _UNARY_OPS[call.op])(self.wrap(call.args[0]))]
        return [getattr(self.xp_for(call.args), _UNARY_OPS[call.op])(self.unwrap(call.args[0]))]

    def _neg(self, call: _Call) -> list[Any]:
        return [-self.wrap(call.args[0]) if call.chip else -self.unwrap(call.args[0])]

    def _abs(self, call: _Call) -> list[Any]:
        if call.chip:
            return [self.ops.abs(self.wrap(call.args[0]))]
        return [self.xp_for(call.args).abs(self.unwrap(call.args[0]))]

    def _reciprocal(self, call: _Call) -> list[Any]:
        if call.chip:
            return [1.0 / self.wrap(call.args[0])]
        x = self.unwrap(call.args[0])
        return [self.xp_for(call.args).divide(np.asarray(1, dtype=x.dtype), x)]

    def _min_max(self, call: _Call) -> list[Any]:
        return [self.min_max(call.op, call.args, call.flags, call.chip)]

    def _where(self, call: _Call) -> list[Any]:
        if call.chip:
            return [self.ops.where(self.unwrap(call.args[0]), self._operand(call, 1), self._operand(call, 2))]
        return [self.xp_for(call.args).where(*(self.unwrap(a) for a in call.args))]

    def _matmul(self, call: _Call) -> list[Any]:
        if call.chip:
            return [self.ops.matmul(self._operand(call, 0), self._operand(call, 1))]
        return [self.xp_for(call.args).matmul(self.unwrap(call.args[0]), self.unwrap(call.args[1]))]

    def _reduce(self, call: _Call) -> list[Any]:
        return [self.reduce(call.op, call.args, call.attrs, call.chip, call.dyn)]

    def _cast(self, call: _Call) -> list[Any]:
        return [self.cast(call.args[0], call.attrs["to"], call.dyn)]

    def _gather(self, call: _Call) -> list[Any]:
        return [self.gather(call.args, call.attrs, call.chip, call.dyn)]

    def _shape(self, call: _Call) -> list[Any]:
        shape = np.asarray(np.shape(self.unwrap(call.args[0])), dtype=np.int64)
        return [shape[call.attrs.get("start", 0) : call.attrs.get("end", len(shape))]]

    def _size(self, call: _Call) -> list[Any]:
        return [np.asarray(np.size(self.unwrap(call.args[0])), dtype=np.int64)]

    def _constant_of_shape(self, call: _Call) -> list[Any]:
        from onnx import numpy_helper

        attrs = call.attrs
        fill = numpy_helper.to_array(attrs["value"]) if "value" in attrs else np.zeros(1, np.float32)
        shape = tuple(int(s) for s in self.host(call.args[0], "ConstantOfShape's shape"))
        return [np.full(shape, fill.reshape(-1)[0], dtype=fill.dtype)]

    def _constant(self, call: _Call) -> list[Any]:
        return [self.constant(call.attrs)]

    # --- arithmetic --------------------------------------------------------------------------
    def native_arith(self, op: str, args: list[Any]) -> Any:
        xp = self.xp_for(args)
        x, y = self.unwrap(args[0]), self.unwrap(args[1])
        if op == "Div" and np.dtype(x.dtype).kind in "iu":
            return (xp.asarray(x) / y).astype(x.dtype)  # ONNX integer division truncates toward zero
        return {"Add": xp.add, "Sub": xp.subtract, "Mul": xp.multiply, "Div": xp.divide}[op](x, y)

    def power(self, args: list[Any], flags: list[bool], chip: bool) -> Any:
        base, exponent = args
        if chip and flags[0] and not flags[1]:
            e = self.host(exponent, "Pow's exponent")
            if e.size == 1 and float(e.reshape(-1)[0]).is_integer():
                return self.wrap(base) ** int(e.reshape(-1)[0])  # as the kernel's ``x ** 3``: repeated MUL
        if chip:
            return self.ops.power(self.emu(base, flags[0]), self.emu(exponent, flags[1]))
        return self.xp_for(args).power(self.unwrap(base), self.unwrap(exponent))

    def min_max(self, op: str, args: list[Any], flags: list[bool], chip: bool) -> Any:
        if chip:
            fn = self.ops.minimum if op == "Min" else self.ops.maximum
            acc = self.emu(args[0], flags[0])
            for a, f in zip(args[1:], flags[1:]):
                acc = fn(acc, self.emu(a, f))
            return acc
        xp = self.xp_for(args)
        fn = xp.minimum if op == "Min" else xp.maximum
        acc = self.unwrap(args[0])
        for a in args[1:]:
            acc = fn(acc, self.unwrap(a))
        return acc

    def reduce(self, op: str, args: list[Any], attrs: dict[str, Any], chip: bool, dyn: bool) -> Any:
        x = args[0]
        ndim = np.ndim(self.unwrap(x))
        if len(args) > 1 and args[1] is not None:
            axes = [int(a) for a in self.host(args[1], f"{op}'s axes").reshape(-1)]
        else:
            axes = list(attrs.get("axes", []))
        if not axes:
            if attrs.get("noop_with_empty_axes", 0):
                return x
            axes = list(range(ndim))
        axes = sorted({a % ndim for a in axes}, reverse=True)
        keep = bool(attrs.get("keepdims", 1))
        xp = self.xp_for([x])
        if op == "ReduceSum" and chip:
            out = self.wrap(x)
            for axis in axes:
                out = self.ops.sum(out, axis)
            if keep:
                out = self.wrap(xp.expand_dims(self.unwrap(out), tuple(sorted(axes))))
            return out
        fn = {"ReduceSum": xp.sum, "ReduceMax": xp.max, "ReduceMin": xp.min}[op]
        out = fn(self.unwrap(x), axis=tuple(axes), keepdims=keep)
        return self.wrap(out) if dyn else out

    def cast(self, x: Any, to: int, dyn: bool) -> Any:
        target = _np_dtype(to)
        value = self.unwrap(x)
        if np.dtype(value.dtype) == target:
            return x
        out = value.astype(target)
        return self.wrap(out) if dyn else out

    def gather(self, args: list[Any], attrs: dict[str, Any], chip: bool, dyn: bool) -> Any:
        data, idx = args
        rank = max(np.ndim(self.unwrap(data)), 1)
        axis = attrs.get("axis", 0) % rank
        index = self.unwrap(idx)
        if chip and axis == rank - 1 and np.ndim(index) == 1 and isinstance(index, np.ndarray):
            return self.ops.gather(self.wrap(data), index)  # the gather op class, as in kernels
        out = self.xp_for(args).take(self.unwrap(data), index, axis=axis)
        return self.wrap(out) if dyn else out

    def constant(self, attrs: dict[str, Any]) -> np.ndarray:
        from onnx import numpy_helper

        if "value" in attrs:
            return numpy_helper.to_array(attrs["value"])
        for key, dtype in (
            ("value_float", np.float32),
            ("value_int", np.int64),
            ("value_floats", np.float32),
            ("value_ints", np.int64),
        ):
            if key in attrs:
                return np.asarray(attrs[key], dtype=dtype)
        raise UsageError(f"Constant with attributes {sorted(attrs)} is not supported")

    # --- data movement (exact) -------------------------------------------------------------
    def move(self, op: str, args: list[Any], attrs: dict[str, Any], dyn: bool) -> list[Any]:
        xp = self.xp_for(args)
        vals: list[Any] = [self.unwrap(a) if a is not None else None for a in args]
        x = vals[0]
        if op == "Identity":
            return [args[0]]
        if op == "Concat":
            out: Any = xp.concatenate([xp.asarray(v) for v in vals], axis=attrs["axis"])
        elif op == "Unsqueeze":
            axes = self._axes(args, attrs, "Unsqueeze")
            rank = np.ndim(x) + len(axes)
            out = x
            for a in sorted(a % rank for a in axes):
                out = xp.expand_dims(out, a)
        elif op == "Squeeze":
            axes = self._axes(args, attrs, "Squeeze")
            out = xp.squeeze(x, axis=tuple(a % np.ndim(x) for a in axes) if axes else None)
        elif op == "Reshape":
            shape = [int(s) for s in self.host(args[1], "Reshape's shape")]
            if not attrs.get("allowzero", 0):
                shape = [np.shape(x)[i] if s == 0 else s for i, s in enumerate(shape)]
            out = xp.reshape(x, shape)
        elif op == "Flatten":
            axis = attrs.get("axis", 1) % (np.ndim(x) + 1) if np.ndim(x) else 0
            out = xp.reshape(x, (int(np.prod(np.shape(x)[:axis])), -1))
        elif op == "Slice":
            out = x[self._slices(args, np.shape(x))]
        elif op == "Transpose":
            out = xp.transpose(x, attrs.get("perm"))
        elif op == "Expand":
            target = tuple(int(s) for s in self.host(args[1], "Expand's shape"))
            out = xp.broadcast_to(x, np.broadcast_shapes(np.shape(x), target))
        elif op == "Tile":
            out = xp.tile(x, tuple(int(r) for r in self.host(args[1], "Tile's repeats")))
        else:  # Split
            return self._split(xp, x, args, attrs, dyn)
        return [self.wrap(out) if dyn else out]

    def _axes(self, args: list[Any], attrs: dict[str, Any], op: str) -> list[int]:
        if len(args) > 1 and args[1] is not None:
            return [int(a) for a in self.host(args[1], f"{op}'s axes").reshape(-1)]
        return list(attrs.get("axes", []))

    def _slices(self, args: list[Any], shape: tuple[int, ...]) -> tuple[slice, ...]:
        starts = self.host(args[1], "Slice's starts").reshape(-1)
        ends = self.host(args[2], "Slice's ends").reshape(-1)
        axes: Any = range(len(starts))
        steps: Any = [1] * len(starts)
        if len(args) > 3 and args[3] is not None:
            axes = self.host(args[3], "Slice's axes").reshape(-1)
        if len(args) > 4 and args[4] is not None:
            steps = self.host(args[4], "Slice's steps").reshape(-1)
        index = [slice(None)] * len(shape)
        for s, e, a, k in zip(starts, ends, axes, steps):
            a = int(a) % len(shape)
            n = shape[a]
            index[a] = slice(
                *slice(int(max(min(s, 2**62), -(2**62))), int(max(min(e, 2**62), -(2**62))), int(k)).indices(n)
            )
        return tuple(index)

    def _split(self, xp: Any, x: Any, args: list[Any], attrs: dict[str, Any], dyn: bool) -> list[Any]:
        axis = attrs.get("axis", 0) % np.ndim(x)
        if len(args) > 1 and args[1] is not None:
            sizes = [int(s) for s in self.host(args[1], "Split's sizes")]
        elif "split" in attrs:
            sizes = list(attrs["split"])
        else:
            parts = attrs.get("num_outputs")
            if parts is None:
                raise UsageError("Split without sizes needs num_outputs")
            n = np.shape(x)[axis]
            sizes = [-(-n // parts)] * (parts - 1)
            sizes.append(n - sum(sizes))
        cuts = np.cumsum(sizes)[:-1].tolist()
        outs = xp.split(x, cuts, axis=axis)
        return [self.wrap(o) if dyn else o for o in outs]


@dataclass(frozen=True)
class _Call:
    """One node's evaluation: its op, arguments, attributes, run-time flags, and whether it runs
    emulated (``chip``: a float op with a run-time operand) or yields a run-time value (``dyn``)."""

    op: str
    args: list[Any]
    attrs: dict[str, Any]
    flags: list[bool]
    chip: bool
    dyn: bool


_COMPARE_FUNCTIONS = {
    "Less": "less",
    "Greater": "greater",
    "LessOrEqual": "less_equal",
    "GreaterOrEqual": "greater_equal",
    "Equal": "equal",
}
"""The array-namespace function of each comparison, for native (not emulated) evaluation."""

_HANDLERS: dict[str, Callable[[_Evaluator, _Call], list[Any]]] = {
    **dict.fromkeys(_ARITH, _Evaluator._arith),
    "Pow": _Evaluator._pow,
    **dict.fromkeys(_COMPARE, _Evaluator._compare),
    **dict.fromkeys(_LOGIC, _Evaluator._logic),
    "Not": _Evaluator._not,
    **dict.fromkeys(_UNARY_OPS, _Evaluator._unary),
    "Neg": _Evaluator._neg,
    "Abs": _Evaluator._abs,
    "Reciprocal": _Evaluator._reciprocal,
    "Min": _Evaluator._min_max,
    "Max": _Evaluator._min_max,
    "Where": _Evaluator._where,
    "MatMul": _Evaluator._matmul,
    **dict.fromkeys(("ReduceSum", "ReduceMax", "ReduceMin"), _Evaluator._reduce),
    "Cast": _Evaluator._cast,
    "Gather": _Evaluator._gather,
    "Shape": _Evaluator._shape,
    "Size": _Evaluator._size,
    "ConstantOfShape": _Evaluator._constant_of_shape,
    "Constant": _Evaluator._constant,
}
"""Each op's handler; any other op is data movement (:meth:`_Evaluator.move`)."""
