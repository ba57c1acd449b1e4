"""One network over several devices: which cells each device owns and what its neighbours send it.

A sharded run splits the cells of a workload over ``count`` devices in equal parts (the kernel
says which cell goes where: :meth:`hwbench.core.kernel.Kernel.partition`, e.g. slabs of a torus).
Each device steps its own cells; the only values it reads from other devices are the sources of
its cells' connections, and those must lie on its two neighbours in a ring of devices (the slab
below and the slab above). Every step, each device sends each neighbour the cells that neighbour
reads: a halo exchange (:func:`jax.lax.ppermute`), never a gather of the whole network.

:func:`shard_layout` computes, once on the host (numpy only), everything the compiled step needs:

* each shard's cells, in the order it stores them: by descending in-degree, ties by cell
  number (:class:`~hwbench.core.layout.PassPlan`'s rank order, so each pass of the
  gap-junction sum covers a prefix of the shard's cells);
* per pass ``k`` the shard's connections, padded to the same length on every shard (one
  compiled program serves all of them) with a per-shard count of real entries: entry ``i`` of
  pass ``k`` is the ``k``-th connection, in list order, of the shard's cell ``i``. Each cell
  therefore adds the same terms in the same order as the unsharded run, bit for bit;
* where each connection's source sits in the shard's extended array (its own cells, then the
  cells received from below, then from above), and the send lists of those halos.

The layout depends only on the connection list and the owners, not on any array value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

from hwbench.core.errors import UsageError

__all__ = ["ShardLayout", "check_shard_count", "shard_layout", "with_positions"]


def check_shard_count(shards: object) -> int:
    """A shard count is a positive integer (devices are checked where they are known)."""
    import numpy as np

    if isinstance(shards, bool) or not isinstance(shards, (int, np.integer)) or shards < 1:
        raise UsageError(f"--shard must be a positive integer number of devices, got {shards!r}")
    return int(shards)


@dataclass(frozen=True)
class ShardLayout:
    """Host-side plan of a sharded run (arrays are (count, ...), row ``s`` for shard ``s``).

    ``cells[s]``: the global cell numbers shard ``s`` stores, in its local order; ``pass_sizes``:
    the padded length of each pass; ``pass_counts[s, k]``: real entries of pass ``k`` on shard
    ``s`` (entries ``i >= pass_counts[s, k]`` are padding: computed and discarded); ``sources``:
    each connection's index into the shard's extended array (own cells, halo from below, halo
    from above); ``positions``: each connection's position in the global list (int32; padding: 0;
    None until :func:`with_positions` adds them: only an emulation's random bits need them);
    ``send_up[s]`` / ``send_down[s]``: local indices of the cells shard ``s`` sends to shard
    ``s + 1`` / ``s - 1`` (mod ``count``), padded with 0; ``degree_max``: the widest in-degree.
    """

    count: int
    size: int
    cells: np.ndarray
    pass_sizes: tuple[int, ...]
    pass_counts: np.ndarray
    sources: np.ndarray
    positions: np.ndarray | None
    send_up: np.ndarray
    send_down: np.ndarray

    @property
    def per_shard(self) -> int:
        return self.size // self.count

    @property
    def pass_offsets(self) -> tuple[int, ...]:
        """Where each pass starts in a shard's padded connection list."""
        offsets, at = [], 0
        for width in self.pass_sizes:
            offsets.append(at)
            at += width
        return tuple(offsets)

    @property
    def masked_passes(self) -> tuple[bool, ...]:
        """Per pass: whether some shard has padding in it (the others need no mask)."""
        return tuple(bool((self.pass_counts[:, k] < w).any()) for k, w in enumerate(self.pass_sizes))

    @property
    def order(self) -> np.ndarray:
        """The global cell numbers in shard-major order: ``x[..., order]`` lays a per-cell array
        out so that shard ``s`` holds columns ``s * per_shard ..`` of it."""
        return self.cells.reshape(-1)


def shard_layout(src: np.ndarray, tgt: np.ndarray, size: int, owner: np.ndarray) -> ShardLayout:
    """The :class:`ShardLayout` of a connection list (``src[j] -> tgt[j]``) over owners ``owner``.

    Per-connection arrays are int32 and freed as soon as they are used (a million cells have ten
    million connections: 40 MB per int32 copy)."""
    import numpy as np

    src, tgt = _int32(src), _int32(tgt)
    owner = np.asarray(owner, dtype=np.int64).reshape(-1)
    count = int(owner.max(initial=0)) + 1
    per = np.bincount(owner, minlength=count)
    if owner.shape != (size,) or owner.min(initial=0) < 0 or (per != size // count).any() or size % count:
        raise UsageError(f"a partition must give each of {count} shards {size // max(count, 1)} of the {size} cells")
    degree = np.bincount(tgt, minlength=size)
    cells = np.lexsort((np.arange(size), -degree, owner)).reshape(count, -1)
    local = np.empty(size, dtype=np.int32)
    local[cells] = np.arange(cells.shape[1], dtype=np.int32)
    depth = int(degree.max(initial=0))
    # pass k of shard s covers its cells of in-degree > k: a prefix, as each row's degrees descend
    pass_counts = np.stack([np.searchsorted(-degree[row], -np.arange(depth), side="left") for row in cells])
    pass_sizes = tuple(int(w) for w in pass_counts.max(axis=0, initial=0))
    shard, slot = _slots(tgt, degree, owner.astype(np.int32), local, pass_sizes)
    extended, send_up, send_down = _halo_sources(src, shard, owner.astype(np.int32), local, count)
    sources = np.zeros((count, int(sum(pass_sizes))), dtype=np.int32)
    sources[shard, slot] = extended
    return ShardLayout(
        count=count,
        size=size,
        cells=cells.astype(np.int32),
        pass_sizes=pass_sizes,
        pass_counts=pass_counts.astype(np.int32),
        sources=sources,
        positions=None,
        send_up=send_up,
        send_down=send_down,
    )


def with_positions(layout: ShardLayout, tgt: np.ndarray) -> ShardLayout:
    """``layout`` with ``positions`` filled in, from the connection list's targets ``tgt``."""
    import dataclasses

    import numpy as np

    tgt = _int32(tgt)
    owner = np.empty(layout.size, dtype=np.int32)
    local = np.empty(layout.size, dtype=np.int32)
    for s, row in enumerate(layout.cells):
        owner[row] = s
        local[row] = np.arange(len(row), dtype=np.int32)
    shard, slot = _slots(tgt, np.bincount(tgt, minlength=layout.size), owner, local, layout.pass_sizes)
    positions = np.zeros(layout.sources.shape, dtype=np.int32)
    positions[shard, slot] = np.arange(len(tgt), dtype=np.int32)
    return dataclasses.replace(layout, positions=positions)


def _slots(
    tgt: np.ndarray, degree: np.ndarray, owner: np.ndarray, local: np.ndarray, pass_sizes: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Each connection's shard and its slot in the shard's padded list: the start of its pass (its
    occurrence among its target's connections), plus its target's place in the shard."""
    import numpy as np

    offsets = np.cumsum((0, *pass_sizes[:-1])).astype(np.int32) if pass_sizes else np.zeros(0, np.int32)
    slot = offsets[_occurrence(tgt, degree)]
    slot += local[tgt]
    return owner[tgt], slot


def _int32(index: np.ndarray) -> np.ndarray:
    import numpy as np

    return np.asarray(index).reshape(-1).astype(np.int32, copy=False)


def _occurrence(tgt: np.ndarray, degree: np.ndarray) -> np.ndarray:
    """How many earlier connections of the list point at each connection's target (list order)."""
    import numpy as np

    by_target = np.argsort(tgt, kind="stable")
    occurrence = np.empty(len(tgt), dtype=np.int32)
    starts = (np.cumsum(degree) - degree).astype(np.int32)
    ranks = np.arange(len(tgt), dtype=np.int32)
    np.subtract(ranks, np.repeat(starts, degree), out=ranks)
    occurrence[by_target] = ranks
    return occurrence


def _halo_sources(
    src: np.ndarray, shard: np.ndarray, owner: np.ndarray, local: np.ndarray, count: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each connection's source index in its target shard's extended array, and the send lists.

    The extended array of shard ``s`` is its own cells, then the halo from below (cells of shard
    ``s - 1`` it reads, ascending by their local index there), then the halo from above (shard
    ``s + 1``). With two shards both neighbours are one shard: one halo. A source on any other
    shard is a network this ring of slabs cannot carry.
    """
    import numpy as np

    per_shard = len(local) // count
    home = owner[src]
    from_below = (home == (shard - 1) % count) & (home != shard)
    from_above = (home == (shard + 1) % count) & ~from_below & (home != shard)
    stray = (home != shard) & ~from_below & ~from_above
    if stray.any():
        j = int(np.argmax(stray))
        raise UsageError(
            f"cell {int(src[j])} (shard {int(home[j])}) feeds a cell of shard {int(shard[j])}: with {count} shards "
            "a connection may only join a shard to its two neighbours (the slab below and above); use fewer shards"
        )
    del home, stray
    extended = local[src]
    send_up, slots_below = _halo(shard[from_below], extended[from_below], count, below_of=True)
    send_down, slots_above = _halo(shard[from_above], extended[from_above], count, below_of=False)
    extended[from_below] = per_shard + slots_below
    extended[from_above] = per_shard + send_up.shape[1] + slots_above
    return extended, send_up, send_down


def _halo(
    receiver: np.ndarray, sender_local: np.ndarray, count: int, *, below_of: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The send lists of one direction (row = sender) and each read's slot in its receiver's halo.

    A receiver's halo lists each cell it reads once, ascending by the sender's local index.
    """
    import numpy as np

    per = int(sender_local.max(initial=0)) + 1
    keys, inverse = np.unique(receiver.astype(np.int64) * per + sender_local, return_inverse=True)
    first = np.searchsorted(keys, np.arange(count) * per)
    slots = (inverse.reshape(-1) - first[receiver]).astype(np.int32)
    counts = np.bincount(keys // per, minlength=count)
    send = np.zeros((count, int(counts.max(initial=0))), dtype=np.int32)
    key_receiver = keys // per
    key_slot = np.arange(len(keys)) - first[key_receiver]
    sender = (key_receiver - 1) % count if below_of else (key_receiver + 1) % count
    send[sender, key_slot] = keys % per
    return send, slots
