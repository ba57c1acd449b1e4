"""A device's arithmetic, as the op-level evaluator computes with it.

An :class:`Arith` is the one vocabulary both front ends (ONNX graphs, jaxprs) compute in. Each of
its methods is one kind of operation on a chip: a matrix product on the matrix unit, an
elementwise function with the chip's elementwise arithmetic, a reduction in the chip's adder
order, a move of data that computes nothing. Behind it is an ops namespace of
:mod:`hwbench.core.ops` built for a device (the engine's raw ops for native IEEE arithmetic; the
device's emulating ops, with its matrix-unit model where it has one, for an emulated device), so
every number a node produces is rounded where and as the device rounds it, and nothing escapes:
an op written against :class:`Arith` has no other way to compute.

Values are engine arrays (numpy, or JAX tracers under ``jax.jit``); under an emulating namespace
the float ones travel as :class:`~hwbench.accuracy.numerics.emulated_array.EmuArray` so that the
format each value is known to lie in is kept from op to op (a rounding onto a format that already
holds the value is skipped). :meth:`Arith.lift` / :meth:`Arith.lower` convert at the edges.

What is modelled and what is assumed is stated by :meth:`Arith.describe` and lands in reports:
the matrix products' method (native, operand rounding, a block-FMA model), the reduction order,
and the elementwise functions that have no error model of their own.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.core.ops import OpClass

BACKENDS = ("numpy", "jax")
APART_BY_BARRIER = 2**16
"""Products of at least this many elements are kept apart from additions by storing them once."""

# Elementwise functions and the op class whose arithmetic computes them. Every one of them is one
# native function rounded (and, where the device has an error model, perturbed) as its class; the
# error model's random stream is the function's own (keyed by its name).
FUNCTIONS: dict[str, OpClass] = {
    "exp": OpClass.EXP,
    "log": OpClass.EXP,
    "tanh": OpClass.EXP,
    "erf": OpClass.EXP,
    "erfc": OpClass.EXP,
    "erf_inv": OpClass.EXP,
    "exp2": OpClass.EXP,
    "lgamma": OpClass.EXP,
    "digamma": OpClass.EXP,
    "sin": OpClass.EXP,
    "cos": OpClass.EXP,
    "tan": OpClass.EXP,
    "asin": OpClass.EXP,
    "acos": OpClass.EXP,
    "atan": OpClass.EXP,
    "sinh": OpClass.EXP,
    "cosh": OpClass.EXP,
    "asinh": OpClass.EXP,
    "acosh": OpClass.EXP,
    "atanh": OpClass.EXP,
    "expm1": OpClass.EXP,
    "log1p": OpClass.EXP,
    "sqrt": OpClass.POW,
    "rsqrt": OpClass.POW,
    "cbrt": OpClass.POW,
}
_NUMPY_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh"}
_NUMPY_NAMES |= {"atanh": "arctanh"}
_SPECIAL = {"erfc": "erfc", "erf_inv": "erfinv", "lgamma": "gammaln", "digamma": "digamma"}
_BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv}
_COMPARE = {
    "less": operator.lt,
    "greater": operator.gt,
    "less_equal": operator.le,
    "greater_equal": operator.ge,
    "equal": operator.eq,
    "not_equal": operator.ne,
}


def xp_function(xp: Any, name: str) -> Callable[[Any], Any]:
    """The array namespace's own ``name`` (numpy or jax.numpy), erf from SciPy / jax.scipy."""
    if name == "rsqrt":  # XLA's own op (CUDA's rsqrtf on a GPU); numpy: 1 / sqrt in the array's type
        if xp is np:
            return lambda v: np.divide(np.ones((), dtype=v.dtype), np.sqrt(v))
        from jax import lax

        return lax.rsqrt
    if name == "erf":
        if xp is np:
            from scipy.special import erf

            return erf  # type: ignore[no-any-return]
        import jax.scipy.special

        return jax.scipy.special.erf
    special = _SPECIAL.get(name)
    if special is not None:  # SciPy's and jax.scipy's special functions
        if xp is np:
            import scipy.special

            return getattr(scipy.special, special)  # type: ignore[no-any-return]
        import jax.scipy.special

        return getattr(jax.scipy.special, special)  # type: ignore[no-any-return]
    return getattr(xp, _NUMPY_NAMES.get(name, name))  # type: ignore[no-any-return]


class Arith:
    """The arithmetic of one device (or of the host) on one engine and carrier dtype.

    ``ops`` is an ops namespace (raw, or a device's emulating ops around the raw ones); ``backend``
    is ``"numpy"`` (eager) or ``"jax"`` (values may be tracers: the whole evaluation is traced
    once and compiled). ``label`` names the arithmetic in reports. ``typed``: a cast gives its
    target type exactly (constant folding that writes a model back), not the carrier's.
    """

    def __init__(self, ops: Any, backend: str, *, label: str = "native", typed: bool = False) -> None:
        if backend not in BACKENDS:
            raise UsageError(f"unknown evaluator backend '{backend}'; choose from: {', '.join(BACKENDS)}")
        self.ops = ops
        self.backend = backend
        self.label = label
        self.typed = typed
        self.dtype = np.dtype(ops.dtype)
        self.emulating = bool(getattr(ops, "emulated", False))
        if backend == "jax":
            import jax.numpy as jnp

            self.xp: Any = jnp
        else:
            self.xp = np
        rules = getattr(ops, "rules", None) if self.emulating else None
        self._tree_sums = bool(rules is not None and rules[OpClass.ADD].rounds)
        self._host_matmul = bool(getattr(ops, "host_matmul", False))
        self._zero: Any = None

    # --- values ------------------------------------------------------------------------------
    def lift(self, x: Any) -> Any:
        """An engine array as this arithmetic's value (floats wrapped for an emulating namespace)."""
        if self.emulating and _is_float(x) and not _is_emu(x):
            from hwbench.accuracy.numerics.emulated_array import EmuArray

            return EmuArray(x, self.ops)
        return x

    def lower(self, x: Any) -> Any:
        """The engine array behind a value."""
        from hwbench.accuracy.numerics.emulated_array import unwrap

        return unwrap(x)

    def begin(self, step: Any = 0, zero: Any = None) -> None:
        """Start an evaluation: stochastic rounding and error models key their streams by ``step``;
        ``zero`` is an int32 zero the compiled program receives as an argument (its value unknown
        to the compiler), which keeps native products apart from additions (:meth:`_uncontracted`)."""
        self._zero = zero
        begin = getattr(self.ops, "begin_step", None)
        if begin is not None:
            begin(step)

    def move(self, fn: Callable[..., Any], *values: Any) -> Any:
        """``fn`` of the values' engine arrays: an exact data movement (reshape, transpose, slice,
        concatenation, padding with zeros, gather, broadcast). The result keeps the format the
        float values were all known to lie in (a move creates no new number; values of different
        or unknown formats give an unknown one)."""
        out = fn(*(self.lower(v) for v in values))
        floats = [v for v in values if v is not None and _is_float(self.lower(v))]
        if not self.emulating or not floats or not _is_float(out):
            return self.lift(out)
        formats = {v.fmt if _is_emu(v) else None for v in floats}
        from hwbench.accuracy.numerics.emulated_array import EmuArray

        return EmuArray(out, self.ops, formats.pop() if len(formats) == 1 else None, None)

    def store(self, x: Any) -> Any:
        """``x`` written to the device's memory in its storage format (the ``store`` class)."""
        if not self.emulating or not _is_float(self.lower(x)):
            return x
        return self.ops.store(self.lift(x))

    # --- elementwise arithmetic ----------------------------------------------------------------
    def binary(self, op: str, a: Any, b: Any) -> Any:
        """``add``, ``sub``, ``mul`` or ``div``, rounded as the device rounds its op class."""
        fn = _BINARY[op]
        if self.emulating:
            out = fn(self._operand(a), self._operand(b))
        else:
            out = fn(a, b)
        return self._uncontracted(op, out)

    def _uncontracted(self, op: str, out: Any) -> Any:
        """A product kept apart from the next addition. XLA:CPU contracts a native product into an
        addition that reads it (an FMA, one rounding), also across nodes and after copying the
        product into several fusions: a softmax's ``x * c - max`` then differs from ``x * c`` by
        the product's rounding error, and its exp can overflow. A device that contracts says so
        in its profile (modelled exactly by the emulating ops; across an ONNX node's store, see
        :meth:`kernel_output`); elsewhere a product is rounded before it is added. Rounded
        products (a narrower format; a division by a constant is a product where the profile
        lowers it so) and saturated ones (a saturating profile selects after every result) are
        apart already."""
        if self.backend != "jax" or op not in ("mul", "div"):
            return out
        if self.emulating:
            rule = self.ops.rules[OpClass.MUL if op == "mul" else OpClass.DIV]
            if rule.lowering == "constant-reciprocal":  # a division by a constant may be a product
                rule = self.ops.rules[OpClass.MUL]
            saturated = getattr(getattr(self.ops, "profile", None), "special_values", "ieee") == "saturate"
            if getattr(self.ops, "contracts", False) or rule.rounds or saturated:
                return out
        return self._kept_apart(out)

    def kernel_output(self, x: Any) -> Any:
        """``x`` as a kernel writes it to memory for the next kernel to read. On a contracting
        device (whose ops fuse a product into an addition of the same node themselves) XLA:CPU
        would also contract a node's product into another node's addition, which the numpy
        backend never does and a device does not do across a store: a softmax after a global
        average pool then computes ``x * c - max`` in one rounding while its max reads the rounded
        ``x * c``, and every exp underflows (NaN). Kept apart here, as :meth:`_uncontracted` keeps
        products apart on the other devices."""
        if self.backend != "jax" or not self.emulating or not getattr(self.ops, "contracts", False):
            return x
        return self._kept_apart(x) if _is_float(self.lower(x)) else x

    def _kept_apart(self, x: Any) -> Any:
        """``x`` out of XLA's reach for contraction: through :meth:`_apart`, or computed once
        (a barrier) where there is no opaque zero or ``x`` is not a float."""
        if self._zero is None or not _is_float(self.lower(x)):
            return self.once(x)
        return self.move(self._apart, x)

    def _apart(self, v: Any) -> Any:
        """``v`` unchanged, through an integer OR with a zero the compiler cannot see: no FMA can
        reach across it, and XLA may still fuse and copy the product freely (each copy rounded).
        A large product is stored once instead (an optimization barrier): measured on XLA:CPU,
        the OR in every element of a fused loop costs more than writing the product once (a
        batch normalisation's scaling of a 256 x 56 x 56 activation: 0.32 ms against 0.23 ms)."""
        from jax import lax

        if math.prod(np.shape(v)) >= APART_BY_BARRIER:
            return lax.optimization_barrier(v)
        width = {4: "int32", 8: "int64", 2: "int16"}[np.dtype(v.dtype).itemsize]
        bits = lax.bitcast_convert_type(v, np.dtype(width))
        zero = self._zero if np.dtype(self._zero.dtype) == np.dtype(width) else self._zero.astype(width)
        return lax.bitcast_convert_type(bits | zero, v.dtype)

    def power(self, a: Any, b: Any) -> Any:
        """``a ** b``: an integral constant exponent is repeated multiplication (square and multiply,
        as XLA's ``integer_pow``; a negative one adds a division), any other a POW-class op."""
        k = _integral(b)
        if k is not None:
            base = self._operand(a)
            return base**k if self.emulating else self.xp.power(a, np.asarray(k, dtype=self._dtype_of(a)))
        if self.emulating:
            return self.ops.power(self._operand(a), self._operand(b))
        return self.xp.power(a, b)

    def negative(self, x: Any) -> Any:
        return -x

    def absolute(self, x: Any) -> Any:
        return abs(x)

    def function(self, name: str, x: Any) -> Any:
        """An elementwise function of :data:`FUNCTIONS` with the device's arithmetic of its class."""
        cls = FUNCTIONS.get(name)
        if cls is None:
            raise UsageError(f"no elementwise function '{name}'; known: {', '.join(sorted(FUNCTIONS))}")
        if not self.emulating:
            return xp_function(self.xp, name)(x)
        if name in ("exp", "log", "sqrt"):
            return getattr(self.ops, name)(self._operand(x))
        elementwise = getattr(self.ops, "elementwise", None)
        raw = xp_function(self.xp, name)
        if elementwise is None:  # a namespace that rounds nothing elementwise
            return self.lift(raw(self.lower(x)))
        return elementwise(name, raw, self._operand(x), cls)

    def logistic(self, x: Any) -> Any:
        """``1 / (1 + exp(-x))``: an exp, an addition and a division of the device (XLA's expansion
        of ``logistic`` on the devices modelled; an assumption where a compiler has its own unit)."""
        return self.reciprocal(self.binary("add", 1.0, self.function("exp", self.negative(x))))

    def rsqrt(self, x: Any) -> Any:
        """``1 / sqrt(x)`` as one op of the POW class (XLA's ``rsqrt``; CUDA's ``rsqrtf``)."""
        return self.function("rsqrt", x)

    def reciprocal(self, x: Any) -> Any:
        """``1 / x``: a division on every device modelled (the DIV class)."""
        one = np.asarray(1, dtype=self._dtype_of(x))
        return self.binary("div", one if not self.emulating else 1.0, x)

    def minimum(self, a: Any, b: Any) -> Any:
        return self.ops.minimum(self._operand(a), self._operand(b)) if self.emulating else self.xp.minimum(a, b)

    def maximum(self, a: Any, b: Any) -> Any:
        return self.ops.maximum(self._operand(a), self._operand(b)) if self.emulating else self.xp.maximum(a, b)

    def combiner(self, op: str) -> Callable[[Any, Any], Any]:
        """The binary op a scan or a scatter combines with: ``add``, ``mul`` (the device's rounding)
        or ``max``, ``min`` (exact)."""
        if op in ("add", "mul"):
            return lambda a, b: self.binary(op, a, b)
        return {"max": self.maximum, "min": self.minimum}[op]

    def where(self, cond: Any, a: Any, b: Any) -> Any:
        """A select: exact (the result is one of the operands)."""
        c = self.lower(cond)
        if self.emulating:
            return self.ops.where(c, self._operand(a), self._operand(b))
        return self.xp.where(c, a, b)

    def compare(self, op: str, a: Any, b: Any) -> Any:
        """A comparison (booleans are exact): ``less``, ``greater``, ``less_equal``, ... ."""
        fn = _COMPARE[op]
        if self.emulating:
            return self.lower(fn(self._operand(a), self._operand(b)))
        return fn(a, b)

    def cast(self, x: Any, dtype: Any) -> Any:
        """A change of element type. Floats stay in the carrier: a cast to a narrower float format is
        a rounding onto it (the engine's, nearest even), a wider one changes nothing; float to int
        truncates toward zero, as ONNX and C do."""
        target = np.dtype(dtype)
        raw = self.lower(x)
        src = np.dtype(raw.dtype)
        if src == target:
            return x
        if self.typed:
            return self.lift(raw.astype(target))
        if src.kind == "f" and target.kind == "f":
            if target.itemsize >= src.itemsize:
                return x
            return self.lift(raw.astype(target).astype(src))
        out = raw.astype(target)
        if target.kind == "f" and target.itemsize > self.dtype.itemsize:
            out = out.astype(self.dtype)
        return self.lift(out)

    # --- reductions ----------------------------------------------------------------------------
    def sum(self, x: Any, axes: Sequence[int], keepdims: bool = False, *, once: bool = True) -> Any:
        """The sum over ``axes``. Where the device rounds its additions, a pairwise tree, every
        partial sum rounded (the order is an assumption: :meth:`describe`); else the engine's sum.
        ``once``: computed once (:meth:`once`); a caller that reads the sum in one place only may
        leave it to XLA to fuse (the ONNX front end puts the barrier on its nodes' outputs)."""
        ndim = len(self.lower(x).shape)
        axes = sorted({a % ndim for a in axes}) if ndim else []
        if not axes:
            return x
        if self._tree_sums:
            out = x
            for axis in reversed(axes):
                out = self._tree("add", out, axis)
            if not keepdims:
                out = self.move(lambda v: self.xp.squeeze(v, axis=tuple(axes)), out)
        elif self.emulating:  # the namespace's own sum: its ADD class (saturation, counters)
            out = self._operand(x)
            for axis in reversed(axes):
                out = self.ops.sum(out, axis)
            if keepdims:
                out = self.move(lambda v: self.xp.expand_dims(v, tuple(axes)), out)
        else:
            out = self.lift(self.xp.sum(self.lower(x), axis=tuple(axes), keepdims=keepdims))
        return self.once(out) if once else out

    def prod(self, x: Any, axes: Sequence[int], keepdims: bool = False) -> Any:
        """The product over ``axes``: a pairwise tree of the device's multiplications where it
        rounds them (an assumed order, as for :meth:`sum`), else the engine's product."""
        ndim = len(self.lower(x).shape)
        axes = sorted({a % ndim for a in axes}) if ndim else []
        if not axes:
            return x
        if not self.emulating:
            return self.lift(self.xp.prod(self.lower(x), axis=tuple(axes), keepdims=keepdims))
        out = x
        for axis in reversed(axes):
            out = self._tree("mul", out, axis)
        if not keepdims:
            out = self.move(lambda v: self.xp.squeeze(v, axis=tuple(axes)), out)
        return out

    def once(self, x: Any) -> Any:
        """``x`` computed once, as a device computes a value it then reads twice. XLA may copy a
        cheap producer (a reduction) into each fusion that reads it and sum it in another order
        in each copy: a softmax's ``x - max(x)`` then exceeds 0 and its exp overflows. A barrier
        keeps one value (JAX backend; numpy computes every value once anyway)."""
        if self.backend != "jax":
            return x
        from jax import lax

        return self.move(lax.optimization_barrier, x)

    def _tree(self, op: str, x: Any, axis: int) -> Any:
        """Pairwise ``op`` (add, mul) along ``axis`` (kept, length 1): halves combined elementwise
        until one is left."""
        xp = self.xp
        n = self.lower(x).shape[axis]
        if n == 0:
            shape = list(self.lower(x).shape)
            shape[axis] = 1
            fill = xp.zeros if op == "add" else xp.ones
            return self.lift(fill(shape, dtype=self.lower(x).dtype))
        while n > 1:
            half = n // 2
            first = self.move(lambda v, h=half: _take(xp, v, 0, h, axis), x)
            second = self.move(lambda v, h=half: _take(xp, v, h, 2 * h, axis), x)
            pairs = self.binary(op, first, second)
            if n % 2:
                last = self.move(lambda v, k=n: _take(xp, v, k - 1, k, axis), x)
                pairs = self.move(lambda p, q: xp.concatenate([p, q], axis=axis), pairs, last)
            x, n = pairs, half + n % 2
        return x

    def reduce_max(self, x: Any, axes: Sequence[int], keepdims: bool = False) -> Any:
        """The largest element over ``axes`` (exact: a selection)."""
        return self.move(lambda v: self.xp.max(v, axis=tuple(axes), keepdims=keepdims), x)

    def reduce_min(self, x: Any, axes: Sequence[int], keepdims: bool = False) -> Any:
        return self.move(lambda v: self.xp.min(v, axis=tuple(axes), keepdims=keepdims), x)

    def gather(self, x: Any, index: Any, axis: int) -> Any:
        """``take(x, index, axis)``: the device's gather (its GATHER class: a chip that lowers gathers
        to one-hot matrix products rounds the source to the matrix unit's input format) where the
        namespace has one, else an exact move. ``index`` is an engine integer array, in range."""
        ndim = len(self.lower(x).shape)
        axis %= max(ndim, 1)
        xp = self.xp
        if not self.emulating or not _is_float(self.lower(x)) or ndim == 0:
            return self.move(lambda v, i: xp.take(v, i, axis=axis), x, index)
        last = self.move(lambda v: xp.moveaxis(v, axis, -1), x)  # pre + post + (n,)
        shape = tuple(getattr(index, "shape", ()))
        flat = self.ops.gather(self._operand(last), xp.reshape(index, (-1,)))  # the namespace's: a vector index
        out = self.move(lambda v: xp.reshape(v, (*v.shape[:-1], *shape)), flat)  # pre + post + index.shape
        k, rest = len(shape), ndim - 1

        def back(v: Any) -> Any:
            order = (*range(axis), *range(rest, rest + k), *range(axis, rest))
            return xp.transpose(v, order)

        return self.move(back, out)

    # --- the matrix unit -----------------------------------------------------------------------
    def matmul(self, a: Any, b: Any, *, transpose_b: bool = False) -> Any:
        """``a @ b`` with numpy's broadcasting of leading (batch) dimensions, on the matrix unit:
        operands in its input format, products accumulated as the device's model says.
        ``transpose_b``: ``a @ b^T`` (b 2-D), where the engine can, without moving b."""
        if transpose_b:
            product = self._transposed_product(a, b)
            if product is not None:
                return product
            b = self.move(lambda v: self.xp.swapaxes(v, -1, -2), b)
        if not self.emulating:
            return self.ops.matmul(a, b, precision="highest")  # a wrapper may still own the products
        if self._host_matmul and self.backend == "jax":
            return self._host_product(a, b)
        if self._host_matmul:
            return self._unit_product(self._operand(a), self._operand(b))
        return self.ops.matmul(self._operand(a), self._operand(b))

    def _transposed_product(self, a: Any, b: Any) -> Any:
        """``a @ b^T`` as one contraction over both last axes, or None where the namespace has no
        native product to give it to. XLA:CPU copies a transposed dot operand first: 40 times
        slower than the contraction for a 4096 x 9216 weight."""
        if np.ndim(self.lower(b)) != 2 or self._host_matmul:
            return None

        def contract(p: Any, q: Any) -> Any:
            if self.backend == "numpy":
                return np.matmul(p, np.swapaxes(q, 0, 1))
            from jax import lax

            dims = (((p.ndim - 1,), (1,)), ((), ()))
            return lax.dot_general(p, q, dims, precision=lax.Precision.HIGHEST)

        bilinear = getattr(self.ops, "bilinear", None)
        if bilinear is not None:
            return bilinear(contract, self._operand(a), self._operand(b))
        if not self.emulating:
            return self.lift(contract(self.lower(a), self.lower(b)))
        return None

    def _unit_product(self, a: Any, b: Any) -> Any:
        """The host matrix unit's product, with the per-tensor amax scaling of a mode that scales
        its operands (fp8: :func:`amax_scaled` each whole operand, the product unscaled in fp32 by
        ``(1 / scale_a) * (1 / scale_b)``, as cuBLASLt applies the two scale factors)."""
        top = getattr(self.ops, "amax_scaling", None)
        if top is None:
            return self._batched_unit(a, b)
        xa, inv_a = amax_scaled(np.asarray(self.lower(a)), top)
        xb, inv_b = amax_scaled(np.asarray(self.lower(b)), top)
        out = np.asarray(self.lower(self._batched_unit(self.lift(xa), self.lift(xb))))
        return self.lift(out * (inv_a * inv_b))

    def _batched_unit(self, a: Any, b: Any) -> Any:
        """A host-only matrix unit (2-D products) over broadcast batch dimensions."""
        ra, rb = self.lower(a), self.lower(b)
        if rb.ndim == 2:
            return self.ops.matmul(a, b)
        lead = np.broadcast_shapes(ra.shape[:-2], rb.shape[:-2])
        ba = np.broadcast_to(ra, (*lead, *ra.shape[-2:])).reshape(-1, *ra.shape[-2:])
        bb = np.broadcast_to(rb, (*lead, *rb.shape[-2:])).reshape(-1, *rb.shape[-2:])
        parts = [self.lower(self.ops.matmul(self.lift(p), self.lift(q))) for p, q in zip(ba, bb)]
        return self.lift(np.stack(parts).reshape(*lead, ra.shape[-2], rb.shape[-1]))

    def _host_product(self, a: Any, b: Any) -> Any:
        """A matrix unit modelled on the host only (the block-FMA models), called from a compiled
        program through ``jax.pure_callback``: the same numbers as the numpy backend."""
        import jax

        ra, rb = self.lower(a), self.lower(b)
        shape = (*np.broadcast_shapes(ra.shape[:-2], rb.shape[:-2]), ra.shape[-2], rb.shape[-1])
        dtype = self.dtype

        def host(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            out = self._unit_product(self.lift(np.asarray(x)), self.lift(np.asarray(y)))
            return np.asarray(self.lower(out), dtype=dtype)

        out = jax.pure_callback(host, jax.ShapeDtypeStruct(shape, dtype), ra, rb)
        return self.lift(out)

    def conv(
        self,
        x: Any,
        w: Any,
        *,
        strides: Sequence[int],
        pads: Sequence[tuple[int, int]],
        dilations: Sequence[int],
        groups: int = 1,
        lhs_dilation: Sequence[int] | None = None,
    ) -> Any:
        """An N-d cross-correlation, ONNX's layout (x: N, C, *spatial; w: M, C/groups, *kernel), as
        the matrix unit computes it: per group, the filters (Mg, K) times the patch matrix (K, O)
        (im2col, :mod:`hwbench.evaluator.convolution`); the product is :meth:`matmul`.
        ``lhs_dilation`` spreads the input with zeros first (a transposed convolution).

        Native arithmetic, and a namespace that rounds operands around one native product
        (``bilinear``), take the engine's fastest exact form of the same sums
        (:func:`~hwbench.evaluator.convolution.native_conv`), the operands rounded once."""
        from hwbench.evaluator import convolution

        geo = convolution.Geometry(
            tuple(int(s) for s in strides),
            tuple((int(b), int(e)) for b, e in pads),
            tuple(int(d) for d in dilations),
            int(groups),
            tuple(int(f) for f in lhs_dilation) if lhs_dilation is not None else None,
        )
        xp = self.xp

        def native(a: Any, b: Any) -> Any:
            return convolution.native_conv(xp, a, b, geo)

        if not self.emulating:
            return self.lift(native(self.lower(x), self.lower(w)))
        bilinear = getattr(self.ops, "bilinear", None)
        if bilinear is not None and not self._host_matmul:
            return bilinear(native, self._operand(x), self._operand(w))
        rx, rw = self.lower(x), self.lower(w)
        shape = (rx.shape[0], rw.shape[0], *geo.out(rx.shape[2:], rw.shape[2:]))
        kernel = rw.shape[2:]
        cols = self.move(lambda v: convolution.columns(xp, v, kernel, geo), x)  # N, G, K, O
        prod = self.matmul(self.move(lambda v: convolution.filters(xp, v, groups), w), cols)  # N, G, Mg, O
        return self.move(lambda v: xp.reshape(v, shape), prod)

    def windows(
        self,
        x: Any,
        kernel: Sequence[int],
        *,
        strides: Sequence[int],
        pads: Sequence[tuple[int, int]],
        dilations: Sequence[int],
        fill: float = 0.0,
    ) -> Any:
        """The (N, C, *kernel, *out) windows of ``x`` (N, C, *spatial) a pooling reduces: exact data
        movement, padded with ``fill`` (-inf for a max pool, 0 for a sum)."""
        from hwbench.evaluator.convolution import patches

        return self.move(lambda v: patches(self.xp, v, kernel, strides, pads, dilations, fill), x)

    # --- what it is -----------------------------------------------------------------------------
    def describe(self) -> dict[str, str]:
        """How this arithmetic computes each kind of op (what a report names as used or assumed)."""
        if not self.emulating:
            return {
                "arithmetic": self.label,
                "matmul": f"native {self.dtype.name} ({self.backend})",
                "reduction": f"the engine's own order ({self.backend}, native {self.dtype.name})",
                "elementwise": f"native {self.dtype.name}",
            }
        method = getattr(self.ops, "matmul_method", None) or "operand-rounding approximation"
        if getattr(self.ops, "amax_scaling", None) is not None:
            method += (
                ", each operand scaled per tensor by fp8_max / amax before its cast and the product unscaled "
                "(Transformer Engine's current scaling, cuBLASLt's scale factors)"
            )
        if self._tree_sums:
            order = "pairwise tree, every partial sum rounded (assumed: the device's order is not published)"
        else:
            order = f"the engine's order ({self.backend}), additions as the profile's ADD (assumed: not published)"
        return {
            "arithmetic": self.label,
            "matmul": str(method),
            "reduction": order,
            "elementwise": "the device's elementwise arithmetic (numerics profile)",
        }

    # --- scatter-adds, running reductions, two-operand functions ---------------------------------
    def scatter_add(self, values: Any, index: Any, size: int) -> Any:
        """A last axis of length ``size`` with ``out[..., index[j]] += values[..., j]``: the device's
        scatter-add (its GATHER class). A chip whose compiler lowers it to a one-hot matrix product
        rounds the values to the matrix unit's input format and sums each target's terms in list
        order, every partial sum rounded to the unit's accumulation format (a traced ``index``
        cannot be ordered when traced: then the total is rounded once); elsewhere the engine's
        scatter-add, each target's terms in list order. ``index``: 1-D integers in range."""
        if self.emulating and _is_float(self.lower(values)):
            return self.ops.scatter_add(self._operand(values), index, size)
        return self.lift(self.ops.scatter_add(self.lower(values), index, size))

    def cumulative(self, op: str, x: Any, axis: int, reverse: bool = False) -> Any:
        """The running ``op`` (``add``, ``mul``, ``max``, ``min``) along ``axis``, each partial result
        the device's operation, in a stated order: a Kogge-Stone parallel prefix (round k combines
        each element's partial with the one ``2**k`` before it; log2(n) rounds), a log-depth scan as
        parallel hardware computes one (the order is assumed). Native arithmetic: the engine's own."""
        xp = self.xp
        raw = self.lower(x)
        axis %= max(raw.ndim, 1)
        if not self.emulating or not _is_float(raw):
            return self.lift(_native_cumulative(xp, op, raw, axis, reverse))
        combine = self.combiner(op)
        out = self.move(lambda v: xp.flip(v, axis), x) if reverse else x
        n, shift = raw.shape[axis], 1
        while shift < n:
            head = self.move(lambda v, s=shift: _take(xp, v, 0, s, axis), out)
            later = self.move(lambda v, s=shift: _take(xp, v, s, n, axis), out)
            earlier = self.move(lambda v, s=shift: _take(xp, v, 0, n - s, axis), out)
            tail = combine(earlier, later)
            out = self.move(lambda h, t: xp.concatenate([h, t], axis=axis), head, tail)
            shift *= 2
        return self.move(lambda v: xp.flip(v, axis), out) if reverse else out

    def atan2(self, y: Any, x: Any) -> Any:
        """``atan2(y, x)`` with the device's elementwise arithmetic of the EXP class (a stream of its
        own): the native function rounded as the class rounds. Assumed: where a profile gives the
        class an input format only ``y`` is rounded onto it (no modelled device sets one)."""
        if not self.emulating:
            return self.xp.arctan2(y, x)
        second = self.lower(self._operand(x))
        elementwise = getattr(self.ops, "elementwise", None)
        if elementwise is None:
            return self.lift(self.xp.arctan2(self.lower(y), second))
        return elementwise("atan2", lambda t: self.xp.arctan2(t, second), self._operand(y), OpClass.EXP)

    # --- internals -------------------------------------------------------------------------------
    def _operand(self, x: Any) -> Any:
        """An operand for an emulated operation: engine floats wrapped, 0-d constants as numbers
        (so a division by a constant can take the device's constant-reciprocal lowering)."""
        if isinstance(x, np.ndarray) and x.ndim == 0:
            return float(x) if x.dtype.kind == "f" else int(x)
        return self.lift(x)

    def _dtype_of(self, x: Any) -> Any:
        return getattr(self.lower(x), "dtype", self.dtype)


def native_arith(dtype: str, backend: str = "jax", *, label: str | None = None) -> Arith:
    """The host's native IEEE arithmetic in ``dtype`` on ``backend``: an audit's float64 reference
    and its fp32 floor (``label``: how reports name it; by default as those)."""
    from hwbench.core.engines.jax_engine import JaxOps
    from hwbench.core.engines.numpy_engine import NumpyOps

    ops = JaxOps(dtype) if backend == "jax" else NumpyOps(dtype)
    bits = np.dtype(dtype).itemsize * 8
    return Arith(ops, backend, label=label or ("float64 reference" if bits == 64 else f"cpu:fp{bits} (native IEEE)"))


def amax_scaled(x: np.ndarray, top: float) -> tuple[np.ndarray, np.ndarray]:
    """``(x * scale, 1 / scale)`` for the per-tensor scaling of an fp8 GEMM operand, in ``x``'s type
    (fp32 on the devices): ``scale = top / amax(x)`` rounded to that type, as Transformer Engine's
    ``compute_scale_from_amax`` computes it (1 where amax is 0 or not finite, the type's largest
    value where the quotient overflows); the cast to fp8 that follows is the matrix unit's."""
    t = x.dtype.type
    amax = t(np.max(np.abs(x))) if x.size else t(0)
    if amax == 0 or not np.isfinite(amax):
        scale = t(1)
    else:
        with np.errstate(over="ignore"):
            scale = t(top) / amax
        if np.isinf(scale):
            scale = t(np.finfo(x.dtype).max)
    return x * scale, np.asarray(t(1) / scale)


def _is_emu(x: Any) -> bool:
    from hwbench.accuracy.numerics.emulated_array import EmuArray

    return isinstance(x, EmuArray)


def _is_float(x: Any) -> bool:
    dt = getattr(x, "dtype", None)
    return dt is not None and np.dtype(dt).kind == "f"


def _integral(b: Any) -> int | None:
    """A constant exponent that is a whole number (as a Python int), else None."""
    if isinstance(b, bool):
        return None
    if isinstance(b, int):
        return b
    if isinstance(b, float | np.floating) or (isinstance(b, np.ndarray) and b.size == 1):
        v = float(np.asarray(b).reshape(-1)[0])
        if v.is_integer() and abs(v) <= 64:
            return int(v)
    return None


def _take(xp: Any, v: Any, start: int, stop: int, axis: int) -> Any:
    index = [slice(None)] * v.ndim
    index[axis] = slice(start, stop)
    return v[tuple(index)]


def _native_cumulative(xp: Any, op: str, x: Any, axis: int, reverse: bool) -> Any:
    """The engine's own running ``op`` along ``axis``."""
    if xp is np:
        ufunc = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[op]
        v = np.flip(x, axis) if reverse else x
        out = ufunc.accumulate(v, axis=axis)
        return np.flip(out, axis) if reverse else out
    from jax import lax

    fn = {"add": lax.cumsum, "mul": lax.cumprod, "max": lax.cummax, "min": lax.cummin}[op]
    return fn(x, axis=axis, reverse=reverse)
