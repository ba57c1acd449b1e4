"""The emulating ops namespace: run any kernel with a device's arithmetic, on a local engine.

:func:`emulating_ops` turns a :class:`~hwbench.accuracy.numerics.profile.NumericsProfile` into an
``ops_wrapper`` for :meth:`hwbench.core.engine.Engine.build`. The engine hands it its raw ops
(numpy or JAX); what comes back computes every operation with those raw ops and rounds the
result as the profile says for its op class. Kernels need no change: operators on the state go
through :class:`~hwbench.accuracy.numerics.emulated_array.EmuArray`, ``ops.*`` calls through
:class:`EmulatingOps`. Under ``jax.jit`` all of this runs at trace time; the compiled program is
the kernel plus integer rounding arithmetic that XLA fuses into the same loops.

Semantics worth knowing (also in ``docs/profiles.md``):

* Every *operation* is rounded, not every expression: ``a * b + c`` is a MUL rounding then an
  ADD rounding, as on hardware without fused multiply-add — unless the profile has an ``fma``
  entry (a contracting compiler): then a product feeding an addition or subtraction is fused
  with it and rounded once, exactly (:func:`~hwbench.accuracy.numerics.native_fp32.fused_multiply_add`;
  on JAX the host's FMA instruction where a start-up probe finds it exact, else binary64).
  On the JAX engine XLA:CPU itself contracts single-use native products (the reference does
  too); the numpy engine never does. Operands are first rounded to the
  op's ``input_format`` where one is set. Python float constants become carrier constants.
* Run-time values are the state (:meth:`EmulatingOps.load`) and the kernel's inputs
  (:meth:`EmulatingOps.load_inputs`): they change between calls, so every operator touching one
  is the device's arithmetic, and so is every ``ops.*`` call whatever its operands. Python
  operators among constants alone (Python numbers, the workload's parameters: fixed when the
  program is built, as the founding study baked its parameters into the TensorFlow graph) run
  natively, as the device's compiler folds them on the host; an audit report lists this and the
  other native parts (:mod:`hwbench.accuracy.numerics.native_parts`).
* ``x ** k`` with a Python ``int`` ``k`` is repeated multiplication (square-and-multiply, as
  XLA's ``integer_pow``; ``k < 0`` adds one division), any other power is a POW op; ``1 / x``
  is a DIV op. ``-x``, ``abs``, indexing, ``stack`` are exact.
* Stochastic rounding and error models draw counter-based random bits keyed by (seed, global
  step from ``begin_step``, op sequence number within the step, element index): reproducible,
  independent of evaluation order, and the same on numpy and JAX. Error models also key by the
  device and the function (exp, log, div), so no two share a pattern.
* ``special_values = "saturate"``: every result is saturated last (beyond the largest finite
  value of its op's format -> that value, NaN -> 0), and counted as an overflow / non-finite
  event of its op class. Where trace-time bounds prove a result in range, or never NaN, the
  saturation is left out or reduced to a clamp (:mod:`hwbench.accuracy.numerics.value_bounds`):
  the same values, fewer operations. The JAX engine traces such a step for a finite loaded state
  too (``FiniteStateOps`` in :mod:`hwbench.core.engine`) and runs it for calls that start finite.
* ``lowering="one-hot-matmul"`` (gather class): gather rounds its source to the
  ``matmul_input`` format and gathers exactly (one 1.0 per one-hot row, so the product is
  exact); scatter-add rounds values to ``matmul_input`` and sums each target's terms in
  ascending connection order, rounding every partial sum to ``matmul_accumulate`` — what a
  dot product of the one-hot row with the values computes when the zero terms are exact.
  Cost O(targets x max in-degree), never a dense matrix.
* ``lowering="constant-reciprocal"`` (div class): ``x / c`` with ``c`` a number known when the
  kernel is traced (and ``x`` not) is computed as ``x * fl(1 / c)``, a ``mul``-class product
  (it may then be contracted into an addition like any other), as XLA compiles it.
* Counters, per step and op class: the number of elements in which an ``overflow`` (a result
  from finite operands beyond the format's range: inf, or clamped), an ``underflow`` (a nonzero
  carrier result rounded to zero) or a ``nonfinite`` result (inf/NaN born in this op from finite
  operands) occurred; and ``store.stalled``: state elements the store rounding left unchanged
  although the computed update changed them. See :mod:`hwbench.accuracy.numerics.event_counts` for why
  they are elements-with-events and how they stay cheap.
"""

from __future__ import annotations

import contextlib
import numbers
import operator
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from hwbench.accuracy.numerics.emulated_array import EmuArray, unwrap
from hwbench.accuracy.numerics.emulation_backend import Backend, backend_for, flat_index, round_fixed_values
from hwbench.accuracy.numerics.event_counts import EventTally
from hwbench.accuracy.numerics.fast_rounding import StreamRounder, fast_rounder
from hwbench.accuracy.numerics.formats import FORMATS, FixedFormat, FloatFormat, RoundingMode, float_format
from hwbench.accuracy.numerics.native_fp32 import (
    FMA_ENV,
    clamp,
    fma_salt,
    fused_multiply_add,
    offset_ulps,
    offsets_from_bits,
    saturate,
    stream_key,
)
from hwbench.accuracy.numerics.profile import CARRIER_FORMATS, ErrorModel, NumericsProfile, same_float_format
from hwbench.accuracy.numerics.random_bits import element_words, op_bits
from hwbench.accuracy.numerics.rounding import round_float
from hwbench.accuracy.numerics.value_bounds import EXP_SLACK, Bounds, constant_bounds, hull, result_bounds, rounded
from hwbench.core.errors import UsageError
from hwbench.core.layout import neighbour_table as segment_table
from hwbench.core.ops import OpClass, Ops

__all__ = [
    "COUNTER_NAMES",
    "EVENTS",
    "EmulatingOps",
    "EmulationWrapper",
    "Rule",
    "emulating_ops",
    "representable_in",
    "resolve_rules",
    "segment_table",
]

EVENTS = ("overflow", "underflow", "nonfinite")
COUNTER_NAMES: tuple[str, ...] = (*(f"{c.value}.{e}" for c in OpClass for e in EVENTS), "store.stalled")
_M32 = 0xFFFFFFFF
_WORDS_DOMAIN = 0xB5297A4D  # separates the step stream's element words from every rounding key
_IDENTITY = object()  # marks a rounding onto the carrier's own format (a no-op)
_NEAREST = RoundingMode.NEAREST_EVEN


@dataclass(frozen=True)
class Rule:
    """One op class's arithmetic, resolved against the engine's carrier dtype.

    ``fmt`` / ``input_fmt`` are None where rounding would not change a carrier value (the
    format *is* the carrier's), so native classes cost nothing. ``max_value`` is the range
    limit that overflow counting compares with.
    """

    cls: OpClass
    fmt: FloatFormat | FixedFormat | None
    mode: RoundingMode = _NEAREST
    random_bits: int = 32
    input_fmt: FloatFormat | None = None
    error: ErrorModel | None = None
    error_fmt: FloatFormat | None = None
    lowering: str = "native"
    max_value: float = float("inf")

    @property
    def rounds(self) -> bool:
        """Whether results of this class are changed by rounding or an error model."""
        return self.fmt is not None or self.error is not None

    @property
    def active(self) -> bool:
        """Whether the class differs from native arithmetic at all (results or operands)."""
        return self.rounds or self.input_fmt is not None


def _carrier_of(dtype: Any) -> str:
    try:
        name: str = np.dtype(dtype).name
    except TypeError:
        name = str(getattr(dtype, "name", dtype))
    if name not in CARRIER_FORMATS:
        raise UsageError(f"numerics emulation carries values in float32 or float64; the engine runs {name}")
    return name


def resolve_rules(profile: NumericsProfile, carrier: str) -> dict[OpClass, Rule]:
    """Every op class's rule for an engine computing in ``carrier``.

    An engine wider than the profile's carrier (float64 running a float32 profile) rounds the
    classes the profile leaves native to the profile's carrier, so they stay e.g. IEEE fp32.
    A narrower one cannot carry the profile's formats and is refused.
    """
    if carrier == "float32" and profile.carrier == "float64":
        raise UsageError(
            f"profile '{profile.name}' needs a float64 carrier (its formats do not fit float32); "
            "build the engine with dtype='float64'"
        )
    native = FORMATS[CARRIER_FORMATS[carrier]]
    assert isinstance(native, FloatFormat)
    base = FORMATS[CARRIER_FORMATS[profile.carrier]]
    default_fmt = None if carrier == profile.carrier else base
    rules: dict[OpClass, Rule] = {}
    for cls in OpClass:
        op = profile.ops.get(cls)
        if op is None:
            rules[cls] = Rule(cls, default_fmt, max_value=(default_fmt or native).max_value)
            continue
        fmt = op.resolved_format()
        inp = op.resolved_input_format()
        rules[cls] = Rule(
            cls,
            fmt=None if same_float_format(fmt, native) else fmt,
            mode=op.rounding,
            random_bits=op.random_bits,
            input_fmt=None if inp is None or same_float_format(inp, native) else inp,
            error=op.error,
            error_fmt=fmt if op.error is not None and isinstance(fmt, FloatFormat) else None,
            lowering=op.lowering,
            max_value=fmt.max_value,
        )
    return rules


def contracts(profile: NumericsProfile, rules: dict[OpClass, Rule], carrier: str) -> bool:
    """Whether ``a * b + c`` is fused into one rounding: the profile has an ``fma`` entry, the
    carrier is fp32 (the exact fusion needs binary64 beside it) and products and sums are the
    carrier's own IEEE operations (a device that rounds them to a narrower format is not
    modelled as contracting)."""
    if OpClass.FMA not in profile.ops or carrier != "float32" or profile.carrier != "float32":
        return False
    return not rules[OpClass.MUL].active and not rules[OpClass.ADD].active


class EmulationWrapper:
    """The ``ops_wrapper`` :func:`emulating_ops` returns; engines call it on their raw ops."""

    def __init__(self, profile: NumericsProfile, *, counters: bool = True, seed: int = 0) -> None:
        self.profile = profile
        self.counters = counters
        self.seed = int(seed)

    def __call__(self, raw: Ops) -> Ops:
        carrier = _carrier_of(raw.dtype)
        rules = resolve_rules(self.profile, carrier)
        changes = self.profile.special_values != "ieee" or contracts(self.profile, rules, carrier)
        if not changes and not any(rule.active for rule in rules.values()):
            return raw  # nothing to emulate: zero overhead
        return EmulatingOps(
            raw, self.profile, rules, backend_for(raw.name), carrier, counters=self.counters, seed=self.seed
        )

    def __repr__(self) -> str:
        return f"emulating_ops({self.profile.name!r}, counters={self.counters}, seed={self.seed})"


def emulating_ops(profile: NumericsProfile, *, counters: bool = True, seed: int = 0) -> EmulationWrapper:
    """An ``ops_wrapper`` that makes an engine compute with ``profile``'s arithmetic.

    ``counters`` turns the per-step event counts on (a few elementwise operations per op and a
    few reductions per step);
    ``seed`` keys stochastic rounding and error models (32 bits are used). A profile that
    changes nothing on the engine's dtype gives the engine's raw ops back unchanged.
    """
    return EmulationWrapper(profile, counters=counters, seed=seed)


class EmulatingOps:
    """An :class:`~hwbench.core.ops.Ops` namespace that rounds like a device, and SteppedOps.

    Engines call ``begin_step(k)``, ``load(state)``, the kernel step, ``store(state)``,
    ``end_step()`` in that order. ``load`` wraps the state in EmuArrays; ``store`` unwraps it,
    applies the STORE rounding and detects stalled updates; ``end_step`` returns this step's
    counts as an int32 vector ordered as ``counter_names``.

    A rounding whose input is already representable in the target format is skipped (it could
    not change a value, in any mode): EmuArrays carry the format of their last rounding, so e.g.
    storing the results of fp16 additions into an fp16 state costs nothing.
    """

    emulated = True

    def __init__(
        self,
        raw: Ops,
        profile: NumericsProfile,
        rules: dict[OpClass, Rule],
        backend: Backend,
        carrier: str,
        *,
        counters: bool = True,
        seed: int = 0,
    ) -> None:
        self.raw = raw
        self.profile = profile
        self.rules = rules
        self.name = raw.name
        self.dtype = raw.dtype
        self.counter_names: tuple[str, ...] = COUNTER_NAMES if counters else ()
        self._be = backend
        self._carrier = carrier
        self._np_dtype = np.dtype(carrier)
        self._tally = EventTally(backend.xp, self.counter_names) if counters else None
        self._seed = int(seed) & _M32
        # Operands from outside the state (parameters, inputs) when the engine is wider than
        # the profile's carrier: round them as the device would have stored them.
        wide = carrier != profile.carrier
        self._operand_fmt = float_format(CARRIER_FORMATS[profile.carrier]) if wide else None
        self._step: Any = 0
        self._op = 0
        self._fmas = 0
        self._prev: Any = None
        self._tables: dict[int, tuple[Any, np.ndarray | None]] = {}
        self._fast: dict[tuple[FloatFormat, RoundingMode], Any] = {}
        # this step's element words (stochastic rounding's and the error models' stream), per
        # (shape, index offset)
        self._words: dict[tuple[tuple[int, ...], int], Any] = {}
        self._native = float_format(CARRIER_FORMATS[carrier])
        # position of the current array's first element in the array it is a part of (non-zero
        # only while a fused gather-map-scatter maps one pass): keys counter-based random bits
        self._index_offset = 0
        self._contracts = contracts(profile, rules, carrier)
        self._saturating = profile.special_values == "saturate"
        # FiniteStateOps (hwbench.core.engine): set by a compiling engine while it traces the step
        # for calls whose initial state is finite; read back after tracing.
        self.assume_finite_state = False
        self.finite_state_kept = False

    def trace_key(self) -> dict[str, Any] | None:
        """What shapes the programs traced with these ops: the raw namespace's key, the profile
        (its rules follow from it and the carrier), counters and the stream seed (the program
        cache's key; None when the raw ops have none). Read by
        :func:`hwbench.core.engines.program_cache.trace_key_of`. A new constructor argument must
        join it (tests/engines/test_program_cache.py fails until the test names it)."""
        from hwbench.core.engines.program_cache import trace_key_of

        raw = trace_key_of(self.raw)
        if raw is None:
            return None
        return {
            "ops": "emulating",
            "raw": raw,
            "profile": self.profile.to_json(),
            "carrier": self._carrier,
            "counters": list(self.counter_names),
            "seed": self._seed,
            # the FMA route: the variable forces one; "auto" follows the start-up probe, a
            # function of the host CPU and jaxlib, both in the key already (not run here: a hit
            # would pay its ~0.3 s)
            "fma": os.environ.get(FMA_ENV, "auto"),
        }

    @property
    def contracts(self) -> bool:
        """Whether a product feeding an addition is fused with it (the profile's ``fma`` entry)."""
        return self._contracts

    @property
    def finite_state_helps(self) -> bool:
        """Whether a finite loaded state shortens the step: under a saturating profile every op
        reading the state would otherwise need the full saturation (the state could hold NaN)."""
        return self._saturating

    def __getattr__(self, name: str) -> Any:
        # Engine-specific extras of the raw namespace (outside the Ops interface) stay reachable;
        # they compute natively.
        if name == "raw":
            raise AttributeError(name)
        return getattr(self.raw, name)

    # --- SteppedOps ------------------------------------------------------------------------
    def begin_step(self, step: Any) -> None:
        self._step = step
        self._op = 0
        self._words = {}
        self._fmas = 0
        if self._tally is not None:
            self._tally.reset()

    @contextlib.contextmanager
    def stream_scope(self, step: Any, salt: int) -> Iterator[None]:
        """Random streams of their own while a loop body or a branch is traced (the op-level
        evaluator's control flow): keyed by the enclosing step, ``salt`` (which body) and ``step``
        (the iteration), from op 0; the enclosing stream continues where it was afterwards."""
        xp = self._be.xp
        saved = (self._step, self._op, self._words, self._fmas)
        with np.errstate(over="ignore"):
            outer = xp.asarray(self._step, dtype=xp.uint32) * xp.asarray(0x9E3779B1, dtype=xp.uint32)
            inner = xp.asarray(step, dtype=xp.uint32) + xp.asarray((salt * 0x85EBCA6B) & _M32, dtype=xp.uint32)
            self.begin_step(outer ^ inner)
        try:
            yield
        finally:
            self._step, self._op, self._words, self._fmas = saved

    def end_step(self) -> Any:
        if self._tally is None:
            return self._be.xp.zeros((0,), dtype=self._be.xp.int32)
        return self._tally.totals(self._step)

    def load(self, state: Any) -> Any:
        raw = unwrap(state)
        self._prev = raw if self._tally is not None and self.rules[OpClass.STORE].rounds else None
        if self.assume_finite_state:  # every element a finite number of the carrier: bounds
            limit = float(np.finfo(self._np_dtype).max)
            return _map_tree(lambda x: EmuArray(x, self, None, (-limit, limit) if self._be.is_float(x) else None), raw)
        return _map_tree(lambda x: EmuArray(x, self), raw)

    def load_inputs(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The kernel's inputs as emulated arrays (:class:`hwbench.core.engine.InputOps`).

        Inputs change between calls, so no compiler folds arithmetic on them: every operator
        touching one is the device's, also where the state is not involved (a parameter times a
        stimulus current). Integer inputs (indices) are exact and stay as they are.
        """
        return {k: EmuArray(self._from_engine(v), self) if self._be.is_float(v) else v for k, v in inputs.items()}

    def store(self, state: Any) -> Any:
        rule = self.rules[OpClass.STORE]
        prev, self._prev = self._prev, None
        if self.assume_finite_state:
            self.finite_state_kept = self._stores_finite(rule, state)
        if not rule.rounds:
            return unwrap(state)
        if isinstance(state, (tuple, list)):
            olds = list(prev) if isinstance(prev, (tuple, list)) and len(prev) == len(state) else [None] * len(state)
            return type(state)(self._store_one(rule, x, p) for x, p in zip(state, olds, strict=True))
        return self._store_one(rule, state, prev)

    def _stores_finite(self, rule: Rule, state: Any) -> bool:
        """Whether the stored state is finite whenever the loaded one was: every part a result of
        this namespace with bounds (a saturated op's: never NaN, within the range), and a store
        rounding that cannot leave the range (onto a float format whose largest value bounds them)."""
        parts = list(state) if isinstance(state, (tuple, list)) else [state]
        if not all(isinstance(p, EmuArray) and p.bounds is not None for p in parts):
            return False
        if not rule.rounds:
            return True
        fmt = rule.fmt
        if rule.error is not None or not isinstance(fmt, FloatFormat):
            return False
        return all(max(-p.bounds[0], p.bounds[1]) <= fmt.max_value for p in parts if p.bounds is not None)

    def _store_one(self, rule: Rule, x: Any, prev: Any) -> Any:
        value, tag = _split(x)
        if not self._be.is_float(value):
            return value
        after, _ = self._round_result(rule, value, tag)
        if self._tally is not None and after is not value:
            self._count(rule, value, after, (value,))
            if prev is not None and getattr(prev, "shape", None) == value.shape:
                stalled = (after == prev) & (value != prev)
                self._tally.record(("store.stalled",), (stalled,), tuple(value.shape))
        return after

    # --- the Ops interface -------------------------------------------------------------------
    def asarray(self, x: Any) -> EmuArray:
        if isinstance(x, EmuArray):
            return x
        return EmuArray(self._from_engine(self.raw.asarray(x)), self)

    def exp(self, x: Any) -> EmuArray:
        return self._unary(OpClass.EXP, self.raw.exp, x, "exp")

    def log(self, x: Any) -> EmuArray:
        return self._unary(OpClass.EXP, self.raw.log, x, "log")

    def sqrt(self, x: Any) -> EmuArray:
        return self._unary(OpClass.POW, self.raw.sqrt, x, "sqrt")

    def power(self, x: Any, y: Any) -> EmuArray:
        if isinstance(y, int) and not isinstance(y, bool):
            return self._integer_power(x, y)
        return self.arith(OpClass.POW, self.raw.power, x, y)

    def abs(self, x: Any) -> EmuArray:
        value, tag = _split(x)
        return EmuArray(self.raw.abs(self._value(value)), self, tag)

    def minimum(self, x: Any, y: Any) -> EmuArray:
        return self._select(self.raw.minimum, x, y)

    def maximum(self, x: Any, y: Any) -> EmuArray:
        return self._select(self.raw.maximum, x, y)

    def where(self, cond: Any, x: Any, y: Any) -> EmuArray:
        c = unwrap(cond)
        return self._select(lambda a, b: self.raw.where(c, a, b), x, y)

    def greater(self, x: Any, y: Any) -> EmuArray:
        return self.arith(OpClass.COMPARE, self.raw.greater, x, y)

    def less(self, x: Any, y: Any) -> EmuArray:
        return self.arith(OpClass.COMPARE, self.raw.less, x, y)

    def gather(self, x: Any, index: Any) -> EmuArray:
        rule = self.rules[OpClass.GATHER]
        v, tag = self._operand(x)
        idx = unwrap(index)
        if rule.lowering == "one-hot-matmul":
            # One-hot row . source: the source enters the matrix unit in its input format; one
            # nonzero product per row, so the accumulation only rounds to its own format.
            src, tag = self._round_result(self.rules[OpClass.MATMUL_INPUT], v, tag)
            before, tag = self._round_result(self.rules[OpClass.MATMUL_ACCUMULATE], self.raw.gather(src, idx), tag)
            before = self._one_hot_contamination(src, before)
        else:
            before = self.raw.gather(self._in(rule, v, tag), idx)
            tag = _tag_in(rule, tag)
        return self._finish(rule, before, (v,), elementwise=False, tag=tag, exact=True)

    def scatter_add(self, values: Any, index: Any, size: int) -> EmuArray:
        rule = self.rules[OpClass.GATHER]
        v, tag = self._operand(values)
        idx = unwrap(index)
        if rule.lowering == "one-hot-matmul":
            src, _ = self._round_result(self.rules[OpClass.MATMUL_INPUT], v, tag)
            before = self._one_hot_sum(src, idx, size)
        else:
            before = self.raw.scatter_add(self._in(rule, v, tag), idx, size)
        return self._finish(rule, before, (v,), elementwise=False)

    def gather_map_scatter(self, message: Callable[[Any, Any], Any], x: Any, src: Any, tgt: Any, size: int) -> Any:
        """:func:`hwbench.core.ops.gather_map_scatter`: fused into the engine's pass loop where
        :mod:`hwbench.accuracy.numerics.fused_exchange` can keep every bit, else the composition."""
        from hwbench.accuracy.numerics.fused_exchange import fused_gather_map_scatter

        fused = fused_gather_map_scatter(self, message, x, src, tgt, size)
        if fused is not None:
            return fused
        return self.scatter_add(message(self.gather(x, src), self.gather(x, tgt)), tgt, size)

    def sum(self, x: Any, axis: int) -> EmuArray:
        rule = self.rules[OpClass.ADD]
        v, tag = self._operand(x)
        return self._finish(rule, self.raw.sum(self._in(rule, v, tag), axis), (v,), elementwise=False)

    def matmul(self, a: Any, b: Any, precision: str | None = None) -> EmuArray:
        return self._product(self.raw.matmul, a, b)

    def conv2d(self, x: Any, w: Any, padding: tuple[int, int], precision: str | None = None) -> EmuArray:
        """A convolution rounds like a matrix product of patches: operands, then the sums."""
        return self._product(lambda p, q: self.raw.conv2d(p, q, padding), x, w)

    def elementwise(self, function: str, fn: Callable[[Any], Any], x: Any, cls: OpClass = OpClass.EXP) -> EmuArray:
        """``fn(x)`` (a native elementwise function of the raw engine) computed with the arithmetic
        of op class ``cls``: operands in its input format, the result rounded, perturbed by its
        error model, saturated, counted. ``function`` names the error model's random stream, so
        tanh and erf of one class draw patterns of their own (the op-level evaluator's functions;
        ``exp``, ``log`` and ``sqrt`` are this with their own names)."""
        return self._unary(cls, fn, x, function)

    def bilinear(self, fn: Callable[[Any, Any], Any], a: Any, b: Any) -> EmuArray:
        """Any bilinear product of the raw engine (a convolution, an einsum) on the matrix unit as
        the profile has it: operands rounded to ``matmul_input``, one native product, its result
        rounded as ``matmul_accumulate`` (the operand-rounding approximation :meth:`matmul` uses)."""
        return self._product(fn, a, b)

    def _product(self, fn: Callable[[Any, Any], Any], a: Any, b: Any) -> EmuArray:
        """Operands rounded once (O(inputs)), one native product, the result rounded as accumulated."""
        inp, acc = self.rules[OpClass.MATMUL_INPUT], self.rules[OpClass.MATMUL_ACCUMULATE]
        (va, ta), (vb, tb) = self._operand(a), self._operand(b)
        ra, ta = self._round_result(inp, va, ta)
        rb, tb = self._round_result(inp, vb, tb)
        before = fn(self._in(acc, ra, ta), self._in(acc, rb, tb))
        return self._finish(acc, before, (va, vb), elementwise=False)

    def stack(self, xs: list[Any]) -> EmuArray:
        parts = [self._operand(x) for x in xs]
        tags = {tag for _, tag in parts}
        bounds = hull(*(x.bounds if isinstance(x, EmuArray) else None for x in xs))
        return EmuArray(self.raw.stack([v for v, _ in parts]), self, tags.pop() if len(tags) == 1 else None, bounds)

    def zeros_like(self, x: Any) -> EmuArray:
        return EmuArray(self.raw.zeros_like(self._value(x)), self)

    def astype(self, x: Any, dtype: Any) -> EmuArray:
        return EmuArray(self.raw.astype(self._value(x), dtype), self)

    # --- used by EmuArray ----------------------------------------------------------------------
    def is_operand(self, x: Any) -> bool:
        """Whether an operator may combine ``x`` with an emulated array."""
        return isinstance(x, (EmuArray, numbers.Number)) or self._be.is_array(x)

    def arith(self, cls: OpClass, fn: Callable[[Any, Any], Any], a: Any, b: Any) -> EmuArray:
        """``fn(a, b)`` computed with raw arrays and rounded as op class ``cls``.

        Where the profile contracts (an ``fma`` entry), a product feeding an addition or a
        subtraction is fused with it: one rounding (:meth:`_contract`).
        """
        if self._contracts and cls is OpClass.ADD:
            fused = self._contract(fn, a, b)
            if fused is not None:
                return fused
        rule = self.rules[cls]
        if rule.lowering == "constant-reciprocal" and _is_constant(b) and not _is_constant(a):
            return self.arith(OpClass.MUL, operator.mul, a, self._reciprocal(b))
        (va, ta), (vb, tb) = self._operand(a), self._operand(b)
        ia, ib = self._in(rule, va, ta), self._in(rule, vb, tb)
        bounds = None
        if self._saturating:
            bounds = result_bounds(fn, self._bounds(rule, a), self._bounds(rule, b), same=a is b)
        out = self._finish(rule, fn(ia, ib), (va, vb), function=_FUNCTION_OF.get(fn, cls.value), bounds=bounds)
        if self._contracts and cls is OpClass.MUL and fn is operator.mul:
            out.prod = (ia, ib)
        return out

    # --- internals -----------------------------------------------------------------------------
    def _reciprocal(self, c: Any) -> Any:
        """``1 / c`` rounded to the profile's carrier type, as XLA's ``InvertConstant`` computes it
        in the element type (the constant itself first stored in that type)."""
        dt = np.dtype(self.profile.carrier)
        with np.errstate(divide="ignore"):
            return np.asarray(1, dt) / np.asarray(c, dt)

    def _contract(self, fn: Callable[[Any, Any], Any], a: Any, b: Any) -> EmuArray | None:
        """``a * b + c`` (or ``- c``, ``c +``, ``c -``) as one fused multiply-add, or None.

        The first operand's product is fused when both are products (LLVM's DAG combiner tries
        the left operand first); a product with several uses is fused at each (NVPTX, like every
        target with aggressive FMA fusion, does not require a single use).
        """
        if fn is not operator.add and fn is not operator.sub:
            return None
        first = isinstance(a, EmuArray) and a.prod is not None
        if not first and not (isinstance(b, EmuArray) and b.prod is not None):
            return None
        prod, other = (a, b) if first else (b, a)
        assert isinstance(prod, EmuArray) and prod.prod is not None
        x, y = prod.prod
        c = self._value(other)
        if fn is operator.sub:
            if first:
                c = -c  # a * b - c
            else:
                x = -x  # c - a * b = (-a) * b + c
        fused = fused_multiply_add(self._be.xp, x, y, c, salt=self._fma_salt())
        inputs = (prod.raw, self._value(other))
        return self._finish(self.rules[OpClass.FMA], fused, inputs, function="fma")

    def _fma_salt(self) -> Any:
        """The next contraction's salt for the host-FMA route (``native_fp32.fma_salt``), or None
        (the binary64 route) on numpy and where the step is not a traced value: a constant salt
        would be folded away, and with it what keeps the product apart."""
        if not self._traced_step():
            return None
        self._fmas += 1
        return fma_salt(self._step, self._fmas)

    def _unary(self, cls: OpClass, fn: Callable[[Any], Any], x: Any, function: str = "") -> EmuArray:
        rule = self.rules[cls]
        v, tag = self._operand(x)
        bounds = result_bounds("exp", self._bounds(rule, x)) if self._saturating and function == "exp" else None
        return self._finish(
            rule, fn(self._in(rule, v, tag)), (v,), function=function or cls.value, bounds=bounds, slack=EXP_SLACK
        )

    def _select(self, fn: Callable[[Any, Any], Any], x: Any, y: Any) -> EmuArray:
        """minimum / maximum / where (COMPARE): the result is one of the operands, exactly."""
        rule = self.rules[OpClass.COMPARE]
        (vx, tx), (vy, ty) = self._operand(x), self._operand(y)
        before = fn(self._in(rule, vx, tx), self._in(rule, vy, ty))
        tag = _common(_tag_in(rule, tx), _tag_in(rule, ty))
        bounds = hull(self._bounds(rule, x), self._bounds(rule, y)) if self._saturating else None
        return self._finish(rule, before, (vx, vy), tag=tag, exact=True, bounds=bounds)

    def _integer_power(self, x: Any, k: int) -> EmuArray:
        """``x ** k`` as XLA's ``integer_pow`` computes it: square-and-multiply, MUL-rounded."""
        base = x if isinstance(x, EmuArray) else EmuArray(self._value(x), self)
        if k == 0:
            return EmuArray(self.raw.zeros_like(base.raw) + 1, self)
        n, acc = abs(k), None
        while n:
            if n & 1:
                acc = base if acc is None else acc * base
            n >>= 1
            if n:
                base = base * base
        assert acc is not None
        return 1 / acc if k < 0 else acc

    def _operand(self, x: Any) -> tuple[Any, FloatFormat | None]:
        """The raw carrier value of an operand and the format it is known to lie in."""
        if isinstance(x, EmuArray):
            return x.raw, x.fmt
        return self._value(x), None

    def _value(self, x: Any) -> Any:
        """The raw carrier value of an operand (before the op's input rounding)."""
        if isinstance(x, EmuArray):
            return x.raw
        if isinstance(x, float | np.floating):
            c = np.asarray(x, dtype=self._np_dtype)
            if self._operand_fmt is not None:
                c = round_float(c, self._operand_fmt)
            return c
        if isinstance(x, numbers.Number):
            return x  # int / bool: exact, and kept weakly typed so it takes the array's dtype
        return self._from_engine(x)

    def _from_engine(self, x: Any) -> Any:
        if self._operand_fmt is not None and self._be.is_float(x):
            return round_float(x, self._operand_fmt)
        return x

    def _in(self, rule: Rule, x: Any, tag: FloatFormat | None = None) -> Any:
        """Round an operand to the op's input format, where it has one."""
        fmt = rule.input_fmt
        if fmt is None or not self._be.is_float(x) or (tag is not None and representable_in(tag, fmt)):
            return x
        return self._round_to(x, fmt, rule.mode, rule.random_bits)

    def _finish(
        self,
        rule: Rule,
        before: Any,
        inputs: tuple[Any, ...],
        *,
        elementwise: bool = True,
        tag: FloatFormat | None = None,
        exact: bool = False,
        function: str = "",
        bounds: Bounds | None = None,
        slack: float = 0.0,
    ) -> EmuArray:
        """Round an op's carrier result per ``rule``, count its events, wrap it.

        ``exact``: the operation itself only moves or selects values (gather, where, minimum),
        so it has events to count only when its result is rounded. ``function`` names the
        error model's stream (exp and log of one class draw different patterns). Under a
        saturating profile the result is saturated last (:meth:`_round_and_saturate`); ``bounds`` is the
        interval of the op's exact result where its operands' bounds give one (``slack``: the
        native op's own relative error), so that the saturation can be shortened.
        """
        if not self._be.is_float(before):  # comparisons: booleans are exact
            return EmuArray(before, self)
        function = function or rule.cls.value
        if not self._saturating:
            after, tag = self._round_result(rule, before, tag, function=function)
            known = None
        else:
            after, tag, known = self._round_and_saturate(rule, before, tag, function, bounds, slack)
        if self._tally is not None and (rule.rounds or not exact or self._saturating):
            self._count(rule, before, after, inputs, elementwise=elementwise)
        return EmuArray(after, self, tag, known)

    def _round_and_saturate(
        self, rule: Rule, before: Any, tag: FloatFormat | None, function: str, exact: Bounds | None, slack: float
    ) -> tuple[Any, FloatFormat | None, Bounds]:
        """An op's result rounded and then saturated (:func:`native_fp32.saturate`): the values,
        their format tag, and the bounds of the saturated values.

        With the exact result's bounds (never NaN), the rounded result's bounds decide: a clamp of
        the side(s) that may be out of range, without the NaN select, or at most one select where
        neither may be (see below). Error models and fixed-point formats move values by more than
        a rounding, and a format without infinity turns an overflow into NaN: those keep the full
        saturation. The values are the full saturation's, bit for bit, and so are these savings:

        * the rounding's NaN guard (a select keeping a NaN's bits) is left out when no NaN can
          reach it (bounds) or when the full saturation replaces every NaN by 0 anyway, then
          tested on the unrounded result: a rounded number is never NaN in a format with
          infinities or a saturating overflow;
        * an in-range result keeps one select only where nothing else stands between the op
          and the next one (see :meth:`_saturation_sides`).
        """
        limit = min(rule.max_value, float(np.finfo(self._np_dtype).max))
        sides = self._saturation_sides(rule, exact, slack)
        fmt = rule.fmt
        numbers_stay = (
            rule.error is None and isinstance(fmt, FloatFormat) and (fmt.has_inf or fmt.overflow == "saturate")
        )
        after, tag = self._round_result(rule, before, tag, function=function, nan_guard=not numbers_stay)
        if sides is None:
            nan_of = before if numbers_stay else after  # unguarded: NaN lanes are the unrounded result's
            return saturate(self._be.xp, after, rule.max_value, nan_of=nan_of), tag, (-limit, limit)
        lower, upper, known = sides
        # At least one select stays where the result is in range and was not rounded: the compiler
        # must not see two float ops side by side where the full saturation separated them
        # (XLA:CPU would contract a product into the next addition, or merge two divisions, and
        # change the bits). A rounding's integer operations (bit casts, shifts, masks) already
        # separate them, so after one the select is left out.
        if lower or upper or after is before:
            after = clamp(self._be.xp, after, rule.max_value, lower=lower, upper=upper or not lower)
        return after, tag, known

    def _saturation_sides(self, rule: Rule, exact: Bounds | None, slack: float) -> tuple[bool, bool, Bounds] | None:
        """Which sides of the range a result with exact bounds ``exact`` may leave after its
        rounding (lower, upper), and its bounds once saturated; None where it needs the full
        saturation (unknown bounds, error models, fixed-point formats, overflow to NaN)."""
        if exact is None or rule.error is not None or isinstance(rule.fmt, FixedFormat):
            return None
        limit = min(rule.max_value, float(np.finfo(self._np_dtype).max))
        fmt = rule.fmt if isinstance(rule.fmt, FloatFormat) else self._native
        bits = min(fmt.mantissa_bits, self._native.mantissa_bits)
        lo, hi = rounded(exact, bits, max(fmt.min_normal, self._native.min_normal), slack=slack)
        lower, upper = lo < -limit, hi > limit
        if (lower or upper) and not fmt.has_inf and fmt.overflow != "saturate":  # overflow gives NaN
            return None
        return lower, upper, (min(max(lo, -limit), limit), max(min(hi, limit), -limit))

    def _bounds(self, rule: Rule, x: Any) -> Bounds | None:
        """The bounds of an operand as the op sees it (unknown after an input rounding)."""
        if rule.input_fmt is not None:
            return None
        if isinstance(x, EmuArray):
            return x.bounds
        if isinstance(x, (numbers.Number, np.ndarray, np.generic)):  # concrete: look at the values
            return constant_bounds(self._value(x))
        return None  # a traced engine array

    def _next_seed(self, domain: int, extra: int = 0) -> int:
        """A 64-bit key for the next rounding of this step: (run seed, op sequence number)."""
        k = self._op
        self._op += 1
        return (((self._seed ^ extra) & _M32) << 32) | ((k * 4 + domain) & _M32)

    def _round_to(
        self, x: Any, fmt: FloatFormat | FixedFormat, mode: RoundingMode, random_bits: int, *, nan_guard: bool = True
    ) -> Any:
        """``x`` rounded onto ``fmt``; ``nan_guard=False``: the caller replaces NaN lanes itself (a
        short rounding may then leave out the select that keeps a NaN's bits)."""
        seed = self._next_seed(0)  # consumed even when skipped: later roundings keep their keys
        if isinstance(fmt, FixedFormat):
            return round_fixed_values(self._be.xp, x, fmt, seed=seed, counter=self._step)
        key = (fmt, mode)
        if key not in self._fast:
            same = same_float_format(fmt, self._native)
            self._fast[key] = _IDENTITY if same else fast_rounder(fmt, mode, self._carrier)
        fast = self._fast[key]
        if fast is _IDENTITY:  # onto the carrier's own format: every value stays, in every mode
            return x
        if fast is None:
            return round_float(x, fmt, mode, seed=seed, counter=self._step, random_bits=random_bits)
        index = self._flat_index(x.shape) if mode is RoundingMode.STOCHASTIC else None
        extra: dict[str, Any] = {"nan_guard": nan_guard}
        if isinstance(fast, StreamRounder):
            extra["rand"] = self._stream_bits(x.shape, seed)
        return fast(self._be.xp, x, seed=seed, counter=self._step, random_bits=random_bits, index=index, **extra)

    def _stream_bits(self, shape: tuple[int, ...], seed: int) -> Any:
        """32 random bits per element for the rounding (or error-model offset) keyed ``seed``: the step's element words
        (hashed once per step and shape from the run seed, the step and the element index) times
        the operation's own odd multiplier (:func:`random_bits.op_bits`): one multiply per
        rounding. Hashing every element for every rounding cost more than the rounding itself
        (docs/numerics.md, "Stochastic rounding and the random bits")."""
        key = (tuple(shape), self._index_offset)
        words = self._words.get(key)
        if words is None:
            stream = ((self._seed ^ _WORDS_DOMAIN) << 32) | 2  # (domain 2: no _next_seed key is this)
            index, xp = self._flat_index(shape), self._be.xp
            words = self._words[key] = self._once_per_step(lambda: element_words(stream, self._step, index, xp))
        return op_bits(words, seed, self._be.xp)

    def _once_per_step(self, compute: Callable[[], Any]) -> Any:
        """``compute()``, evaluated once per step where the step is compiled (JAX).

        XLA:CPU copies a cheap elementwise producer into every fusion that consumes it: the step's
        element words, a few integer operations per element, were hashed again inside each of
        the ~40 fusions of an io-ehh step that read them (issue 31). A conditional's result is
        computed once and read from memory; both branches compute the words, so the predicate
        (true for every step index from 0, and not foldable) never changes a value.
        """
        if not self._traced_step():
            return compute()
        from jax import lax

        step = self._be.xp.asarray(self._step)
        return lax.cond(step >= 0, compute, compute)

    def _traced_step(self) -> bool:
        """Whether the step is a traced JAX value (a compiled step), not a number."""
        if self._be.xp is np:
            return False
        import jax

        return isinstance(self._step, jax.core.Tracer)

    def _flat_index(self, shape: tuple[int, ...]) -> Any:
        """Each element's key for counter-based random bits: its flat index in the whole array."""
        index = flat_index(self._be.xp, shape)
        if self._index_offset:
            index = index + self._be.xp.asarray(self._index_offset, dtype=index.dtype)
        return index

    def _random_bits_take_index(self) -> bool:
        """Whether every stochastic rounding keys its random bits by :meth:`_flat_index`.

        The general ``round_float`` and fixed-point paths number the elements themselves.
        """
        for rule in self.rules.values():
            for fmt in (rule.fmt, rule.input_fmt):
                if fmt is None or rule.mode is not RoundingMode.STOCHASTIC:
                    continue
                if isinstance(fmt, FixedFormat) or fast_rounder(fmt, rule.mode, self._carrier) is None:
                    return False
        return True

    def _round_result(
        self, rule: Rule, x: Any, tag: FloatFormat | None = None, *, function: str = "", nan_guard: bool = True
    ) -> tuple[Any, FloatFormat | None]:
        """``x`` rounded to the rule's result format, and the format the result is known to lie in.

        ``x`` itself (the same object) comes back where nothing changes it; ``nan_guard``: see
        :meth:`_round_to`.
        """
        if not rule.rounds or not self._be.is_float(x):
            return x, tag
        fmt = rule.fmt
        if fmt is not None and not (rule.error is None and tag is not None and representable_in(tag, fmt)):
            x = self._round_to(x, fmt, rule.mode, rule.random_bits, nan_guard=nan_guard)
        if rule.error is not None and rule.error_fmt is not None:
            x = self._perturb(x, rule.error, rule.error_fmt, function or rule.cls.value)
        return x, _tag_after(rule, tag)

    def _perturb(self, y: Any, error: ErrorModel, fmt: FloatFormat, function: str) -> Any:
        """Move ``y`` by ``k`` whole ulps of ``fmt``, ``k`` uniform on ``{-n..n}`` (n = floor(ulps)).

        The stream is the device's own for this function (:func:`native_fp32.stream_key`). On the
        carrier's own format the move is on the bit pattern (exact, a few integer operations);
        on a narrower format ``y + k ulp`` is rounded to it.
        """
        n = int(error.ulps)
        if n == 0:
            return y
        be, xp, dt = self._be, self._be.xp, self._np_dtype
        seed = self._next_seed(1, extra=stream_key(self.profile.device, function, error.seed))
        # the top 24 bits of the step's element words times this function's multiplier
        bits = self._stream_bits(y.shape, seed) >> xp.asarray(8, dtype=xp.uint32)
        k = offsets_from_bits(bits, n, xp, dt)
        if same_float_format(fmt, self._native):
            return offset_ulps(xp, y, k, n, nonnegative=function == "exp")
        if fmt.emin >= self._native.emin:
            ulp = be.ulp(y, fmt.emin, fmt.mantissa_bits)
        else:
            e = xp.maximum(be.binade(y), fmt.emin)
            e = xp.where(y == 0, fmt.emin, e)
            ulp = be.ldexp(np.asarray(1.0, dt), e - fmt.mantissa_bits)
        return self._round_to(y + k.astype(dt) * ulp, fmt, _NEAREST, 32)

    def _one_hot_sum(self, values: Any, index: Any, size: int) -> Any:
        """Scatter-add as a one-hot matrix product: per-target sums in connection order.

        Each target's terms are summed left to right and every partial sum is rounded to the
        ``matmul_accumulate`` format (the zero products of the one-hot row add nothing). With a
        traced (not concrete) index the order cannot be arranged at trace time: the engine's
        scatter-add sums in the carrier and only the total is rounded.
        """
        acc = self.rules[OpClass.MATMUL_ACCUMULATE]
        table = self._segment_table(index, size)
        if table is None:
            total = self._round_result(acc, self.raw.scatter_add(values, index, size))[0]
            own = self.raw.scatter_add(
                self._be.xp.where(self._be.isfinite(values), 0, 1).astype(values.dtype), index, size
            )
            return self._one_hot_contamination(values, total, own)
        if table.shape[1] == 0:
            return self._be.zeros((*values.shape[:-1], size), values.dtype)
        be = self._be
        padded = be.append_zero(values)
        bad = be.xp.where(be.isfinite(padded), 0, 1)
        total = self._round_result(acc, be.take(padded, table[:, 0]))[0]  # 0 + first term, rounded
        own = be.take(bad, table[:, 0])
        for k in range(1, table.shape[1]):
            total = self._round_result(acc, total + be.take(padded, table[:, k]))[0]
            own = own + be.take(bad, table[:, k])
        return self._one_hot_contamination(values, total, own)

    def _one_hot_contamination(self, source: Any, result: Any, own: Any = None) -> Any:
        """What the zero entries of a one-hot matrix do to infinities: ``0 * inf`` is NaN.

        A dense product adds ``0 * x`` for every source element ``x`` outside the output's own
        row entries, so one non-finite source element makes every other output NaN. ``own``
        counts the non-finite elements an output takes with weight one (scatter-add); for a
        gather that is the gathered element itself.
        """
        xp = self._be.xp
        nonfinite = xp.sum(xp.where(self._be.isfinite(source), 0, 1), axis=-1, keepdims=True)
        if own is None:
            own = xp.where(self._be.isfinite(result), 0, 1)
        nan = np.asarray(np.nan, dtype=self._np_dtype)
        return xp.where(nonfinite - own > 0, nan, result)

    def _segment_table(self, index: Any, size: int) -> np.ndarray | None:
        """``(size, max in-degree)`` positions into the values, ascending, padded with ``len``."""
        key = id(index)
        hit = self._tables.get(key)
        if hit is not None and hit[0] is index:
            return hit[1]
        idx = self._be.concrete(index)
        table = None if idx is None else segment_table(idx, size)
        self._tables[key] = (index, table)  # holding ``index`` keeps its id from being reused
        return table

    def _count(self, rule: Rule, before: Any, after: Any, inputs: tuple[Any, ...], *, elementwise: bool = True) -> None:
        """Record this op's overflow / underflow / non-finite events (see the module docstring)."""
        assert self._tally is not None
        be, xp = self._be, self._be.xp
        finite_in = None
        for v in inputs:
            if be.is_float(v):
                f = be.isfinite(v) if elementwise else be.all_finite(v)
                finite_in = f if finite_in is None else finite_in & f
        # under a saturating policy a special value is replaced after it was born: count the birth
        finite_out = be.isfinite(before if self._saturating else after)
        nonfinite = ~finite_out if finite_in is None else ~finite_out & finite_in
        if self._saturating:
            nonfinite = nonfinite & xp.isnan(before)  # invalid (0/0): replaced by 0
        underflow = (before != 0) & (after == 0) if rule.rounds else None
        fmt = rule.fmt
        if self._saturating:  # a result beyond the range (inf included) saturated to the largest finite
            overflow = (xp.abs(before) > np.asarray(rule.max_value, dtype=self._np_dtype)) & ~xp.isnan(before)
            if finite_in is not None:
                overflow = overflow & finite_in
        elif isinstance(fmt, FixedFormat) or (isinstance(fmt, FloatFormat) and not _overflows_to_inf(fmt)):
            # saturating / NaN-on-overflow formats: a finite result beyond the range was clamped
            limit = np.asarray(rule.max_value, dtype=self._np_dtype)
            overflow = (xp.abs(before) > limit) & (~finite_out | (xp.abs(after) == limit))
            if finite_in is not None:
                overflow = overflow & finite_in
        else:  # IEEE overflow: an infinity born from finite operands (in the carrier or by rounding)
            overflow = nonfinite & xp.isinf(after)
        self._tally.record(_EVENT_NAMES[rule.cls], (overflow, underflow, nonfinite), tuple(after.shape))


_FUNCTION_OF: dict[Any, str] = {operator.truediv: "div", operator.pow: "pow"}
_EVENT_NAMES = {c: tuple(f"{c.value}.{e}" for e in EVENTS) for c in OpClass}


def _is_constant(x: Any) -> bool:
    """Whether an operand is a number fixed when the kernel is traced (a compile-time constant)."""
    return isinstance(x, numbers.Number | np.generic) and not isinstance(x, bool | np.bool_)


def _overflows_to_inf(fmt: FloatFormat) -> bool:
    return fmt.has_inf and fmt.overflow == "inf"


def _split(x: Any) -> tuple[Any, FloatFormat | None]:
    return (x.raw, x.fmt) if isinstance(x, EmuArray) else (x, None)


def _tag_in(rule: Rule, tag: FloatFormat | None) -> FloatFormat | None:
    """The format an operand tagged ``tag`` is known to lie in after ``rule``'s input rounding."""
    return rule.input_fmt if rule.input_fmt is not None else tag


def _tag_after(rule: Rule, tag: FloatFormat | None) -> FloatFormat | None:
    """The format a value tagged ``tag`` is known to lie in after ``rule``'s result rounding."""
    if rule.error_fmt is not None:
        return rule.error_fmt
    if isinstance(rule.fmt, FloatFormat):
        return rule.fmt
    return tag if rule.fmt is None else None


def _common(a: FloatFormat | None, b: FloatFormat | None) -> FloatFormat | None:
    """A format both tags lie in (the wider, when one contains the other)."""
    if a is None or b is None:
        return None
    if representable_in(a, b):
        return b
    return a if representable_in(b, a) else None


def representable_in(a: FloatFormat, b: FloatFormat | FixedFormat) -> bool:
    """True when rounding any value of format ``a`` onto ``b`` (any mode) returns it unchanged.

    Conservative: ``a``'s significands and quantum must fit ``b``'s, its range must lie within
    ``b``'s, and ``b``'s conventions (flushing, saturation, no -0, no inf) must not touch any of
    ``a``'s values. Never for a fixed-point ``b`` (a float format's values are not a grid).
    """
    if not isinstance(b, FloatFormat):
        return False
    if a == b:
        return True
    if a.mantissa_bits > b.mantissa_bits or a.max_value > b.max_value:
        return False
    if a.emin - a.mantissa_bits < b.emin - b.mantissa_bits:  # a's smallest quantum is finer
        return False
    smallest = a.min_subnormal if a.subnormals in ("keep", "daz") else a.min_normal
    if b.subnormals != "keep" and smallest < b.min_normal:
        return False
    if a.has_negative_zero and not b.has_negative_zero:
        return False
    return not (a.has_inf and (not b.has_inf or b.overflow == "saturate"))


def _map_tree(fn: Callable[[Any], Any], x: Any) -> Any:
    if isinstance(x, tuple):
        return tuple(_map_tree(fn, v) for v in x)
    if isinstance(x, list):
        return [_map_tree(fn, v) for v in x]
    return fn(x)
