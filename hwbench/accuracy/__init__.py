"""Accuracy: number formats and bit-exact rounding, numerics profiles, the emulating ops namespace,
accuracy metrics, the validation protocol and verdicts.

The bottom layer (:mod:`~hwbench.accuracy.formats`, :mod:`~hwbench.accuracy.rounding`,
:mod:`~hwbench.accuracy.rounding_jax`, :mod:`~hwbench.accuracy.fixed`,
:mod:`~hwbench.accuracy.random_bits`) describes a chip's number formats as data and rounds
values onto them with integer bit manipulation, identically in numpy and inside ``jax.jit``.
Everything above it (profiles, emulation) rounds through this API. See ``docs/numerics.md``.
"""
