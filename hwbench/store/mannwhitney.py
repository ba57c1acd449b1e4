"""The two-sided Mann–Whitney U test, computed here and checked against scipy.stats in the tests.

Why not call scipy.stats at run time: importing it costs about 0.6 s of CPU, more than half of the
1 s budget of ``hwbench results compare``. This module follows scipy's ``mannwhitneyu(method="auto")``
exactly (the tests assert equal p-values on random samples with and without ties): the exact null
distribution of U when there are no ties and a side has at most 8 samples, otherwise the normal
approximation with tie and continuity corrections.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MannWhitneyResult:
    u1: float = 0.0  # U of the first sample
    p_value: float = 1.0  # two-sided
    method: str = "exact"  # "exact" or "asymptotic"


@dataclass(frozen=True)
class Ranks:
    ranks: np.ndarray  # 1-based, ties averaged
    tie_sizes: np.ndarray  # size of every group of equal values


def average_ranks(values: np.ndarray) -> Ranks:
    """1-based ranks with ties averaged, and the size of every tie group."""
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    counts = np.diff(np.r_[starts, len(values)])
    mean_rank = starts + (counts + 1) / 2.0
    ranks = np.empty(len(values))
    ranks[order] = np.repeat(mean_rank, counts)
    return Ranks(ranks, counts)


def u_distribution(m: int, n: int) -> np.ndarray:
    """P(U = k), k = 0..m*n, under the null hypothesis for sample sizes m and n (no ties).

    The count of arrangements follows f(m, n; k) = f(m-1, n; k-n) + f(m, n-1; k), built up one
    sample at a time on the smaller side (float counts: exact to double precision).
    """
    m, n = min(m, n), max(m, n)
    # rows[j] = counts for sizes (i, j), j = 0..n; start with i = 0: only U = 0
    rows = [np.ones(1) for _ in range(n + 1)]
    for i in range(1, m + 1):
        new = [np.ones(1)]  # (i, 0): U = 0 only
        for j in range(1, n + 1):
            counts = np.zeros(i * j + 1)
            counts[: len(new[j - 1])] += new[j - 1]  # the largest value is from the n-side: U unchanged
            counts[j : j + len(rows[j])] += rows[j]  # ... or from the m-side: it beats all j others
            new.append(counts)
        rows = new
    pmf: np.ndarray = rows[n] / rows[n].sum()
    return pmf


def mann_whitney_u(x: np.ndarray, y: np.ndarray) -> MannWhitneyResult:
    """Two-sided test that x and y come from the same distribution (scipy's 'auto' method)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n1, n2 = len(x), len(y)
    ranked = average_ranks(np.concatenate([x, y]))
    ranks, ties = ranked.ranks, ranked.tie_sizes
    u1 = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    u = max(u1, n1 * n2 - u1)
    has_ties = bool(np.any(ties > 1))
    if (n1 > 8 and n2 > 8) or has_ties:
        n = n1 + n2
        s = math.sqrt(n1 * n2 / 12 * ((n + 1) - float(np.sum(ties**3 - ties)) / (n * (n - 1))))
        if s == 0:
            return MannWhitneyResult(u1, 1.0, "asymptotic")
        z = (u - n1 * n2 / 2 - 0.5) / s
        return MannWhitneyResult(u1, min(1.0, math.erfc(z / math.sqrt(2))), "asymptotic")
    pmf = u_distribution(n1, n2)
    sf = float(pmf[round(u) :].sum())
    return MannWhitneyResult(u1, min(1.0, 2 * sf), "exact")
