"""Seeded gap-junction connectivity of the inferior olive on a 3-D torus: the study's generator.

This is the network of the AI-chip study (Landsmeer et al. 2024; its ``ioperf`` package,
``sample_connections_3d``), as docs/io-ehh.md describes it, so a seed gives the same
directed pairs as the study's code (tests/kernels/test_io_ehh_network.py checks them against
arrays made by that code). Cells sit on an n x n x n grid with wrap-around; the grid index of
the cell at (x, y, z) is ``x + n*y + n*n*z``. Partners are drawn by grid offset:

* offsets with 0 < r < rmax that point "backward" (dz < 0, or dz == 0 and dy < 0, or
  dz == dy == 0 and dx < 0), so an undirected pair is drawn at most once; rmax (default 4)
  above n/2 becomes ``n // 2`` (2 at 125 cells, 3 at 343: not n/2);
* weight exp(-(r/4)^2), divided by the number of offsets at that distance (the lattice's point
  count grows ~r^2 and jumps irregularly), times the stretch of r the distance stands for
  (half the gap to each neighbouring distance, down to 0 below the first and up to rmax above
  the last), normalised;
* each offset gets round(P * ncells * mean_degree / 2) pairs, the last offset the remainder,
  so the total can differ from ``mean_degree * ncells`` by a few connections;
* the source cells of an offset are drawn without replacement from numpy's legacy generator
  (``RandomState(seed)``: the study seeds the global one with 42); every pair is stored in both
  directions. With rmax <= n/2 every offset component is below n/2, so distinct offsets stay
  distinct modulo n: no pair twice, no self-connection.

For a non-integer rmax the offsets are the integer ones within rmax (the study's code would build
half-integer offsets from ``mgrid[-rmax:rmax+1]``); the study only used integers.

Cell *numbers* (what ``src``, ``tgt``, the state columns and the probes index) follow the number
of partners, most first (ties in grid order); ``position[i]`` is the grid index of cell ``i``.
Cell numbering carries no meaning in the model, and this one is the rank order of
:class:`hwbench.core.layout.PassPlan`: each pass of a gap-junction sum then covers a prefix of
the cells in their own order, so engines neither gather the cells into rank order nor scatter
the sums back (on XLA:CPU that last gather kept the dendrite update from vectorising). What a
user sees (run.json's probe cells, audit forensics) carries the grid index next to the number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

from hwbench.core.errors import UsageError

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
    import numpy as np

    k = int(np.ceil(rmax))
    d = np.stack(np.meshgrid(*[np.arange(-k, k + 1)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    dx, dy, dz = d[:, 0], d[:, 1], d[:, 2]
    r = np.sqrt((d**2).sum(axis=1))
    backward = (dz < 0) | ((dz == 0) & (dy < 0)) | ((dz == 0) & (dy == 0) & (dx < 0))
    keep = backward & (r > 0) & (r < rmax)
    return d[keep], r[keep]


def radius_cap(rmax: float, n: int) -> float:
    """The study's cap: an rmax above n/2 becomes ``n // 2`` (an integer: 2 at n = 5, 3 at n = 7)."""
    return float(n // 2) if rmax > n / 2 else float(rmax)


def radial_spacing(radii: np.ndarray, rmax: float) -> np.ndarray:
    """The stretch of r each distinct lattice distance stands for: half the gap to each neighbour.

    The first distance reaches down half-way to 0, the last up half-way to ``rmax`` (as in the
    study's generator), so the weights of all shells together cover 0 < r < rmax.
    """
    import numpy as np

    below = np.diff(radii, prepend=0.0)
    above = np.diff(radii, append=rmax)
    return 0.5 * above + 0.5 * below


def offset_probabilities(r: np.ndarray, rmax: float) -> np.ndarray:
    """Probability of each offset: exp(-(r/4)^2) / offsets at that distance x radial spacing.

    Computed in the study's order of operations (profile, then / count, then x spacing, then
    normalised), so the rounded pair counts below agree with it to the last pair.
    """
    import numpy as np

    radii, inverse, counts = np.unique(r, return_inverse=True, return_counts=True)
    p = np.exp(-((r / LENGTH_SCALE) ** 2))
    p = p / counts[inverse]
    p = p * radial_spacing(radii, rmax)[inverse]
    normalised: np.ndarray = p / p.sum()
    return normalised


def pair_counts(p: np.ndarray, total: int) -> np.ndarray:
    """The study's split of ``total`` pairs: each offset round(p * total) (halves up), the last
    offset the remainder (at least 0), so the sum may differ from ``total`` by a few pairs."""
    import numpy as np

    counts = (p * total + 0.5).astype(np.int64)
    counts[-1] = max(0, total - int(counts[:-1].sum()))
    return counts


def draw_cells(rs: np.random.RandomState, ncells: int, count: int) -> np.ndarray:
    """``count`` distinct source cells, drawn as the study draws them from numpy's legacy generator:
    one ``randint`` for a single cell, else ``choice(replace=False)`` (a permutation of all cells:
    O(ncells) per offset, about 2.5 s for the ~120 offsets of a million-cell network)."""
    import numpy as np

    if count == 1:
        return np.array([rs.randint(ncells)], dtype=np.int64)
    return rs.choice(ncells, count, replace=False).astype(np.int64)


@dataclass(frozen=True)
class GridPairs:
    """Undirected pairs in grid numbering: ``first[k]`` drew ``second[k]`` by a backward offset."""

    first: np.ndarray
    second: np.ndarray


def study_pairs(
    n: int, seed: int, *, mean_degree: float = DEFAULT_MEAN_DEGREE, rmax: float = DEFAULT_RMAX
) -> GridPairs:
    """The study's network (ioperf ``sample_connections_3d`` after ``np.random.seed(seed)``) in grid numbering.

    Offsets are taken in the study's order (dx, then dy, then dz ascending); a fresh
    ``RandomState(seed)`` gives the same stream as the study's seeded global generator without
    touching numpy's global state.
    """
    import numpy as np

    ncells = n**3
    rmax_eff = radius_cap(rmax, n)
    offsets, r = backward_offsets(rmax_eff)
    if len(r) == 0:
        raise UsageError(f"io-ehh network: no grid offsets with 0 < r < {rmax_eff:g} (rmax {rmax:g}, n {n})")
    counts = pair_counts(offset_probabilities(r, rmax_eff), int(ncells * mean_degree) // 2)
    if counts.max(initial=0) >= ncells:
        raise UsageError(
            f"io-ehh network: mean degree {mean_degree:g} needs a pair per cell or more for some offset "
            f"at n = {n}, rmax = {rmax_eff:g}; lower the mean degree or use a larger network"
        )
    rs = np.random.RandomState(seed)
    first: list[np.ndarray] = []
    second: list[np.ndarray] = []
    for offset, count in zip(offsets, counts):
        if count == 0:
            continue
        cells = draw_cells(rs, ncells, int(count))
        x, y, z = cells % n, (cells // n) % n, cells // (n * n)
        first.append(cells)
        second.append((x + offset[0]) % n + n * ((y + offset[1]) % n) + n * n * ((z + offset[2]) % n))
    return GridPairs(np.concatenate(first), np.concatenate(second))


def sample_gap_junctions(
    n: int, seed: int, *, mean_degree: float = DEFAULT_MEAN_DEGREE, rmax: float = DEFAULT_RMAX
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Directed connections (src, tgt) in cell numbers and each cell's grid index, all int32.

    The pairs are the study's (:func:`study_pairs`), every pair stored in both directions.
    Cells are numbered by descending partner count (see the module doc); the list is stored
    pass-major by target (:func:`hwbench.core.layout.pass_major_order`), each target's
    connections in ascending ``src`` order. Temporaries are freed as soon as they are used: a
    million cells draw 10 million connections, and each int64 copy of them is 80 MB.
    """
    import numpy as np

    ncells = n**3
    pairs = study_pairs(n, seed, mean_degree=mean_degree, rmax=rmax)
    partners = np.bincount(pairs.first, minlength=ncells) + np.bincount(pairs.second, minlength=ncells)
    position = np.argsort(-partners, kind="stable")
    number = np.empty(ncells, dtype=np.int64)
    number[position] = np.arange(ncells)
    # both directions, sorted by (tgt, src) through one int64 key: each target's connections in
    # ascending src order (so per-target sums are unchanged)
    m = len(pairs.first)
    key = np.empty(2 * m, dtype=np.int64)
    a, b = number[pairs.first], number[pairs.second]
    del pairs, number
    np.multiply(a, ncells, out=key[:m])
    key[:m] += b
    np.multiply(b, ncells, out=key[m:])
    key[m:] += a
    del a, b
    key.sort()
    src, tgt = np.empty(2 * m, dtype=np.int32), np.empty(2 * m, dtype=np.int32)
    for start in range(0, 2 * m, _CHUNK):
        part = key[start : start + _CHUNK]
        src[start : start + _CHUNK] = part % ncells
        tgt[start : start + _CHUNK] = part // ncells
    del key
    order = _pass_major_sorted(tgt, np.sort(partners)[::-1])
    return src[order], tgt[order], position.astype(np.int32)


_CHUNK = 1 << 20  # connections converted at a time (bounds the int64 temporaries to 8 MB)


def _pass_major_sorted(tgt: np.ndarray, degree: np.ndarray) -> np.ndarray:
    """:func:`hwbench.core.layout.pass_major_order` of a list sorted by target whose targets are
    numbered by descending in-degree ``degree``: pass ``k`` holds every target's ``k``-th connection,
    targets ascending, i.e. the stable order of each connection's occurrence within its target.
    One radix sort of small integers instead of the general plan's int64 lexsort (a tenth of its
    memory at a million cells; tests/kernels/test_io_ehh_network.py checks they agree)."""
    import numpy as np

    starts = (np.cumsum(degree) - degree).astype(np.int32)
    occurrence = np.arange(len(tgt), dtype=np.int32)
    occurrence -= starts[tgt]
    small = np.int16 if degree.max(initial=0) <= np.iinfo(np.int16).max else np.int32
    order: np.ndarray = np.argsort(occurrence.astype(small), kind="stable")
    return order


def torus_distance(src: np.ndarray, tgt: np.ndarray, n: int) -> np.ndarray:
    """Euclidean distance between grid indices on the n x n x n torus (shortest way round each axis).

    Takes grid indices, not cell numbers: pass ``position[src]``, ``position[tgt]``.
    """

    import numpy as np

    def coords(c: np.ndarray) -> np.ndarray:
        c = np.asarray(c, dtype=np.int64)
        return np.stack([c % n, (c // n) % n, c // (n * n)])

    d = np.abs(coords(src) - coords(tgt))
    d = np.minimum(d, n - d)
    dist: np.ndarray = np.sqrt((d**2).sum(axis=0))
    return dist
