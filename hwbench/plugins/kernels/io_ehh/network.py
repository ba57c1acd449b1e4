"""Seeded gap-junction connectivity of the inferior olive on a 3-D torus (Negrello et al. 2019).

Cells sit on an n x n x n grid with wrap-around; the grid index of the cell at (x, y, z) is
``x + n*y + n*n*z``. Partners are drawn by grid offset: the probability of an offset at distance
r (0 < r < rmax) is proportional to exp(-(r/4)^2), corrected so that the *distance* distribution
follows that profile rather than the lattice's point count (which grows ~r^2 and jumps
irregularly on an integer grid):

* divided by the number of grid offsets sharing that exact distance, and
* multiplied by the radial interval that distance stands for (distinct lattice distances are
  unevenly spaced; each one represents the stretch of r nearer to it than to its neighbours,
  bounded by 0 and rmax).

Only "backward" offsets (dz < 0, or dz == 0 and dy < 0, or dz == dy == 0 and dx < 0) are
sampled, so an undirected pair is drawn at most once; each pair is then stored in both
directions. For each offset the number of pairs is its share of ``mean_degree * ncells / 2``
(largest-remainder rounding, so the total is exact) and the cells using it are drawn without
replacement — no pair is drawn twice and there are no self-connections, because with
rmax <= n/2 every offset component is below n/2 and distinct offsets stay distinct modulo n.

Cell *numbers* (what ``src``, ``tgt``, the state columns and the probes index) follow the number
of partners, most first (ties in grid order); ``position[i]`` is the grid index of cell ``i``.
Cell numbering carries no meaning in the model, and this one is the rank order of
:class:`hwbench.core.layout.PassPlan`: each pass of a gap-junction sum then covers a prefix of
the cells in their own order, so engines neither gather the cells into rank order nor scatter
the sums back (on XLA:CPU that last gather kept the dendrite update from vectorising).
"""

from __future__ import annotations

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.core.layout import pass_major_order

DEFAULT_MEAN_DEGREE = 10
DEFAULT_RMAX = 4.0
LENGTH_SCALE = 4.0  # the 4 in exp(-(r/4)^2)
MIN_SIDE = 4  # n = 3 has too few distinct offsets for ~10 distinct partners per cell


def cube_side(ncells: int) -> int | None:
    """n if ``ncells == n**3``, else None."""
    n = round(ncells ** (1 / 3)) if ncells > 0 else 0
    for cand in (n - 1, n, n + 1):
        if cand > 0 and cand**3 == ncells:
            return cand
    return None


def nearest_cubes(ncells: int) -> list[int]:
    """The valid connected sizes (n**3 with n >= MIN_SIDE) nearest to ``ncells``: below (if any), above."""
    f = int(max(ncells, 0) ** (1 / 3))
    while (f + 1) ** 3 <= ncells:
        f += 1
    while f > 0 and f**3 > ncells:
        f -= 1
    below = [f**3] if f >= MIN_SIDE and f**3 < ncells else []
    return [*below, max(f + 1, MIN_SIDE) ** 3]


def side_for_connected(ncells: int) -> int:
    """The torus side for a connected network of ``ncells`` cells, or a UsageError saying what is valid."""
    n = cube_side(ncells)
    if n is None or n < MIN_SIDE:
        near = " or ".join(f"{c} ({round(c ** (1 / 3))}^3)" for c in nearest_cubes(ncells))
        why = "must be a perfect cube n^3" if n is None else f"needs n >= {MIN_SIDE} for ~10 distinct partners"
        raise UsageError(
            f"connected io-ehh size {ncells} {why} (cells on an n x n x n torus); nearest valid sizes: {near}. "
            "Unconnected networks accept any size."
        )
    return n


def backward_offsets(rmax: float) -> tuple[np.ndarray, np.ndarray]:
    """Grid offsets (m, 3) with 0 < r < rmax that point "backward", and their distances r (m,)."""
    k = int(np.ceil(rmax))
    d = np.stack(np.meshgrid(*[np.arange(-k, k + 1)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    dx, dy, dz = d[:, 0], d[:, 1], d[:, 2]
    r = np.sqrt((d**2).sum(axis=1))
    backward = (dz < 0) | ((dz == 0) & (dy < 0)) | ((dz == 0) & (dy == 0) & (dx < 0))
    keep = backward & (r > 0) & (r < rmax)
    return d[keep], r[keep]


def radial_spacing(radii: np.ndarray) -> np.ndarray:
    """The stretch of r each distinct lattice distance stands for: half the gap to each neighbour.

    Interior distances get (r[k+1] - r[k-1]) / 2; the first and last get their one-sided gap, so
    no shell is credited with the empty stretch below the nearest lattice distance (0 < r < 1).
    """
    if len(radii) == 1:
        return np.ones(1)
    gaps = np.diff(radii)
    return (np.concatenate([gaps[:1], gaps]) + np.concatenate([gaps, gaps[-1:]])) / 2


def offset_probabilities(r: np.ndarray, rmax: float) -> np.ndarray:
    """Probability of each offset: exp(-(r/4)^2) x radial spacing / number of offsets at that distance."""
    r2 = np.round(r**2).astype(np.int64)  # squared lattice distances are integers: exact grouping
    shells, inverse, counts = np.unique(r2, return_inverse=True, return_counts=True)
    radii = np.sqrt(shells.astype(np.float64))
    shell_weight = np.exp(-((radii / LENGTH_SCALE) ** 2)) * radial_spacing(radii) / counts
    p = shell_weight[inverse]
    return p / p.sum()


def pair_counts(p: np.ndarray, total: int) -> np.ndarray:
    """Split ``total`` pairs over offsets in proportion to ``p`` (largest remainder: exact total)."""
    raw = p * total
    counts = np.floor(raw).astype(np.int64)
    short = total - int(counts.sum())
    order = np.argsort(-(raw - counts), kind="stable")
    counts[order[:short]] += 1
    return counts


def distinct_cells(rng: np.random.Generator, ncells: int, count: int) -> np.ndarray:
    """A uniformly random set of ``count`` distinct cells (sorted).

    Draw with replacement, drop repeats, top up until complete: by symmetry the result is a
    uniform random subset. Marking a boolean mask keeps this O(ncells + count) per offset, where
    ``rng.choice(replace=False)`` or ``np.unique`` made million-cell networks take many seconds.
    """
    taken = np.zeros(ncells, dtype=bool)
    have = 0
    while have < count:
        taken[rng.integers(0, ncells, size=count - have)] = True
        have = int(np.count_nonzero(taken))
    return np.flatnonzero(taken)


def sample_gap_junctions(
    n: int, rng: np.random.Generator, *, mean_degree: float = DEFAULT_MEAN_DEGREE, rmax: float = DEFAULT_RMAX
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Directed connections (src, tgt) in cell numbers and each cell's grid index, all int32.

    Every pair is stored in both directions. Cells are numbered by descending partner count
    (see the module doc); the list is stored pass-major by target
    (:func:`hwbench.core.layout.pass_major_order`), each target's connections in ascending
    ``src`` order.
    """
    ncells = n**3
    rmax_eff = min(float(rmax), n / 2)
    offsets, r = backward_offsets(rmax_eff)
    if len(r) == 0:
        raise UsageError(f"io-ehh network: no grid offsets with 0 < r < {rmax_eff:g} (rmax {rmax:g}, n {n})")
    counts = pair_counts(offset_probabilities(r, rmax_eff), round(mean_degree * ncells / 2))
    if counts.max(initial=0) > ncells:
        raise UsageError(
            f"io-ehh network: mean degree {mean_degree:g} needs more than one pair per cell for some offset "
            f"at n = {n}, rmax = {rmax_eff:g}; lower the mean degree or use a larger network"
        )
    first: list[np.ndarray] = []
    second: list[np.ndarray] = []
    for offset, count in zip(offsets, counts):
        if count == 0:
            continue
        cells = distinct_cells(rng, ncells, int(count))
        x, y, z = cells % n, (cells // n) % n, cells // (n * n)
        partner = (x + offset[0]) % n + n * ((y + offset[1]) % n) + n * n * ((z + offset[2]) % n)
        first.append(cells)
        second.append(partner)
    ends = np.concatenate(first + second)
    position = np.argsort(-np.bincount(ends, minlength=ncells), kind="stable")
    number = np.empty(ncells, dtype=np.int64)
    number[position] = np.arange(ncells)
    a, b = number[np.concatenate(first)], number[np.concatenate(second)]
    # both directions, sorted by (tgt, src) through one int64 key, then stored pass-major: each
    # target's connections keep their ascending-src order (so per-target sums are unchanged),
    # but engines can sum the list without gathering it (hwbench.core.layout)
    key = np.sort(np.concatenate([a * ncells + b, b * ncells + a]))
    src, tgt = (key % ncells).astype(np.int32), (key // ncells).astype(np.int32)
    order = pass_major_order(tgt, ncells)
    return src[order], tgt[order], position.astype(np.int32)


def torus_distance(src: np.ndarray, tgt: np.ndarray, n: int) -> np.ndarray:
    """Euclidean distance between grid indices on the n x n x n torus (shortest way round each axis).

    Takes grid indices, not cell numbers: pass ``position[src]``, ``position[tgt]``.
    """

    def coords(c: np.ndarray) -> np.ndarray:
        c = np.asarray(c, dtype=np.int64)
        return np.stack([c % n, (c // n) % n, c // (n * n)])

    d = np.abs(coords(src) - coords(tgt))
    d = np.minimum(d, n - d)
    return np.sqrt((d**2).sum(axis=0))
