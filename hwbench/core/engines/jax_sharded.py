"""One network over several JAX devices: the JAX engine's program under ``shard_map``, bit for bit.

A sharded build (:func:`build_sharded`; devices reach it through ``RunRequest.shards`` and
:func:`hwbench.core.engines.select.build_engine`) splits the cells over ``N`` devices of a
:class:`jax.sharding.Mesh` as the kernel partitions them (:meth:`~hwbench.core.kernel.Kernel.
partition`; :mod:`hwbench.core.sharding` computes the layout). Every per-cell array (state,
per-cell parameters, inputs, probes, spikes) is laid out shard-major on the host and split along
its last axis with a :class:`~jax.sharding.NamedSharding`; the compiled sample loop of the
unsharded engine runs inside :func:`jax.shard_map`, so each device steps its own slab with the
kernel's own code, through whatever ops wrap the engine's (an emulation's roundings travel with
them). Scalars and the connection list stay trace-time constants.

The one step that reads other devices' cells is :func:`~hwbench.core.ops.gather_map_scatter` over
the workload's connection list (``src`` -> ``tgt``): :class:`ShardedJaxOps` first receives, with
one :func:`jax.lax.ppermute` per neighbour, the cells of the slabs below and above that its
connections read (the halo), then sums pass by pass as the unsharded engine does, each cell's
terms in list order; padding of a pass (a shard with fewer cells of that in-degree) is computed
and discarded by a select, never added. The result is bit-identical to the unsharded run.

Across hosts the same program runs on JAX's distributed runtime (``jax.distributed``): every
process builds the workload, owns the slabs of its local devices, and the results come back with
:func:`jax.experimental.multihost_utils.process_allgather`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from hwbench.core.kernel import Kernel, Workload
    from hwbench.core.sharding import ShardLayout

from hwbench.core.engine import Engine, Executor, OpsWrapper
from hwbench.core.engines import _loop
from hwbench.core.engines.jax_engine import JaxEngine, JaxExecutor, JaxOps, JaxTuning, prepare_xla_flags, x64_mode
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.layout import PassPlan

AXIS = "cells"
"""The mesh axis the cells are split along."""

FORCE_CPU_DEVICES = "XLA_FLAGS=--xla_force_host_platform_device_count=N"


def check_devices(shards: int, platform: str | None = None) -> None:
    """Refuse a shard count above the JAX devices present (all processes'; of ``platform``, else
    of JAX's default backend), naming them. Starts JAX's backend: the engine's XLA flags first."""
    prepare_xla_flags()
    import jax

    devices = jax.devices(platform)
    if shards > len(devices):
        kinds = sorted({d.platform for d in devices})
        hint = (
            f"; on a CPU host, {FORCE_CPU_DEVICES} (set before start) makes N host devices" if kinds == ["cpu"] else ""
        )
        raise UsageError(
            f"--shard {shards} needs {shards} JAX devices; {len(devices)} present ({', '.join(kinds)}): "
            f"use --shard 1..{len(devices)}{hint}"
        )


class ShardedJaxOps(JaxOps):
    """JAX ops of one shard: the workload's gather-map-scatter through a halo exchange.

    ``bind`` hands it the shard's layout arrays while the program is traced. Any other gather or
    scatter over the network would need cells this shard does not hold, so it is refused.
    """

    name = "jax"

    def __init__(self, dtype: Any, layout: ShardLayout, src: Any, tgt: Any, *, exchange: bool = True) -> None:
        super().__init__(dtype, scatter="passes")
        self.layout = layout
        self.network = (src, tgt)
        self.exchange_halo = exchange
        self._local: dict[str, Any] = {}
        self._pass: int | None = None
        # how a traced step meets the exchange: "inline" (exchanges in place), "capture" (stops
        # there: :class:`_Captured`), "replay" (reads the halo received before it, ``_received``)
        self._mode = "inline"
        self._received: list[Any] = []
        self._sums: list[Any] = []  # the cross-shard sums a capture took before the exchange
        self._padded = PassPlan(
            ranked=_arange(layout.per_shard), counts=layout.pass_sizes, order=_arange(sum(layout.pass_sizes))
        )

    def trace_key(self) -> dict[str, Any]:
        return {**super().trace_key(), "shards": self.layout.count, "exchange": self.exchange_halo}

    def bind(self, local: dict[str, Any]) -> None:
        """This shard's layout arrays (traced values) for the program being traced."""
        self._local = local

    def trace_as(self, mode: str, received: list[Any] | None = None) -> None:
        """How the step traced next meets the exchange (see :meth:`ShardedJaxExecutor._step_body`)."""
        self._mode = mode
        self._received = received or []
        if mode != "replay":
            self._sums = []

    # --- what reads other shards' cells -----------------------------------------------------
    def gather(self, x: Any, index: Any) -> Any:
        raise _not_fused("a gather")

    def scatter_add(self, values: Any, index: Any, size: int) -> Any:
        raise _not_fused("a scatter-add")

    def fused_plan(self, src: Any, tgt: Any, size: int, shape: tuple[int, ...]) -> PassPlan | None:
        """The padded passes :meth:`gather_map_scatter` maps (each ``plan.counts[k]`` long)."""
        if not self._is_network(src, tgt):
            raise _not_fused("a gather-map-scatter over another index than the workload's connection list")
        if size != self.layout.size or shape[-1] != self.layout.per_shard or not self.layout.pass_sizes:
            return None
        return self._padded

    def _is_network(self, src: Any, tgt: Any) -> bool:
        """Whether ``src``, ``tgt`` are the workload's connection list (the one the layout splits)."""
        import numpy as np

        mine = self.network
        if src is mine[0] and tgt is mine[1]:
            return True
        same = isinstance(src, np.ndarray) and isinstance(tgt, np.ndarray) and mine[0] is not None
        return same and np.array_equal(src, mine[0]) and np.array_equal(tgt, mine[1])

    def gather_map_scatter(self, message: Any, x: Any, src: Any, tgt: Any, size: int) -> Any:
        """The shard's sums: halo exchange, then pass ``k`` maps the ``k``-th connection of each of
        its cells and adds it in place; padding entries are masked out (a select, not a zero added)."""
        jnp = self._jnp
        x = jnp.asarray(x)
        if self.fused_plan(src, tgt, size, x.shape) is None:  # no connections at all
            return jnp.zeros(x.shape, dtype=x.dtype)
        if self._mode == "capture":
            raise _Captured(x)
        lay, loc = self.layout, self._local
        extended = self._jnp.concatenate([x, *self._halo(x)], axis=-1) if self._has_halo else x
        acc: Any = None
        for k, (offset, width) in enumerate(zip(lay.pass_offsets, lay.pass_sizes)):
            self._pass = k
            index = loc["sources"][offset : offset + width]
            term = message(extended.at[..., index].get(mode="promise_in_bounds"), x[..., :width])
            acc = self._add_pass(acc, term, k, width)
        self._pass = None
        return acc

    def pass_padding(self, k: int) -> Any | None:
        """Which entries of pass ``k`` are padding on this shard (None: none on any shard)."""
        if not self.layout.masked_passes[k]:
            return None
        return self._jnp.arange(self.layout.pass_sizes[k]) >= self._local["counts"][k]

    def _add_pass(self, acc: Any, term: Any, k: int, width: int) -> Any:
        """Pass ``k``'s terms added to the first ``width`` cells (the unsharded engine's sum)."""
        jnp = self._jnp
        masked = self.layout.masked_passes[k]
        real = jnp.arange(width) < self._local["counts"][k] if masked else None
        if acc is None:
            first = jnp.where(real, term, jnp.zeros((), term.dtype)) if masked else term
            rest = self.layout.per_shard - width
            return (
                jnp.concatenate([first, jnp.zeros((*first.shape[:-1], rest), first.dtype)], axis=-1) if rest else first
            )
        if not masked:
            return acc.at[..., :width].add(term)
        head = acc[..., :width]
        return acc.at[..., :width].set(jnp.where(real, head + term, head))

    @property
    def _has_halo(self) -> bool:
        return bool(self.layout.send_up.shape[1] or self.layout.send_down.shape[1])

    def _halo(self, x: Any) -> list[Any]:
        """The cells this shard reads from the slab below, then from above (received before the
        step when it was traced in two parts)."""
        return self._received if self._mode == "replay" else self.exchange(x)

    def exchange(self, x: Any) -> list[Any]:
        """The halo exchange: each shard sends its neighbours the cells of ``x`` they read (one
        :func:`jax.lax.ppermute` per direction) and gets theirs."""
        from jax import lax

        lay, loc, n = self.layout, self._local, self.layout.count
        received = []
        for key, step in (("send_up", 1), ("send_down", -1)):
            if getattr(lay, key).shape[1] == 0:
                continue
            sent = x.at[..., loc[key]].get(mode="promise_in_bounds")
            if self.exchange_halo:
                sent = lax.ppermute(sent, AXIS, perm=[(s, (s + step) % n) for s in range(n)])
            received.append(sent)
        return received

    # --- what an emulation needs to know of the whole network --------------------------------
    def across_shards(self, x: Any) -> Any:
        """A per-shard partial sum (of counts) summed over every shard. A step traced in two parts
        takes the sums before the exchange with it, and cannot take one after it."""
        from jax import lax

        if self._mode == "replay":
            if not self._sums:
                raise _SumAfterExchange
            return self._sums.pop(0)
        total = lax.psum(x, AXIS)
        if self._mode == "capture":
            self._sums.append(total)
        return total

    def cell_values(self, values: np.ndarray) -> Any:
        """A per-cell host array of the whole network: this shard's cells of it."""
        return self._jnp.asarray(values)[..., self._local["cells"]]

    def element_index(self, shape: tuple[int, ...]) -> Any | None:
        """Each element's flat index in the unsharded run's array (the key of counter-based random
        bits), or None where it is the local one: a pass's entries map to their positions in the
        whole connection list, a per-cell array's columns to their cells."""
        jnp = self._jnp
        if self._pass is not None:
            offset, width = self.layout.pass_offsets[self._pass], self.layout.pass_sizes[self._pass]
            return self._local["positions"][offset : offset + width].reshape(shape)
        if not shape or shape[-1] != self.layout.per_shard:
            return None
        rows = jnp.arange(math.prod(shape[:-1]), dtype=jnp.uint32).reshape((*shape[:-1], 1))
        return rows * jnp.uint32(self.layout.size % 2**32) + self._local["cells"]


class _Captured(Exception):
    """Raised where a step traced in "capture" mode reaches the exchange: what the shard sends."""

    def __init__(self, x: Any) -> None:
        super().__init__("exchange reached")
        self.x = x


class _SumAfterExchange(Exception):
    """A step needs a sum over all shards after the exchange: it cannot be traced in two parts."""


def _not_fused(what: str) -> UnavailableError:
    return UnavailableError(
        f"a sharded run reads other devices' cells only through the fused gather-map-scatter over the "
        f"workload's connection list (Ops.gather_map_scatter); this step asks for {what} (an emulation "
        "with per-op counters, or rounding that cannot be fused, composes one): run it unsharded"
    )


def _arange(n: int) -> np.ndarray:
    import numpy as np

    return np.arange(n, dtype=np.int32)


def check_engine(engine: Engine) -> JaxEngine:
    """Only the JAX engine splits a run over devices."""
    if not isinstance(engine, JaxEngine):
        raise UsageError(f"engine '{engine.name}' cannot shard a run; --shard runs on the jax engine (jax.sharding)")
    return engine


def build_sharded(
    engine: Engine,
    kernel: Kernel,
    workload: Workload,
    *,
    shards: int,
    dtype: str = "float32",
    sample_every: int | None = None,
    ops_wrapper: OpsWrapper | None = None,
    exchange: bool = True,
    platform: str | None = None,
) -> Executor:
    """``engine.build(...)`` of a run split over ``shards`` devices (the JAX engine only): the first
    ``shards`` of ``platform``'s devices (None: JAX's default backend).

    ``exchange=False`` replaces each halo exchange by a local copy of the same shape: a program
    that computes wrong sums in the time of the right ones less the exchange (for benchmarks).
    """
    import time

    from hwbench.core.sharding import check_shard_count

    jax_engine = check_engine(engine)
    shards = check_shard_count(shards)
    ok, reason = engine.available()
    if not ok:
        raise UnavailableError(f"engine '{engine.name}' is not available here: {reason}")
    start = time.perf_counter()
    np_dtype = _loop.check_dtype(engine.name, dtype, engine.dtypes)
    se = _loop.resolve_sample_every(kernel, sample_every)
    prepare_xla_flags()
    with x64_mode(np_dtype):
        raw = sharded_ops(kernel, workload, np_dtype, shards, exchange=exchange, platform=platform)
        ops = raw if ops_wrapper is None else ops_wrapper(raw)
        executor = ShardedJaxExecutor(kernel, workload, np_dtype, se, ops, jax_engine.tuning, raw, platform)
    executor.engine_name = engine.name
    executor.setup_s = time.perf_counter() - start
    return executor


def sharded_ops(
    kernel: Kernel, workload: Workload, dtype: Any, shards: int, *, exchange: bool = True, platform: str | None = None
) -> ShardedJaxOps:
    """The ops of a sharded build: the kernel's partition of the workload and its layout."""
    import numpy as np

    from hwbench.core.sharding import shard_layout

    check_devices(shards, platform)
    owner = np.asarray(kernel.partition(workload, shards))
    src = workload.arrays.get("src", np.zeros(0, np.int32))
    tgt = workload.arrays.get("tgt", np.zeros(0, np.int32))
    layout = shard_layout(src, tgt, workload.size, owner)
    if layout.count != shards:
        raise UsageError(f"kernel '{kernel.name}' split {workload.size} cells into {layout.count} parts, not {shards}")
    return ShardedJaxOps(dtype, layout, workload.arrays.get("src"), workload.arrays.get("tgt"), exchange=exchange)


class ShardedJaxExecutor(JaxExecutor):
    """The JAX executor's program under ``shard_map`` over a mesh of ``layout.count`` devices."""

    def __init__(
        self,
        kernel: Kernel,
        workload: Workload,
        dtype: np.dtype,
        sample_every: int,
        ops: Any,
        tuning: JaxTuning,
        raw: ShardedJaxOps,
        platform: str | None = None,
    ) -> None:
        import jax
        import numpy as np
        from jax.sharding import Mesh

        self.raw = raw
        self.shards = raw.layout.count
        self.mesh = Mesh(np.array(jax.devices(platform)[: self.shards]), (AXIS,))
        self._order = raw.layout.order
        if getattr(ops, "counter_names", ()):
            raise UnavailableError("a sharded run counts no per-op events (counters): run it unsharded")
        self._keys_by_position = bool(getattr(ops, "keys_by_position", False))
        super().__init__(kernel, workload, dtype, sample_every, ops, tuning)
        if jax.eval_shape(kernel.probe, self._state0).shape[-1:] != (workload.size,):
            raise UsageError(f"kernel '{kernel.name}' probes no per-cell signal: its runs cannot be sharded")
        self.detail = f"{self.shards} shard" + ("s" if self.shards != 1 else "")
        self._release_host_layout()

    def _release_host_layout(self) -> None:
        """The layout tables live on the devices now; on the host only their shapes are needed (to
        trace a second program): zero-stride stand-ins free 40 MB per ten million connections."""
        import dataclasses

        import numpy as np

        def shape_only(a: np.ndarray) -> np.ndarray:
            return np.broadcast_to(np.zeros((), a.dtype), np.shape(a))

        host = self._fparams_host
        self._fparams_host = {k: shape_only(v) if k.startswith(_LAYOUT) else v for k, v in host.items()}
        self.raw.layout = dataclasses.replace(self.raw.layout, sources=shape_only(self.raw.layout.sources))

    # --- layout of the runtime arguments -------------------------------------------------------
    def _runtime_params(self, fparams: dict[str, Any]) -> dict[str, Any]:
        import numpy as np

        lay = self.raw.layout
        per_cell = {k: v for k, v in fparams.items() if self._is_per_cell(v)}
        if len(per_cell) != len(fparams):
            odd = ", ".join(k for k in fparams if k not in per_cell)
            raise UsageError(f"kernel '{self.kernel.name}': float parameters {odd} are neither scalars nor per cell")
        layout: dict[str, Any] = {
            "sources": lay.sources,
            "counts": lay.pass_counts,
            "send_up": lay.send_up,
            "send_down": lay.send_down,
            "cells": lay.cells.astype(np.uint32),
        }
        if self._keys_by_position:
            from hwbench.core.sharding import with_positions

            positions = with_positions(lay, self.workload.arrays.get("tgt", np.zeros(0, np.int32))).positions
            assert positions is not None
            layout["positions"] = positions.view(np.uint32)
        return {**per_cell, **{_LAYOUT + k: v for k, v in layout.items()}}

    def _is_per_cell(self, a: Any) -> bool:
        import numpy as np

        return np.ndim(a) >= 1 and np.shape(a)[-1] == self.workload.size

    def _spec(self, a: Any, role: str) -> Any:
        """The partition spec of a host array: layout tables by shard, per-cell arrays by their
        last axis, everything else (scalars, non-cell inputs) replicated."""
        import numpy as np
        from jax.sharding import PartitionSpec as P

        if role == "layout":
            return P(AXIS, *([None] * (np.ndim(a) - 1)))
        if role == "scalar" or not self._is_per_cell(a):
            return P()
        return P(*([None] * (np.ndim(a) - 1)), AXIS)

    def _arg_spec(self, a: Any, role: str, key: str = "") -> Any:
        import jax
        import numpy as np
        from jax.sharding import NamedSharding

        role = "layout" if key.startswith(_LAYOUT) else role
        sharding = NamedSharding(self.mesh, self._spec(a, role))
        return jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype, sharding=sharding)

    def _put(self, tree: Any, role: str) -> Any:
        import jax
        import numpy as np
        from jax.sharding import NamedSharding

        def put(key: Any, a: Any) -> Any:
            layout = role == "params" and str(key).startswith(_LAYOUT)
            host = np.asarray(a)
            if not layout and self._is_per_cell(host):
                host = np.ascontiguousarray(host[..., self._order])
            sharding = NamedSharding(self.mesh, self._spec(host, "layout" if layout else role))
            return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])

        if isinstance(tree, dict):
            return {k: put(k, v) for k, v in tree.items()}
        return jax.tree_util.tree_map(lambda a: put("", a), tree)

    def _fetch(self, x: Any, role: str, rows: int | None) -> Any:
        """The array on the host in cell order, its first ``rows`` rows: each local shard's block
        read in place; a multi-process run's from every process (JAX's multihost gather)."""
        import numpy as np

        if not x.is_fully_addressable:
            from jax.experimental import multihost_utils

            host = np.asarray(multihost_utils.process_allgather(x, tiled=True))[:rows]
        else:
            shape = (x.shape[0] if rows is None else min(rows, x.shape[0]), *x.shape[1:])
            host = np.empty(shape, dtype=x.dtype)
            for shard in x.addressable_shards:
                block = np.asarray(shard.data)
                host[(slice(0, shape[0]), *shard.index[1:])] = block[: shape[0]]
        if role == "counters" or not self._is_per_cell(host):
            return host
        out = np.empty_like(host)
        out[..., self._order] = host
        return out

    # --- the program ----------------------------------------------------------------------------
    def _step_body(self, one_step: Any, nblocks: Any) -> Any:
        """One step as the exchange, then the rest in a loop of one trip that XLA cannot count.

        XLA:CPU compiles a while loop into one kernel only when it holds no collective; a loop
        that does runs op by op (io-ehh at 46,656 cells: 3.8x the CPU time). So each step is
        traced up to the exchange (what this shard sends), the halo is exchanged in the outer
        loop, and the whole step then runs in an inner loop that reads it (no collective inside:
        one kernel). A step that needs a sum over all shards after the exchange (an emulated
        one-hot scatter's contamination) keeps the exchange inline.
        """
        import jax
        import jax.numpy as jnp

        raw = self.raw

        def step(s: Any, carry: Any, k: Any) -> Any:
            raw.trace_as("capture")
            try:
                whole = one_step(s, carry, k)
            except _Captured as reached:
                sent = reached.x
            else:
                raw.trace_as("inline")
                return whole  # a step without an exchange
            raw.trace_as("replay", raw.exchange(sent))
            try:
                once = jnp.minimum(nblocks, 1)
                return jax.lax.fori_loop(0, once, lambda _, c: one_step(s, c, k), carry)
            except _SumAfterExchange:
                raw.trace_as("inline")
                return one_step(s, carry, k)
            finally:
                raw.trace_as("inline")

        return step

    def _program_key(self, finite_state: bool) -> None:
        return None  # a mesh's executable is not kept in the program cache

    def _jit_options(self) -> dict[str, Any]:
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        cells = NamedSharding(self.mesh, P(None, AXIS))
        state = NamedSharding(self.mesh, self._spec(self._state0, "state"))
        return {"out_shardings": (state, cells, cells, NamedSharding(self.mesh, P()))}

    def _program(self, state: Any, inputs: Any, fparams: Any, step0: Any, t0: Any, nblocks: Any) -> Any:
        """The unsharded program of one shard, under ``shard_map`` (per-shard values in, slabs out)."""
        import jax
        from jax.sharding import PartitionSpec as P

        def local(state: Any, inputs: Any, fparams: Any, step0: Any, t0: Any, nblocks: Any) -> Any:
            own = {k: v for k, v in fparams.items() if not k.startswith(_LAYOUT)}
            self.raw.bind({k[len(_LAYOUT) :]: v[0] for k, v in fparams.items() if k.startswith(_LAYOUT)})
            return JaxExecutor._program(self, state, inputs, own, step0, t0, nblocks)

        def spec(tree: Any, role: str) -> Any:
            return jax.tree_util.tree_map(lambda a: self._spec(a, role), tree)

        in_specs = (
            spec(state, "state"),
            {k: spec(v, "inputs") for k, v in inputs.items()},
            {k: self._spec(v, "layout" if k.startswith(_LAYOUT) else "params") for k, v in fparams.items()},
            P(),
            P(),
            P(),
        )
        out_specs = (spec(state, "state"), P(None, AXIS), P(None, AXIS), P())
        return _shard_map(local, self.mesh, in_specs, out_specs)(state, inputs, fparams, step0, t0, nblocks)


_LAYOUT = "__shard__."
"""Prefix of the layout tables among the program's runtime parameters (kept apart from the kernel's)."""


def _shard_map(fn: Any, mesh: Any, in_specs: Any, out_specs: Any) -> Any:
    """``jax.shard_map`` (``jax.experimental.shard_map`` before JAX 0.6), without its replication
    check (the loop's carries are per shard by construction)."""
    import jax

    if hasattr(jax, "shard_map"):
        return jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)
    from jax.experimental.shard_map import shard_map

    return shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_rep=False)
