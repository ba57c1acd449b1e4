"""The numerics emulation: a chip's arithmetic as data, and the machinery that reproduces it.

The bottom layer (:mod:`.formats`, :mod:`.rounding`, :mod:`.rounding_jax`, :mod:`.fixed`,
:mod:`.random_bits`) describes number formats and rounds values onto them with integer bit
manipulation, identically in numpy and inside ``jax.jit``. :mod:`.profile` states a chip's
arithmetic per op class (with sources), :mod:`.presets` builds the cited profiles devices share,
:mod:`.emulate` is the emulating ops namespace that runs any kernel under a profile, and
:mod:`.emulated_device` is the base class of devices that are emulated when their chip is absent.
:mod:`.matrix_unit` models real tensor / matrix cores as block FMAs (:mod:`.matrix_unit_model`,
:mod:`.matrix_unit_catalog`, :mod:`.block_fma`, :mod:`.block_fma_vec`; ``docs/matrix-units.md``).
See ``docs/numerics.md`` and ``docs/profiles.md``.
"""
