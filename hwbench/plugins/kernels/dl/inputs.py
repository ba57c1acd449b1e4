"""Seeded inputs with named distributions for the DL primitives.

Values are drawn in float64 and rounded once to float32, so the fp64 gold and every fp32 or
emulated candidate start from exactly the same numbers: an error measured later is the
candidate's arithmetic, never a difference of inputs.

* ``normal``: N(0, 1) — signs cancel, errors partly cancel too;
* ``uniform-positive``: U(0, 1) — all products positive, so rounding errors accumulate (the
  worst case for a sum's relative error that stays meaningful);
* ``wide-exponent``: random sign times 2**U(-5, 5) — ten binades, exposes narrow exponent
  ranges and alignment losses while keeping K=2560 sums below fp16's 65504.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

from hwbench.core.errors import UsageError

DISTRIBUTIONS = ("normal", "uniform-positive", "wide-exponent")
WIDE_BINADES = 5.0


def check_distribution(name: str) -> str:
    if name not in DISTRIBUTIONS:
        raise UsageError(f"unknown input distribution '{name}'; choose from: {', '.join(DISTRIBUTIONS)}")
    return name


def draw(rng: np.random.Generator, shape: tuple[int, ...], dist: str) -> np.ndarray:
    """A float32 array of ``shape`` from distribution ``dist`` (float64 draws rounded once)."""
    import numpy as np

    check_distribution(dist)
    if dist == "normal":
        x = rng.standard_normal(shape)
    elif dist == "uniform-positive":
        x = rng.random(shape)
    else:
        sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
        x = sign * np.exp2(rng.uniform(-WIDE_BINADES, WIDE_BINADES, shape))
    return x.astype(np.float32)
