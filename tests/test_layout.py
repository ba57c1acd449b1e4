"""Connection-list layouts (hwbench.core.layout): exact properties, checked with hypothesis."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwbench.core.errors import UsageError
from hwbench.core.layout import neighbour_table, pass_major_order, pass_plan

indices = st.integers(1, 40).flatmap(
    lambda size: st.tuples(st.just(size), st.lists(st.integers(0, size - 1), max_size=200))
)


@given(indices)
def test_pass_plan_properties(case: tuple[int, list[int]]) -> None:
    size, raw = case
    index = np.asarray(raw, dtype=np.int32)
    plan = pass_plan(index, size)
    count = np.bincount(index, minlength=size)
    assert sorted(plan.order.tolist()) == list(range(len(index)))  # a permutation
    assert sorted(plan.ranked.tolist()) == list(range(size))
    assert np.all(np.diff(count[plan.ranked]) <= 0)  # ranked by descending count
    assert list(plan.counts) == [int((count > k).sum()) for k in range(int(count.max(initial=0)))]
    stored = index[plan.order]
    for offset, c in zip(plan.offsets, plan.counts):  # pass k = the ranked targets' prefix
        np.testing.assert_array_equal(stored[offset : offset + c], plan.ranked[:c])
    for t in range(size):  # each target keeps its connections' relative order
        assert np.all(np.diff(plan.order[stored == t]) > 0)
    np.testing.assert_array_equal(plan.ranked[plan.inverse], np.arange(size))
    again = pass_plan(stored, size)
    assert again.is_pass_major and np.array_equal(again.ranked, plan.ranked)
    assert pass_plan(index, size).is_pass_major == np.array_equal(plan.order, np.arange(len(index)))
    assert plan.in_rank_order == np.array_equal(plan.ranked, np.arange(size))
    renumbered = pass_plan(plan.inverse[index], size)  # targets numbered by rank: identity ranking
    assert renumbered.in_rank_order and renumbered.counts == plan.counts


def test_small_example() -> None:
    index = np.array([3, 0, 3, 1, 3, 0], np.int32)
    plan = pass_plan(index, 5)
    assert plan.ranked.tolist() == [3, 0, 1, 2, 4]
    assert plan.counts == (3, 2, 1) and plan.offsets == (0, 3, 5)
    assert pass_major_order(index, 5).tolist() == [0, 1, 3, 2, 5, 4]


def test_neighbour_table_layout_and_range_check() -> None:
    index = np.array([0, 0, 2, 2, 2], dtype=np.int32)
    np.testing.assert_array_equal(neighbour_table(index, 4), [[0, 1, 5], [5, 5, 5], [2, 3, 4], [5, 5, 5]])
    with pytest.raises(UsageError, match="out of range"):
        pass_plan(np.array([4]), 4)
    with pytest.raises(UsageError, match="out of range"):
        neighbour_table(np.array([-1]), 4)
