"""Accuracy metrics against independent computations."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwbench.accuracy.metrics import (
    abs_deviation,
    box_stats,
    deviation_metrics,
    match_spikes,
    spike_metrics,
    spike_window_mask,
    van_rossum,
)


def test_box_stats_match_numpy_quartiles_and_tukey_whiskers():
    x = np.array([1.0, 2, 3, 4, 5, 6, 7, 8, 100])
    s = box_stats(x)
    q1, med, q3 = np.quantile(x, [0.25, 0.5, 0.75])
    assert (s["q1"], s["median"], s["q3"]) == (q1, med, q3)
    assert s["whisker_high"] == 8.0  # 100 is beyond q3 + 1.5 IQR = 7 + 6 = 13
    assert s["max"] == 100.0 and s["min"] == 1.0 and s["n"] == 9


def test_non_finite_deviation_counts_as_infinite():
    dev = abs_deviation(np.array([[0.0, np.nan]]), np.array([[1.0, 1.0]]))
    assert dev[0, 0] == 1.0 and math.isinf(dev[0, 1])
    s = box_stats(dev)
    assert math.isinf(s["max"]) and not math.isnan(s["median"])


def _van_rossum_numeric(a, b, tau, dt=0.001, t_end=None):
    t_end = t_end or (max([*a, *b, 0.0]) + 20 * tau)
    t = np.arange(0, t_end, dt)

    def f(train):
        out = np.zeros_like(t)
        for s in train:
            out += np.where(t >= s, np.exp(-(t - s) / tau), 0.0)
        return out

    return math.sqrt(np.sum((f(a) - f(b)) ** 2) * dt / tau)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(0, 50), max_size=4),
    st.lists(st.floats(0, 50), max_size=4),
)
def test_van_rossum_closed_form_matches_integral_of_definition(a, b):
    a, b = np.sort(np.array(a)), np.sort(np.array(b))
    exact = van_rossum(a, b, tau=5.0)
    numeric = _van_rossum_numeric(a, b, 5.0, dt=0.0005)
    # the Riemann sum misplaces each jump by up to one grid step: ~1% on short separations
    assert exact == pytest.approx(numeric, rel=0.02, abs=2e-3)


def _direct_kernel_sum(p: np.ndarray, q: np.ndarray, tau: float) -> float:
    return float(np.exp(-np.abs(p[:, None] - q[None, :]) / tau).sum()) if p.size and q.size else 0.0


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(0, 400_000), max_size=60),
    st.lists(st.integers(0, 400_000), max_size=60),
    st.sampled_from([0.5, 10.0, 1e4]),
)
def test_kernel_sum_equals_the_direct_double_sum(a, b, tau):
    """The O(n + m) recursion against the O(n m) definition, on step-grid times (ties included) whose
    span crosses many of the recursion's blocks (400,000 x 0.025 ms = 10,000 ms = 20,000 tau at tau 0.5)."""
    from hwbench.accuracy.metrics import kernel_sum

    x, y = np.sort(np.array(a)) * 0.025, np.sort(np.array(b)) * 0.025
    for p, q in ((x, y), (y, x), (x, x), (y, y)):
        want = _direct_kernel_sum(p, q, tau)
        assert kernel_sum(p, q, tau) == pytest.approx(want, rel=1e-12, abs=0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 4000), max_size=50), st.sampled_from([np.float64, np.float32]))
def test_a_train_is_at_distance_zero_from_itself_and_order_does_not_matter(a, dtype):
    x = (np.array(a) * 0.025).astype(dtype)
    assert van_rossum(x, x.copy(), 10.0) == 0.0
    shuffled = np.random.default_rng(len(a)).permutation(x)
    y = np.sort(x)[: len(x) // 2]
    assert van_rossum(shuffled, y, 10.0) == van_rossum(np.sort(x), y, 10.0) == van_rossum(y, x, 10.0)


def test_kernel_sum_of_ten_thousand_spikes_per_train():
    """A saturated candidate fires at every sample: ~10^4 spikes per cell, a 10^8-term double sum
    that the recursion takes in O(n). Against the definition computed in row blocks."""
    from hwbench.accuracy.metrics import kernel_sum

    rng = np.random.default_rng(7)
    x = np.sort(rng.integers(0, 400_000, 10_000)) * 0.025
    y = np.sort(rng.integers(0, 400_000, 9_000)) * 0.025
    want = sum(_direct_kernel_sum(x[i : i + 1000], y, 10.0) for i in range(0, x.size, 1000))
    assert kernel_sum(x, y, 10.0) == pytest.approx(want, rel=1e-12, abs=0)


def test_van_rossum_known_values():
    assert van_rossum(np.array([3.0]), np.array([3.0]), 10.0) == 0.0
    assert van_rossum(np.array([1.0]), np.array([]), 10.0) == pytest.approx(math.sqrt(0.5))
    d = 4.0
    assert van_rossum(np.array([0.0]), np.array([d]), 10.0) == pytest.approx(math.sqrt(1 - math.exp(-d / 10.0)))


def test_match_spikes_is_one_to_one_closest_first():
    ref = np.array([10.0, 20.0, 30.0])
    cand = np.array([10.4, 19.0, 45.0])
    diffs = np.sort(match_spikes(ref, cand, tol=2.0))
    assert diffs.tolist() == pytest.approx([-1.0, 0.4])


def _dense_match(a: np.ndarray, b: np.ndarray, tol: float) -> np.ndarray:
    """The definition: every pair within ``tol`` of the full difference matrix, closest first,
    ties in row-major order, taken greedily one-to-one."""
    if a.size == 0 or b.size == 0:
        return np.zeros(0)
    diff = b[None, :] - a[:, None]
    cand = np.argwhere(np.abs(diff) <= tol)
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


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 2000), max_size=40),
    st.lists(st.integers(0, 2000), max_size=40),
    st.sampled_from([0.025, 0.5, 1.0, 5.0]),
)
def test_match_spikes_equals_the_dense_definition(a, b, tol):
    """The windowed matching forms only the pairs within ``tol`` and returns exactly what the full
    difference matrix gives, in the same order (step-grid times: many ties and exact-tol pairs)."""
    x, y = np.sort(np.array(a)) * 0.025, np.sort(np.array(b)) * 0.025
    assert np.array_equal(match_spikes(x, y, tol), _dense_match(x, y, tol))


def test_match_spikes_of_two_ten_thousand_spike_trains():
    """Two saturated trains (a spike at nearly every sample): the full 10^4 x 10^4 difference matrix
    would take 800 MB; the windowed pairs are ~10^5. Every spike matches its neighbour at 0.025 ms."""
    x = np.arange(10_000) * 1.0
    y = x + 0.025
    pairs = match_spikes(x, y, 5.0)
    assert pairs.size == 10_000 and np.allclose(pairs, 0.025)


def test_spike_metrics_counts_and_timing():
    dt = 0.025
    ref = [np.array([400, 800]), np.array([], dtype=np.int64)]
    cand = [np.array([404, 800]), np.array([100])]
    m = spike_metrics(cand, ref, dt)
    assert m["reference_spikes"] == 2 and m["candidate_spikes"] == 3
    assert m["count_diff_total"] == 1 and m["count_diff_max_cell"] == 1
    assert m["matched_fraction"] == pytest.approx(2 / 3)
    assert m["dt_max_ms"] == pytest.approx(4 * dt)


def test_spike_window_mask_marks_samples_within_one_ms():
    # one spike at step 79 -> t = 2.0 ms; samples at 1, 2, 3, 4 ms (every 40 steps of 0.025 ms)
    mask = spike_window_mask([np.array([79])], nsamples=4, sample_every=40, dt_ms=0.025, window_ms=1.0)
    assert mask[:, 0].tolist() == [True, True, True, False]


def test_deviation_onsets_and_windows():
    dev = np.zeros((3000, 2))
    dev[1500:, 1] = 0.5
    dev[2500:, 0] = 20.0
    m = deviation_metrics(dev, sample_ms=1.0)
    assert m["first_time_above_ms"] == {"0.001mV": 1501.0, "1mV": 2501.0, "10mV": 2501.0}
    assert m["first_second"]["max"] == 0.0 and m["last_second"]["max"] == 20.0
    mask = np.zeros_like(dev, dtype=bool)
    mask[2500:, 0] = True
    assert deviation_metrics(dev, 1.0, mask)["max_outside_spikes"] == 0.5
