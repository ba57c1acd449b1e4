"""Data-parallel training: a minibatch cut into shards that run at once on threads.

The shards' weighted losses and gradients must sum to the minibatch's (only the batch sum's order
changes), the result must not depend on which thread finishes first, and every network and
encoding must shard along its own batch axis.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

jax = pytest.importorskip("jax")

from hwbench.core.errors import UsageError  # noqa: E402
from hwbench.plugins.kernels.snn import throughput as tp  # noqa: E402
from hwbench.plugins.kernels.snn import training as tr  # noqa: E402
from hwbench.plugins.kernels.snn.networks import NetSpec  # noqa: E402

SMALL = NetSpec(n_in=64, hidden=48, n_steps=12)


def _train(
    cfg: tr.TrainConfig, x: np.ndarray, y: np.ndarray, steps: int = 3
) -> tuple[list[float], dict[str, np.ndarray]]:
    trainer = tr.Trainer(cfg)
    with jax.enable_x64(cfg.precision == "fp64"):
        losses = [float(trainer.step(x, y)) for _ in range(steps)]
    return losses, trainer.host_params()


@given(batch=st.integers(1, 300), shards=st.integers(1, 40))
def test_shard_slices_cover_the_batch_in_order(batch: int, shards: int) -> None:
    parts = tr.shard_slices(batch, shards)
    assert len(parts) == min(batch, shards)
    assert parts[0].start == 0 and parts[-1].stop == batch
    assert all(a.stop == b.start for a, b in itertools.pairwise(parts))
    sizes = [s.stop - s.start for s in parts]
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize(
    ("spec", "batch"),
    [
        (SMALL, 32),  # the hand-written BPTT (feed-forward Leaky, direct input)
        (replace(SMALL, neuron="rleaky", reset="zero"), 31),  # jax.grad through the scan, unequal shards
        (replace(SMALL, encoding="rate"), 20),  # input (n_steps, batch, n_in): sharded along axis 1
    ],
)
@pytest.mark.parametrize("shards", [2, 3])
def test_sharded_steps_equal_one_shard_up_to_summation_order(spec: NetSpec, batch: int, shards: int) -> None:
    x, y = tp.synthetic_batch(spec, batch, 5)
    cfg = tr.TrainConfig(spec=spec, precision="fp64", lr=1e-2)
    ref_losses, ref_params = _train(replace(cfg, shards=1), x, y)
    losses, params = _train(replace(cfg, shards=shards), x, y)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-13, atol=0)
    for k, w in ref_params.items():
        moved = np.abs(w - tr.Trainer(cfg).host_params()[k]).max()
        assert moved > 1e-4, f"{k}: the steps must move the weights"
        np.testing.assert_allclose(params[k], w, rtol=0, atol=1e-12 * moved, err_msg=k)


def test_one_shard_loss_is_the_loss_function_bit_for_bit() -> None:
    """Weight 1 changes nothing: one shard's loss is ``loss_fn``'s, as before sharding existed."""
    import jax.numpy as jnp

    cfg = tr.TrainConfig(spec=SMALL, shards=1)
    x, y = tp.synthetic_batch(SMALL, 16, 1)
    trainer = tr.Trainer(cfg)
    ops = tr.JaxTrainOps(jnp.float32, SMALL.surrogate)
    onehot = np.eye(10, dtype=np.float32)[y]
    want = tr.loss_fn(trainer.params, x, onehot, ops=ops, spec=SMALL, loss_dtype=jnp.float32)
    assert float(trainer.step(x, y)) == float(want)


def test_sharded_training_is_deterministic() -> None:
    """The shards' sums are taken in shard order, whichever thread finishes first: bit-identical runs."""
    x, y = tp.synthetic_batch(SMALL, 64, 2)
    cfg = tr.TrainConfig(spec=SMALL, shards=4, lr=1e-2)
    first = _train(cfg, x, y, steps=4)
    for _ in range(2):
        again = _train(cfg, x, y, steps=4)
        assert again[0] == first[0]
        for k, w in first[1].items():
            assert np.array_equal(again[1][k], w)


def test_fp16_skips_a_step_when_one_shard_overflows() -> None:
    """Loss scaling: one shard's overflowed gradient makes the summed gradient non-finite, and the
    step is skipped (weights and moments unchanged), as an unsharded one would be."""
    import jax.numpy as jnp

    cfg = tr.TrainConfig(spec=SMALL, precision="fp16", lr=1e-2)
    trainer = tr.Trainer(cfg)
    finite = {k: jnp.full(v.shape, 0.5, jnp.float16) for k, v in trainer.params.items()}
    overflowed = {k: g.at[0].set(jnp.inf) if k == "w2" else g for k, g in finite.items()}
    loss = jnp.asarray(1.0, jnp.float32)
    for shards, skipped in (([finite, finite], False), ([finite, overflowed], True)):
        new, state, _ = tr.apply_grads(trainer.params, trainer.state, [loss, loss], shards, cfg=cfg)
        for k, w in trainer.params.items():
            assert np.array_equal(np.asarray(new[k]), np.asarray(w)) == skipped, k
            assert np.array_equal(np.asarray(state.m[k]), np.asarray(trainer.state.m[k])) == skipped, k


def test_shards_must_be_positive() -> None:
    with pytest.raises(UsageError, match="shards must be a positive integer"):
        tr.TrainConfig(shards=0)


def test_a_new_shard_size_is_traced_on_the_calling_thread() -> None:
    """train-bench's linear twin (and the benchmark's ``--against``) swap a module attribute while
    a program is traced; traced on two shard threads at once, one would take the other's swap for
    the original. So a shard size seen for the first time is traced by the calling thread, one
    shard after another; later steps run the shards on the pool."""
    import threading
    from functools import partial

    import jax.numpy as jnp

    cfg = tr.TrainConfig(spec=SMALL, shards=2)
    trainer = tr.Trainer(cfg)
    tracers: list[str] = []
    ops = tr.JaxTrainOps(jnp.float32, SMALL.surrogate)

    def grads(*args: object) -> object:
        tracers.append(threading.current_thread().name)
        return partial(tr.shard_grads, cfg=cfg, ops=ops)(*args)

    trainer._grads = jax.jit(grads)
    x, y = tp.synthetic_batch(SMALL, 16, 4)
    for _ in range(3):
        trainer.step(x, y)
    assert tracers == [threading.current_thread().name]  # one trace (both shards are 8), here
    trainer.step(x[:15], y[:15])  # shards of 7 and 8: the 7 is new
    assert tracers == [threading.current_thread().name] * 2
