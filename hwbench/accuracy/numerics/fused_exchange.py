"""Gather-map-scatter under emulation, fused into the engine's per-pass loop, bit for bit.

:func:`hwbench.core.ops.gather_map_scatter` is a gather, an elementwise map and a scatter-add.
Emulated as that composition, each of the three materialises every connection's values (7,290
per io-ehh step at 729 cells), the one-hot lowering sums partners one padded table column at a
time, and each one-hot gather and the scatter recount the non-finite sources over the whole array
to reproduce ``0 * inf`` contamination. That cost 2-3x native on the device modes that lower
gathers to one-hot products (GroqChip, TensorRT) and on those with an error model in the map (the
TPU's faithful exp). The engine's fused pass loop (:meth:`~hwbench.core.engines.jax_engine.JaxOps.
gather_map_scatter`) computes the same terms in the same order; this module runs the emulation's
map and roundings inside it, so the result is the composition's, bit for bit:

* the map sees each pass's slice of connections. Its roundings keep their keys: the op sequence
  number restarts at the same value for every pass, and counter-based random bits are keyed by
  each element's position in the whole connection list (``EmulatingOps._index_offset``);
* the one-hot gather's input rounding and contamination act on the *source* array (729 values,
  not 7,290 gathered ones): a gathered element is NaN exactly when some *other* source element
  is non-finite, which depends only on the source element it reads;
* the one-hot scatter's values are rounded per pass; whether a target has a non-finite term is
  read off its sum where finite terms cannot overflow it (fp16 terms on an fp32 carrier), else
  accumulated alongside (a NaN poison, in the same loop); one reduction per step over the
  targets decides the contamination (see :func:`_one_hot_total`);
* the table lowering added padding zeros to targets with fewer partners than the widest, which
  turns a sum of ``-0.0`` into ``+0.0``; that is kept.

Used only where that equivalence is clear: counters off, no rounding of the gathered values
themselves or of the one-hot accumulation, a deterministic one-hot input rounding, and every
stochastic rounding on the short integer path (whose random bits take an explicit index).
Otherwise :func:`fused_gather_map_scatter` returns None and the caller composes. It is a part of
:class:`~hwbench.accuracy.numerics.emulate.EmulatingOps` kept in its own module, and uses its internals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.accuracy.numerics.emulated_array import EmuArray
from hwbench.accuracy.numerics.formats import RoundingMode
from hwbench.core.ops import OpClass

if TYPE_CHECKING:
    from hwbench.core.layout import PassPlan

EmulatingOps = Any
"""The emulating namespace (:class:`hwbench.accuracy.numerics.emulate.EmulatingOps`), named here
without importing it: ``emulate`` imports this module, and a typing import back would be a circle."""

__all__ = ["fused_gather_map_scatter"]


def fused_gather_map_scatter(
    ops: EmulatingOps, message: Callable[[Any, Any], Any], x: Any, src: Any, tgt: Any, size: int
) -> EmuArray | None:
    """``scatter_add(message(gather(x, src), gather(x, tgt)), tgt, size)`` fused, or None."""
    raw = ops.raw
    planner = getattr(raw, "fused_plan", None)
    fused = getattr(type(raw), "gather_map_scatter", None)
    if planner is None or fused is None or ops._tally is not None or not ops._random_bits_take_index():
        return None
    value, tag = ops._operand(x)
    if not ops._be.is_float(value) or len(value.shape) != 1:
        return None
    rule = ops.rules[OpClass.GATHER]
    one_hot = rule.lowering == "one-hot-matmul"
    if rule.rounds or rule.input_fmt is not None:
        return None
    inp, acc = ops.rules[OpClass.MATMUL_INPUT], ops.rules[OpClass.MATMUL_ACCUMULATE]
    keyed_input = inp.error is not None or (inp.fmt is not None and inp.mode is RoundingMode.STOCHASTIC)
    if one_hot and (acc.active or keyed_input):  # both gathers must round the source alike
        return None
    plan = planner(src, tgt, size, tuple(value.shape))
    if plan is None:
        return None
    source, gathered_tag = value, tag
    if one_hot:
        # the two one-hot gathers each round the source (two op numbers, the same values)
        source, gathered_tag = ops._round_result(inp, value, tag)
        ops._round_result(inp, value, tag)
        # Computed once per step, not inside every pass's gather: XLA:CPU would copy the
        # contamination's count, compare and select into each of the ~17 pass loops and apply
        # them to every gathered element (issue 31: groq 2.29x -> 2.24x, exact-vector 1.69x -> 1.63x).
        rounded = source
        source = ops._once_per_step(lambda: ops._one_hot_contamination(rounded, rounded))
    track = one_hot and not _sums_reveal_nonfinite_terms(inp.max_value, tgt, size, value.dtype)
    passes = _PassMessages(ops, message, plan, gathered_tag, inp if one_hot else None, track)
    total = fused(raw, passes, source, src, tgt, size)
    ops._index_offset = 0
    if one_hot:
        poisoned = passes.poisoned(total.shape[-1]) if track else ~ops._be.isfinite(total)  # (a shard's cells)
        total = _one_hot_total(ops, total, poisoned, tgt, size)
    result: EmuArray = ops._finish(rule, total, (value,), elementwise=False)
    return result


def _sums_reveal_nonfinite_terms(term_max: float, tgt: np.ndarray, size: int, dtype: Any) -> bool:
    """Whether a target's carrier sum is non-finite exactly when one of its terms is.

    True when the largest finite term times the widest in-degree stays below the carrier's
    range: finite terms then cannot add up to an infinity, and an inf or NaN term leaves the sum
    inf or NaN. The one-hot contamination can then be read off the sums (one ``isfinite``)
    instead of a second per-pass chain tracking non-finite terms: that chain read every pass's
    terms a second time, which kept XLA from fusing each pass's gather, map and sum into one loop
    (GroqChip: fp16 terms, at most 65504 x in-degree, far below fp32's 3.4e38).
    """
    degree = int(np.bincount(tgt, minlength=size).max()) if np.size(tgt) else 0
    return bool(term_max * degree < float(np.finfo(dtype).max))


class _PassMessages:
    """The map the engine calls once per pass: the kernel's message on EmuArrays, keyed as unfused.

    For the one-hot lowering it also rounds the terms to the matrix unit's input format and, with
    ``track_poison`` (when the sums cannot tell, see :func:`_sums_reveal_nonfinite_terms`),
    accumulates per target a NaN where any of its terms is non-finite (a second chain of
    in-place additions in the same loop; cheaper than stacking a count row onto the terms).
    """

    def __init__(
        self,
        ops: EmulatingOps,
        message: Callable[[Any, Any], Any],
        plan: PassPlan,
        tag: Any,
        one_hot_input: Any,
        track_poison: bool,
    ) -> None:
        self.ops = ops
        self.message = message
        self.plan = plan
        self.tag = tag
        self.one_hot_input = one_hot_input
        self.track_poison = track_poison
        self.first_op = ops._op
        self.calls = 0
        self.poison: Any = None  # per ranked target: 0, or NaN where a term was non-finite

    def __call__(self, at_src: Any, at_tgt: Any) -> Any:
        ops, k = self.ops, self.calls
        ops._op = self.first_op
        ops._index_offset = self.plan.offsets[k]
        self.calls += 1
        out = self.message(EmuArray(at_src, ops, self.tag), EmuArray(at_tgt, ops, self.tag))
        values, tag = ops._operand(out)
        if self.one_hot_input is None:
            return values
        # terms with known bounds hold no NaN: the rounding's NaN guard could not change a value
        nan_free = isinstance(out, EmuArray) and out.bounds is not None
        values, _ = ops._round_result(self.one_hot_input, values, tag, nan_guard=not nan_free)
        if not self.track_poison:
            return values
        xp = ops._be.xp
        nan = np.asarray(np.nan, dtype=values.dtype)
        bad = xp.where(ops._be.isfinite(values), xp.zeros((), dtype=values.dtype), nan)
        padding = getattr(ops.raw, "pass_padding", None)  # a sharded engine's passes are padded
        mask = None if padding is None else padding(k)
        if mask is not None:
            bad = xp.where(mask, xp.zeros((), dtype=values.dtype), bad)
        self.poison = bad if self.poison is None else self.poison.at[: self.plan.counts[k]].add(bad)
        return values

    def poisoned(self, size: int) -> Any:
        """Per target (in target order): whether any of its terms was non-finite."""
        xp = self.ops._be.xp
        poison = self.poison
        if poison.shape[-1] < size:
            poison = xp.concatenate([poison, xp.zeros((size - poison.shape[-1],), dtype=poison.dtype)])
        if not self.plan.in_rank_order:
            poison = poison[xp.asarray(self.plan.inverse)]
        return xp.isnan(poison)


def _one_hot_total(ops: EmulatingOps, sums: Any, poisoned: Any, tgt: np.ndarray, size: int) -> Any:
    """The one-hot scatter's per-target sums with the table's sign of zero and ``0 * inf`` contamination.

    The composition makes target ``i`` NaN when the values hold more non-finite terms than ``i``'s
    own: that is when any other target has one. With ``T`` targets holding non-finite terms,
    target ``i`` keeps its sum iff ``T == 0``, or ``T == 1`` and ``i`` is that target.
    """
    xp = ops._be.xp
    degree = np.bincount(tgt, minlength=size)
    short = ops.cell_values(degree < degree.max())
    sums = xp.where(short & (sums == 0), xp.zeros((), dtype=sums.dtype), sums)  # -0 + padding 0 = +0
    holders = ops.whole_network(xp.sum(poisoned, dtype=xp.int32))
    keep = (holders == 0) | ((holders == 1) & poisoned)
    return xp.where(keep, sums, np.asarray(np.nan, dtype=sums.dtype))
