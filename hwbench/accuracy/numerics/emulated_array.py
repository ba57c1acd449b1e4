"""``EmuArray``: an engine array whose Python operators round like the emulated device.

Kernels are written as plain arithmetic (``a + b``, ``1 / (1 + ops.exp(-v))``, ``x ** 3``,
``state[0]``). The engine's own arrays would compute those operators natively, out of the
emulation's reach, so :meth:`hwbench.accuracy.numerics.emulate.EmulatingOps.load` wraps the state in
``EmuArray`` and every operator on it goes back to the emulating ops, which compute the raw
operation and round the result per op class. The wrapper exists only while the kernel's Python
code runs: under ``jax.jit`` that is trace time, so the compiled program contains the raw
operations and the rounding arithmetic and nothing else.

Operator -> op class: ``+ -`` ADD, ``*`` MUL, ``/`` DIV (``1 / x`` included: a reciprocal is
a division on every device we model), ``**`` with a Python ``int`` exponent repeated MUL (what
XLA's ``integer_pow`` emits), other ``**`` POW, comparisons COMPARE; unary ``-``, ``abs`` and
indexing are exact and never rounded.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from hwbench.core.ops import OpClass

if TYPE_CHECKING:
    from hwbench.accuracy.numerics.formats import FloatFormat
    from hwbench.accuracy.numerics.value_bounds import Bounds

__all__ = ["EmuArray", "RoundingArithmetic", "unwrap"]


class RoundingArithmetic(Protocol):
    """What an ``EmuArray`` sends its operators to (``EmulatingOps`` implements it).

    A protocol rather than an import of the emulating namespace, so that the namespace can import
    this module and not the reverse.
    """

    def is_operand(self, other: Any) -> bool: ...
    def arith(self, cls: OpClass, fn: Callable[[Any, Any], Any], a: Any, b: Any) -> Any: ...
    def power(self, x: Any, y: Any) -> Any: ...


def _binary(cls: OpClass, fn: Callable[[Any, Any], Any], reflected: bool = False) -> Callable[..., Any]:
    def method(self: EmuArray, other: Any) -> Any:
        if not self._ops.is_operand(other):
            return NotImplemented
        a, b = (other, self) if reflected else (self, other)
        return self._ops.arith(cls, fn, a, b)

    method.__name__ = f"__{'r' if reflected else ''}{fn.__name__.strip('_')}__"
    return method


def _logical(fn: Callable[[Any, Any], Any], reflected: bool = False) -> Callable[..., Any]:
    def method(self: EmuArray, other: Any) -> Any:
        if not self._ops.is_operand(other):
            return NotImplemented
        a, b = unwrap(other), self.raw
        return EmuArray(fn(a, b) if reflected else fn(b, a), self._ops)

    return method


class EmuArray:
    """An engine array (``raw``) bound to the emulating ops that round operations on it."""

    __slots__ = ("_ops", "bounds", "fmt", "prod", "raw")
    # numpy: defer every ufunc and operator to our reflected methods (``ndarray * EmuArray``
    # must land in ``EmuArray.__rmul__``, not in an object-array loop).
    __array_ufunc__ = None
    __hash__ = None  # type: ignore[assignment]  # == is elementwise

    def __init__(
        self, raw: Any, ops: RoundingArithmetic, fmt: FloatFormat | None = None, bounds: Bounds | None = None
    ) -> None:
        self.raw = raw
        self._ops = ops
        # A float format every value is known to be representable in (the last rounding's),
        # so a later rounding onto a format containing it can be skipped; None: unknown.
        self.fmt = fmt
        # An interval every value is known to lie in, never NaN (value_bounds.Bounds), so a
        # saturating profile can skip saturations that cannot change a value; None: unknown.
        self.bounds = bounds
        # The raw operands when this is a product a contracting compiler may fuse into a
        # following addition (``a * b + c`` rounded once); None otherwise.
        self.prod: tuple[Any, Any] | None = None

    # --- arithmetic (rounded per op class) ------------------------------------------------
    __add__ = _binary(OpClass.ADD, operator.add)
    __radd__ = _binary(OpClass.ADD, operator.add, reflected=True)
    __sub__ = _binary(OpClass.ADD, operator.sub)
    __rsub__ = _binary(OpClass.ADD, operator.sub, reflected=True)
    __mul__ = _binary(OpClass.MUL, operator.mul)
    __rmul__ = _binary(OpClass.MUL, operator.mul, reflected=True)
    __truediv__ = _binary(OpClass.DIV, operator.truediv)
    __rtruediv__ = _binary(OpClass.DIV, operator.truediv, reflected=True)

    def __pow__(self, other: Any) -> Any:
        if not self._ops.is_operand(other):
            return NotImplemented
        return self._ops.power(self, other)

    def __rpow__(self, other: Any) -> Any:
        if not self._ops.is_operand(other):
            return NotImplemented
        return self._ops.power(other, self)

    # --- comparisons (COMPARE; boolean results are never rounded) ----------------------------
    __lt__ = _binary(OpClass.COMPARE, operator.lt)
    __le__ = _binary(OpClass.COMPARE, operator.le)
    __gt__ = _binary(OpClass.COMPARE, operator.gt)
    __ge__ = _binary(OpClass.COMPARE, operator.ge)
    __eq__ = _binary(OpClass.COMPARE, operator.eq)
    __ne__ = _binary(OpClass.COMPARE, operator.ne)

    # --- exact operations --------------------------------------------------------------------
    __and__ = _logical(operator.and_)
    __rand__ = _logical(operator.and_, reflected=True)
    __or__ = _logical(operator.or_)
    __ror__ = _logical(operator.or_, reflected=True)
    __xor__ = _logical(operator.xor)
    __rxor__ = _logical(operator.xor, reflected=True)

    def __invert__(self) -> EmuArray:
        return EmuArray(~self.raw, self._ops)

    def __neg__(self) -> EmuArray:
        # fnuz formats have no -0, so a negated zero may leave the format
        fmt = self.fmt if self.fmt is None or self.fmt.special != "fnuz" else None
        b = None if self.bounds is None else (-self.bounds[1], -self.bounds[0])
        return EmuArray(-self.raw, self._ops, fmt, b)

    def __pos__(self) -> EmuArray:
        return self

    def __abs__(self) -> EmuArray:
        b = None if self.bounds is None else (max(0.0, self.bounds[0], -self.bounds[1]), max(map(abs, self.bounds)))
        return EmuArray(abs(self.raw), self._ops, self.fmt, b)

    def __getitem__(self, index: Any) -> EmuArray:
        return EmuArray(self.raw[unwrap(index)], self._ops, self.fmt, self.bounds)

    def __len__(self) -> int:
        return len(self.raw)

    def __bool__(self) -> bool:
        return bool(self.raw)

    def __repr__(self) -> str:
        return f"EmuArray({self.raw!r})"

    # --- array metadata ----------------------------------------------------------------------
    @property
    def shape(self) -> Any:
        return self.raw.shape

    @property
    def dtype(self) -> Any:
        return self.raw.dtype

    @property
    def ndim(self) -> int:
        return len(self.raw.shape)

    @property
    def T(self) -> EmuArray:
        return EmuArray(self.raw.T, self._ops, self.fmt, self.bounds)

    def reshape(self, *shape: Any) -> EmuArray:
        return EmuArray(self.raw.reshape(*shape), self._ops, self.fmt, self.bounds)

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes defined nowhere above: array methods such as .sum() or
        # .mean() would compute natively and silently skip the rounding being emulated.
        raise AttributeError(
            f"emulated arrays have no '.{name}'; use the ops namespace (ops.sum, ops.exp, ...) so the "
            "emulation can round the result"
        )


def unwrap(x: Any) -> Any:
    """The engine array behind ``x`` (``x`` itself when it is not an EmuArray); maps tuples/lists."""
    if isinstance(x, EmuArray):
        return x.raw
    if isinstance(x, tuple):
        return tuple(unwrap(v) for v in x)
    if isinstance(x, list):
        return [unwrap(v) for v in x]
    return x
