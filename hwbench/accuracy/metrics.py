"""Accuracy metrics: how far a candidate trace is from a reference, in voltage and in spikes.

Pure numpy on host arrays. Voltage traces are (samples, cells) sampled every ``sample_ms``; spikes
come from the engines at step resolution (first upward threshold crossing per sample block).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

ONSET_LEVELS_MV = (0.001, 1.0, 10.0)


def box_stats(values: np.ndarray) -> dict[str, float]:
    """Tukey box statistics (whiskers at the most extreme data within 1.5 IQR), plus mean and n."""
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        return {k: math.nan for k in ("min", "q1", "median", "q3", "max", "whisker_low", "whisker_high", "mean")} | {
            "n": 0
        }
    all_finite = bool(np.isfinite(x).all())
    if not all_finite:  # a non-finite deviation is an infinite one; interpolating infs gives NaN
        x = np.where(np.isfinite(x), x, np.inf)
    q1, med, q3 = np.quantile(x, [0.25, 0.5, 0.75], method="linear" if all_finite else "nearest")
    with np.errstate(invalid="ignore"):  # inf - inf when most deviations are infinite
        iqr = q3 - q1
        inside = x[(x >= q1 - 1.5 * iqr) & (x <= q3 + 1.5 * iqr)]
    return {
        "min": float(x.min()),
        "q1": float(q1),
        "median": float(med),
        "q3": float(q3),
        "max": float(x.max()),
        "whisker_low": float(inside.min()) if inside.size else float(q1),
        "whisker_high": float(inside.max()) if inside.size else float(q3),
        "mean": float(x.mean()),
        "n": int(x.size),
    }


def abs_deviation(candidate: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """|candidate - reference| in float64; NaN or inf anywhere counts as an infinite deviation."""
    c = np.asarray(candidate, dtype=np.float64)
    r = np.asarray(reference, dtype=np.float64)
    n = min(len(c), len(r))
    dev = np.abs(c[:n] - r[:n])
    return np.where(np.isfinite(dev), dev, np.inf)


def spike_steps(spikes: np.ndarray | None, sample_every: int, ncells: int = 0) -> list[np.ndarray]:
    """Per cell, the global step index of each spike, from per-block first-crossing offsets.

    A run without spike records (a kernel with no spike rule) has no spikes: ``ncells`` empty lists.
    """
    if spikes is None:
        return [np.zeros(0, np.int64) for _ in range(ncells)]
    out = []
    for c in range(spikes.shape[1]):
        blocks = np.nonzero(spikes[:, c] >= 0)[0]
        out.append(blocks * sample_every + spikes[blocks, c].astype(np.int64))
    return out


def spike_window_mask(
    steps: list[np.ndarray], nsamples: int, sample_every: int, dt_ms: float, window_ms: float = 1.0
) -> np.ndarray:
    """(nsamples, cells) True where a sample lies within +-window_ms of a spike of that cell."""
    sample_ms = sample_every * dt_ms
    times = (np.arange(nsamples) + 1) * sample_ms  # a sample is taken at the end of its block
    mask = np.zeros((nsamples, len(steps)), dtype=bool)
    for c, st in enumerate(steps):
        if st.size == 0:
            continue
        t_spike = (st + 1) * dt_ms
        idx = np.searchsorted(t_spike, times)
        lo = np.abs(times - t_spike[np.clip(idx - 1, 0, st.size - 1)])
        hi = np.abs(times - t_spike[np.clip(idx, 0, st.size - 1)])
        mask[:, c] = np.minimum(lo, hi) <= window_ms
    return mask


def deviation_metrics(dev: np.ndarray, sample_ms: float, exclude: np.ndarray | None = None) -> dict[str, Any]:
    """Max and box statistics of a deviation array, overall, in the first and last second, and
    outside spike windows; plus the first time the deviation (outside spikes) exceeds 1 uV, 1 and
    10 mV."""
    per_second = max(1, round(1000.0 / sample_ms))
    outside = dev if exclude is None else np.where(exclude[: len(dev)], 0.0, dev)
    per_sample = outside.max(axis=1) if outside.size else np.zeros(0)
    onset: dict[str, float | None] = {}
    for level in ONSET_LEVELS_MV:
        above = np.nonzero(per_sample > level)[0]
        onset[f"{level:g}mV"] = None if above.size == 0 else float((above[0] + 1) * sample_ms)
    return {
        "max": float(dev.max()) if dev.size else 0.0,
        "max_outside_spikes": float(outside.max()) if outside.size else 0.0,
        "all": box_stats(dev),
        "first_second": box_stats(dev[:per_second]),
        "last_second": box_stats(dev[-per_second:]),
        "first_time_above_ms": onset,
        "max_over_time": per_sample,
    }


def match_spikes(a: np.ndarray, b: np.ndarray, tol: float) -> np.ndarray:
    """Greedy one-to-one matching of two sorted spike-time arrays within ``tol``; returns b - a of
    matched pairs (closest pairs first)."""
    if a.size == 0 or b.size == 0:
        return np.zeros(0)
    diff = b[None, :] - a[:, None]
    cand = np.argwhere(np.abs(diff) <= tol)
    if cand.size == 0:
        return np.zeros(0)
    order = np.argsort(np.abs(diff[cand[:, 0], cand[:, 1]]), kind="stable")
    used_a: set[int] = set()
    used_b: set[int] = set()
    out = []
    for i, j in cand[order]:
        if i not in used_a and j not in used_b:
            used_a.add(int(i))
            used_b.add(int(j))
            out.append(diff[i, j])
    return np.asarray(out)


def van_rossum(a: np.ndarray, b: np.ndarray, tau: float) -> float:
    """Van Rossum distance with an exponential kernel (exact closed form, not a discretisation):
    D^2 = 1/2 [sum_ij e^(-|a_i-a_j|/tau) + sum_ij e^(-|b_i-b_j|/tau) - 2 sum_ij e^(-|a_i-b_j|/tau)]."""

    def k(x: np.ndarray, y: np.ndarray) -> float:
        if x.size == 0 or y.size == 0:
            return 0.0
        if x.ndim == y.ndim == 1 and x.dtype == y.dtype:
            return _kernel_sum(x.dtype.str, x.tobytes(), y.tobytes(), tau)
        return float(np.exp(-np.abs(x[:, None] - y[None, :]) / tau).sum())

    d2 = 0.5 * (k(a, a) + k(b, b) - 2 * k(a, b))
    return math.sqrt(max(d2, 0.0))


@functools.lru_cache(maxsize=1 << 13)
def _kernel_sum(dtype: str, x: bytes, y: bytes, tau: float) -> float:
    """``sum_ij exp(-|x_i - y_j| / tau)`` of two 1-D spike-time arrays given as their bytes, remembered.

    Why: an audit compares every run with the same reference, cell by cell, twice (the protocol's
    spike comparison and the registered spike-agreement metric), so the reference's own term is
    asked for once per run and most cells' trains are the reference's own (then all three terms
    are one). This O(n^2) sum was the costliest part of comparing the runs; remembered, each
    distinct pair is computed once, by the very same expression (the same bits). Floats are
    computed in place, one (len(x), len(y)) buffer for every step: the same ufuncs on the same
    values, so the same bits, at about half the time (no temporary matrix to allocate and fault
    in per step)."""
    a, b = np.frombuffer(x, dtype=dtype), np.frombuffer(y, dtype=dtype)
    if a.dtype.kind != "f":
        return float(np.exp(-np.abs(a[:, None] - b[None, :]) / tau).sum())
    d = np.subtract(a[:, None], b[None, :])
    np.abs(d, out=d)
    np.negative(d, out=d)
    np.divide(d, tau, out=d)
    np.exp(d, out=d)
    return float(d.sum())


def spike_metrics(
    candidate: list[np.ndarray], reference: list[np.ndarray], dt_ms: float, *, tol_ms: float = 5.0, tau_ms: float = 10.0
) -> dict[str, float]:
    """Spike count differences, matched fraction, |dt| of matched spikes, van Rossum distance."""
    count_diff = []
    matched = 0
    total = 0
    dts: list[np.ndarray] = []
    vr = []
    for c_steps, r_steps in zip(candidate, reference, strict=True):
        ct, rt = c_steps * dt_ms, r_steps * dt_ms
        count_diff.append(abs(ct.size - rt.size))
        pairs = match_spikes(rt, ct, tol_ms)
        matched += pairs.size
        total += max(ct.size, rt.size)
        dts.append(np.abs(pairs))
        vr.append(van_rossum(ct, rt, tau_ms))
    all_dt = np.concatenate(dts) if dts else np.zeros(0)
    return {
        "reference_spikes": int(sum(r.size for r in reference)),
        "candidate_spikes": int(sum(c.size for c in candidate)),
        "count_diff_total": int(sum(count_diff)),
        "count_diff_max_cell": int(max(count_diff, default=0)),
        "matched_fraction": 1.0 if total == 0 else matched / total,
        "dt_median_ms": float(np.median(all_dt)) if all_dt.size else 0.0,
        "dt_p99_ms": float(np.quantile(all_dt, 0.99)) if all_dt.size else 0.0,
        "dt_max_ms": float(all_dt.max()) if all_dt.size else 0.0,
        "van_rossum_mean": float(np.mean(vr)) if vr else 0.0,
        "van_rossum_max": float(np.max(vr)) if vr else 0.0,
    }


def coincidence_factor(candidate: np.ndarray, reference: np.ndarray, window_ms: float, duration_ms: float) -> float:
    """Kistler's coincidence factor of two spike trains (times in ms), as Jolivet et al. use it:
    Gamma = (N_coinc - E[N_coinc]) / (1/2 (N_cand + N_ref)) / (1 - 2 nu_ref window), where N_coinc
    counts candidate spikes matched one-to-one with a reference spike within +-``window_ms`` and
    E[N_coinc] = 2 nu_ref window N_cand is what a Poisson train of the candidate's rate would get
    by chance. 1: every spike coincides; 0: chance level. Two empty trains agree (1).
    (Kistler, Gerstner, van Hemmen, Neural Comput. 9 (1997); Jolivet et al., J. Neurosci. Methods
    169 (2008).)"""
    n_c, n_r = candidate.size, reference.size
    if n_c == 0 and n_r == 0:
        return 1.0
    if n_c == 0 or n_r == 0 or duration_ms <= 0:
        return 0.0
    coinc = match_spikes(reference, candidate, window_ms).size
    rate = n_r / duration_ms
    expected = 2.0 * rate * window_ms * n_c
    norm = 1.0 - 2.0 * rate * window_ms
    if norm <= 0:  # the window covers the whole inter-spike interval: every spike coincides by chance
        return 1.0 if coinc == max(n_c, n_r) else 0.0
    return float((coinc - expected) / (0.5 * (n_c + n_r)) / norm)


def first_divergence(candidate: np.ndarray, reference: np.ndarray, dt_ms: float) -> dict[str, Any] | None:
    """The first step at which two (steps, cells) 0/1 spike rasters differ, located step by step:
    the step, its time, the first differing cell there, which run spiked, and the spikes both runs
    had produced before it (None: identical rasters)."""
    n = min(len(candidate), len(reference))
    c, r = np.asarray(candidate[:n]) > 0.5, np.asarray(reference[:n]) > 0.5
    differ = np.nonzero((c != r).any(axis=1))[0]
    if differ.size == 0:
        return None
    step = int(differ[0])
    cell = int(np.nonzero(c[step] != r[step])[0][0])
    return {
        "step": step,
        "time_ms": (step + 1) * dt_ms,
        "cell": cell,
        "candidate_spiked": bool(c[step, cell]),
        "reference_spiked": bool(r[step, cell]),
        "cells_differing": int((c[step] != r[step]).sum()),
        "spikes_before": int(r[:step].sum()),
    }
