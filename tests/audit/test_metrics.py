"""Accuracy metrics against independent computations."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwbench.accuracy.metrics import (
    _kernel_sum,
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


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 2000), max_size=40),
    st.lists(st.integers(0, 2000), max_size=40),
    st.sampled_from([np.float64, np.float32]),
)
def test_van_rossum_remembered_sums_are_the_computed_ones_bit_for_bit(a, b, dtype):
    """The remembered kernel sums give exactly the bits of the direct expression, asked for in any
    order, with equal trains and with trains that share the same bytes under another dtype."""

    def direct(x, y, tau):
        def k(p, q):
            return float(np.exp(-np.abs(p[:, None] - q[None, :]) / tau).sum()) if p.size and q.size else 0.0

        return math.sqrt(max(0.5 * (k(x, x) + k(y, y) - 2 * k(x, y)), 0.0))

    x, y = np.sort(np.array(a, dtype=dtype)) * dtype(0.025), np.sort(np.array(b, dtype=dtype)) * dtype(0.025)
    for p, q in ((x, y), (y, x), (x, x), (x, y)):
        assert van_rossum(p, q, 10.0) == direct(p, q, 10.0)
    ints = np.int32 if dtype == np.float32 else np.int64  # the same bytes read as integers: another sum
    assert van_rossum(x.view(ints), y.view(ints), 10.0) == direct(x.view(ints), y.view(ints), 10.0)


@pytest.mark.parametrize("sizes", [(1, 7), (37, 1001), (640, 777), (1500, 1499)])
def test_van_rossum_in_place_sums_are_the_direct_expression_bit_for_bit(sizes):
    """The kernel sums are computed in place; at the sizes an audit meets (hundreds to thousands of
    spikes per cell, lengths that are no multiple of a vector width) the bits must be the direct
    expression's."""
    rng = np.random.default_rng(sum(sizes))
    x = np.sort(rng.integers(0, 400_000, sizes[0])) * 0.025
    y = np.sort(rng.integers(0, 400_000, sizes[1])) * 0.025
    for p, q in ((x, y), (y, x), (x, x)):
        direct = float(np.exp(-np.abs(p[:, None] - q[None, :]) / 10.0).sum())
        assert _kernel_sum(p.dtype.str, p.tobytes(), q.tobytes(), 10.0) == direct


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
