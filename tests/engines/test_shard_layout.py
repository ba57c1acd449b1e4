"""The host-side layout of a sharded run (hwbench.core.sharding), against its definition.

For any connection list whose sources lie on a target's own shard or its two ring neighbours, and
any equal split of the cells: every cell of every shard sees, pass by pass, exactly its own
connections in list order (so its sum is the unsharded one term for term), each read through the
extended array lands on the right cell, padding is marked, and the halo lists only cells a
neighbour reads. A source two shards away is refused.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwbench.core.errors import UsageError
from hwbench.core.sharding import ShardLayout, shard_layout, with_positions


@st.composite
def ring_networks(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """(src, tgt, size, owner): a random list whose every source is within one shard of its target."""
    count = draw(st.integers(1, 5))
    per = draw(st.integers(1, 6))
    size = count * per
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    owner = rng.permutation(np.repeat(np.arange(count), per))
    members = [np.flatnonzero(owner == s) for s in range(count)]
    n = draw(st.integers(0, 4 * size))
    tgt = rng.integers(0, size, n)
    home = (owner[tgt] + rng.integers(-1, 2, n)) % count
    src = np.array([rng.choice(members[h]) for h in home], dtype=np.int64)
    return src, tgt, size, owner


def extended_cells(lay: ShardLayout, s: int) -> np.ndarray:
    """The global cell behind every index of shard ``s``'s extended array."""
    below, above = (s - 1) % lay.count, (s + 1) % lay.count
    halo_below = lay.cells[below][lay.send_up[below]]
    halo_above = lay.cells[above][lay.send_down[above]]
    return np.concatenate([lay.cells[s], halo_below, halo_above])


@settings(max_examples=1_000)
@given(ring_networks())
def test_each_cell_sums_its_own_terms_in_list_order(net: tuple[np.ndarray, np.ndarray, int, np.ndarray]) -> None:
    src, tgt, size, owner = net
    lay = with_positions(shard_layout(src, tgt, size, owner), tgt)
    assert lay.positions is not None
    assert sorted(lay.order.tolist()) == list(range(size))
    degree = np.bincount(tgt, minlength=size)
    for s in range(lay.count):
        assert (owner[lay.cells[s]] == s).all()
        assert (np.diff(degree[lay.cells[s]]) <= 0).all()  # rank order: each pass is a prefix
        ext = extended_cells(lay, s)
        for i, cell in enumerate(lay.cells[s]):
            slots = [off + i for k, off in enumerate(lay.pass_offsets) if i < lay.pass_counts[s, k]]
            assert lay.positions[s, slots].tolist() == np.flatnonzero(tgt == cell).tolist()
            assert (ext[lay.sources[s, slots]] == src[lay.positions[s, slots]]).all()
        for k, width in enumerate(lay.pass_sizes):
            assert lay.pass_counts[s, k] <= width
            assert lay.masked_passes[k] == bool((lay.pass_counts[:, k] < width).any())


@settings(max_examples=1_000)
@given(ring_networks())
def test_a_halo_is_as_wide_as_the_most_a_neighbour_reads(net: tuple[np.ndarray, np.ndarray, int, np.ndarray]) -> None:
    src, tgt, size, owner = net
    lay = shard_layout(src, tgt, size, owner)
    n = lay.count
    reads: list[list[set[int]]] = [[set(), set()] for _ in range(n)]  # per receiver: from below, from above
    for j in range(len(tgt)):
        s, h = int(owner[tgt[j]]), int(owner[src[j]])
        if h != s:
            reads[s][0 if h == (s - 1) % n else 1].add(int(src[j]))
    for s in range(n):
        below, above = (s - 1) % n, (s + 1) % n
        assert reads[s][0] <= set(lay.cells[below][lay.send_up[below]].tolist())
        assert reads[s][1] <= set(lay.cells[above][lay.send_down[above]].tolist())
    assert lay.send_up.shape[1] == max(len(r[0]) for r in reads)
    assert lay.send_down.shape[1] == max(len(r[1]) for r in reads)


def test_a_source_two_shards_away_is_refused() -> None:
    owner = np.repeat(np.arange(4), 2)  # cells 0,1 on shard 0 ... 6,7 on shard 3
    with pytest.raises(UsageError, match="may only join a shard to its two neighbours"):
        shard_layout(np.array([0]), np.array([4]), 8, owner)


def test_unequal_parts_are_refused() -> None:
    with pytest.raises(UsageError, match="must give each of"):
        shard_layout(np.array([0]), np.array([1]), 4, np.array([0, 0, 0, 1]))


def test_one_shard_has_no_halo_and_no_padding() -> None:
    rng = np.random.default_rng(1)
    src, tgt = rng.integers(0, 50, 300), rng.integers(0, 50, 300)
    lay = shard_layout(src, tgt, 50, np.zeros(50, dtype=np.int64))
    assert lay.send_up.shape[1] == lay.send_down.shape[1] == 0
    assert not any(lay.masked_passes)
    assert sum(lay.pass_sizes) == 300
